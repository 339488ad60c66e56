// `attograd eval` end to end, on the PyTorch parity fixture (tests/parity/fixture): the real
// binary reads the Hugging Face-style model.safetensors and sequences of token ids, and must
// print the losses PyTorch computed (reference.safetensors), within 1e-5. The fixture's batch
// is one sequence of 65 ids cut into two rows of 32 predictions (block_size 32), so:
//   ids[0..33)  -> loss_seq0 (one window);   ids[0..65) -> loss (two windows);
//   ids[0..40)  -> (32 loss_seq0 + the first 7 position_losses of row 1) / 39 (a short last
//   window).
#define BOOST_TEST_MODULE eval_command
#include <sys/wait.h>
#include <unistd.h>
#include <array>
#include <boost/test/unit_test.hpp>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <map>
#include <string>
#include <vector>

#include "autograd/engine.h"
#include "autograd/ops.h"
#include "gpt/model/checkpoint.h"
#include "gpt/model/hf_import.h"
#include "gpt/text/char_tokenizer.h"
#include "nn/io/safetensors.h"

#include "tests/cli/cli_run.h"

namespace {

const std::string kFixture = ATTOGRAD_PARITY_FIXTURE;
const std::string kModel = kFixture + "/model.safetensors";

using Run = attograd::testing::CliRun;
using attograd::testing::TempDir;
Run run(const std::string& args, bool merge_stderr = true) {
  return attograd::testing::run_cli(args, merge_stderr);
}
bool has(const std::string& s, const std::string& needle) {
  return attograd::testing::contains(s, needle);
}

// The number on the "loss X nats/token" line, or NaN when there is none.
double printed_loss(const std::string& out) {
  const size_t at = out.find("\nloss ");
  double loss = std::nan("");
  if (at != std::string::npos) std::sscanf(out.c_str() + at, "\nloss %lf", &loss);
  return loss;
}

// What the fixture's reference holds, plus the whole 65-id sequence.
struct Reference {
  attograd::nn::SafetensorsFile ref =
      attograd::nn::SafetensorsFile::read(kFixture + "/reference.safetensors");
  std::vector<int64_t> sequence;  // idx row 0, idx row 1, last target: 2T + 1 ids
  double loss = ref.tensor("loss", attograd::DType::f64).item();
  double loss_seq0 = ref.tensor("loss_seq0", attograd::DType::f64).item();
  std::vector<double> position_losses =
      ref.tensor("position_losses", attograd::DType::f64).to_vector();  // (2, 32)

  Reference() {
    sequence = ref.tensor("idx", attograd::DType::i64).to_ids();
    sequence.push_back(ref.tensor("targets", attograd::DType::i64).to_ids().back());
  }
  std::string ids_text(size_t n) const {
    std::string s;
    for (size_t i = 0; i < n; ++i)
      s += std::to_string(sequence.at(i)) + (i % 16 == 15 ? "\n" : " ");
    return s;
  }
};

}  // namespace

BOOST_AUTO_TEST_CASE(hf_gpt2_ids_give_pytorchs_loss) {
  const Reference r;
  const TempDir dir("eval_test");
  BOOST_REQUIRE_EQUAL(r.sequence.size(), 65u);

  const Run one =
      run("eval --hf-gpt2 " + kModel + " --ids " + dir.file("seq0.txt", r.ids_text(33)));
  BOOST_TEST_INFO(one.out);
  BOOST_TEST(one.exit_code == 0);
  BOOST_TEST(has(one.out, "32 predictions from 33 token ids, 1 window(s) of block_size 32"));
  BOOST_TEST(std::abs(printed_loss(one.out) - r.loss_seq0) <= 1e-5);
  BOOST_TEST_MESSAGE(std::setprecision(9)
                     << "sequence 0: attograd " << printed_loss(one.out) << ", torch "
                     << r.loss_seq0 << ", |err| " << std::abs(printed_loss(one.out) - r.loss_seq0));

  // The whole sequence, from stdin: two full windows, whose mean is the batch loss.
  const Run two =
      run("eval --hf-gpt2 " + kModel + " --ids - < " + dir.file("all.txt", r.ids_text(65)));
  BOOST_TEST_INFO(two.out);
  BOOST_TEST(two.exit_code == 0);
  BOOST_TEST(has(two.out, "64 predictions from 65 token ids, 2 window(s)"));
  BOOST_TEST(std::abs(printed_loss(two.out) - r.loss) <= 1e-5);

  // A short last window: 39 predictions = 32 + 7.
  double expected = 32 * r.loss_seq0;
  for (int t = 0; t < 7; ++t) expected += r.position_losses.at(32 + t);
  expected /= 39;
  const Run partial =
      run("eval --hf-gpt2 " + kModel + " --ids " + dir.file("40.txt", r.ids_text(40)));
  BOOST_TEST_INFO(partial.out);
  BOOST_TEST(partial.exit_code == 0);
  BOOST_TEST(has(partial.out, "39 predictions from 40 token ids, 2 window(s)"));
  BOOST_TEST(std::abs(printed_loss(partial.out) - expected) <= 1e-5);
}

