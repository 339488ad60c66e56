// `attograd train` killed (kill -9) at any moment, interrupted by a signal, or started many times
// at once: the files around the checkpoint (logs, temporaries, the lock) must stay as
// trustworthy as the checkpoint itself. These tests start the real binary, kill it by its pid,
// and look at what it left; what needs no second process (a diverging run, empty plots, a
// symlinked lock) is tested in-process in tests/gpt/train/run_test.cc.
#define BOOST_TEST_MODULE crash
#include <boost/test/unit_test.hpp>

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "gpt/model/checkpoint.h"
#include "nn/io/atomic_file.h"
#include "tests/cli/cli_run.h"

extern char** environ;

using attograd::testing::CliRun;
using attograd::testing::contains;
using attograd::testing::run_cli;
using attograd::testing::TempDir;
using attograd::testing::write_corpus;
namespace fs = std::filesystem;
namespace gpt = attograd::gpt;
namespace nn = attograd::nn;

namespace {

// Starts `attograd args...` with its output in `log` and `env` ("NAME=value") added to ours
// (replacing a variable of the same name); returns its pid.
pid_t spawn_cli(const std::vector<std::string>& args, const std::string& log,
                const std::vector<std::string>& env = {}) {
  std::vector<std::string> env_strings;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string var(*e);
    bool replaced = false;
    for (const std::string& mine : env)
      replaced |= var.substr(0, var.find('=') + 1) == mine.substr(0, mine.find('=') + 1);
    if (!replaced) env_strings.push_back(var);
  }
  env_strings.insert(env_strings.end(), env.begin(), env.end());
  std::vector<std::string> argv_strings{ATTOGRAD_CLI};
  argv_strings.insert(argv_strings.end(), args.begin(), args.end());
  std::vector<char*> argv, envp;
  for (std::string& s : argv_strings) argv.push_back(s.data());
  for (std::string& s : env_strings) envp.push_back(s.data());
  argv.push_back(nullptr);
  envp.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  pid_t pid = 0;
  const int err = posix_spawn(&pid, ATTOGRAD_CLI, &actions, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  BOOST_REQUIRE(err == 0);
  return pid;
}

// Waits for a spawned run to end; its exit code, or -1 if it did not exit normally.
int wait_exit(pid_t pid) {
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

void kill_9(pid_t pid) {
  ::kill(pid, SIGKILL);
  wait_exit(pid);
}

std::string read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// The step stored in a checkpoint, or -1 while there is none.
int64_t checkpoint_step(const fs::path& ckpt) {
  if (!fs::exists(ckpt)) return -1;
  return gpt::read_checkpoint_info(nn::SafetensorsFile::read(ckpt.string()), gpt::Moments::skip)
      .training->step;
}

// Polls `done` every 5 ms while the run `pid` goes on, for up to 60 s; false if the run ended
// first (it is then reaped) or on time-out.
template <typename F>
bool wait_until(pid_t pid, F done) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline || ::waitpid(pid, nullptr, WNOHANG) == pid)
      return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return true;
}

// The steps of the complete rows (ending in a newline) of a CSV log, header skipped.
std::vector<int64_t> complete_row_steps(const fs::path& csv) {
  const std::string text = read_text(csv);
  std::vector<int64_t> steps;
  size_t start = text.find('\n') + 1;
  for (size_t end; (end = text.find('\n', start)) != std::string::npos; start = end + 1)
    steps.push_back(std::stoll(text.substr(start, end - start)));
  return steps;
}

std::vector<int64_t> one_to(int64_t n) {
  std::vector<int64_t> v;
  for (int64_t i = 1; i <= n; ++i) v.push_back(i);
  return v;
}

// AtomicFile temporaries in `dir`.
std::vector<std::string> temporaries(const fs::path& dir) {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir))
    if (nn::temp_file_owner(e.path().filename().string()))
      names.push_back(e.path().filename().string());
  return names;
}

// A stand-in gnuplot on $PATH: a directory holding an executable `gnuplot` running `body`.
std::string fake_gnuplot_dir(const TempDir& dir, const std::string& body) {
  const fs::path bin = dir.path / "fake-bin";
  fs::create_directories(bin);
  std::ofstream(bin / "gnuplot") << "#!/bin/sh\n" << body << "\n";
  fs::permissions(bin / "gnuplot", fs::perms::owner_all);
  return "PATH=" + bin.string() + ":" + std::getenv("PATH");
}

