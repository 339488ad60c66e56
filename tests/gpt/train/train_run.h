// Setting up and training a run in-process to its last step, as `attograd train` does, and the
// requests of small runs: shared by the tests of gpt/train/run (run_test, model_kinds_test), of
// fine-tuning (finetune_test) and of config files (run_config_test), and by the CLI tests that need
// a checkpoint of a run.
#pragma once

#include <boost/test/unit_test.hpp>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <sstream>
#include <string>

#include "gpt/train/run.h"
#include "tests/files.h"

namespace attograd::testing {

/// Sets up `rq` (gpt::start on the world communicator) and trains it to the end, requiring exit
/// code 0 and nothing said on the error stream; the set-up and progress lines go to *log_text
/// when given. Returns the run, which holds the lock on its directory until destroyed.
inline std::unique_ptr<gpt::TrainingRun> train_to_end(const gpt::RunRequest& rq,
                                                      std::string* log_text = nullptr) {
  std::ostringstream log, err;
  std::unique_ptr<gpt::TrainingRun> run = gpt::start(rq, gpt::Communicator::world(), log);
  BOOST_TEST_REQUIRE(run->train(log, err) == 0);
  BOOST_TEST(err.str().empty());
  if (log_text) *log_text = log.str();
  return run;
}

// femto on `corpus` into `out`: tiny, one thread, a few steps, no evaluation until the end.
inline gpt::RunRequest femto(const std::filesystem::path& corpus, const std::filesystem::path& out,
                             int64_t steps) {
  gpt::RunRequest rq;
  rq.out_dir = out.string();
  rq.corpus = corpus.string();
  rq.config.preset = "femto";
  rq.threads = 1;
  rq.options.max_steps = steps;
  rq.options.batch_size = 4;
  rq.options.warmup_steps = 0;
  rq.options.eval_interval = 0;
  rq.options.eval_iters = 2;
  rq.options.log_interval = 1000;
  return rq;
}

// Resumes the run in `out`, extended (or cut) to max_steps.
inline gpt::RunRequest resume_to(const std::filesystem::path& out, int64_t max_steps) {
  gpt::RunRequest rq;
  rq.out_dir = out.string();
  rq.resume = true;
  rq.options.max_steps = max_steps;
  rq.options_given = {"max_steps"};
  rq.threads = 1;
  return rq;
}

/// Writes 4,000 characters (16 distinct) of a counting rhyme to <dir>/corpus.txt, a corpus a
/// bigram model has something to learn from, and returns its path.
inline std::string write_rhyme(const TempDir& dir) {
  std::string text;
  while (text.size() < 4000) text += "one two three four\nfive six seven eight\n";
  return dir.file("corpus.txt", text);
}

}  // namespace attograd::testing
