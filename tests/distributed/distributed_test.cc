// Data-parallel training over MPI (gpt/distributed.h): two ranks with B = 4 each against one
// process with B = 8 drawing the same sequences, through mpirun for real, both in the library
// (mpi_train_worker, f32 and f64) and with the attograd binary. The whole test skips (CTest
// shows it skipped) when the build has no MPI or mpirun is missing.
#define BOOST_TEST_MODULE distributed
#include <boost/test/unit_test.hpp>

#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "gpt/checkpoint.h"
#include "gpt/safetensors.h"
#include "gpt/session.h"
#include "tests/examples/cli_run.h"
#include "tests/test_util.h"

using attograd::testing::CliRun;
using attograd::testing::contains;
using attograd::testing::run_program;
using attograd::testing::TempDir;
namespace gpt = attograd::gpt;

extern char** environ;

namespace {

// mpirun as the tests need it: two ranks on however few cores, one OpenMP thread each, allowed
// to run as root (CI containers), its own chatter about aborted jobs kept out of the output.
std::string mpirun(int ranks) {
  return "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_NUM_THREADS=1 " +
         std::string(ATTOGRAD_MPIRUN) + " --oversubscribe -np " + std::to_string(ranks) +
         " -x OMP_NUM_THREADS ";
}

bool mpi_available() {
  return attograd::testing::data_available(ATTOGRAD_MPIRUN,
                                           "build with MPI: apt-get install libopenmpi-dev "
                                           "openmpi-bin, then configure again");
}

struct WorkerRun {
  int ranks = 0;
  std::vector<double> losses, params;
  double val = 0;
  std::string replicas;
};

WorkerRun read_worker(const std::string& path) {
  WorkerRun r;
  std::ifstream in(path);
  std::string key;
  while (in >> key) {
    if (key == "ranks") in >> r.ranks;
    if (key == "replicas") in >> r.replicas;
    double v = 0;
    if (key == "loss" && in >> v) r.losses.push_back(v);
    if (key == "param" && in >> v) r.params.push_back(v);
    if (key == "val") in >> r.val;
  }
  return r;
}

// The largest |a - b| / |b| over two equally long lists.
double max_rel_diff(const std::vector<double>& a, const std::vector<double>& b) {
  BOOST_REQUIRE_EQUAL(a.size(), b.size());
  double worst = 0;
  for (size_t i = 0; i < a.size(); ++i)
    worst = std::max(worst, std::abs(a[i] - b[i]) / std::abs(b[i]));
  return worst;
}

// ||a - b|| / ||b||, L2 norms over all the parameters.
double rel_distance(const std::vector<double>& a, const std::vector<double>& b) {
  BOOST_REQUIRE_EQUAL(a.size(), b.size());
  double diff = 0, norm = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    diff += (a[i] - b[i]) * (a[i] - b[i]);
    norm += b[i] * b[i];
  }
  return std::sqrt(diff / norm);
}

