// Tests gpt/train/run_logs: what a resumed run keeps of its CSV logs. (The trainer's own resume,
// with a crash's torn rows, is trainer_test's
// resume_keeps_the_complete_log_rows_up_to_the_checkpoint; arbitrary bytes are the csv_log fuzz
// target's.)
#define BOOST_TEST_MODULE run_logs
#include <boost/test/unit_test.hpp>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>

#include "gpt/train/run_dir.h"
#include "gpt/train/run_logs.h"
#include "tests/files.h"
#include "tests/test_util.h"

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
// that is all header, or holds rows with an empty field where only grad_norm may be empty,
// keeps none.
BOOST_AUTO_TEST_CASE(nothing_but_the_header_when_no_row_fits) {
  const std::string eval_header = "step,train_loss,val_loss,train_ppl,val_ppl\n";
  BOOST_TEST(resumed(eval_header + "0,4,4,55,55\n", kEvalLog, -1) == eval_header);
  BOOST_TEST(resumed("", kEvalLog, 10) == eval_header);
  BOOST_TEST(resumed(eval_header + "1,4,0.1,,10\n", kEvalLog, 10) ==
             eval_header);  // grad_norm may be empty, an eval log's columns may not
  const fs::path dir = attograd::testing::fresh_temp_dir("run_logs_missing");
  resume_log(dir / RunDir::kEvalLog, kEvalLog, 3);
  BOOST_TEST(attograd::testing::read_file(dir / RunDir::kEvalLog) == eval_header);
  fs::remove_all(dir);
}

// The rows are read by the names of the file's header: columns moved come back in the trainer's
// order, and columns of the file's own are dropped, which the returned note says. A row is
// complete by the file's own width.
BOOST_AUTO_TEST_CASE(rows_are_read_by_the_names_of_the_files_header) {
  const std::string eval_header = "step,train_loss,val_loss,train_ppl,val_ppl\n";
  const std::string moved =
      "val_loss,step,wall_s,train_ppl,train_loss,val_ppl\n"
      "4.2,0,0.5,60,4.1,66\n3.2,2,1.5,22,3.1,24\n3.2,2,1.5\n3.0,4,,18,2.9,20\n";
  BOOST_TEST(resumed(moved, kEvalLog, 4) ==
             eval_header + "0,4.1,4.2,60,66\n2,3.1,3.2,22,24\n4,2.9,3.0,18,20\n");
  const fs::path dir = attograd::testing::fresh_temp_dir("run_logs_moved");
  std::ofstream(dir / RunDir::kEvalLog, std::ios::binary) << moved;
  BOOST_TEST((lowest_val_loss(dir / RunDir::kEvalLog) == std::optional<double>(3.0)));
  BOOST_TEST(resume_log(dir / RunDir::kEvalLog, kEvalLog, 4) ==
             "eval_log.csv had the columns 'val_loss,step,wall_s,train_ppl,train_loss,val_ppl': "
             "its rows are kept in the trainer's order, "
             "'step,train_loss,val_loss,train_ppl,val_ppl', without the file's own column "
             "'wall_s'");
  // As the trainer writes it: nothing to say, and the same bytes again.
  const std::string rewritten = attograd::testing::read_file(dir / RunDir::kEvalLog);
  BOOST_TEST(resume_log(dir / RunDir::kEvalLog, kEvalLog, 4).empty());
  BOOST_TEST(attograd::testing::read_file(dir / RunDir::kEvalLog) == rewritten);
  fs::remove_all(dir);
}

