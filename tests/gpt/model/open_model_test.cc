// gpt/model/open_model: opening a checkpoint the trainer wrote (file or run directory) and a
// Hugging Face GPT-2 file gives the model that was saved, logit for logit; resume_run returns its
// training state and options; evaluate gives the known loss of a sequence, window by window.
#define BOOST_TEST_MODULE open_model
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>
#include <boost/test/unit_test.hpp>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>

#include "autograd/allocator.h"
#include "autograd/engine.h"
#include "gpt/model/bigram_average.h"
#include "gpt/model/checkpoint.h"
#include "gpt/model/field_ranges.h"
#include "gpt/model/open_model.h"
#include "gpt/text/char_tokenizer.h"
#include "gpt/train/run.h"
#include "tests/gpt/model/hf_fixture.h"
#include "tests/gpt/model/training_state_fixture.h"
#include "tests/peak_memory.h"
#include "tests/skip.h"
#include "tests/test_util.h"

using namespace attograd;
using namespace attograd::gpt;
using attograd::testing::expect_throw_with;

namespace {

// The logits of `model` for idx (1, T), without a graph.
std::vector<float> logits_of(const LanguageModel& model, const std::vector<int64_t>& idx) {
  NoGradGuard no_grad;
  const Tensor logits =
      model.forward(Tensor::from_ids(idx, {1, static_cast<int64_t>(idx.size())})).logits();
  const float* p = logits.data<float>();
  return std::vector<float>(p, p + logits.numel());
}

// A bigram model over V = 4 whose table is 0 except W[0][1] = ln 3: after token 0, token 1 has
// probability 3 / (3 + 1 + 1 + 1) = 1/2; after any other token all four have 1/4.
std::unique_ptr<BigramModel> known_bigram(int64_t block_size) {
  GPTConfig c;
  c.vocab_size = 4;
  c.block_size = block_size;
  auto model = std::make_unique<BigramModel>(c, 1);
  float* w = model->wte->weight.data<float>();
  std::fill(w, w + 16, 0.0f);
  w[0 * 4 + 1] = static_cast<float>(std::log(3.0));
  return model;
}

Session session_of(std::unique_ptr<LanguageModel> model) {
  Session s;
  s.model = std::move(model);
  s.tokenizer = std::make_unique<CharTokenizer>(CharTokenizer::from_text("abcd"));
  s.path = "known bigram";
  return s;
}

}  // namespace

BOOST_AUTO_TEST_CASE(a_checkpoint_the_trainer_wrote_gives_the_same_logits) {
  const auto dir = attograd::testing::fresh_temp_dir("session_trainer");
  const std::string text = "the cat sat on the mat. the dog sat on the log. ";
  const CharTokenizer tok = CharTokenizer::from_text(text);
  std::vector<int64_t> ids;
  for (int i = 0; i < 20; ++i)
    for (int64_t id : tok.encode(text)) ids.push_back(id);
  GPTConfig c = preset("pico");
  c.vocab_size = tok.vocab_size();
  GPT model(c, 5);
  const Dataset data(ids, c.block_size);
  TrainOptions o;
  o.max_steps = 2;
  o.batch_size = 2;
  o.eval_iters = 1;
  o.corpus = "a corpus spec";
  Trainer trainer(model, data, o, tok.kind(), tok.serialize(), dir.string());
  trainer.train_step();
  trainer.save(trainer.checkpoint_path());
  const std::vector<int64_t> prompt = tok.encode("the cat");
  const std::vector<float> expected = logits_of(model, prompt);

  // The file and the run directory open the same checkpoint.
  for (const std::string& path : {trainer.checkpoint_path(), dir.string()}) {
    BOOST_TEST_CONTEXT(path) {
      const Session s = open_model({path, "", 0});
      BOOST_TEST(s.path == trainer.checkpoint_path());
      BOOST_TEST(model_kind_name(s.kind()) == std::string("gpt"));
      BOOST_TEST(s.tokenizer->kind() == "char");
      BOOST_TEST(s.tokenizer->encode("the cat") == prompt);
      BOOST_TEST(s.config().n_layer == 3);
      BOOST_TEST(logits_of(s.gpt(), prompt) == expected);  // bit for bit
    }
  }

  const ResumedRun run = resume_run(dir.string());
  BOOST_TEST(run.state.step == 1);
  BOOST_TEST(run.state.adam_m.numel() == model.num_parameters());
  BOOST_TEST(run.options.corpus == "a corpus spec");
  BOOST_TEST(run.options.max_steps == 2);
  BOOST_TEST(logits_of(*run.session.model, prompt) == expected);
}