// The losses of every step and the val loss agree to `tol` relative. The parameters are compared
// as a whole (`param_tol`, relative L2 distance), not element by element: some have an exactly
// zero gradient in exact arithmetic (the attention's key bias: softmax ignores a constant added
// to every key), and AdamW divides their rounding noise by its own square root, turning noise of
// 1e-9 into steps of about lr in f32. Which summation order (8 rows in one matmul, or 4 + 4 and
// an all-reduce) makes that noise is arbitrary, so those elements differ at 1e-4.
void two_ranks_equal_one_process(const std::string& dtype, const std::string& config, double tol,
                                 double param_tol) {
  if (!mpi_available()) return;
  TempDir dir("distributed_" + dtype + "_" + config);
  const std::string args = dtype + " " + config + " ";
  const CliRun two = run_program(mpirun(2) + ATTOGRAD_WORKER, args + "4 " + (dir / "two.txt"));
  BOOST_TEST_INFO(two.out);
  BOOST_REQUIRE_EQUAL(two.exit_code, 0);
  const CliRun one = run_program(ATTOGRAD_WORKER, args + "8 " + (dir / "one.txt"));
  BOOST_TEST_INFO(one.out);
  BOOST_REQUIRE_EQUAL(one.exit_code, 0);
  const WorkerRun a = read_worker(dir / "two.txt"), b = read_worker(dir / "one.txt");
  BOOST_TEST(a.ranks == 2);
  BOOST_TEST(b.ranks == 1);
  BOOST_TEST(a.replicas == "equal");
  BOOST_REQUIRE_EQUAL(a.losses.size(), 20u);
  BOOST_TEST(a.losses.back() < a.losses.front());  // it trained
  const double loss_diff = max_rel_diff(a.losses, b.losses);
  const double param_diff = rel_distance(a.params, b.params);
  const double val_diff = std::abs(a.val - b.val) / b.val;
  BOOST_TEST_MESSAGE(dtype << " " << config << ": " << a.params.size()
                           << " parameters, max relative difference of 20 losses " << loss_diff
                           << ", relative L2 distance of the parameters " << param_diff
                           << ", of the val loss " << val_diff);
  BOOST_TEST(loss_diff <= tol);
  BOOST_TEST(param_diff <= param_tol);
  BOOST_TEST(val_diff <= tol);
}

}  // namespace

BOOST_AUTO_TEST_CASE(femto_f32_two_ranks_of_4_match_one_process_of_8) {
  two_ranks_equal_one_process("f32", "femto", 1e-6, 1e-4);
}
BOOST_AUTO_TEST_CASE(femto_f64_two_ranks_of_4_match_one_process_of_8) {
  two_ranks_equal_one_process("f64", "femto", 1e-12, 1e-12);
}
BOOST_AUTO_TEST_CASE(small_f32_two_ranks_of_4_match_one_process_of_8) {
  two_ranks_equal_one_process("f32", "small", 1e-6, 1e-4);
}
BOOST_AUTO_TEST_CASE(small_f64_two_ranks_of_4_match_one_process_of_8) {
  two_ranks_equal_one_process("f64", "small", 1e-12, 1e-12);
}

namespace {

std::string write_corpus(const TempDir& dir) {
  std::string text;
  for (int i = 0; i < 200; ++i) text += "to be or not to be, that is the question.\n";
  return dir.file("corpus.txt", text);
}

std::vector<double> checkpoint_params(const std::string& run_dir) {
  return gpt::open_checkpoint(run_dir).model->arena().params().to_vector();
}

}  // namespace

// `mpirun -np 2 attograd train --batch-size 4` and `attograd train --batch-size 8`: the same
// run. Rank 0 alone prints (one header, each progress line once) and says how the global batch
// is made; the checkpoints hold the same parameters.
BOOST_AUTO_TEST_CASE(attograd_train_under_mpirun_matches_one_process) {
  if (!mpi_available()) return;
  TempDir dir("distributed_cli");
  const std::string common = "train --corpus " + write_corpus(dir) +
                             " --preset femto --steps 20 --warmup 2 --eval-interval 10 "
                             "--eval-iters 2 --log-interval 10 --threads 1 --out ";
  const CliRun two =
      run_program(mpirun(2) + ATTOGRAD_CLI, common + (dir / "two") + " --batch-size 4");
  BOOST_TEST_INFO(two.out);
  BOOST_REQUIRE_EQUAL(two.exit_code, 0);
  const CliRun one = run_program(ATTOGRAD_CLI, common + (dir / "one") + " --batch-size 8");
  BOOST_REQUIRE_EQUAL(one.exit_code, 0);
  BOOST_TEST(contains(two.out,
                      "1 thread per rank; 2 ranks: global batch 2 x 4 x 1 = 8 "
                      "sequences per step"));
  BOOST_TEST(contains(two.out, "| 2 ranks, global batch 8 |"));
  BOOST_TEST(!contains(one.out, "ranks"));
  // One header and one line per log interval: the other rank printed nothing.
  auto count = [](const std::string& s, const std::string& needle) {
    size_t n = 0;
    for (size_t at = s.find(needle); at != std::string::npos; at = s.find(needle, at + 1)) ++n;
    return n;
  };
  BOOST_TEST(count(two.out, "train   20 steps") == 1u);
  BOOST_TEST(count(two.out, "step 20/20 |") == 1u);
  BOOST_TEST(count(two.out, "eval at step 20:") == 1u);
  const std::vector<double> a = checkpoint_params(dir / "two"), b = checkpoint_params(dir / "one");
  BOOST_TEST_MESSAGE("attograd train, femto f32: relative L2 distance of the parameters "
                     << rel_distance(a, b));
  BOOST_TEST(rel_distance(a, b) <= 1e-4);
  // The eval lines agree to their printed digits.
  const std::string eval_two = two.out.substr(two.out.find("eval at step 20:"), 80);
  BOOST_TEST(eval_two == one.out.substr(one.out.find("eval at step 20:"), 80));
}