BOOST_AUTO_TEST_CASE(checkpoint_ids_match_the_hf_file) {
  // The same weights saved as an attograd checkpoint (char tokenizer of 512 code points, so its
  // vocabulary matches) must give the same loss through --checkpoint.
  const Reference r;
  const TempDir dir("eval_test");
  const attograd::nn::SafetensorsFile hf = attograd::nn::SafetensorsFile::read(kModel);
  const auto model = attograd::gpt::load_hf_gpt2(hf);
  std::u32string chars;
  for (char32_t c = 0x100; c < 0x100 + 512; ++c) chars += c;
  std::string utf8;
  for (char32_t c : chars)
    utf8 += {static_cast<char>(0xC0 | (c >> 6)), static_cast<char>(0x80 | (c & 0x3F))};
  const auto tok = attograd::gpt::CharTokenizer::from_text(utf8);
  BOOST_REQUIRE_EQUAL(tok.vocab_size(), 512);
  const std::string ckpt = (dir.path / "ckpt.safetensors").string();
  attograd::gpt::save_checkpoint(ckpt, *model, tok.kind(), tok.serialize());

  const Run ids =
      run("eval --checkpoint " + ckpt + " --ids " + dir.file("seq0.txt", r.ids_text(33)));
  BOOST_TEST_INFO(ids.out);
  BOOST_TEST(ids.exit_code == 0);
  BOOST_TEST(std::abs(printed_loss(ids.out) - r.loss_seq0) <= 1e-5);
  // --checkpoint takes the run directory as well as the file in it.
  const std::string four = dir.file("four.txt", "1 2 3 4");
  const Run by_dir = run("eval --checkpoint " + dir.path.string() + " --ids " + four);
  BOOST_TEST_INFO(by_dir.out);
  BOOST_TEST(by_dir.exit_code == 0);
  BOOST_TEST(has(by_dir.out, ckpt + ": 3 predictions from 4 token ids"));
  BOOST_TEST(by_dir.out == run("eval --checkpoint " + ckpt + " --ids " + four).out);

  // Corpus mode goes through load_tokenizer(kind, data): a UTF-8 corpus of those characters.
  std::string corpus;
  for (int i = 0; i < 400; ++i) corpus += utf8.substr(static_cast<size_t>((i * 37) % 512) * 2, 2);
  const Run text = run("eval --checkpoint " + ckpt + " --corpus " + dir.file("corpus.txt", corpus) +
                       " --split val");
  BOOST_TEST_INFO(text.out);
  BOOST_TEST(text.exit_code == 0);
  BOOST_TEST(has(text.out, "val split of"));
  BOOST_TEST(printed_loss(text.out) > 0);

  // A text with a character the checkpoint never saw (as kjv is to a checkpoint saved by the
  // companion page): the corpus is named, the character, and the fix.
  const std::string other = dir.file("other.txt", utf8.substr(0, 20) + "Verily");
  const Run foreign = run("eval --checkpoint " + ckpt + " --corpus " + other);
  BOOST_TEST_INFO(foreign.out);
  BOOST_TEST(foreign.exit_code != 0);
  BOOST_TEST(
      has(foreign.out, "corpus " + other +
                           " has characters this checkpoint's tokenizer lacks (the first, "
                           "'V' (U+0056), is character 11): the model was trained on another "
                           "text; pass that text with --corpus"));
  BOOST_TEST(!has(foreign.out, "CharTokenizer"));
  // sample says it in its own terms: the prompt is what to change, not the tokenizer.
  const Run prompt = run("sample --checkpoint " + ckpt + " --prompt Verily");
  BOOST_TEST_INFO(prompt.out);
  BOOST_TEST(prompt.exit_code != 0);
  BOOST_TEST(has(prompt.out,
                 "character 1 of prompt \"Verily\", 'V' (U+0056), is not in this model's text: a "
                 "character model knows only the characters of the text it was trained on; "
                 "remove it from --prompt"));
  BOOST_TEST(!has(prompt.out, "build the tokenizer"));

  // A corpus whose val split is one token: nothing to predict, and the fix (a newcomer's
  // finding, issue 33). 10 characters: train 9, val 1.
  const std::string tiny = dir.file("tiny.txt", utf8.substr(0, 20));
  const Run short_val = run("eval --checkpoint " + ckpt + " --corpus " + tiny);
  BOOST_TEST_INFO(short_val.out);
  BOOST_TEST(short_val.exit_code != 0);
  BOOST_TEST(has(short_val.out, "the val split of " + tiny +
                                    " has 1 token(s), and a loss needs at least 2 (one to read, "
                                    "one to predict): pass a longer --corpus, or --split train"));
}