// A header that lacks one of the trainer's columns (renamed, deleted, or no header at all) or
// names one twice cannot say which field is which: the resume is refused, the file untouched,
// with its name, its header, the column and the fix. A fresh run (step -1) reads nothing and
// starts the log afresh whatever it held.
BOOST_AUTO_TEST_CASE(a_header_without_a_column_is_refused_and_left_as_it_was) {
  const fs::path dir = attograd::testing::fresh_temp_dir("run_logs_refused");
  const fs::path path = dir / RunDir::kTrainLog;
  const std::string fix =
      "; restore the header 'step,loss,lr,grad_norm,tokens_per_s' (the columns in the order of "
      "its rows), or move the log away to resume with a new one";
  const std::pair<std::string, std::string> cases[] = {
      {"step,loss,LR,grad_norm,tokens_per_s\n1,4,0.1,,10\n",
       "is 'step,loss,LR,grad_norm,tokens_per_s', which has no column 'lr'" + fix},
      {"step,loss,tokens_per_s\n1,4,10\n",
       "is 'step,loss,tokens_per_s', which has no column 'lr' or 'grad_norm'" + fix},
      {"1,4,0.1,,10\n2,3,0.1,,10\n",
       "is '1,4,0.1,,10', which has no column 'step', 'loss', 'lr', 'grad_norm' or "
       "'tokens_per_s'" +
           fix},
      {"step,loss,lr,grad_norm,tokens_per_s,loss\n1,4,0.1,,10,4\n",
       "is 'step,loss,lr,grad_norm,tokens_per_s,loss', which names the column 'loss' twice" + fix},
      {"step\tloss\n", "is 'step\\tloss', which has no column"},
  };
  for (const auto& [log, said] : cases) {
    BOOST_TEST_CONTEXT(log) {
      std::ofstream(path, std::ios::binary | std::ios::trunc) << log;
      const std::string expected =
          "cannot resume the log " + path.string() + ": its header (first line) " + said;
      attograd::testing::expect_throw_with<std::runtime_error>(
          [&] { resume_log(path, kTrainLog, 5); }, expected);
      attograd::testing::expect_throw_with<std::runtime_error>(
          [&] { require_log_columns(path, kTrainLog); }, expected);
      BOOST_TEST(attograd::testing::read_file(path) == log);
      BOOST_TEST(resume_log(path, kTrainLog, -1).empty());
      BOOST_TEST(attograd::testing::read_file(path) == std::string(kTrainLog.header) + "\n");
    }
  }
  // Missing and empty files pass: there is nothing to keep.
  fs::remove(path);
  BOOST_CHECK_NO_THROW(require_log_columns(path, kTrainLog));
  std::ofstream(path, std::ios::binary | std::ios::trunc).flush();
  BOOST_CHECK_NO_THROW(require_log_columns(path, kTrainLog));
  BOOST_TEST(resume_log(path, kTrainLog, 5).empty());
  BOOST_TEST(attograd::testing::read_file(path) == std::string(kTrainLog.header) + "\n");
  fs::remove_all(dir);
}

// A log replaced during the run (an editor saves by writing a new file and renaming it over the
// old one) or deleted left RunLogs appending to the unlinked file: every later row was lost.
// Each write now follows the path: the rows land in the file the user sees, in the order of its
// header's names, and a log made anew starts with the header.
BOOST_AUTO_TEST_CASE(rows_follow_a_log_replaced_during_the_run) {
  const fs::path dir = attograd::testing::fresh_temp_dir("run_logs_replaced");
  const RunDir run(dir);
  const auto replace = [&](const fs::path& path, const std::string& text) {
    std::ofstream(dir / "saved.tmp", std::ios::binary) << text;
    fs::rename(dir / "saved.tmp", path);
  };
  const std::string train = std::string(kTrainLog.header) + "\n",
                    eval = std::string(kEvalLog.header) + "\n";
  {
    RunLogs logs(run, 0);
    logs.train_row(1, 4, 0.1, NAN, 10);
    logs.flush();
    BOOST_TEST(attograd::testing::read_file(run.train_log()) == train + "1,4,0.1,,10\n");
    // Saved again as it was: the next rows follow the new file.
    replace(run.train_log(), attograd::testing::read_file(run.train_log()));
    logs.train_row(2, 3, 0.1, NAN, 10);
    logs.flush();
    BOOST_TEST(attograd::testing::read_file(run.train_log()) ==
               train + "1,4,0.1,,10\n2,3,0.1,,10\n");
    // Saved by a spreadsheet with two columns swapped and one of its own: its order, by name.
    const std::string moved = "step,lr,loss,grad_norm,tokens_per_s,mine\n1,0.1,4,,10,x\n";
    replace(run.train_log(), moved);
    logs.train_row(3, 2.5, 0.1, 1.5, 10);
    logs.flush();
    BOOST_TEST(attograd::testing::read_file(run.train_log()) == moved + "3,0.1,2.5,1.5,10,\n");
    // Deleted: made again, header first.
    fs::remove(run.train_log());
    logs.train_row(4, 2, 0.1, NAN, 10);
    logs.sync();
    BOOST_TEST(attograd::testing::read_file(run.train_log()) == train + "4,2,0.1,,10\n");
    // The eval log, whose rows are written at once, the same way.
    logs.eval_row(0, 4, 4.5, 55, 90);
    replace(run.eval_log(), attograd::testing::read_file(run.eval_log()));
    logs.eval_row(2, 3, 3.5, 20, 33);
    BOOST_TEST(attograd::testing::read_file(run.eval_log()) ==
               eval + "0,4,4.5,55,90\n2,3,3.5,20,33\n");
    // A symbolic link put there is refused, as at the start, never written through.
    std::ofstream(dir / "elsewhere.csv") << "x\n";
    fs::remove(run.train_log());
    fs::create_symlink(dir / "elsewhere.csv", run.train_log());
    logs.train_row(5, 1.5, 0.1, NAN, 10);
    attograd::testing::expect_throw_with<std::runtime_error>(
        [&] { logs.flush(); },
        "cannot write the log " + run.train_log().string() +
            ": it was replaced by a symbolic link during the run; remove it, or choose another "
            "--out");
    fs::remove(run.train_log());
  }
  BOOST_TEST(attograd::testing::read_file(dir / "elsewhere.csv") == "x\n");
  fs::remove_all(dir);
}