// Only train is data-parallel: sample and eval refuse to run once per rank.
BOOST_AUTO_TEST_CASE(sample_and_eval_refuse_several_ranks) {
  if (!mpi_available()) return;
  for (const std::string command : {"sample", "eval"}) {
    const CliRun r = run_program(mpirun(2) + ATTOGRAD_CLI, command + " --checkpoint nowhere");
    BOOST_TEST_INFO(r.out);
    BOOST_TEST(r.exit_code == 2);
    BOOST_TEST(contains(r.out, "`attograd " + command +
                                   "` runs in one process, but 2 ranks were launched "
                                   "(mpirun -np / srun): run it without the launcher"));
  }
}

// A 2-rank run stopped at step 10 and resumed on 2 ranks ends bit-exact where the uninterrupted
// 2-rank run does. The checkpoint records the global batch: one process resumes it with B = 8,
// three ranks cannot share 8 sequences and are refused before anything is written.
BOOST_AUTO_TEST_CASE(resume_under_mpirun_is_bit_exact_and_keeps_the_global_batch) {
  if (!mpi_available()) return;
  TempDir dir("distributed_resume");
  const std::string common = "train --corpus " + write_corpus(dir) +
                             " --preset femto --warmup 2 --decay-steps 20 --eval-interval 5 "
                             "--eval-iters 2 --threads 1 --batch-size 4 --out ";
  const std::string two = mpirun(2) + ATTOGRAD_CLI;
  BOOST_REQUIRE_EQUAL(run_program(two, common + (dir / "straight") + " --steps 20").exit_code, 0);
  BOOST_REQUIRE_EQUAL(run_program(two, common + (dir / "resumed") + " --steps 10").exit_code, 0);
  const CliRun resumed = run_program(two, "train --resume --steps 20 --out " + (dir / "resumed"));
  BOOST_TEST_INFO(resumed.out);
  BOOST_REQUIRE_EQUAL(resumed.exit_code, 0);
  BOOST_TEST(contains(resumed.out, "resume  step 10 of "));
  BOOST_TEST(contains(resumed.out, "| 2 ranks, global batch 8 |"));
  const std::vector<double> a = checkpoint_params(dir / "straight"),
                            b = checkpoint_params(dir / "resumed");
  BOOST_TEST(a == b, boost::test_tools::per_element());  // bit-exact, not close

  const CliRun three =
      run_program(mpirun(3) + ATTOGRAD_CLI, "train --resume --steps 30 --out " + (dir / "resumed"));
  BOOST_TEST_INFO(three.out);
  BOOST_TEST(three.exit_code != 0);
  BOOST_TEST(contains(three.out,
                      "this run's global batch is 2 ranks x batch size 4 = 8 sequences per "
                      "micro-batch, which 3 ranks cannot share evenly; resume it on a number of "
                      "ranks that divides 8 (1, 2, 4, 8)"));
  BOOST_TEST(checkpoint_params(dir / "resumed") == b, boost::test_tools::per_element());

  const CliRun one =
      run_program(ATTOGRAD_CLI, "train --resume --steps 21 --out " + (dir / "resumed"));
  BOOST_TEST_INFO(one.out);
  BOOST_TEST(one.exit_code == 0);
  BOOST_TEST(contains(one.out, "batch 8 x 8 tokens"));
}