BOOST_AUTO_TEST_CASE(a_hugging_face_file_gives_the_same_logits_and_gpt2s_tokenizer) {
  const auto dir = attograd::testing::fresh_temp_dir("session_hf");
  const std::unique_ptr<GPT> written = attograd::testing::write_small_hf_gpt2(dir);
  const Session s = open_model({"", (dir / "model.safetensors").string(), 0});
  BOOST_TEST(s.tokenizer->kind() == "gpt2");
  BOOST_TEST(s.tokenizer->vocab_size() == 50257);
  s.require_tokenizer_matches();                              // throws if not
  const std::vector<int64_t> prompt = {464, 3797, 3332, 13};  // "The cat sat."
  const std::vector<float> expected = logits_of(*written, prompt);
  const std::vector<float> got = logits_of(s.gpt(), prompt);
  BOOST_TEST(got == expected);  // the Conv1D transposes are exact
}

// The log line of --init-from counts the steps the file was trained for in English (issue 31,
// kind 14: "trained 1 steps").
BOOST_AUTO_TEST_CASE(init_weights_describe_counts_steps) {
  InitWeights w;
  w.session = session_of(known_bigram(4));
  w.session.path = "ckpt.safetensors";
  w.step = 1;
  BOOST_TEST(w.describe() ==
             "weights of the attograd checkpoint ckpt.safetensors (trained 1 step), char "
             "tokenizer; step 0, fresh AdamW state");
  w.step = 2;
  BOOST_TEST(w.describe().find("(trained 2 steps)") != std::string::npos);
  w.step.reset();
  BOOST_TEST(w.describe().find("trained") == std::string::npos);
}

BOOST_AUTO_TEST_CASE(opening_refuses_what_is_not_one_model) {
  expect_throw_with<std::invalid_argument>([] { open_model({}); },
                                           "give exactly one of --checkpoint");
  expect_throw_with<std::invalid_argument>(
      [] {
        open_model({"a", "b", 0});
      },
      "give exactly one of --checkpoint");
  const auto dir = attograd::testing::fresh_temp_dir("session_empty");
  expect_throw_with<std::invalid_argument>([&] { open_checkpoint(dir.string()); },
                                           "is a directory without ckpt.safetensors");
  expect_throw_with<std::invalid_argument>([&] { resume_run(dir.string()); },
                                           "nothing to resume: ");
  const Session bigram = session_of(known_bigram(2));
  expect_throw_with<std::runtime_error>([&] { bigram.gpt(); }, "holds a bigram model");
}

BOOST_AUTO_TEST_CASE(evaluate_gives_the_known_loss_window_by_window) {
  const double ln2 = std::log(2.0), ln4 = std::log(4.0);
  // 0 -> 1 costs ln 2, 1 -> 0 costs ln 4.
  const Session one = session_of(known_bigram(1));
  const SequenceLoss a = one.evaluate({0, 1, 0});
  BOOST_TEST(a.predictions == 2);
  BOOST_TEST(a.windows == 2);
  BOOST_TEST(a.mean_nll == (ln2 + ln4) / 2, boost::test_tools::tolerance(1e-6));  // 1.0397207708
  BOOST_TEST(a.perplexity == std::sqrt(8.0), boost::test_tools::tolerance(1e-6));
  // Windows of 2 and 1 predictions, weighted by their lengths: (ln 2 + ln 4 + ln 2) / 3.
  const Session two = session_of(known_bigram(2));
  const SequenceLoss b = two.evaluate({0, 1, 0, 1});
  BOOST_TEST(b.predictions == 3);
  BOOST_TEST(b.windows == 2);
  BOOST_TEST(b.mean_nll == 4 * ln2 / 3, boost::test_tools::tolerance(1e-6));  // 0.9241962407
  expect_throw_with<std::invalid_argument>([&] { two.evaluate({0}); },
                                           "the loss needs at least 2 tokens");
  // A non-finite weight is named, not printed as a loss.
  two.model->named_parameters().front().second.data<float>()[1] = std::nanf("");
  expect_throw_with<std::runtime_error>(
      [&] {
        two.evaluate({0, 1});
      },
      "the weights in known bigram are not finite");
}

