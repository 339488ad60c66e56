// gpt/model/session: opening a checkpoint the trainer wrote (file or run directory) and a Hugging
// Face GPT-2 file gives the model that was saved, logit for logit; resume_run returns its training
// state and options; evaluate gives the known loss of a sequence, window by window.
#define BOOST_TEST_MODULE session
#include <boost/test/unit_test.hpp>
#include <cmath>
#include <filesystem>

#include "autograd/engine.h"
#include "gpt/model/baselines.h"
#include "gpt/model/session.h"
#include "gpt/text/char_tokenizer.h"
#include "gpt/train/run.h"
#include "tests/gpt/model/hf_fixture.h"
#include "tests/test_util.h"

using namespace attograd;
using namespace attograd::gpt;
using attograd::testing::expect_throw_with;

namespace {

// The logits of `model` for idx (1, T), without a graph.
std::vector<float> logits_of(const LanguageModel& model, const std::vector<int64_t>& idx) {
  NoGradGuard no_grad;
  const Tensor logits =
      model.forward(Tensor::from_ids(idx, {1, static_cast<int64_t>(idx.size())})).logits;
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
