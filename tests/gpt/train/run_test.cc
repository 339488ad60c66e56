// Tests gpt/train/run: a training run set up in-process as `attograd train` sets it up, fresh and
// resumed, on small corpora written here; what the CLI tests once checked through the binary.
// Each case asserts what the run computed (baselines, schedules, losses bit for bit) or the
// exact refusal it must give.
#define BOOST_TEST_MODULE run
#include <sys/stat.h>

#include <algorithm>
#include <boost/test/unit_test.hpp>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "gpt/io/sha256.h"
#include "gpt/model/checkpoint.h"
#include "gpt/train/run.h"
#include "gpt/train/run_config.h"
#include "gpt/train/run_dir.h"
#include "gpt/train/run_logs.h"
#include "nn/io/atomic_file.h"
#include "tests/gpt/train/train_run.h"
#include "tests/test_util.h"

using namespace attograd;
using namespace attograd::gpt;
using attograd::testing::contains;
using attograd::testing::expect_throw_with;
using attograd::testing::femto;
using attograd::testing::resume_to;
using attograd::testing::train_to_end;

namespace {

std::filesystem::path temp_dir(const std::string& name) {
  return attograd::testing::fresh_temp_dir("run_" + name);
}

void write(const std::filesystem::path& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

// "ab" repeated: two symbols, equally frequent in every even-length stretch, so the unigram
// entropy of the val split is ln 2 exactly.
std::string alternating(size_t pairs) {
  std::string s;
  for (size_t i = 0; i < pairs; ++i) s += "ab";
  return s;
}

// 200 lines of "to be or not to be, that is the question." (8,400 bytes and 16 characters with LF
// line ends), the corpus the CLI's tests train on.
std::string to_be(const std::string& line_end = "\n") {
  std::string s;
  for (int i = 0; i < 200; ++i) s += "to be or not to be, that is the question." + line_end;
  return s;
}

}  // namespace

BOOST_AUTO_TEST_CASE(a_fresh_run_sets_up_says_what_it_did_and_trains) {
  const auto dir = temp_dir("fresh");
  write(dir / "ab.txt", alternating(200));
  std::string log;
  const auto run = train_to_end(femto(dir / "ab.txt", dir / "out", 3), &log);
  // The char tokenizer of a two-letter corpus, femto's sizes around it (config.h's table).
  BOOST_TEST(run->tokenizer().vocab_size() == 2);
  BOOST_TEST(run->model().config().n_embd == 2);
  BOOST_TEST(log.find("model   gpt: n_layer 1, n_head 1, n_embd 2, block_size 8, vocab_size 2") !=
             std::string::npos);
  BOOST_TEST(log.find("tokens  char tokenizer (vocab 2): 400 tokens") != std::string::npos);
  // Both symbols equally frequent in the val split (the last 40 tokens): ln 2.
  BOOST_TEST(run->baselines().unigram == std::log(2.0), boost::test_tools::tolerance(1e-12));
  // The add-one bigram on a strict alternation: each next symbol has count n + 1 of n + 2.
  BOOST_TEST(run->baselines().bigram < 0.01);
  // Counted once (prepare.h), printed, and written for the loss plot.
  BOOST_TEST(log.find("baselines on val: uniform 0.6931, unigram 0.6931") != std::string::npos);
  BOOST_TEST(attograd::testing::read_file(dir / "out" / RunDir::kBaselines) ==
             run->baselines().csv());
  BOOST_TEST(run->baselines().csv().starts_with("name,val_loss\nunigram,0.693147\nbigram,"));
  BOOST_TEST(std::isfinite(run->result().val_loss));
  BOOST_TEST(std::filesystem::exists(run->checkpoint_path()));
  BOOST_TEST(run->options().corpus ==
             std::filesystem::absolute(dir / "ab.txt").lexically_normal().string());
}

BOOST_AUTO_TEST_CASE(a_resumed_run_is_bit_exact_and_keeps_its_schedule_end) {
  const auto dir = temp_dir("resume");
  write(dir / "ab.txt", alternating(200));
  auto whole = train_to_end(femto(dir / "ab.txt", dir / "whole", 6));
  const double whole_loss = whole->result().val_loss;
  whole.reset();  // its lock on the run directory goes with it

  RunRequest first = femto(dir / "ab.txt", dir / "halves", 3);
  first.options.lr_decay_steps = 6;  // the schedule of the whole run, cut in two
  train_to_end(first);
  // The second half evaluates, checkpoints and logs at every step: that changes no number.
  RunRequest second = resume_to(dir / "halves", 6);
  second.options.eval_interval = 1, second.options.checkpoint_interval = 1;
  second.options.log_interval = 1;
  second.options_given.insert({"eval_interval", "checkpoint_interval", "log_interval"});
  std::string second_log;
  const auto resumed = train_to_end(second, &second_log);
  BOOST_TEST(second_log.find("resume  step 3 of " + (dir / "halves" / kCheckpointFile).string()) !=
             std::string::npos);
  BOOST_TEST(second_log.find("step 5/6") != std::string::npos);
  BOOST_TEST(resumed->options().eval_interval == 1);
  BOOST_TEST(resumed->options().max_steps == 6);
  BOOST_TEST(resumed->options().lr_decay_steps == 6);
  BOOST_TEST(resumed->result().val_loss == whole_loss);  // bit for bit

  // Extending a run whose decay followed max_steps (0) pins the decay to the old end: past it
  // the rate stays at min_lr (1e-3), not a jump back up.
  RunRequest extend = resume_to(dir / "whole", 8);
  extend.options.log_interval = 1;
  extend.options_given.insert("log_interval");
  std::string extended_log;
  const auto extended = train_to_end(extend, &extended_log);
  BOOST_TEST(extended->options().lr_decay_steps == 6);
  BOOST_TEST(extended->options().max_steps == 8);
  const size_t step7 = extended_log.find("step 7/8 | loss ");
  BOOST_REQUIRE(step7 != std::string::npos);
  BOOST_TEST(extended_log.substr(step7, extended_log.find('\n', step7) - step7)
                 .find(" | lr 1.00e-03 | ") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(resume_refuses_a_changed_or_different_corpus) {
  const auto dir = temp_dir("corpus");
  write(dir / "ab.txt", alternating(200));
  write(dir / "other.txt", alternating(199) + "ba");
  train_to_end(femto(dir / "ab.txt", dir / "out", 2));
  RunRequest rq = resume_to(dir / "out", 2);
  rq.options_given.clear();
  std::ostringstream log;
  RunRequest other = rq;
  other.corpus = (dir / "other.txt").string();
  // Each message names the files and the fix; the checkpoint records the text's sha256.
  const std::string corpus = (dir / "ab.txt").string();
  const std::string ckpt = (dir / "out" / kCheckpointFile).string();
  const std::string sha = "(sha256 " + sha256_hex(alternating(200)).substr(0, 16) + "...)";
  expect_throw_with<std::invalid_argument>(
      [&] { start(other, Communicator::world(), log); },
      "this run was trained on corpus '" + corpus + "' " + sha + ", not on '" + *other.corpus +
          "'; pass the same --corpus to resume it, or none to use the recorded one");
  // A name with a newline and an escape byte is one printable line in the message.
  write(dir / "o\nt\x1b[31m.txt", alternating(199) + "ba");
  other.corpus = (dir / "o\nt\x1b[31m.txt").string();
  expect_throw_with<std::invalid_argument>(
      [&] { start(other, Communicator::world(), log); },
      ", not on '" + (dir / "o\\nt\\x1b[31m.txt").string() + "'; pass the same --corpus");
  write(dir / "ab.txt", alternating(199) + "ba");  // the recorded file, changed since
  expect_throw_with<std::invalid_argument>(
      [&] { start(rq, Communicator::world(), log); },
      "the corpus '" + corpus + "' recorded in " + ckpt +
          " has changed since the run was trained on it " + sha +
          "; restore it, or pass --corpus with the text it had");
  std::filesystem::remove(dir / "ab.txt");
  expect_throw_with<std::runtime_error>(
      [&] { start(rq, Communicator::world(), log); },
      "the corpus recorded in " + ckpt + ": corpus file " + corpus +
          " does not exist; pass kjv, shakespeare or the path of a UTF-8 text file; or pass "
          "--corpus with the same text");
  RunRequest gpt2 = rq;
  gpt2.tokenizer = "gpt2";
  expect_throw_with<std::invalid_argument>([&] { start(gpt2, Communicator::world(), log); },
                                           "drop --tokenizer when resuming");
}

// The corpus moved, the same text: --resume --corpus <new path> continues, and the continued
// run records the new path (its checkpoint, and so its run.json), so that the next --resume needs
// no --corpus (a newcomer's finding, issue 33: the old, gone path stayed recorded).
BOOST_AUTO_TEST_CASE(a_resume_from_a_moved_corpus_records_its_new_path) {
  const auto dir = temp_dir("moved");
  write(dir / "ab.txt", alternating(200));
  train_to_end(femto(dir / "ab.txt", dir / "out", 2));
  std::filesystem::rename(dir / "ab.txt", dir / "moved.txt");
  RunRequest rq = resume_to(dir / "out", 3);
  rq.corpus = (dir / "moved.txt").string();
  BOOST_TEST(train_to_end(rq)->options().corpus == (dir / "moved.txt").string());
  RunRequest again = resume_to(dir / "out", 4);  // no --corpus: the recorded, new path
  BOOST_TEST(train_to_end(again)->options().corpus == (dir / "moved.txt").string());
}

BOOST_AUTO_TEST_CASE(the_run_directory_is_guarded) {
  const auto dir = temp_dir("dir");
  write(dir / "ab.txt", alternating(200));
  std::ostringstream log;
  {
    // A second run into the same directory while the first is set up.
    const auto first = start(femto(dir / "ab.txt", dir / "out", 2), Communicator::world(), log);
    RunRequest again = femto(dir / "ab.txt", dir / "out", 2);
    again.overwrite = true;
    expect_throw_with<std::invalid_argument>([&] { start(again, Communicator::world(), log); },
                                             "is writing to");
  }
  // The lock goes with the run: now a run may start there (its files are replaced), and again:
  // the logs start afresh, with one step-0 evaluation, not one per run.
  RunRequest overwrite = femto(dir / "ab.txt", dir / "out", 2);
  overwrite.overwrite = true;
  overwrite.options.eval_interval = 1;
  train_to_end(overwrite);
  train_to_end(overwrite);
  const std::string evals = attograd::testing::read_file(dir / "out" / RunDir::kEvalLog);
  BOOST_TEST(evals.find("\n0,") != std::string::npos);
  BOOST_TEST(evals.find("\n0,") == evals.rfind("\n0,"));
  // A fresh run refuses a directory holding a checkpoint, or files but no checkpoint.
  expect_throw_with<std::invalid_argument>(
      [&] { start(femto(dir / "ab.txt", dir / "out", 2), Communicator::world(), log); },
      "already exists: pass --resume to continue that run, --overwrite to start over");
  // Logs but no checkpoint (a run killed before its first save) are not written over without
  // overwrite; with it, files that are not ours stay.
  const std::string rows = "step,loss,lr,grad_norm,tokens_per_s\n1,4,1,1,1\n";
  std::filesystem::create_directories(dir / "busy");
  write(dir / "busy" / "notes.txt", "mine");
  write(dir / "busy" / RunDir::kTrainLog, rows);
  expect_throw_with<std::invalid_argument>(
      [&] { start(femto(dir / "ab.txt", dir / "busy", 2), Communicator::world(), log); },
      "--out " + (dir / "busy").string() +
          " already holds notes.txt, train_log.csv but no checkpoint: pass --overwrite to start "
          "a run there");
  BOOST_TEST(attograd::testing::read_file(dir / "busy" / RunDir::kTrainLog) == rows);
  RunRequest busy = femto(dir / "ab.txt", dir / "busy", 2);
  busy.overwrite = true;
  train_to_end(busy);
  BOOST_TEST(attograd::testing::read_file(dir / "busy" / "notes.txt") == "mine");
  // A file as --out, and a .lock that is a symlink (it would have us create the file it names).
  expect_throw_with<std::invalid_argument>(
      [&] { start(femto(dir / "ab.txt", dir / "ab.txt", 2), Communicator::world(), log); },
      "--out " + (dir / "ab.txt").string() + " exists and is not a directory");
  std::filesystem::create_directories(dir / "linked");
  std::filesystem::create_symlink(dir / "elsewhere", dir / "linked" / RunDir::kLock);
  expect_throw_with<std::invalid_argument>(
      [&] { start(femto(dir / "ab.txt", dir / "linked", 2), Communicator::world(), log); },
      "--out " + (dir / "linked").string() + ": .lock is a symbolic link, which a run never makes");
  BOOST_TEST(!std::filesystem::exists(dir / "elsewhere"));
  // Nothing to resume.
  const RunRequest resume = resume_to(dir / "empty", 2);
  // resume_run's message, the one there is; its hint about --out only when --out is absent (the
  // default_dir case below).
  try {
    start(resume, Communicator::world(), log);
    BOOST_FAIL("resumed a run that does not exist");
  } catch (const std::invalid_argument& e) {
    BOOST_TEST(std::string(e.what()) ==
               "nothing to resume: " + (dir / "empty" / kCheckpointFile).string() +
                   " does not exist");
  }
}

// A newcomer's finding: `train --overwrite` killed before its first checkpoint left the old
// run's checkpoint under its own run.json and logs, and `--resume` continued the old run into
// them. A run refused at its set-up leaves the old run whole; one that trains removes the old
// run's checkpoints and plots first, so nothing of it is left to resume (here the new run dies
// at step 1, diverged, before any checkpoint).
BOOST_AUTO_TEST_CASE(an_overwriting_run_leaves_no_old_checkpoint_to_mix_with_its_own_files) {
  const auto dir = temp_dir("overwrite");
  write(dir / "to_be.txt", to_be());
  const std::filesystem::path out = dir / "o1";
  RunRequest pico = femto(dir / "to_be.txt", out, 4);
  pico.config.preset = "pico";
  pico.options.eval_interval = 2;
  train_to_end(pico);
  write(out / "loss.svg", "<svg/>");  // as gnuplot would have drawn it
  write(out / "notes.txt", "mine");
  BOOST_REQUIRE(std::filesystem::exists(out / RunDir::kBestCheckpoint));
  RunRequest femto_run = femto(dir / "to_be.txt", out, 100000);
  femto_run.overwrite = true;
  femto_run.options.eval_interval = 1;
  femto_run.options.learning_rate = 1e30;  // the evaluation after step 1 is NaN: no checkpoint
  femto_run.options.min_lr = 0;
  std::ostringstream log, err;
  // Refused at its set-up (no such corpus): the old run is untouched, and resumes.
  RunRequest refused = femto_run;
  refused.corpus = (dir / "missing.txt").string();
  expect_throw_with<std::runtime_error>([&] { start(refused, Communicator::world(), log); },
                                        "missing.txt does not exist");
  BOOST_TEST(read_checkpoint_info(nn::SafetensorsFile::read((out / kCheckpointFile).string()),
                                  Moments::skip)
                 .training->step == 4);
  BOOST_TEST(std::filesystem::exists(out / RunDir::kBestCheckpoint));

  BOOST_TEST(start(femto_run, Communicator::world(), log)->train(log, err) == 1);
  BOOST_TEST_INFO(err.str());
  BOOST_TEST(contains(err.str(), "no checkpoint of this run was written\n"));
  BOOST_TEST(!contains(err.str(), "is from an earlier run"));
  for (const char* gone : {kCheckpointFile, RunDir::kBestCheckpoint, "loss.svg"})
    BOOST_TEST(!std::filesystem::exists(out / gone), gone << " is left");
  BOOST_TEST(attograd::testing::read_file(out / "notes.txt") == "mine");
  BOOST_TEST(contains(attograd::testing::read_file(out / RunDir::kConfig), "\"femto\""));
  BOOST_TEST(attograd::testing::read_file(out / RunDir::kEvalLog)
                 .starts_with(std::string(kEvalLog.header) + "\n0,"));
  try {
    start(resume_to(out, 150), Communicator::world(), log);
    BOOST_FAIL("resumed the replaced run");
  } catch (const std::invalid_argument& e) {
    BOOST_TEST(std::string(e.what()) ==
               "nothing to resume: " + (out / kCheckpointFile).string() + " does not exist");
  }
}

// A resumed run whose log cannot be read by its header's names is refused at its set-up, before
// the corpus is read or the model built (here the corpus is gone too: the log is named first), with
// both logs as they were.
BOOST_AUTO_TEST_CASE(a_log_that_cannot_be_resumed_is_refused_before_the_corpus_is_read) {
  const auto dir = temp_dir("log_header");
  write(dir / "ab.txt", alternating(200));
  train_to_end(femto(dir / "ab.txt", dir / "out", 2));
  const std::filesystem::path train_log = dir / "out" / RunDir::kTrainLog;
  std::string text = attograd::testing::read_file(train_log);
  BOOST_REQUIRE(text.starts_with("step,loss,lr,"));
  text.replace(0, 4, "STEP");
  write(train_log, text);
  const std::string eval = attograd::testing::read_file(dir / "out" / RunDir::kEvalLog);
  std::filesystem::remove(dir / "ab.txt");
  std::ostringstream log;
  expect_throw_with<std::runtime_error>(
      [&] { start(resume_to(dir / "out", 4), Communicator::world(), log); },
      "cannot resume the log " + train_log.string() +
          ": its header (first line) is 'STEP,loss,lr,grad_norm,tokens_per_s', which has no "
          "column 'step'; restore the header 'step,loss,lr,grad_norm,tokens_per_s'");
  BOOST_TEST(attograd::testing::read_file(train_log) == text);
  BOOST_TEST(attograd::testing::read_file(dir / "out" / RunDir::kEvalLog) == eval);
  BOOST_TEST(!contains(log.str(), "corpus"));
}

BOOST_AUTO_TEST_CASE(a_corpus_too_short_for_a_window_is_refused_before_training) {
  const auto dir = temp_dir("short");
  write(dir / "ab.txt", alternating(20));  // 40 tokens: the val split holds 4, a window needs 9
  std::ostringstream log;
  expect_throw_with<std::invalid_argument>(
      [&] { start(femto(dir / "ab.txt", dir / "out", 2), Communicator::world(), log); },
      "the corpus is too short: its val split has 4 tokens, but a window of block_size 8 "
      "needs 9");
  RunRequest bigram = femto(dir / "ab.txt", dir / "out2", 2);
  bigram.model = ModelKind::bigram;
  bigram.config.set(&GPTConfig::n_layer, int64_t{2});  // a bigram has no blocks
  expect_throw_with<std::invalid_argument>([&] { start(bigram, Communicator::world(), log); },
                                           "--n-layer does not apply to --model bigram");
}

// A new model's sizes are checked before the corpus is read (a large corpus takes minutes to
// read and tokenize): with no corpus file at all, n_head 4 and n_embd 6 are what is refused, as
// the ConfigRuleError the CLI turns into its own message, and no run directory is made. The
// parameter count, which needs the tokenizer's vocabulary, is still checked after it.
BOOST_AUTO_TEST_CASE(a_config_that_breaks_a_rule_is_refused_before_the_corpus_is_read) {
  const auto dir = temp_dir("config_first");
  RunRequest rq = femto(dir / "missing.txt", dir / "out", 2);
  rq.config.preset = "pico";
  rq.config.set(&GPTConfig::n_head, int64_t{4});
  std::ostringstream log;
  try {
    start(rq, Communicator::world(), log);
    BOOST_ERROR("a config with n_head 4 and n_embd 6 was accepted");
  } catch (const ConfigRuleError& e) {
    BOOST_TEST((e.rule() == ConfigRule::head_divides_embd));
    BOOST_TEST(e.config().n_embd == 6);
    BOOST_TEST(std::string(e.what()) ==
               "GPTConfig: n_head 4 must divide n_embd 6 (head_dim = n_embd / n_head)");
  }
  BOOST_TEST(!contains(log.str(), "corpus"));
  BOOST_TEST(!std::filesystem::exists(dir / "out"));
  // A bigram given a GPT size is refused for that first, as prepare_new would.
  RunRequest bigram = femto(dir / "missing.txt", dir / "out", 2);
  bigram.model = ModelKind::bigram;
  bigram.config.set(&GPTConfig::n_head, int64_t{4});
  expect_throw_with<std::invalid_argument>([&] { start(bigram, Communicator::world(), log); },
                                           "--n-head does not apply to --model bigram");
  // The average model refuses rope before asking for an even n_embd, which would not help.
  RunRequest average = femto(dir / "missing.txt", dir / "out", 2);
  average.model = ModelKind::average;
  average.config.set(&GPTConfig::n_embd, int64_t{5});
  average.config.set(&GPTConfig::pos_encoding, PosEncoding::rope);
  expect_throw_with<std::invalid_argument>(
      [&] { start(average, Communicator::world(), log); },
      "AverageModel: rope positions rotate queries and keys inside attention, and the average "
      "model has no attention; use --pos-encoding learned or sinusoidal");
  // With the sizes right, the missing corpus is what is refused.
  expect_throw_with<std::runtime_error>(
      [&] { start(femto(dir / "missing.txt", dir / "out", 2), Communicator::world(), log); },
      "does not exist");
}

// RunRequest's table holds its ranges, so a program that fills a request in gets the CLI's
// refusals, before a directory is made: an unknown tokenizer, a control character in the output
// path, too many threads, and a training option a resumed run may not change.
BOOST_AUTO_TEST_CASE(a_request_is_checked_against_its_table_before_anything_is_made) {
  const auto dir = temp_dir("request");
  write(dir / "ab.txt", alternating(200));
  std::ostringstream log;
  RunRequest bad_tokenizer = femto(dir / "ab.txt", dir / "a", 2);
  bad_tokenizer.tokenizer = "bytes";
  expect_throw_with<std::invalid_argument>(
      [&] { start(bad_tokenizer, Communicator::world(), log); },
      "train: tokenizer must be char or gpt2, got 'bytes'");
  RunRequest bad_out = femto(dir / "ab.txt", dir / "b\nc", 2);
  expect_throw_with<std::invalid_argument>([&] { start(bad_out, Communicator::world(), log); },
                                           "train: out_dir: the path \"" +
                                               (dir / "b\\nc").string() +
                                               "\" holds a control character (U+000A)");
  // A C1 control (U+0085, NEL) and bytes that are not UTF-8 print no better than a newline.
  RunRequest c1 = femto(dir / "ab.txt",
                        dir /
                            "e\xc2\x85"
                            "f",
                        2);
  expect_throw_with<std::invalid_argument>([&] { start(c1, Communicator::world(), log); },
                                           "holds a control character (U+0085)");
  RunRequest not_utf8 = femto(dir / "ab.txt", dir / "bad\xffname", 2);
  expect_throw_with<std::invalid_argument>([&] { start(not_utf8, Communicator::world(), log); },
                                           "is not valid UTF-8");
  RunRequest many_threads = femto(dir / "ab.txt", dir / "d", 2);
  many_threads.threads = max_threads() + 1;
  expect_throw_with<std::invalid_argument>(
      [&] { start(many_threads, Communicator::world(), log); },
      "train: threads must be in [0, " + std::to_string(max_threads()) + "]");
  BOOST_TEST(!std::filesystem::exists(dir / "a"));
  BOOST_TEST(!std::filesystem::exists(dir / "b\nc"));
  BOOST_TEST(!std::filesystem::exists(dir / "d"));

  train_to_end(femto(dir / "ab.txt", dir / "run", 2));
  RunRequest new_lr = resume_to(dir / "run", 2);
  new_lr.options.learning_rate = 0.5;
  new_lr.options_given.insert("learning_rate");
  expect_throw_with<std::invalid_argument>(
      [&] { start(new_lr, Communicator::world(), log); },
      "--resume continues a run with the options stored in its checkpoint, and learning_rate "
      "(--lr) is 0.01 in its checkpoint; give the same value or leave it out (only max_steps "
      "(--steps), eval_interval (--eval-interval), eval_early (--eval-early), "
      "checkpoint_interval (--checkpoint-interval) or log_interval (--log-interval) may change)");
  new_lr.options.learning_rate = 0.01;  // the value it was trained with: nothing changes
  BOOST_CHECK_NO_THROW(start(new_lr, Communicator::world(), log));
  // The products' precision changes the weights a step trains to: kept, by its name.
  RunRequest bf16 = resume_to(dir / "run", 2);
  bf16.options.mixed_precision = MatmulPrecision::bf16;
  bf16.options_given.insert("mixed_precision");
  expect_throw_with<std::invalid_argument>(
      [&] { start(bf16, Communicator::world(), log); },
      "and mixed_precision (--mixed-precision) is \"f32\" in its checkpoint; give the same value");
  RunRequest unknown = resume_to(dir / "run", 2);
  unknown.options_given.insert("lr");
  expect_throw_with<std::invalid_argument>([&] { start(unknown, Communicator::world(), log); },
                                           "options_given names 'lr', which is not a training");
  RunRequest no_steps = resume_to(dir / "run", 0);
  expect_throw_with<std::invalid_argument>([&] { start(no_steps, Communicator::world(), log); },
                                           "train: max_steps must be in [1, ");
}

// A run refused during its set-up removes the directory it made (with its lock file); one that
// existed stays. An --out below a file says so. (Found by a newcomer's review: a refused run
// used to leave a directory holding .lock.)
BOOST_AUTO_TEST_CASE(a_refused_set_up_leaves_no_directory_behind) {
  const auto dir = temp_dir("refused");
  write(dir / "ab.txt", alternating(200));
  std::ostringstream log;
  RunRequest huge = femto(dir / "ab.txt", dir / "huge", 2);
  huge.config.preset = "huge";
  expect_throw_with<std::invalid_argument>([&] { start(huge, Communicator::world(), log); },
                                           "huge");
  BOOST_TEST(!std::filesystem::exists(dir / "huge"));
  expect_throw_with<std::invalid_argument>(
      [&] { start(resume_to(dir / "nothing", 2), Communicator::world(), log); },
      "nothing to resume");
  BOOST_TEST(!std::filesystem::exists(dir / "nothing"));
  std::filesystem::create_directories(dir / "existing");
  RunRequest missing = femto(dir / "missing.txt", dir / "existing", 2);
  BOOST_CHECK_THROW(start(missing, Communicator::world(), log), std::exception);
  BOOST_TEST(std::filesystem::is_directory(dir / "existing"));
  RunRequest below_file = femto(dir / "ab.txt", dir / "ab.txt" / "run", 2);
  expect_throw_with<std::invalid_argument>(
      [&] { start(below_file, Communicator::world(), log); },
      "/ab.txt/run: cannot create the directory (Not a directory); choose another --out");
}

// A resumed run reads its corpus as it was trained on it: with the CR line ends it kept, also
// when --corpus names the file; --keep-cr on a run trained without it is named as the cause.
// On resume, config overrides and overwrite are refused.
BOOST_AUTO_TEST_CASE(resume_reads_the_corpus_with_its_recorded_line_ends) {
  const auto dir = temp_dir("keep_cr");
  const std::string crlf = (dir / "crlf.txt").string(), copy = (dir / "copy.txt").string();
  write(crlf, to_be("\r\n"));
  write(copy, to_be("\r\n"));
  RunRequest kept = femto(crlf, dir / "kept", 2);
  kept.keep_cr = true;
  train_to_end(kept);
  std::string resumed;
  train_to_end(resume_to(dir / "kept", 3), &resumed);
  BOOST_TEST(contains(resumed, "corpus  " + crlf + ": 8,600 bytes from " + crlf + "\n"));  // CRs
  BOOST_TEST(contains(resumed, "resume  step 2 of "));
  BOOST_TEST(contains(resumed, "step 3/3 | loss"));
  // The same text under another name resumes too, with keep_cr given or as recorded.
  RunRequest same = resume_to(dir / "kept", 4);
  same.corpus = copy, same.keep_cr = true;
  train_to_end(same);
  RunRequest again = resume_to(dir / "kept", 5);
  again.corpus = copy;
  BOOST_TEST(train_to_end(again)->options().keep_cr);

  train_to_end(femto(crlf, dir / "lf", 2));
  RunRequest with_cr = resume_to(dir / "lf", 3);
  with_cr.keep_cr = true;
  std::ostringstream log;
  expect_throw_with<std::invalid_argument>(
      [&] { start(with_cr, Communicator::world(), log); },
      "--keep-cr reads the corpus with its CR line ends, but this run was trained on it with them "
      "made LF");
  RunRequest override = resume_to(dir / "lf", 3);
  override.config.set(&GPTConfig::n_embd, int64_t{4});
  expect_throw_with<std::invalid_argument>(
      [&] { start(override, Communicator::world(), log); },
      "a resumed run keeps the model its checkpoint stores; n_embd cannot be overridden");
  RunRequest both = resume_to(dir / "lf", 3);
  both.overwrite = true;
  expect_throw_with<std::invalid_argument>([&] { start(both, Communicator::world(), log); },
                                           "choose one");
}

// Without out_dir a run goes to runs/<preset> (nanoGPT's out-<config> habit), or runs/<model>
// for the lecture's models; --resume without it says which directory it looked in and how to
// name another, and leaves no directory behind.
BOOST_AUTO_TEST_CASE(the_run_directory_defaults_to_runs_slash_the_preset) {
  RunRequest rq;
  BOOST_TEST(rq.run_dir() == "runs/pico");
  rq.config.preset = "nano";
  BOOST_TEST(rq.run_dir() == "runs/nano");
  rq.model = ModelKind::bigram;
  BOOST_TEST(rq.run_dir() == "runs/bigram");
  rq.model = ModelKind::average;
  BOOST_TEST(rq.run_dir() == "runs/average");
  rq.out_dir = "elsewhere";
  BOOST_TEST(rq.run_dir() == "elsewhere");

  const auto dir = temp_dir("default_dir");
  const std::filesystem::path previous = std::filesystem::current_path();
  std::filesystem::current_path(dir);
  RunRequest resume;
  resume.resume = true;
  resume.threads = 1;
  std::ostringstream log;
  expect_throw_with<std::invalid_argument>(
      [&] { start(resume, Communicator::world(), log); },
      "nothing to resume: runs/pico/ckpt.safetensors does not exist (--resume without --out "
      "continues runs/pico; name the run with --out, e.g. --out runs/nano)");
  BOOST_TEST(!std::filesystem::exists(dir / "runs"));
  std::filesystem::current_path(previous);
  std::filesystem::remove_all(dir);
}

// Issue 31, kinds 7 and 8. A FIFO named run.json in --out made `train --resume` wait for ever on
// its open: every file a run reads or writes there is refused unless regular, before any is
// opened. A look-alike temporary of a name no attograd writer makes (notes.txt.tmp.<pid>.<6>)
// was deleted by the sweep, even by a run then refused: only our files' temporaries go now.
// And a finished run's directory holds exactly RunDir::files() and the lock: the list is complete.
BOOST_AUTO_TEST_CASE(special_files_are_refused_and_foreign_temporaries_kept) {
  const auto dir = temp_dir("special");
  write(dir / "ab.txt", alternating(200));
  std::ostringstream log;
  train_to_end(femto(dir / "ab.txt", dir / "run", 2));
  const std::vector<std::string> known = RunDir::files();
  for (const auto& entry : std::filesystem::directory_iterator(dir / "run")) {
    const std::string name = entry.path().filename().string();
    BOOST_TEST_INFO(name << " is in a run directory but not in RunDir::files()");
    BOOST_TEST(
        (name == RunDir::kLock || std::find(known.begin(), known.end(), name) != known.end()));
  }
  BOOST_TEST(std::filesystem::exists(dir / "run" / kCheckpointFile));

  // A foreign look-alike, and a stale temporary of our checkpoint, by a process that is gone.
  const std::string notes = "notes.txt.tmp.999999.abcdef";
  const std::string ours = std::string(kCheckpointFile) + ".tmp.999999.abcdef";
  write(dir / "run" / notes, "mine");
  write(dir / "run" / ours, "stale");
  // A fresh run refused by the existing checkpoint touches neither.
  expect_throw_with<std::invalid_argument>(
      [&] { start(femto(dir / "ab.txt", dir / "run", 2), Communicator::world(), log); },
      "already exists: pass --resume");
  BOOST_TEST(std::filesystem::exists(dir / "run" / notes));
  BOOST_TEST(std::filesystem::exists(dir / "run" / ours));
  // A resumed run removes ours only.
  train_to_end(resume_to(dir / "run", 3));
  BOOST_TEST(std::filesystem::exists(dir / "run" / notes));
  BOOST_TEST(!std::filesystem::exists(dir / "run" / ours));

  std::filesystem::remove(dir / "run" / RunDir::kConfig);
  BOOST_REQUIRE(::mkfifo((dir / "run" / RunDir::kConfig).c_str(), 0644) == 0);
  expect_throw_with<std::invalid_argument>(
      [&] { start(resume_to(dir / "run", 4), Communicator::world(), log); },
      "/run/run.json is a FIFO, not a regular file: a run reads and writes it; remove it");
  std::filesystem::remove(dir / "run" / RunDir::kConfig);
  std::filesystem::remove(dir / "run" / RunDir::kTrainLog);
  std::filesystem::create_directory(dir / "run" / RunDir::kTrainLog);
  expect_throw_with<std::invalid_argument>(
      [&] { start(resume_to(dir / "run", 4), Communicator::world(), log); },
      "/run/train_log.csv is a directory, not a regular file");
}

// A relative corpus path is recorded as an absolute one: the run resumes from any directory.
BOOST_AUTO_TEST_CASE(a_relative_corpus_path_resumes_from_another_directory) {
  const auto dir = temp_dir("relative");
  write(dir / "rel.txt", std::string(40, 'x') + "\n" + std::string(4000, 'y') + "\n");
  const std::filesystem::path previous = std::filesystem::current_path();
  std::filesystem::current_path(dir);
  train_to_end(femto("rel.txt", dir / "run", 2));
  std::filesystem::current_path("/");
  std::string log;
  train_to_end(resume_to(dir / "run", 3), &log);
  std::filesystem::current_path(previous);
  BOOST_TEST(contains(log, "corpus  " + (dir / "rel.txt").string() + ":"));
}

// A CRLF corpus no longer makes '\r' a token (and says so), keep_cr keeps it; an empty file, one
// that is not UTF-8, or one over the size limit is refused with the reason.
BOOST_AUTO_TEST_CASE(corpus_line_ends_and_sizes) {
  const auto dir = temp_dir("line_ends");
  const std::string corpus = (dir / "crlf.txt").string();
  write(corpus, to_be("\r\n"));
  std::string lf, cr;
  train_to_end(femto(corpus, dir / "lf", 1), &lf);
  BOOST_TEST(contains(lf, "corpus  " + corpus + ": 8,400 bytes from " + corpus +
                              ", 200 CRLF/CR line ends made LF (--keep-cr keeps them)"));
  BOOST_TEST(contains(lf, "char tokenizer (vocab 16): 8400 tokens"));
  RunRequest kept = femto(corpus, dir / "cr", 1);
  kept.keep_cr = true;
  train_to_end(kept, &cr);
  BOOST_TEST(contains(cr, "corpus  " + corpus + ": 8,600 bytes from " + corpus + "\n"));
  BOOST_TEST(contains(cr, "char tokenizer (vocab 17): 8600 tokens"));  // '\r' is a token

  std::ostringstream log;
  write(dir / "empty.txt", "");
  expect_throw_with<std::runtime_error>(
      [&] { start(femto(dir / "empty.txt", dir / "r", 1), Communicator::world(), log); },
      " is empty; a corpus needs text to learn from");
  write(dir / "latin1.txt", "caf\xe9 au lait");
  expect_throw_with<std::runtime_error>(
      [&] { start(femto(dir / "latin1.txt", dir / "r", 1), Communicator::world(), log); },
      " is not valid UTF-8: ");
  const std::string huge = (dir / "huge.txt").string();
  write(huge, "");
  std::filesystem::resize_file(huge, 300'000'000);  // sparse: no disk space
  expect_throw_with<std::runtime_error>(
      [&] { start(femto(huge, dir / "r", 1), Communicator::world(), log); },
      "corpus file " + huge +
          " is 300,000,000 bytes, over the 268,435,456-byte limit for a corpus file (it and its "
          "token ids are held in memory); use a smaller file or a part of it");
  BOOST_TEST(!std::filesystem::exists(dir / "r"));
}

// A run that diverges (lr 1e30) fails with exit code 1 and names only a checkpoint whose
// parameters are finite: none when the evaluation after step 1 is already NaN (that state is
// never saved), else the last one saved.
BOOST_AUTO_TEST_CASE(a_diverged_run_names_only_a_finite_checkpoint) {
  const auto dir = temp_dir("diverge");
  write(dir / "to_be.txt", to_be());
  const auto diverging = [&](const std::string& out) {
    RunRequest rq = femto(dir / "to_be.txt", dir / out, 30);
    rq.config.preset = "pico";
    rq.options.eval_iters = 1;
    rq.options.learning_rate = 1e30;
    rq.options.min_lr = 0;
    return rq;
  };
  RunRequest evaluated = diverging("a");
  evaluated.options.eval_interval = 1;
  std::ostringstream log, a_err, b_err;
  BOOST_TEST(start(evaluated, Communicator::world(), log)->train(log, a_err) == 1);
  BOOST_TEST_INFO(a_err.str());
  BOOST_TEST(contains(a_err.str(),
                      "at step 1: the model diverged, so no checkpoint was written at this step"));
  BOOST_TEST(contains(a_err.str(), "no checkpoint of this run was written"));
  BOOST_TEST(!contains(a_err.str(), "untouched"));
  BOOST_TEST(!std::filesystem::exists(dir / "a" / kCheckpointFile));
  // Its evaluation's row in the log spells NaN as the line does: "nan", not the "-nan" an
  // ostream writes for NaN's sign bit (issue 31, kind 14).
  BOOST_TEST(contains(attograd::testing::read_file(dir / "a" / RunDir::kEvalLog),
                      "\n1,nan,nan,nan,nan\n"));
  // Saved after every step: the one checkpoint written holds finite parameters, and says so.
  RunRequest saved = diverging("b");
  saved.options.checkpoint_interval = 1;
  BOOST_TEST(start(saved, Communicator::world(), log)->train(log, b_err) == 1);
  BOOST_TEST_INFO(b_err.str());
  BOOST_TEST(contains(b_err.str(),
                      "the last checkpoint, step 1 (all parameters finite), is "
                      "untouched: " +
                          (dir / "b" / kCheckpointFile).string()));
  const auto model = load_model(nn::SafetensorsFile::read((dir / "b" / kCheckpointFile).string()));
  BOOST_TEST(model->arena().num_non_finite() == 0);
}

// On a full disk gnuplot exits 0 and leaves empty plots (here a stand-in gnuplot, first on
// PATH, empties its outputs): the run fails after its checkpoint and logs are saved, says so,
// and leaves no temporary.
BOOST_AUTO_TEST_CASE(empty_plots_fail_the_run_after_saving_everything_else) {
  const auto dir = temp_dir("plots");
  write(dir / "ab.txt", alternating(200));
  std::filesystem::create_directories(dir / "bin");
  write(dir / "bin" / "gnuplot",
        "#!/bin/sh\nfor f in $(sed -n \"s/^set output '\\(.*\\)'$/\\1/p\"); do : > \"$f\"; "
        "done; exit 0\n");
  std::filesystem::permissions(dir / "bin" / "gnuplot", std::filesystem::perms::owner_all);
  const std::string path = std::getenv("PATH");
  ::setenv("PATH", ((dir / "bin").string() + ":" + path).c_str(), 1);
  std::ostringstream log, err;
  const auto run = start(femto(dir / "ab.txt", dir / "run", 3), Communicator::world(), log);
  std::string said;
  try {
    run->train(log, err);
  } catch (const std::runtime_error& e) {
    said = e.what();
  }
  ::setenv("PATH", path.c_str(), 1);
  BOOST_TEST_INFO(said);
  BOOST_TEST(contains(said, "gnuplot exited 0 but loss.png is empty in "));
  BOOST_TEST(contains(said, "(is the disk full?)"));
  BOOST_TEST(contains(said, "the training itself finished: " + run->checkpoint_path() +
                                " and the CSV logs are saved"));
  const nn::SafetensorsFile ckpt = nn::SafetensorsFile::read(run->checkpoint_path());
  BOOST_TEST(read_checkpoint_info(ckpt, Moments::skip).training->step == 3);
  BOOST_TEST(!std::filesystem::exists(dir / "run" / "loss.png"));
  for (const auto& entry : std::filesystem::directory_iterator(dir / "run"))
    BOOST_TEST(!nn::temp_file_owner(entry.path().filename().string()));
}

// --tokenizer gpt2: GPT-2's BPE and vocabulary, recorded in the checkpoint, which a resumed run
// reloads (and a resumed run's --tokenizer must name).
BOOST_AUTO_TEST_CASE(a_gpt2_bpe_run_writes_and_resumes_a_gpt2_checkpoint) {
  const auto dir = temp_dir("gpt2");
  std::string text;  // ~3 KB, ~900 tokens
  for (int i = 0; i < 40; ++i)
    text += "First Citizen:\nBefore we proceed any further, hear me speak. Verse " +
            std::to_string(i) + ".\n\n";
  write(dir / "corpus.txt", text);
  RunRequest rq = femto(dir / "corpus.txt", dir / "run", 3);
  rq.tokenizer = "gpt2";
  rq.options.batch_size = 2, rq.options.eval_iters = 1;
  std::string log;
  const std::string ckpt = train_to_end(rq, &log)->checkpoint_path();  // the lock goes with it
  BOOST_TEST(contains(log, "gpt2 tokenizer (vocab 50257)"));
  BOOST_TEST(contains(log, "vocab_size 50257"));
  const CheckpointInfo info = read_checkpoint_info(nn::SafetensorsFile::read(ckpt), Moments::skip);
  BOOST_TEST(info.tokenizer_kind == "gpt2");
  BOOST_TEST(info.tokenizer_data == "gpt2");
  BOOST_TEST(info.config.vocab_size == 50257);

  RunRequest resume = resume_to(dir / "run", 4);
  resume.corpus = (dir / "corpus.txt").string();
  std::string resumed;
  BOOST_TEST(train_to_end(resume, &resumed)->tokenizer().kind() == "gpt2");
  BOOST_TEST(contains(resumed, "resume  step 3"));
  RunRequest wrong = resume_to(dir / "run", 5);
  wrong.tokenizer = "char";
  std::ostringstream refused;
  expect_throw_with<std::invalid_argument>([&] { start(wrong, Communicator::world(), refused); },
                                           "drop --tokenizer when resuming");
}
