// `attograd train --model gpt|bigram|average` in-process (gpt::start, RunRequest::model): the same
// set-up, trainer, logs and checkpoint for each kind, a resumed run keeping its kind, and the
// overrides a kind does not read refused by name. (tests/cli/train_model_kinds_test runs `sample`,
// `eval` and `attention` on such checkpoints.)
#define BOOST_TEST_MODULE model_kinds
#include <boost/test/unit_test.hpp>
#include <filesystem>
#include <sstream>
#include <string>

#include "gpt/model/checkpoint.h"
#include "gpt/train/run.h"
#include "gpt/train/run_dir.h"
#include "tests/gpt/train/train_run.h"
#include "tests/test_util.h"

using namespace attograd::gpt;
namespace nn = attograd::nn;
using namespace attograd::testing;  // the small runs of train_run.h and their checks

BOOST_AUTO_TEST_CASE(each_kind_trains_and_resumes_with_its_kind) {
  const TempDir dir("model_kinds");
  const std::string corpus = write_rhyme(dir);
  const std::pair<ModelKind, const char*> kinds[] = {
      {ModelKind::gpt,
       "model   gpt: n_layer 3, n_head 3, n_embd 6, block_size 8, vocab_size 16, learned "
       "positions: 1686 parameters"},
      {ModelKind::bigram,
       "model   bigram: a 16 x 16 table of logits, block_size 8: 256 parameters"},
      {ModelKind::average,
       "model   average (causal mean of the context, no attention): n_embd 6, block_size 8, "
       "vocab_size 16, learned positions: 156 parameters"}};
  for (const auto& [kind, model_line] : kinds) {
    const std::string name(model_kind_name(kind)), out = dir / name;
    BOOST_TEST_CONTEXT("model " << name) {
      RunRequest rq = femto(corpus, out, 20);
      rq.model = kind;
      rq.config.preset = "pico";
      rq.options.batch_size = 8;
      rq.options.eval_interval = 10;
      rq.options.log_interval = 10;
      rq.options.warmup_steps = 2;
      std::string log;
      train_to_end(rq, &log);
      BOOST_TEST_INFO(log);
      BOOST_TEST(contains(log, model_line));
      BOOST_TEST(contains(log, "eval at step 0: train loss 2.7"));  // untrained: about ln 16
      const std::string eval_log = read_file(out + "/" + RunDir::kEvalLog);
      BOOST_TEST(contains(eval_log, "\n0,"));
      BOOST_TEST(contains(eval_log, "\n20,"));
      BOOST_TEST(read_file(out + "/" + RunDir::kBaselines) ==
                 "name,val_loss\nunigram,2.58979\nbigram,0.971454\n");
      const std::string ckpt = out + "/" + kCheckpointFile;
      BOOST_TEST(nn::SafetensorsFile::read(ckpt).metadata().at("model") == name);

      std::string resumed;
      RunRequest more = resume_to(out, 22);
      more.corpus = corpus;
      BOOST_TEST((train_to_end(more, &resumed)->model().kind() == kind));
      BOOST_TEST(contains(resumed, "resume  step 20 of"));
      BOOST_TEST(contains(resumed, model_line));
    }
  }
}

// An override the model would not read is refused, not silently dropped, and the refused run
// leaves no directory.
BOOST_AUTO_TEST_CASE(bad_model_options_are_refused) {
  const TempDir dir("model_kinds_bad");
  const std::string corpus = write_rhyme(dir), out = dir / "r";
  std::ostringstream log;
  const auto refused = [&](ModelKind kind, auto field, auto value, const std::string& message) {
    RunRequest rq = femto(corpus, out, 1);
    rq.config.preset = "pico";
    rq.model = kind;
    rq.config.set(field, value);
    expect_throw_with<std::invalid_argument>([&] { start(rq, Communicator::world(), log); },
                                             message);
    BOOST_TEST(!std::filesystem::exists(out));
  };
  refused(ModelKind::average, &GPTConfig::pos_encoding, PosEncoding::rope,
          "AverageModel: rope positions rotate queries and keys inside attention, and the "
          "average model has no attention; use --pos-encoding learned or sinusoidal");
  refused(ModelKind::bigram, &GPTConfig::n_layer, int64_t{4},
          "--n-layer does not apply to --model bigram (a table of next-token logits: it reads "
          "only --block-size); drop it, or train --model gpt");
  refused(ModelKind::average, &GPTConfig::n_head, int64_t{2},
          "--n-head does not apply to --model average (embeddings averaged over the context: no "
          "blocks, heads or dropout)");
}

// The average model has no heads: any n_embd is valid for it (pico's 3 heads need not divide 4).
BOOST_AUTO_TEST_CASE(the_average_model_takes_any_width) {
  const TempDir dir("model_kinds_width");
  RunRequest rq = femto(write_rhyme(dir), dir / "r", 1);
  rq.model = ModelKind::average;
  rq.config.preset = "pico";
  rq.config.set(&GPTConfig::n_embd, int64_t{4});
  std::string log;
  train_to_end(rq, &log);
  BOOST_TEST(contains(log,
                      "model   average (causal mean of the context, no attention): n_embd 4, "
                      "block_size 8, vocab_size 16, learned positions: 104 parameters"));
}