// evaluate() runs the full windows kEvalTokensPerBatch / T at a time and the short last one
// alone: the same loss as each window through the model by itself, weighted by its length, and
// a progress call after each forward with the windows done so far.
BOOST_AUTO_TEST_CASE(batched_windows_give_the_loss_of_one_window_at_a_time) {
  GPTConfig c = preset("pico");
  c.vocab_size = 11;
  c.block_size = 2048;  // 4 windows per forward: a batch of 4, one of 2, then the short window
  Session s;
  s.model = std::make_unique<GPT>(c, 3);
  s.path = "pico";
  std::vector<int64_t> tokens;
  for (int64_t i = 0; i < 6 * c.block_size + 100 + 1; ++i) tokens.push_back((i * 7 + i / 5) % 11);
  std::vector<std::pair<int64_t, int64_t>> calls;
  const SequenceLoss batched =
      s.evaluate(tokens, [&](int64_t done, int64_t windows) { calls.emplace_back(done, windows); });
  BOOST_TEST(batched.windows == 7);
  BOOST_TEST(batched.predictions == 6 * c.block_size + 100);
  BOOST_TEST((calls == std::vector<std::pair<int64_t, int64_t>>{{4, 7}, {6, 7}, {7, 7}}));
  double nats = 0;
  for (int64_t start = 0; start < batched.predictions; start += c.block_size) {
    const int64_t len = std::min(c.block_size, batched.predictions - start);
    const std::vector<int64_t> window(tokens.begin() + start, tokens.begin() + start + len + 1);
    nats += s.evaluate(window).mean_nll * static_cast<double>(len);
  }
  BOOST_TEST(batched.mean_nll == nats / static_cast<double>(batched.predictions),
             boost::test_tools::tolerance(1e-6));
}

BOOST_AUTO_TEST_CASE(a_checkpoints_tokenizer_opens_without_its_model) {
  const auto dir = attograd::testing::fresh_temp_dir("session_tokenizer");
  const Session s = session_of(known_bigram(2));
  save_checkpoint((dir / kCheckpointFile).string(), *s.model, "char", s.tokenizer->serialize());
  const std::unique_ptr<Tokenizer> tok = open_checkpoint_tokenizer(dir.string());
  BOOST_TEST(tok->kind() == "char");
  BOOST_TEST(tok->encode("dcba") == (std::vector<int64_t>{3, 2, 1, 0}));
}

namespace {

// Drops the clean pages of `path` from the page cache (a hint the kernel honours for files on
// disk, not on tmpfs).
void evict_from_page_cache(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY);
  ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
  ::close(fd);
}

// The fraction of the pages of bytes [begin, end) of `path` that are in the page cache
// (mincore on a mapping of the file reports the page cache, whoever read the pages).
double cached_fraction(const std::string& path, uint64_t begin, uint64_t end) {
  const int fd = ::open(path.c_str(), O_RDONLY);
  const auto size = static_cast<size_t>(std::filesystem::file_size(path));
  void* map = ::mmap(nullptr, size, PROT_READ, MAP_SHARED, fd, 0);
  ::close(fd);
  BOOST_REQUIRE(map != MAP_FAILED);
  const auto page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
  const uint64_t first = begin / page, last = (end + page - 1) / page;
  std::vector<unsigned char> resident(last);
  ::mincore(map, last * page, resident.data());
  ::munmap(map, size);
  size_t cached = 0;
  for (uint64_t i = first; i < last; ++i) cached += resident[i] & 1;
  return static_cast<double>(cached) / static_cast<double>(last - first);
}

}  // namespace