BOOST_AUTO_TEST_CASE(gpt2_bpe_corpus_through_both_loaders) {
  // A tiny model over GPT-2's 50257-token vocabulary, saved as an attograd checkpoint with the
  // "gpt2" tokenizer. Its weights use HF names and layout, so --hf-gpt2 (with --n-head: no
  // config.json here, and n_embd 8 is no standard size) reads the same file: both paths encode
  // the corpus with GPT-2's BPE and must print the same loss.
  const TempDir dir("eval_test");
  attograd::gpt::GPTConfig c;
  c.vocab_size = 50257;
  c.block_size = 16;
  c.n_layer = 1;
  c.n_head = 2;
  c.n_embd = 8;
  attograd::gpt::GPT model(c, 7);
  const std::string ckpt = (dir.path / "bpe.safetensors").string();
  attograd::gpt::save_checkpoint(ckpt, model, "gpt2", "gpt2");
  std::string text;
  for (int i = 0; i < 40; ++i) text += "In the beginning God created the heaven and the earth.\n";
  const std::string corpus = dir.file("genesis.txt", text);

  const Run native = run("eval --checkpoint " + ckpt + " --corpus " + corpus);
  BOOST_TEST_INFO(native.out);
  BOOST_TEST(native.exit_code == 0);
  const Run hf = run("eval --hf-gpt2 " + ckpt + " --n-head 2 --corpus " + corpus);
  BOOST_TEST_INFO(hf.out);
  BOOST_TEST(hf.exit_code == 0);
  BOOST_TEST(printed_loss(native.out) > 0);
  BOOST_TEST(printed_loss(native.out) == printed_loss(hf.out));
  // Without --n-head, the way out for an attograd checkpoint is --checkpoint, not a guess.
  const Run no_head = run("eval --hf-gpt2 " + ckpt + " --corpus " + corpus);
  BOOST_TEST(no_head.exit_code == 2);
  BOOST_TEST(has(no_head.out,
                 "is an attograd checkpoint (its metadata says format attograd-gpt2), "
                 "which holds its config: open it with --checkpoint instead of "
                 "--hf-gpt2"));
}

BOOST_AUTO_TEST_CASE(help_explains_the_windows) {
  const Run help = run("eval --help");
  BOOST_TEST_INFO(help.out);
  BOOST_TEST(help.exit_code == 0);
  for (const char* s : {"--hf-gpt2", "--n-head", "--ids", "windows of block_size", "%.9g"})
    BOOST_TEST(has(help.out, s));
}