namespace {

// The pid of the process whose environment holds both `a` and `b` ("NAME=value"), or 0.
pid_t find_process_with_env(const std::string& a, const std::string& b) {
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    const std::string name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream in(entry.path() / "environ", std::ios::binary);
    const std::string env((std::istreambuf_iterator<char>(in)), {});
    auto has = [&](const std::string& var) {
      return env.compare(0, var.size() + 1, var + '\0') == 0 ||
             env.find('\0' + var + '\0') != std::string::npos;
    };
    if (has(a) && has(b)) return static_cast<pid_t>(std::stol(name));
  }
  return 0;
}

}  // namespace

// kill -9 of rank 1 in the middle of a run: mpirun ends the whole job with a non-zero exit, and
// rank 0's last checkpoint loads (checkpoints are renamed into place whole).
BOOST_AUTO_TEST_CASE(a_killed_rank_stops_the_job_and_the_checkpoint_loads) {
  if (!mpi_available()) return;
  TempDir dir("distributed_kill");
  const std::string tag = "ATTOGRAD_TEST_TAG=kill" + std::to_string(::getpid());
  const std::string cmd = tag + " " + mpirun(2) + "-x ATTOGRAD_TEST_TAG " + ATTOGRAD_CLI +
                          " train --corpus " + write_corpus(dir) +
                          " --preset femto --steps 1000000 --batch-size 4 --eval-interval 0 "
                          "--checkpoint-interval 20 --log-interval 1000 --threads 1 --out " +
                          (dir / "run") + " > " + (dir / "log") + " 2>&1";
  std::vector<char*> argv{const_cast<char*>("/bin/sh"), const_cast<char*>("-c"),
                          const_cast<char*>(cmd.c_str()), nullptr};
  pid_t job = 0;
  BOOST_REQUIRE(posix_spawn(&job, "/bin/sh", nullptr, nullptr, argv.data(), environ) == 0);
  const std::string ckpt = dir / "run/ckpt.safetensors";
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  pid_t rank1 = 0;
  while (std::chrono::steady_clock::now() < deadline &&
         (!std::filesystem::exists(ckpt) ||
          (rank1 = find_process_with_env(tag, "OMPI_COMM_WORLD_RANK=1")) == 0))
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  BOOST_REQUIRE_MESSAGE(rank1 > 0, "rank 1 did not start, or no checkpoint appeared");
  ::kill(rank1, SIGKILL);
  BOOST_TEST_MESSAGE("killed rank 1, pid " << rank1);
  int status = 0;
  while (std::chrono::steady_clock::now() < deadline && ::waitpid(job, &status, WNOHANG) == 0)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  if (::waitpid(job, &status, WNOHANG) == 0) {  // still running: fail without leaving it behind
    ::kill(job, SIGKILL);
    BOOST_FAIL("mpirun did not end after rank 1 was killed");
  }
  std::ifstream log_file(dir / "log");
  const std::string log((std::istreambuf_iterator<char>(log_file)), {});
  BOOST_TEST_INFO(log);
  BOOST_TEST((WIFEXITED(status) && WEXITSTATUS(status) != 0));
  BOOST_TEST(contains(log, "exited on signal 9 (Killed)"));  // mpirun says which rank died
  const gpt::Session s = gpt::open_checkpoint(dir / "run");
  BOOST_TEST(s.model->arena().num_non_finite() == 0);
  const gpt::TrainingState state =
      *gpt::read_checkpoint_info(gpt::SafetensorsFile::read(ckpt)).training;
  BOOST_TEST(state.step % 20 == 0);
  BOOST_TEST(state.step >= 20);
}