// sample, eval and export open a training checkpoint with open_checkpoint, whose moments
// (two thirds of the file) are checked from the header and never read: the file is mapped and
// only the weights' pages are touched. Resuming (Moments::load) reads them, which shows the
// measure can see a read.
BOOST_AUTO_TEST_CASE(opening_a_checkpoint_reads_its_weights_not_its_optimizer_moments) {
  const auto dir = attograd::testing::fresh_temp_dir("session_moments");
  std::string chars;
  for (char ch = '0'; ch < '0' + 64; ++ch) chars += ch;
  const auto tokenizer = make_tokenizer("char", chars);
  GPTConfig c;
  c.vocab_size = 64;
  c.block_size = 32;
  c.n_layer = 8;
  c.n_head = 6;
  c.n_embd = 384;
  GPT model(c, 1);
  // 14 M parameters: 57 MB of weights and 113 MB of moments, so that the kernel's read-around
  // of the weights stored beside the moments (ln_f before them, wpe after them: the file is in
  // name order) covers a small part of them: 8 MB windows on this machine (read_ahead_kb).
  const int64_t n = model.num_parameters();
  const TrainingState state =
      attograd::testing::training_state(n, 1, 0.5f, 0.25f, TrainOptions().to_json());
  const std::string path = (dir / "ckpt.safetensors").string();
  save_checkpoint(path, model, tokenizer->kind(), tokenizer->serialize(), &state);

  // Byte ranges in the file: the data section starts after the 8-byte length and the header.
  uint64_t header = 0;
  std::ifstream(path, std::ios::binary).read(reinterpret_cast<char*>(&header), 8);
  const nn::SafetensorsFile file = nn::SafetensorsFile::read(path);
  const auto range = [&](const std::string& name) {
    const nn::SafetensorsEntry& e = file.entries().at(name);
    return std::pair{8 + header + e.begin, 8 + header + e.end};
  };
  const auto [m_begin, m_end] = range("optimizer.m");
  const auto [v_begin, v_end] = range("optimizer.v");
  BOOST_TEST_REQUIRE(m_end == v_begin);  // the moments are one stretch of the file
  const auto [wte_begin, wte_end] = range("wte.weight");

  evict_from_page_cache(path);
  if (cached_fraction(path, 0, std::filesystem::file_size(path)) > 0.05)
    return attograd::testing::skip_case(
        "the page cache keeps this file (tmpfs?): what is read cannot be seen");
  const Session session = open_checkpoint(dir.string());
  BOOST_TEST(session.model->num_parameters() == n);
  BOOST_TEST(cached_fraction(path, wte_begin, wte_end) > 0.9);  // the weights were read
  const double moments = cached_fraction(path, m_begin, v_end);
  BOOST_TEST_MESSAGE("cached after open_checkpoint: " << moments << " of the moments");
  BOOST_TEST(moments < 0.3);  // the kernel's read-around of the neighbouring weights at most

  evict_from_page_cache(path);
  const CheckpointInfo info = read_checkpoint_info(file, Moments::load);
  BOOST_TEST(info.training->adam_m.numel() == n);
  BOOST_TEST(cached_fraction(path, m_begin, v_end) > 0.9);
  std::filesystem::remove_all(dir);
}