BOOST_AUTO_TEST_CASE(bad_inputs_are_clear_errors) {
  const TempDir dir("eval_test");
  const std::string good = dir.file("good.txt", "1 2 3\n");
  struct Case {
    std::string args;
    std::string needle;
  };
  const std::vector<Case> cases = {
      {"--hf-gpt2 " + kModel + " --ids " + dir.file("word.txt", "1 2 x 4"),
       "token 3 'x' is not an integer token id"},
      {"--hf-gpt2 " + kModel + " --ids " + dir.file("real.txt", "1 2.5"),
       "token 2 '2.5' is not an integer token id"},
      {"--hf-gpt2 " + kModel + " --ids " + dir.file("big.txt", "1 2 512 4"),
       "token id 512 (token 3) is out of range for the model's vocabulary [0, 512)"},
      {"--hf-gpt2 " + kModel + " --ids " + dir.file("neg.txt", "1 -2"),
       "token id -2 (token 2) is out of range"},
      {"--hf-gpt2 " + kModel + " --ids " + dir.file("one.txt", " 7 \n"),
       "holds 1 token id(s); the loss needs at least 2"},
      {"--hf-gpt2 " + kModel + " --ids " + dir.file("empty.txt", ""), "holds 0 token id(s)"},
      {"--hf-gpt2 " + kModel + " --ids " + (dir.path / "missing.txt").string(),
       "cannot open --ids file"},
      {"--hf-gpt2 " + kModel + " --ids " + dir.path.string(),
       "is a directory, not a file of token ids"},
      {"--hf-gpt2 " + (dir.path / "missing.safetensors").string() + " --ids " + good,
       "missing.safetensors"},
      {"--ids " + good, "give exactly one of --checkpoint"},
      {"--checkpoint " + kModel + " --hf-gpt2 " + kModel + " --ids " + good,
       "give exactly one of --checkpoint"},
      {"--checkpoint " + kModel + " --ids " + good, "not an attograd checkpoint"},
      // The fixture's config.json says n_head 4: another --n-head is a contradiction.
      {"--hf-gpt2 " + kModel + " --n-head 3 --ids " + good,
       "--n-head 3 contradicts n_head 4 in the config.json beside it"},
      {"--checkpoint " + kModel + " --n-head 4 --ids " + good, "--n-head requires --hf-gpt2"},
      {"--hf-gpt2 " + kModel + " --ids " + good + " --corpus kjv", "--ids excludes --corpus"},
      // A corpus needs GPT-2's BPE (50257 tokens); the fixture's vocabulary is 512.
      {"--hf-gpt2 " + kModel + " --corpus " + dir.file("c.txt", "hello world\n"),
       "tokenizer has 50257 tokens but the model's vocab_size is 512; evaluate token ids with "
       "--ids"},
  };
  for (const Case& c : cases) {
    const Run r = run("eval " + c.args);
    BOOST_TEST_CONTEXT("eval " << c.args << "\n" << r.out) {
      BOOST_TEST(r.exit_code == 2);  // every bad input, usage errors included
      BOOST_TEST(has(r.out, c.needle));
      BOOST_TEST(!has(r.out, "\nloss "));
    }
  }
}

// Like a corpus, an --ids file is read whole: a device is refused at once instead of being read
// until memory runs out (issue 8: `--corpus /dev/zero` ended in "the model ... is too large").
BOOST_AUTO_TEST_CASE(an_ids_device_is_refused_at_once) {
  const Run zero = run("eval --hf-gpt2 " + kModel + " --ids /dev/zero");
  BOOST_TEST_INFO(zero.out);
  BOOST_TEST(zero.exit_code == 2);
  BOOST_TEST(
      zero.out ==
      "attograd: error: --ids file /dev/zero is a character device, not a text file; give a file "
      "of whitespace-separated token ids\n");
}

namespace {

// Writes `model` to `path` in GPT-2's layout (Conv1D weights (in, out)), each name after
// `prefix` ("transformer." as Hugging Face writes them), with `metadata` and extra tensors.
void write_gpt2_file(const std::string& path, const attograd::gpt::GPT& model,
                     const std::string& prefix, const std::map<std::string, std::string>& metadata,
                     const std::vector<std::pair<std::string, attograd::Tensor>>& extra = {}) {
  attograd::nn::SafetensorsWriter w;
  w.metadata = metadata;
  for (const auto& [name, t] : model.named_parameters())
    w.add(prefix + name, attograd::gpt::is_conv1d_weight(name)
                             ? attograd::transpose(t.detach(), 0, 1)
                             : t.detach());
  for (const auto& [name, t] : extra) w.add(name, t);
  w.write(path);
}

// The issue's example model: vocabulary 7, 6 positions, width 4, 2 heads, 1 layer.
attograd::gpt::GPTConfig tiny_config() {
  attograd::gpt::GPTConfig c;
  c.vocab_size = 7;
  c.block_size = 6;
  c.n_embd = 4;
  c.n_head = 2;
  c.n_layer = 1;
  return c;
}

}  // namespace

