// `sample` and `eval` through the real binary on a checkpoint of each model kind (gpt, bigram,
// average; trained in-process, as tests/gpt/train/model_kinds_test trains and resumes them), the
// commands that need a GPT refusing the others by name, and what `train --model` prints.
#define BOOST_TEST_MODULE train_model_kinds
#include <boost/test/unit_test.hpp>
#include <string>

#include "gpt/train/run.h"
#include "tests/cli/cli_run.h"
#include "tests/gpt/train/train_run.h"

using attograd::testing::contains;
using attograd::testing::run_cli;
using attograd::testing::TempDir;
using attograd::testing::write_rhyme;
namespace gpt = attograd::gpt;

BOOST_AUTO_TEST_CASE(each_kind_samples_and_evaluates) {
  const TempDir dir("model_kinds");
  const std::string corpus = write_rhyme(dir);
  for (const gpt::ModelKind kind :
       {gpt::ModelKind::gpt, gpt::ModelKind::bigram, gpt::ModelKind::average}) {
    const std::string name = gpt::model_kind_name(kind);
    BOOST_TEST_CONTEXT("--model " << name) {
      gpt::RunRequest rq = attograd::testing::femto(corpus, dir / name, 2);
      rq.model = kind;
      rq.config.preset = "pico";
      attograd::testing::train_to_end(rq);
      const std::string ckpt = dir / (name + "/ckpt.safetensors");
      const auto sample = run_cli("sample --checkpoint " + ckpt +
                                  " --prompt one --max-new-tokens 30 --temperature 0");
      BOOST_TEST_INFO(sample.out);
      BOOST_TEST(sample.exit_code == 0);
      BOOST_TEST(contains(sample.out, "=== prompt \"one\" | temperature 0 (greedy) ===\none"));
      const auto eval = run_cli("eval --checkpoint " + ckpt + " --corpus " + corpus);
      BOOST_TEST_INFO(eval.out);
      BOOST_TEST(eval.exit_code == 0);
      BOOST_TEST(contains(eval.out, "corpus.txt: 399 tokens\nloss "));
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
  // A run keeps its kind: --model counts as given on the command line.
  const auto change =
      run_cli("train --model average --resume --out " + dir / "bigram" + " --corpus " + corpus);
  BOOST_TEST(change.exit_code == 2);
  BOOST_TEST(contains(change.out,
                      "--resume continues a run with the model stored in its checkpoint; "
                      "--model cannot be given with it"));
}

// The end of `train`: the final losses against the baselines, for the lecture's models too; the
// parser knows the kinds. (The overrides a kind does not read: model_kinds_test.)
BOOST_AUTO_TEST_CASE(train_says_where_the_model_ends_against_the_baselines) {
  const TempDir dir("model_kinds_said");
  const std::string corpus = write_rhyme(dir);
  const auto r = run_cli("train --model bigram --preset pico --corpus " + corpus + " --out " +
                         (dir / "bigram") +
                         " --steps 20 --batch-size 8 --eval-interval 10 --eval-iters 2 "
                         "--log-interval 10 --warmup 2");
  BOOST_TEST_INFO(r.out);
  BOOST_REQUIRE(r.exit_code == 0);
  BOOST_TEST(contains(r.out, "add-one bigram 0.9715 (perplexity 2.64): the model is ABOVE it by"));
  const auto unknown = run_cli("train --model trigram --corpus " + corpus + " --out " + dir / "r");
  BOOST_TEST(unknown.exit_code == 2);
  BOOST_TEST(contains(unknown.out, "--model: trigram not in {gpt,bigram,average}"));
}
