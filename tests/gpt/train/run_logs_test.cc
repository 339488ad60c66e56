// Tests gpt/train/run_logs: what a resumed run keeps of its CSV logs. (The trainer's own resume,
// with a crash's torn rows, is trainer_test's
// resume_keeps_the_complete_log_rows_up_to_the_checkpoint; arbitrary bytes are the csv_log fuzz
// target's.)
#define BOOST_TEST_MODULE run_logs
#include <boost/test/unit_test.hpp>
#include <filesystem>
#include <fstream>
#include <string>

#include "gpt/train/run_dir.h"
#include "gpt/train/run_logs.h"
#include "tests/files.h"

using namespace attograd::gpt;
namespace fs = std::filesystem;

namespace {

std::string resumed(const std::string& log, const CsvSpec& spec, int64_t step) {
  const fs::path dir = attograd::testing::fresh_temp_dir("run_logs");
  const fs::path path = dir / "log.csv";
  std::ofstream(path, std::ios::binary) << log;
  resume_log(path, spec, step);
  const std::string kept = attograd::testing::read_file(path);
  fs::remove_all(dir);
  return kept;
}

}  // namespace

// attograd before the rewrite on resume appended a resumed run's rows to the old ones: the
// steps after the checkpoint (3 and 4 here, from a checkpoint at 2) appear twice, first from
// the abandoned run. The later rows are the run that went on; each step is kept once.
BOOST_AUTO_TEST_CASE(rows_of_a_restart_replace_those_of_the_abandoned_steps) {
  const std::string header = "step,loss,lr,grad_norm,tokens_per_s\n";
  const std::string log = header +
                          "1,4,0.1,,10\n2,3,0.1,,10\n3,9,0.1,,10\n4,9,0.1,,10\n"  // abandoned 3, 4
                          "3,2.5,0.1,,10\n4,2,0.1,,10\n5,1.5,0.1,,10\n";
  BOOST_TEST(resumed(log, kTrainLog, 5) ==
             header + "1,4,0.1,,10\n2,3,0.1,,10\n3,2.5,0.1,,10\n4,2,0.1,,10\n5,1.5,0.1,,10\n");
  // Resumed at 4: row 5 goes, and the abandoned rows stay replaced.
  BOOST_TEST(resumed(log, kTrainLog, 4) ==
             header + "1,4,0.1,,10\n2,3,0.1,,10\n3,2.5,0.1,,10\n4,2,0.1,,10\n");
}

// A fresh run (step -1) keeps the header alone, as does a run whose log is missing; a log
// that is all header, or holds rows of the other log's shape, keeps none.
BOOST_AUTO_TEST_CASE(nothing_but_the_header_when_no_row_fits) {
  const std::string eval_header = "step,train_loss,val_loss,train_ppl,val_ppl\n";
  BOOST_TEST(resumed(eval_header + "0,4,4,55,55\n", kEvalLog, -1) == eval_header);
  BOOST_TEST(resumed("", kEvalLog, 10) == eval_header);
  BOOST_TEST(resumed("step,loss,lr,grad_norm,tokens_per_s\n1,4,0.1,,10\n", kEvalLog, 10) ==
             eval_header);  // grad_norm may be empty, an eval log's columns may not
  const fs::path dir = attograd::testing::fresh_temp_dir("run_logs_missing");
  resume_log(dir / RunDir::kEvalLog, kEvalLog, 3);
  BOOST_TEST(attograd::testing::read_file(dir / RunDir::kEvalLog) == eval_header);
  fs::remove_all(dir);
}