BOOST_AUTO_TEST_CASE(an_untied_head_is_refused_not_replaced_by_wte) {
  // The issue's example: vocabulary 7, 6 positions, width 4, 2 heads, 1 layer, and a file whose
  // lm_head.weight is -wte. Evaluated with wte as the head it printed a loss (2.27515197 for the
  // reporter's weights) that is not the file's model (2.22378644 with its own head), with no word.
  const TempDir dir("eval_untied");
  const attograd::gpt::GPT model(tiny_config(), 21);
  const attograd::Tensor wte = model.wte->weight.detach();
  dir.file("config.json",
           R"({"n_head": 2, "n_layer": 1, "n_embd": 4, "vocab_size": 7, "n_positions": 6})");
  const std::string ids = dir.file("ids.txt", "3 1 4 1 5 2 6");  // the issue's ids
  const std::string model_path = dir / "model.safetensors";

  // Windows of 6 predictions: ids[0..6) -> ids[1..7), the whole sequence in one window.
  double expected = 0;
  {
    attograd::NoGradGuard no_grad;
    expected = model
                   .forward(attograd::Tensor::from_ids({3, 1, 4, 1, 5, 2}, {1, 6}),
                            attograd::Tensor::from_ids({1, 4, 1, 5, 2, 6}, {1, 6}))
                   .loss.item();
  }
  write_gpt2_file(model_path, model, "transformer.", {{"format", "pt"}});
  const Run plain = run("eval --hf-gpt2 " + model_path + " --ids " + ids);
  BOOST_TEST_INFO(plain.out);
  BOOST_TEST(plain.exit_code == 0);
  BOOST_TEST(std::abs(printed_loss(plain.out) - expected) <= 1e-6);
  // A tied head (lm_head.weight, a copy of wte) is the same model.
  write_gpt2_file(model_path, model, "transformer.", {{"format", "pt"}}, {{"lm_head.weight", wte}});
  const Run tied = run("eval --hf-gpt2 " + model_path + " --ids " + ids);
  BOOST_TEST_INFO(tied.out);
  BOOST_TEST(tied.exit_code == 0);
  BOOST_TEST(printed_loss(tied.out) == printed_loss(plain.out));
  // An untied head is named and refused: no loss of some other model is printed.
  write_gpt2_file(model_path, model, "transformer.", {{"format", "pt"}},
                  {{"lm_head.weight", attograd::neg(wte)}});
  const Run untied = run("eval --hf-gpt2 " + model_path + " --ids " + ids);
  BOOST_TEST_INFO(untied.out);
  BOOST_TEST(untied.exit_code == 2);
  BOOST_TEST(
      has(untied.out,
          "attograd: error: '" + model_path +
              "': lm_head.weight (7, 4) F32 is not a byte-for-byte "
              "copy of transformer.wte.weight (7, 4) F32: the file has an untied output head"));
  BOOST_TEST(!has(untied.out, "\nloss "));
}