const std::vector<std::string> kSmallRun{"--preset",     "pico", "--batch-size", "4",
                                         "--eval-iters", "1",    "--warmup",     "2"};

std::vector<std::string> train_args(const std::string& corpus, const std::string& out,
                                    std::vector<std::string> more) {
  std::vector<std::string> args{"train", "--corpus", corpus, "--out", out};
  args.insert(args.end(), kSmallRun.begin(), kSmallRun.end());
  args.insert(args.end(), more.begin(), more.end());
  return args;
}

}  // namespace

// The example: the log lagged the checkpoint by up to 1,800 steps after kill -9, and a
// resumed run's log had holes. Now every row up to the checkpoint is on disk before it is
// renamed into place, and a resumed log has each step exactly once.
BOOST_AUTO_TEST_CASE(after_kill_9_the_log_holds_every_row_up_to_the_checkpoint) {
  const TempDir dir("crash_log");
  const std::string corpus = write_corpus(dir), out = dir / "run";
  // No progress lines and no evaluations: only a checkpoint flushes the log.
  const pid_t pid =
      spawn_cli(train_args(corpus, out,
                           {"--steps", "1000000", "--eval-interval", "0", "--checkpoint-interval",
                            "7", "--log-interval", "1000000"}),
                dir / "first.log");
  BOOST_REQUIRE(
      wait_until(pid, [&] { return checkpoint_step(fs::path(out) / "ckpt.safetensors") >= 140; }));
  kill_9(pid);
  const int64_t saved = checkpoint_step(fs::path(out) / "ckpt.safetensors");
  const std::vector<int64_t> rows = complete_row_steps(fs::path(out) / "train_log.csv");
  BOOST_TEST_INFO("checkpoint at step " << saved << ", " << rows.size() << " complete rows");
  BOOST_REQUIRE(rows.size() >= static_cast<size_t>(saved));
  BOOST_TEST(std::vector<int64_t>(rows.begin(), rows.begin() + saved) == one_to(saved),
             boost::test_tools::per_element());

  const CliRun resumed = run_cli("train --corpus " + corpus + " --out " + out +
                                 " --resume --steps " + std::to_string(saved + 10));
  BOOST_TEST_INFO(resumed.out);
  BOOST_TEST(resumed.exit_code == 0);
  BOOST_TEST(complete_row_steps(fs::path(out) / "train_log.csv") == one_to(saved + 10),
             boost::test_tools::per_element());
  BOOST_TEST(read_text(fs::path(out) / "train_log.csv").back() == '\n');
}

// A newcomer's finding: `train --overwrite` killed before its first checkpoint left the old run's
// checkpoint beside the new run's run.json and logs, and `--resume` continued the old pico run
// into the femto run's eval log. The old run's checkpoints now go before the new run writes
// anything, so once its step-0 row is there, nothing is left to resume.
BOOST_AUTO_TEST_CASE(an_overwrite_killed_before_its_first_checkpoint_leaves_nothing_to_resume) {
  const TempDir dir("crash_overwrite");
  const std::string corpus = write_corpus(dir), out = dir / "run";
  const CliRun pico = run_cli("train --corpus " + corpus + " --out " + out +
                              " --preset pico --batch-size 4 --eval-iters 1 --steps 20 "
                              "--eval-interval 10");
  BOOST_TEST_INFO(pico.out);
  BOOST_REQUIRE(pico.exit_code == 0);
  BOOST_REQUIRE(checkpoint_step(fs::path(out) / "ckpt.safetensors") == 20);
  const pid_t pid = spawn_cli({"train", "--corpus", corpus, "--out", out, "--overwrite", "--preset",
                               "femto", "--batch-size", "4", "--eval-iters", "1", "--steps",
                               "1000000", "--eval-interval", "1000000"},
                              dir / "femto.log");
  BOOST_REQUIRE(wait_until(pid, [&] {
    return complete_row_steps(fs::path(out) / "eval_log.csv") == std::vector<int64_t>{0};
  }));
  kill_9(pid);
  BOOST_TEST(!fs::exists(fs::path(out) / "ckpt.safetensors"));
  BOOST_TEST(!fs::exists(fs::path(out) / "best.safetensors"));
  const CliRun resumed = run_cli("train --out " + out + " --resume --steps 150");
  BOOST_TEST_INFO(resumed.out);
  BOOST_TEST(resumed.exit_code == 2);
  BOOST_TEST(
      contains(resumed.out, "nothing to resume: " + out + "/ckpt.safetensors does not exist"));
}

