// `attograd train --model gpt|bigram|average`, end to end through the real binary: the same
// trainer, logs and checkpoint for each kind, then `sample` and `eval` on each checkpoint, and
// the commands that need a GPT refusing the others by name.
#define BOOST_TEST_MODULE train_model_kinds
#include <boost/test/unit_test.hpp>
#include <fstream>
#include <string>

#include "gpt/model/checkpoint.h"
#include "tests/cli/cli_run.h"

using attograd::testing::contains;
using attograd::testing::run_cli;
using attograd::testing::TempDir;

namespace {

// 4,000 characters (16 distinct) of a counting rhyme: a bigram model has something to learn.
std::string write_rhyme(const TempDir& dir) {
  std::string text;
  while (text.size() < 4000) text += "one two three four\nfive six seven eight\n";
  return dir.file("corpus.txt", text);
}

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

}  // namespace

BOOST_AUTO_TEST_CASE(each_kind_trains_samples_and_evaluates) {
  const TempDir dir("model_kinds");
  const std::string corpus = write_rhyme(dir);
  const std::pair<const char*, const char*> kinds[] = {
      {"gpt",
       "model   gpt: n_layer 3, n_head 3, n_embd 6, block_size 8, vocab_size 16, learned "
       "positions: 1686 parameters"},
      {"bigram", "model   bigram: a 16 x 16 table of logits, block_size 8: 256 parameters"},
      {"average",
       "model   average (causal mean of the context, no attention): n_embd 6, block_size 8, "
       "vocab_size 16, "
       "learned positions: 156 parameters"}};
  for (const auto& [kind, model_line] : kinds) {
    BOOST_TEST_CONTEXT("--model " << kind) {
      const std::string out = dir / kind;
      const auto r = run_cli(std::string("train --model ") + kind + " --preset pico --corpus " +
                             corpus + " --out " + out +
                             " --steps 20 --batch-size 8 --eval-interval 10 --eval-iters 2 "
                             "--log-interval 10 --warmup 2");
      BOOST_TEST_INFO(r.out);
      BOOST_REQUIRE(r.exit_code == 0);
      BOOST_TEST(contains(r.out, model_line));
      BOOST_TEST(
          contains(r.out, "eval at step 0: train loss 2.7"));  // untrained: about ln 16 = 2.773
      BOOST_TEST(
          contains(r.out, "add-one bigram 0.9715 (perplexity 2.64): the model is ABOVE it by"));
      const std::string eval_log = read_text(out + "/eval_log.csv");
      BOOST_TEST(eval_log.find("\n0,") != std::string::npos);
      BOOST_TEST(eval_log.find("\n20,") != std::string::npos);
      BOOST_TEST(read_text(out + "/baselines.csv") ==
                 "name,val_loss\nunigram,2.58979\nbigram,0.971454\n");
      const std::string ckpt = out + "/ckpt.safetensors";
      BOOST_TEST(attograd::gpt::SafetensorsFile::read(ckpt).metadata().at("model") == kind);

      const auto sample = run_cli("sample --checkpoint " + ckpt +
                                  " --prompt one --max-new-tokens 30 --temperature 0");
      BOOST_TEST_INFO(sample.out);
      BOOST_TEST(sample.exit_code == 0);
      BOOST_TEST(contains(sample.out, "=== prompt \"one\" | temperature 0 (greedy) ===\none"));
      const auto eval = run_cli("eval --checkpoint " + ckpt + " --corpus " + corpus);
      BOOST_TEST_INFO(eval.out);
      BOOST_TEST(eval.exit_code == 0);
      BOOST_TEST(contains(eval.out, "corpus.txt: 399 tokens\nloss "));
      const auto resumed =
          run_cli("train --resume --out " + out + " --corpus " + corpus + " --steps 22");
      BOOST_TEST_INFO(resumed.out);
      BOOST_TEST(resumed.exit_code == 0);
      BOOST_TEST(contains(resumed.out, "resume  step 20 of"));
      BOOST_TEST(contains(resumed.out, model_line));
    }
  }
  // The commands that read a GPT's attention refuse the other kinds by name.
  const auto attention = run_cli("attention --checkpoint " + dir / "bigram/ckpt.safetensors" +
                                 " --prompt one --out " + dir / "maps");
  BOOST_TEST(attention.exit_code == 2);
  BOOST_TEST(
      contains(attention.out,
               "ckpt.safetensors' holds a bigram model (checkpoint metadata 'model'), not a GPT; "
               "this needs a GPT checkpoint (sample and eval take every model kind)"));
  // A run keeps its kind.
  const auto change =
      run_cli("train --model average --resume --out " + dir / "bigram" + " --corpus " + corpus);
  BOOST_TEST(change.exit_code == 2);
  BOOST_TEST(contains(change.out,
                      "--resume continues a run with the model stored in its checkpoint; "
                      "--model cannot be given with it"));
}

BOOST_AUTO_TEST_CASE(bad_model_options_are_refused) {
  const TempDir dir("model_kinds_bad");
  const std::string corpus = write_rhyme(dir);
  const auto unknown = run_cli("train --model trigram --corpus " + corpus + " --out " + dir / "r");
  BOOST_TEST(unknown.exit_code == 2);
  BOOST_TEST(contains(unknown.out, "--model: trigram not in {gpt,bigram,average}"));
  const auto rope = run_cli("train --model average --pos-encoding rope --corpus " + corpus +
                            " --out " + dir / "r");
  BOOST_TEST(rope.exit_code == 2);
  BOOST_TEST(
      contains(rope.out,
               "attograd: error: AverageModel: rope positions rotate queries and keys inside "
               "attention, and the average model has no attention; use --pos-encoding learned or "
               "sinusoidal"));
  // An override the model would not read is refused, not silently dropped.
  const auto layers =
      run_cli("train --model bigram --n-layer 4 --corpus " + corpus + " --out " + dir / "r");
  BOOST_TEST(layers.exit_code == 2);
  BOOST_TEST(contains(layers.out,
                      "attograd: error: --n-layer does not apply to --model bigram (a table of "
                      "next-token logits: it reads only --block-size); drop it, or train --model "
                      "gpt"));
  const auto heads =
      run_cli("train --model average --n-head 2 --corpus " + corpus + " --out " + dir / "r");
  BOOST_TEST(heads.exit_code == 2);
  BOOST_TEST(contains(heads.out,
                      "--n-head does not apply to --model average (embeddings averaged "
                      "over the context: no blocks, heads or dropout)"));
  BOOST_TEST(!std::filesystem::exists(dir / "unused"));
}

// The average model has no heads: any --n-embd is valid for it (pico's 3 heads need not divide 4).
BOOST_AUTO_TEST_CASE(the_average_model_takes_any_width) {
  const TempDir dir("model_kinds_width");
  const auto r = run_cli("train --model average --n-embd 4 --steps 1 --eval-iters 1 --corpus " +
                         write_rhyme(dir) + " --out " + dir / "r");
  BOOST_TEST_INFO(r.out);
  BOOST_TEST(r.exit_code == 0);
  BOOST_TEST(contains(r.out,
                      "model   average (causal mean of the context, no attention): n_embd 4, "
                      "block_size 8, vocab_size 16, learned positions: 104 parameters"));
}