// Issue 31, kind 4: a sparse checkpoint (a few KB on disk) whose header claims a model that
// this machine cannot train (weights, gradients and AdamW's two moments, 16 bytes a parameter:
// here 1.5 times its memory) is refused from the header by `train --resume` and by
// `--init-from`, before any tensor is read. Before, --resume read the moments and --init-from
// the weights (3 to 9.5 GB, for minutes) and only then refused. Each is tried in a child
// process whose peak memory must stay within 64 MiB of its start.
BOOST_AUTO_TEST_CASE(a_model_too_large_to_train_is_refused_from_its_header) {
  const auto memory = static_cast<double>(physical_memory_bytes());
  GPTConfig big;  // wte (2^20 x n_embd) is nearly all of it
  big.vocab_size = 1 << 20;
  big.block_size = 5;
  big.n_layer = 1;
  big.n_head = 1;
  big.n_embd = static_cast<int64_t>(std::ceil(1.5 * memory / 16 / big.vocab_size));
  if (memory == 0 || big.n_embd > limits::n_embd.max ||
      num_parameters(ModelKind::gpt, big) > limits::max_parameters)
    return attograd::testing::skip_case("no config of the limits exceeds this machine's memory");
  const int64_t params = num_parameters(ModelKind::gpt, big);

  // The metadata of a real checkpoint with training state, its config replaced by the big one.
  const auto dir = attograd::testing::fresh_temp_dir("session_too_large");
  GPTConfig small = big;  // each size distinct, so that every dimension maps to one of big's
  small.vocab_size = 17;
  small.n_embd = 8;
  GPT model(small, 1);
  const auto tokenizer = make_tokenizer("char", "abcdefghijklmnopq");
  const TrainingState state =
      attograd::testing::training_state(model.num_parameters(), 1, 0, 0, TrainOptions().to_json());
  const std::string path = (dir / kCheckpointFile).string();
  save_checkpoint(path, model, tokenizer->kind(), tokenizer->serialize(), &state);
  nlohmann::json header;
  header["__metadata__"] = nn::SafetensorsFile::read(path).metadata();
  header["__metadata__"]["config"] = config_to_json(big);
  // The same tensors at big's shapes, one after the other, and the moments of its parameters.
  const auto big_dim = [&](int64_t d) {
    const int64_t C = big.n_embd;
    switch (d) {
      case 8:
        return C;
      case 17:
        return big.vocab_size;
      case 5:
        return big.block_size;
      case 24:
        return 3 * C;
      case 32:
        return 4 * C;
    }
    BOOST_FAIL("a dimension " << d << " of no known size");
    return int64_t{0};
  };
  std::map<std::string, std::vector<int64_t>> shapes;
  for (const auto& [name, t] : model.named_parameters()) {
    std::vector<int64_t> shape;
    for (const int64_t d : t.shape()) shape.push_back(big_dim(d));
    shapes[name] = shape;
  }
  shapes["optimizer.m"] = shapes["optimizer.v"] = {params};
  int64_t offset = 0;
  for (const auto& [name, shape] : shapes) {
    int64_t count = 1;
    for (const int64_t d : shape) count *= d;
    header[name] = {
        {"dtype", "F32"}, {"shape", shape}, {"data_offsets", {offset, offset + 4 * count}}};
    offset += 4 * count;
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');  // the data 8-byte aligned, as writers leave it
  {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    const uint64_t size = text.size();
    out.write(reinterpret_cast<const char*>(&size), 8);
    out << text;
  }
  std::filesystem::resize_file(path, 8 + text.size() + static_cast<uintmax_t>(offset));  // sparse

  const std::vector<std::pair<std::string, std::function<void()>>> loads{
      {"train --resume", [&] { resume_run(dir.string()); }},
      {"train --init-from", [&] { open_init_weights(path); }}};
  for (const auto& [label, load] : loads) {
    // 0: refused for its memory; 1: no error, 2: another error.
    const testing::MeasuredRun run = testing::run_measured([&, label = label, load = load] {
      try {
        load();
      } catch (const std::exception& e) {
        const std::string what = e.what();
        if (what.rfind(label + ": the model's " + std::to_string(params) + " parameters need", 0) ==
            0)
          return 0;
        std::fprintf(stderr, "%s: %s\n", label.c_str(), what.c_str());
        return 2;
      }
      return 1;
    });
    BOOST_TEST_CONTEXT(label) {
      BOOST_TEST(run.exit_code == 0);
      BOOST_TEST((run.peak_kib >= 0 && run.peak_kib <= 64 * 1024), run.peak_kib << " KiB");
    }
  }
  std::filesystem::remove_all(dir);
}

// nanoGPT's `--init_from gpt2` downloads the weights; attograd's --init-from gpt2, with no such
// file or directory here, says which files to get from where and how to name them.
BOOST_AUTO_TEST_CASE(init_from_a_nanogpt_model_name_says_what_to_download) {
  const std::filesystem::path previous = std::filesystem::current_path();
  const std::filesystem::path empty = attograd::testing::fresh_temp_dir("init_from_name");
  std::filesystem::current_path(empty);  // no file or directory named gpt2 here
  for (const std::string name : {"gpt2", "gpt2-xl"})
    attograd::testing::expect_throw_with<std::invalid_argument>(
        [&] { open_init_weights(name); },
        "--init-from " + name + ": there is no file or directory '" + name +
            "' (nanoGPT downloads its weights by that name; attograd reads them from disk): get "
            "model.safetensors and config.json from https://huggingface.co/" +
            name + "/tree/main into a directory, e.g. `huggingface-cli download " + name +
            " model.safetensors config.json --local-dir " + name + "`, then pass --init-from " +
            name);
  std::filesystem::current_path(previous);
  std::filesystem::remove_all(empty);
}