// The example: every kill during a save left a checkpoint-sized temporary, 13 after 20
// kills. A run now starts, once it holds the lock, by removing the temporaries of its files.
BOOST_AUTO_TEST_CASE(temporaries_of_killed_runs_are_removed_at_the_next_start) {
  const TempDir dir("crash_tmp");
  const std::string corpus = write_corpus(dir), out = dir / "run";
  const fs::path ckpt = fs::path(out) / "ckpt.safetensors";
  // Kill a run that checkpoints every step, five times at staggered moments.
  int64_t step = 0;
  for (int i = 0; i < 5; ++i) {
    const std::vector<std::string> resume{"train", "--corpus", corpus,    "--out",
                                          out,     "--resume", "--steps", "1000000"};
    const pid_t pid = spawn_cli(i == 0 ? train_args(corpus, out,
                                                    {"--steps", "1000000", "--eval-interval", "0",
                                                     "--checkpoint-interval", "1"})
                                       : resume,
                                dir / ("kill" + std::to_string(i) + ".log"));
    BOOST_REQUIRE(wait_until(pid, [&] { return checkpoint_step(ckpt) > step; }));
    std::this_thread::sleep_for(std::chrono::milliseconds(3 * i));
    kill_9(pid);
    step = checkpoint_step(ckpt);
  }
  // And leave two temporaries by hand: one of a dead process (the pid of a reaped child), one
  // of a live one (this test). The run holds the directory's lock, which every writer of its
  // files holds, so the live process cannot be writing it either: both go (issue 31, kind 9: a
  // container's PID 1 is alive on the host and kept such a file for ever).
  const pid_t dead = ::fork();
  if (dead == 0) ::_exit(0);
  ::waitpid(dead, nullptr, 0);
  const std::string stale = dir.file("run/ckpt.safetensors.tmp." + std::to_string(dead) + ".aaaaaa",
                                     std::string(1 << 20, 's'));
  const std::string live =
      dir.file("run/ckpt.safetensors.tmp." + std::to_string(::getpid()) + ".bbbbbb", "live");

  const CliRun resumed = run_cli("train --corpus " + corpus + " --out " + out +
                                 " --resume --steps " + std::to_string(step + 2));
  BOOST_TEST_INFO(resumed.out);
  BOOST_TEST(resumed.exit_code == 0);
  BOOST_TEST(contains(resumed.out, "cleanup removed " + stale + ", left by an interrupted run"));
  BOOST_TEST(contains(resumed.out, "cleanup removed " + live + ", left by an interrupted run"));
  BOOST_TEST(temporaries(out).empty());
}

// Ctrl-C (SIGINT) or SIGTERM during training: the run finishes its step, writes the checkpoint of
// that step with every log row up to it, says where it is and how to resume, and exits 130 or
// 143 as a shell reports those signals; --resume then goes on from that step.
BOOST_AUTO_TEST_CASE(ctrl_c_and_sigterm_checkpoint_the_step_and_exit_130_or_143) {
  for (const auto& [signal, code] : {std::pair{SIGINT, 130}, std::pair{SIGTERM, 143}}) {
    BOOST_TEST_CONTEXT("signal " << signal) {
      const TempDir dir("crash_signal" + std::to_string(signal));
      const std::string corpus = write_corpus(dir), out = dir / "run";
      const fs::path log = dir / "first.log";
      // No evaluations and no checkpoints before the signal: it alone writes one.
      const pid_t pid = spawn_cli(
          train_args(corpus, out,
                     {"--steps", "1000000", "--eval-interval", "0", "--log-interval", "1"}),
          log);
      BOOST_REQUIRE(wait_until(pid, [&] { return contains(read_text(log), "step 20/1000000"); }));
      ::kill(pid, signal);
      BOOST_TEST(wait_exit(pid) == code);
      const std::string said = read_text(log);
      BOOST_TEST_INFO(said);
      const int64_t step = checkpoint_step(fs::path(out) / "ckpt.safetensors");
      BOOST_TEST(step >= 20);
      const std::string name = signal == SIGINT ? "SIGINT (Ctrl-C)" : "SIGTERM";
      BOOST_TEST(contains(
          said, "attograd: interrupted by " + name + " after step " + std::to_string(step) +
                    " of 1000000; its checkpoint is saved: " + out +
                    "/ckpt.safetensors\nresume with: attograd train --out " + out + " --resume\n"));
      BOOST_TEST(complete_row_steps(fs::path(out) / "train_log.csv") == one_to(step),
                 boost::test_tools::per_element());
      const CliRun resumed =
          run_cli("train --out " + out + " --resume --steps " + std::to_string(step + 3));
      BOOST_TEST_INFO(resumed.out);
      BOOST_TEST(resumed.exit_code == 0);
      BOOST_TEST(complete_row_steps(fs::path(out) / "train_log.csv") == one_to(step + 3),
                 boost::test_tools::per_element());
    }
  }
}