BOOST_AUTO_TEST_CASE(values_read_from_files_are_checked_before_they_are_trusted) {
  const TempDir dir("eval_lies");
  const attograd::gpt::GPT model(tiny_config(), 22);
  const std::string ids = dir.file("ids.txt", "3 1 4 1 5 2 6");
  const std::string tokenizer = R"({"data":"abcdefg","kind":"char"})";
  const auto config = [](const std::string& n_layer) {
    return R"({"bias":true,"block_size":6,"dropout":0.0,"n_embd":4,"n_head":2,"n_layer":)" +
           n_layer + R"(,"pos_encoding":"learned","vocab_size":7})";
  };
  const std::string ckpt = dir / "ckpt.safetensors";
  write_gpt2_file(ckpt, model, "", {{"config", config("1")}, {"tokenizer", tokenizer}});
  const Run good = run("eval --checkpoint " + ckpt + " --ids " + ids);
  BOOST_TEST_INFO(good.out);
  BOOST_TEST(good.exit_code == 0);

  // {file, what the error must say}: each exits 2 with one line, quickly, and prints no loss.
  std::vector<std::pair<std::string, std::string>> cases;
  // n_layer 1,000,000 in a valid small checkpoint used to allocate blocks until memory ran out.
  write_gpt2_file(dir / "layers.safetensors", model, "",
                  {{"config", config("1000000")}, {"tokenizer", tokenizer}});
  cases.push_back(
      {dir / "layers.safetensors",
       "checkpoint metadata 'config': n_layer is 1000000, expected an integer in [1, 1024]"});
  // Within the limits but not what the file holds: the config is checked against the tensors.
  write_gpt2_file(dir / "blocks.safetensors", model, "",
                  {{"config", config("1000")}, {"tokenizer", tokenizer}});
  cases.push_back({dir / "blocks.safetensors",
                   "its config says n_layer 1000, but the file holds 1 block(s) (h.0 to h.0)"});
  write_gpt2_file(dir / "real.safetensors", model, "",
                  {{"config", config("3.9")}, {"tokenizer", tokenizer}});
  cases.push_back({dir / "real.safetensors",
                   "checkpoint metadata 'config': n_layer is 3.9, expected an integer"});
  write_gpt2_file(dir / "huge.safetensors", model, "",
                  {{"config", config("18446744073709551615")}, {"tokenizer", tokenizer}});
  cases.push_back(
      {dir / "huge.safetensors", "n_layer is 18446744073709551615, expected an integer"});
  // A metadata value nested 100,000 levels deep used to overflow the stack.
  {
    const std::string header = R"({"__metadata__":{"config":)" + std::string(100'000, '[') +
                               std::string(100'000, ']') + "}}";
    std::ofstream f(dir / "deep.safetensors", std::ios::binary);
    for (int i = 0; i < 8; ++i)
      f.put(static_cast<char>(static_cast<uint64_t>(header.size()) >> (8 * i)));
    f << header;
  }
  cases.push_back({dir / "deep.safetensors", "the header nests deeper than 32 levels"});
  for (const auto& [file, needle] : cases) {
    const Run r = run("eval --checkpoint " + file + " --ids " + ids);
    BOOST_TEST_CONTEXT(file << "\n" << r.out) {
      BOOST_TEST(r.exit_code == 2);
      BOOST_TEST(has(r.out, needle));
      BOOST_TEST(!has(r.out, "\nloss "));
    }
  }
  // A checkpoint's tokenizer that does not fit its model is refused before sampling starts,
  // not found out mid-sample (a sampled id 5 has no character in "abc").
  write_gpt2_file(dir / "tok.safetensors", model, "",
                  {{"config", config("1")}, {"tokenizer", R"({"data":"abc","kind":"char"})"}});
  const Run tok =
      run("sample --checkpoint " + (dir / "tok.safetensors") + " --prompt ab --max-new-tokens 30");
  BOOST_TEST_INFO(tok.out);
  BOOST_TEST(tok.exit_code == 2);
  BOOST_TEST(
      tok.out ==
      "attograd: error: the model's vocab_size 7 does not match its char tokenizer's 3 tokens (" +
          (dir / "tok.safetensors") + ")\n");
  // A config.json that exists but is not JSON is an error that says so, not a fallback.
  std::filesystem::create_directories(dir.path / "hf");
  write_gpt2_file(dir / "hf/model.safetensors", model, "transformer.", {{"format", "pt"}});
  dir.file("hf/config.json", R"({"n_head": 2,)");
  const Run broken = run("eval --hf-gpt2 " + (dir / "hf/model.safetensors") + " --ids " + ids);
  BOOST_TEST_INFO(broken.out);
  BOOST_TEST(broken.exit_code == 2);
  BOOST_TEST(has(broken.out, "config.json' (beside '" + (dir / "hf/model.safetensors") +
                                 "') is not valid JSON"));
}
