// Setting up and training a run in-process to its last step, as `attograd train` does: shared by
// the tests of gpt/train/run (run_test) and of fine-tuning (tests/cli/finetune_test).
#pragma once

#include <boost/test/unit_test.hpp>
#include <memory>
#include <sstream>
#include <string>

#include "gpt/train/run.h"

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

}  // namespace attograd::testing