// Issue 31's race: 8 runs with different seeds started at once into one new --out. A run the
// lock refused used to remove the winner's .lock (and the directory it thought it made) on its
// way out, so a later one took a fresh lock beside the winner: 2 or 3 trained in 10 of 64
// tries, the log held every step twice and the checkpoint flipped between seeds. Now exactly
// one trains, each step is logged once, run.json names the winner's seed, and .lock stays.
BOOST_AUTO_TEST_CASE(runs_started_together_into_a_new_out_train_one_at_a_time) {
  const TempDir dir("crash_race");
  const std::string corpus = write_corpus(dir);
  constexpr int kRounds = 6, kRuns = 8;
  for (int round = 0; round < kRounds; ++round) {
    const fs::path out = dir.path / ("round" + std::to_string(round)) / "run";  // parents too
    std::vector<pid_t> pids;
    for (int seed = 1; seed <= kRuns; ++seed)
      pids.push_back(spawn_cli(
          train_args(
              corpus, out.string(),
              {"--steps", "200", "--eval-interval", "0", "--init-seed", std::to_string(seed)}),
          dir / ("round" + std::to_string(round) + "_" + std::to_string(seed) + ".log")));
    std::vector<int> winners;
    for (int seed = 1; seed <= kRuns; ++seed) {
      const int code = wait_exit(pids[seed - 1]);
      const std::string said =
          read_text(dir / ("round" + std::to_string(round) + "_" + std::to_string(seed) + ".log"));
      BOOST_TEST_INFO("round " << round << ", seed " << seed << ": " << said);
      if (code == 0)
        winners.push_back(seed);
      else
        BOOST_TEST(contains(said, "another `attograd train` is writing to " + out.string()));
    }
    BOOST_TEST_INFO("round " << round);
    BOOST_REQUIRE_EQUAL(winners.size(), 1u);
    BOOST_TEST(complete_row_steps(out / "train_log.csv") == one_to(200),
               boost::test_tools::per_element());
    BOOST_TEST(
        contains(read_text(out / "run.json"), "\"init_seed\": " + std::to_string(winners[0])));
    BOOST_TEST(fs::is_regular_file(fs::symlink_status(out / ".lock")));
  }
}

// The example: the .lock descriptor was inherited by gnuplot, so after a kill -9 while
// plotting, the orphaned gnuplot kept --resume out. gnuplot inherits nothing now.
BOOST_AUTO_TEST_CASE(an_orphaned_gnuplot_does_not_hold_the_runs_lock) {
  const TempDir dir("crash_lock");
  const std::string corpus = write_corpus(dir), out = dir / "run", pid_file = dir / "gnuplot.pid";
  // This gnuplot announces itself and then outlives its parent.
  const std::string path = fake_gnuplot_dir(dir, "echo $$ > '" + pid_file + "'\nexec sleep 120");
  const pid_t pid = spawn_cli(train_args(corpus, out, {"--steps", "3"}), dir / "first.log", {path});
  BOOST_REQUIRE(wait_until(pid, [&] { return !read_text(pid_file).empty(); }));
  kill_9(pid);
  const pid_t orphan = std::stoi(read_text(pid_file));
  BOOST_REQUIRE(::kill(orphan, 0) == 0);  // still running, as after the real crash
  const CliRun resumed =
      run_cli("train --corpus " + corpus + " --out " + out + " --resume --steps 3");
  ::kill(orphan, SIGKILL);
  BOOST_TEST_INFO(resumed.out);
  BOOST_TEST(resumed.exit_code == 0);
  BOOST_TEST(!contains(resumed.out, "another `attograd train` is writing to"));
  BOOST_TEST(contains(resumed.out, "already at step 3 of 3"));
}
