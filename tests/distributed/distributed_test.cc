// Data-parallel training over MPI (gpt/train/distributed.h): two ranks with B = 4 each against one
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
#include <functional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "gpt/model/checkpoint.h"
#include "gpt/model/open_model.h"
#include "nn/io/safetensors.h"
#include "nn/optim.h"
#include "tests/cli/cli_run.h"
#include "tests/distributed/key_bias.h"
#include "tests/test_util.h"

using attograd::testing::CliRun;
using attograd::testing::contains;
using attograd::testing::is_key_bias;
using attograd::testing::run_program;
using attograd::testing::TempDir;
using attograd::testing::write_corpus;
namespace gpt = attograd::gpt;
namespace nn = attograd::nn;

extern char** environ;

namespace {

// mpirun as the tests need it: two ranks on however few cores (each rank's threads then default
// to its share of its CPUs), allowed to run as root (CI containers), its own chatter about
// aborted jobs kept out of the output.
std::string mpirun(int ranks) {
  return "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 " +
         std::string(ATTOGRAD_MPIRUN) + " --oversubscribe -np " + std::to_string(ranks) + " ";
}

bool mpi_available() {
  return attograd::testing::data_available(ATTOGRAD_MPIRUN,
                                           "build with MPI: apt-get install libopenmpi-dev "
                                           "openmpi-bin, then configure again");
}

// Parameters by tensor, in arena order, as (name, values).
using NamedValues = std::vector<std::pair<std::string, std::vector<double>>>;

struct WorkerRun {
  int ranks = 0;
  int64_t n_embd = 0;
  std::vector<double> losses;
  NamedValues params;
  double val = 0, grad_max = 0, key_bias_grad_max = 0;
  std::string replicas;
};

WorkerRun read_worker(const std::string& path) {
  WorkerRun r;
  std::ifstream in(path);
  std::string key, name;
  double v = 0;
  while (in >> key) {
    if (key == "ranks") in >> r.ranks;
    if (key == "n_embd") in >> r.n_embd;
    if (key == "replicas") in >> r.replicas;
    if (key == "loss" && in >> v) r.losses.push_back(v);
    if (key == "val") in >> r.val;
    if (key == "grad_max") in >> r.grad_max;
    if (key == "key_bias_grad_max") in >> r.key_bias_grad_max;
    if (key == "param" && in >> v >> name) {
      if (r.params.empty() || r.params.back().first != name) r.params.push_back({name, {}});
      r.params.back().second.push_back(v);
    }
  }
  return r;
}

NamedValues checkpoint_params(const std::string& run_dir) {
  NamedValues out;
  const gpt::Session s = gpt::open_checkpoint(run_dir);
  for (const auto& [name, p] : s.model->arena().named_parameters())
    out.push_back({name, p.to_vector()});
  return out;
}

// The largest |a - b| / |b| over two equally long lists.
double max_rel_diff(const std::vector<double>& a, const std::vector<double>& b) {
  BOOST_REQUIRE_EQUAL(a.size(), b.size());
  double worst = 0;
  for (size_t i = 0; i < a.size(); ++i)
    worst = std::max(worst, std::abs(a[i] - b[i]) / std::abs(b[i]));
  return worst;
}

// Two runs' parameters, element by element: allclose(a, b, tol, tol) for every parameter, except
// that with `key_bias_atol` > 0 the attention's key biases are held only to that absolute bound.
// Their gradient is zero in exact arithmetic (softmax ignores a constant added to every key;
// distributed_test asserts it is rounding noise), and AdamW divides that noise by its own square
// root, so in f32 they take steps of up to the learning rate in directions set by the summation
// order: one process summing 8 rows and two summing 4 and all-reducing differ there, and only
// there. In f64 the noise (1e-19) stays far below AdamW's epsilon, and no exception is needed.
void check_parameters(const NamedValues& a, const NamedValues& b, int64_t n_embd, double tol,
                      double key_bias_atol) {
  BOOST_REQUIRE_EQUAL(a.size(), b.size());
  double worst = 0, worst_key_bias = 0;
  size_t count = 0;
  for (size_t t = 0; t < a.size(); ++t) {
    BOOST_REQUIRE_EQUAL(a[t].first, b[t].first);
    std::vector<double> x = a[t].second, y = b[t].second;
    BOOST_REQUIRE_EQUAL(x.size(), y.size());
    count += x.size();
    for (size_t i = 0; i < x.size(); ++i) {
      const double diff = std::abs(x[i] - y[i]);
      if (key_bias_atol > 0 && is_key_bias(a[t].first, static_cast<int64_t>(i), n_embd)) {
        worst_key_bias = std::max(worst_key_bias, diff);
        BOOST_TEST(diff <= key_bias_atol,
                   a[t].first << "[" << i << "]: " << x[i] << " vs " << y[i]);
        x[i] = y[i];  // checked above
      } else {
        worst = std::max(worst, diff);
      }
    }
    BOOST_TEST(attograd::testing::allclose(x, y, tol, tol), a[t].first);
  }
  std::ostringstream key_bias;
  if (key_bias_atol > 0) key_bias << ", of the key biases " << worst_key_bias;
  BOOST_TEST_MESSAGE("  " << count << " parameters: largest difference " << worst
                          << key_bias.str());
}

// How far AdamW can move a key bias in `steps` steps of the worker's and the CLI tests' schedules
// (2 warmup steps to 1e-2, cosine to 1e-3): an AdamW step moves an element by at most about lr.
double key_bias_bound(int64_t steps) {
  double sum = 0;
  for (int64_t step = 0; step < steps; ++step)
    sum += attograd::nn::cosine_lr(step, 2, 20, 1e-2, 1e-3);
  return sum;
}

// The losses of every step and the val loss agree to `tol` relative, the parameters element by
// element (check_parameters), and the ranks end bit-identical.
void two_ranks_equal_one_process(const std::string& dtype, const std::string& config, double tol) {
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
  const double val_diff = std::abs(a.val - b.val) / b.val;
  BOOST_TEST_MESSAGE(dtype << " " << config << ": max relative difference of 20 losses "
                           << loss_diff << ", of the val loss " << val_diff);
  BOOST_TEST(loss_diff <= tol);
  BOOST_TEST(val_diff <= tol);
  // The key biases' gradient is rounding noise: zero in exact arithmetic.
  for (const WorkerRun* r : {&a, &b}) {
    BOOST_TEST(r->grad_max > 0.01);
    BOOST_TEST(r->key_bias_grad_max <= (dtype == "f32" ? 1e-6 : 1e-14) * r->grad_max);
  }
  check_parameters(a.params, b.params, a.n_embd, tol, dtype == "f32" ? key_bias_bound(20) : 0);
}

}  // namespace

BOOST_AUTO_TEST_CASE(femto_f32_two_ranks_of_4_match_one_process_of_8) {
  two_ranks_equal_one_process("f32", "femto", 1e-6);
}
BOOST_AUTO_TEST_CASE(femto_f64_two_ranks_of_4_match_one_process_of_8) {
  two_ranks_equal_one_process("f64", "femto", 1e-12);
}
BOOST_AUTO_TEST_CASE(small_f32_two_ranks_of_4_match_one_process_of_8) {
  two_ranks_equal_one_process("f32", "small", 1e-6);
}
BOOST_AUTO_TEST_CASE(small_f64_two_ranks_of_4_match_one_process_of_8) {
  two_ranks_equal_one_process("f64", "small", 1e-12);
}

namespace {

// Whether `out` holds `message` exactly once: said by rank 0 alone, not by every rank.
bool said_once(const std::string& out, const std::string& message) {
  const size_t first = out.find(message);
  return first != std::string::npos && first == out.rfind(message);
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
  // How far summation-order noise carries depends on the run: AdamW scales each element's step
  // by its own gradient's size, so an element with a small gradient (a rare token's embedding)
  // turns its rounding noise into a larger step. This run's largest difference is 1.5e-6 (the
  // worker runs': 4e-7), held to 1e-5; rows drawn wrongly would differ at 1e-2.
  BOOST_TEST_MESSAGE("attograd train, femto f32:");
  check_parameters(checkpoint_params(dir / "two"), checkpoint_params(dir / "one"), 2, 1e-5,
                   key_bias_bound(20));
  // The eval lines agree to their printed digits.
  const std::string eval_two = two.out.substr(two.out.find("eval at step 20:"), 80);
  BOOST_TEST(eval_two == one.out.substr(one.out.find("eval at step 20:"), 80));
}

// Fine-tuning under mpirun: `mpirun -np 2 attograd train --init-from RUN --batch-size 4` and one
// process with --batch-size 8 start from the same weights (each rank reads the file) and make the
// same run: the same step-0 loss, and parameters within summation-order noise after 10 steps.
BOOST_AUTO_TEST_CASE(init_from_under_mpirun_matches_one_process) {
  if (!mpi_available()) return;
  TempDir dir("distributed_init_from");
  const std::string corpus = write_corpus(dir);
  const std::string settings =
      " --steps 10 --warmup 2 --eval-interval 10 --eval-iters 2 "
      "--log-interval 10 --threads 1 --out ";
  BOOST_REQUIRE_EQUAL(
      run_program(ATTOGRAD_CLI, "train --corpus " + corpus + " --preset femto --batch-size 8" +
                                    settings + (dir / "base"))
          .exit_code,
      0);
  const std::string tune = "train --corpus " + corpus + " --init-from " + (dir / "base") + settings;
  const CliRun two =
      run_program(mpirun(2) + ATTOGRAD_CLI, tune + (dir / "two") + " --batch-size 4");
  BOOST_TEST_INFO(two.out);
  BOOST_REQUIRE_EQUAL(two.exit_code, 0);
  const CliRun one = run_program(ATTOGRAD_CLI, tune + (dir / "one") + " --batch-size 8");
  BOOST_TEST_INFO(one.out);
  BOOST_REQUIRE_EQUAL(one.exit_code, 0);
  BOOST_TEST(contains(two.out, "| 2 ranks, global batch 8 |"));
  BOOST_TEST(contains(two.out, "init    weights of the attograd checkpoint"));
  for (const std::string eval : {"eval at step 0:", "eval at step 10:"}) {
    BOOST_TEST_INFO(eval);
    BOOST_REQUIRE(contains(two.out, eval) && contains(one.out, eval));
    BOOST_TEST(two.out.substr(two.out.find(eval), 80) == one.out.substr(one.out.find(eval), 80));
  }
  check_parameters(checkpoint_params(dir / "two"), checkpoint_params(dir / "one"), 2, 1e-5,
                   key_bias_bound(10));
}

// Only train is data-parallel: every other command refuses to run once per rank, and says so
// once (rank 0), before it reads anything.
BOOST_AUTO_TEST_CASE(commands_other_than_train_refuse_several_ranks) {
  if (!mpi_available()) return;
  for (const std::string command : {"sample --checkpoint nowhere", "eval --checkpoint nowhere",
                                    "gradcheck", "tokenize hello", "info", "figure mask"}) {
    const CliRun r = run_program(mpirun(2) + ATTOGRAD_CLI, command);
    BOOST_TEST_INFO(r.out);
    BOOST_TEST(r.exit_code == 2);
    const std::string message = "attograd: error: `attograd " +
                                command.substr(0, command.find(' ')) +
                                "` runs in one process, but 2 ranks were launched (mpirun -np / "
                                "srun): run it without the launcher";
    BOOST_TEST(said_once(r.out, message));
  }
}

namespace {

// Two 2-rank femto runs (B = 4 per rank) with `options`, in dir: "straight" for `steps` steps,
// and "resumed" stopped at steps / 2, then (after `before_resume`) resumed to `steps`. Returns
// the resumed run's output.
CliRun straight_and_resumed(const TempDir& dir, const std::string& options, int steps,
                            const std::function<void()>& before_resume = {}) {
  const std::string common = "train --corpus " + write_corpus(dir) + " --preset femto " + options +
                             " --threads 1 --batch-size 4 --out ";
  const std::string two = mpirun(2) + ATTOGRAD_CLI;
  const std::string all = std::to_string(steps), half = std::to_string(steps / 2);
  BOOST_REQUIRE_EQUAL(run_program(two, common + (dir / "straight") + " --steps " + all).exit_code,
                      0);
  BOOST_REQUIRE_EQUAL(run_program(two, common + (dir / "resumed") + " --steps " + half).exit_code,
                      0);
  if (before_resume) before_resume();
  return run_program(two, "train --resume --steps " + all + " --out " + (dir / "resumed"));
}

}  // namespace

// A 2-rank run stopped at step 10 and resumed on 2 ranks ends bit-exact where the uninterrupted
// 2-rank run does. The checkpoint records the global batch: one process resumes it with B = 8 and
// ends where the 2-rank run does up to summation order (check_parameters); three ranks cannot
// share 8 sequences and are refused before anything is written.
BOOST_AUTO_TEST_CASE(resume_under_mpirun_is_bit_exact_and_keeps_the_global_batch) {
  if (!mpi_available()) return;
  TempDir dir("distributed_resume");
  const CliRun resumed = straight_and_resumed(
      dir, "--warmup 2 --decay-steps 20 --eval-interval 5 --eval-iters 2", 20, [&] {
        std::filesystem::copy(dir / "resumed", dir / "resumed_alone",
                              std::filesystem::copy_options::recursive);
      });
  BOOST_TEST_INFO(resumed.out);
  BOOST_REQUIRE_EQUAL(resumed.exit_code, 0);
  BOOST_TEST(contains(resumed.out, "resume  step 10 of "));
  BOOST_TEST(contains(resumed.out, "| 2 ranks, global batch 8 |"));
  const NamedValues straight = checkpoint_params(dir / "straight");
  BOOST_TEST(checkpoint_params(dir / "resumed") == straight);  // bit-exact, not close

  const CliRun three =
      run_program(mpirun(3) + ATTOGRAD_CLI, "train --resume --steps 30 --out " + (dir / "resumed"));
  BOOST_TEST_INFO(three.out);
  BOOST_TEST(three.exit_code != 0);
  BOOST_TEST(contains(three.out,
                      "this run's global batch is 2 ranks x batch size 4 = 8 sequences per "
                      "micro-batch, which 3 ranks cannot share evenly; resume it on a number of "
                      "ranks that divides 8 (1, 2, 4, 8)"));
  BOOST_TEST(said_once(three.out, "attograd: error:"));
  BOOST_TEST(checkpoint_params(dir / "resumed") == straight);

  const CliRun one =
      run_program(ATTOGRAD_CLI, "train --resume --steps 20 --out " + (dir / "resumed_alone"));
  BOOST_TEST_INFO(one.out);
  BOOST_REQUIRE_EQUAL(one.exit_code, 0);
  BOOST_TEST(contains(one.out, "batch 8 x 8 tokens"));
  BOOST_TEST_MESSAGE("resumed at step 10 in one process against 2 ranks throughout:");
  check_parameters(checkpoint_params(dir / "resumed_alone"), straight, 2, 1e-6,
                   key_bias_bound(20) - key_bias_bound(10));
}

// A fault on rank 1 alone stops both ranks with a message from each. A NaN loss on rank 1 reaches
// rank 0 through the reduced loss ("on at least one rank"); parameters moved on rank 1 alone are
// caught by the replica check that Trainer::run makes before its first step.
BOOST_AUTO_TEST_CASE(a_nan_or_a_diverged_replica_on_one_rank_stops_every_rank) {
  if (!mpi_available()) return;
  TempDir dir("distributed_faults");
  // Each rank's message is read from the file the worker writes beside <out>: mpirun may end
  // one rank before its stderr gets through.
  auto message = [&](const std::string& rank) {
    std::ifstream in(dir / ("x.rank" + rank + ".error"));
    return std::string((std::istreambuf_iterator<char>(in)), {});
  };
  const CliRun nan =
      run_program(mpirun(2) + ATTOGRAD_WORKER, "f32 femto 4 " + (dir / "x") + " nan");
  BOOST_TEST_INFO(nan.out);
  BOOST_TEST(nan.exit_code != 0);
  for (const std::string rank : {"0", "1"})
    BOOST_TEST(message(rank) == "mpi_train_worker: rank " + rank +
                                    " of 2: the training loss became nan at step 5 (on at least "
                                    "one rank); stopped before updating the parameters. Try a "
                                    "lower --lr or a --grad-clip\n");
  const CliRun diverged =
      run_program(mpirun(2) + ATTOGRAD_WORKER, "f32 femto 4 " + (dir / "x") + " diverge");
  BOOST_TEST_INFO(diverged.out);
  BOOST_TEST(diverged.exit_code != 0);
  for (const std::string rank : {"0", "1"})
    BOOST_TEST(contains(message(rank), "mpi_train_worker: rank " + rank +
                                           " of 2: the parameters of the 2 ranks differ at step 5 "
                                           "(their fingerprints disagree)"));
  BOOST_TEST(!std::filesystem::exists(dir / "x"));  // no rank got to the end
}

// With dropout, each rank draws its own masks (seeded from --seed, the step and the rank), and
// a 2-rank run resumed mid-way draws the same ones as an uninterrupted run: bit-exact.
BOOST_AUTO_TEST_CASE(each_rank_draws_its_own_dropout_masks_and_resume_stays_bit_exact) {
  if (!mpi_available()) return;
  TempDir dir("distributed_dropout");
  const CliRun r =
      run_program(mpirun(2) + ATTOGRAD_WORKER, "f32 femto 4 " + (dir / "x") + " dropout");
  BOOST_TEST_INFO(r.out);
  BOOST_REQUIRE_EQUAL(r.exit_code, 0);
  auto draw = [&](const std::string& rank) {
    std::ifstream in(dir / ("x.rank" + rank + ".dropout"));
    double v = -1;
    in >> v;
    return v;
  };
  BOOST_TEST(draw("0") >= 0);
  BOOST_TEST(draw("1") >= 0);
  BOOST_TEST(draw("0") != draw("1"));

  const CliRun resumed = straight_and_resumed(
      dir, "--dropout 0.2 --warmup 2 --decay-steps 12 --eval-interval 6 --eval-iters 1", 12);
  BOOST_TEST_INFO(resumed.out);
  BOOST_REQUIRE_EQUAL(resumed.exit_code, 0);
  BOOST_TEST(checkpoint_params(dir / "resumed") == checkpoint_params(dir / "straight"));
}

// A run that diverges on every rank at once (a learning rate of 1e30) stops them all with exit
// 1, and `attograd train` says so once, from rank 0, not once per rank.
BOOST_AUTO_TEST_CASE(a_diverged_run_is_reported_once) {
  if (!mpi_available()) return;
  TempDir dir("distributed_diverged");
  const CliRun r =
      run_program(mpirun(2) + ATTOGRAD_CLI,
                  "train --corpus " + write_corpus(dir) +
                      " --preset femto --steps 20 --batch-size 4 --threads 1 --lr 1e30 "
                      "--grad-clip 0 --warmup 1 --out " +
                      (dir / "run"));
  BOOST_TEST_INFO(r.out);
  BOOST_TEST(r.exit_code == 1);
  const std::string message =
      "attograd: error: the training loss became nan at step 1 (on at least one rank)";
  BOOST_TEST(said_once(r.out, message));
  BOOST_TEST(contains(r.out, "no checkpoint of this run was written"));
}

// An error every rank meets before training (here a bad option) is reported once, by rank 0,
// with exit 2: the ranks agree that all of them failed before any of them exits.
BOOST_AUTO_TEST_CASE(an_error_every_rank_meets_is_reported_once) {
  if (!mpi_available()) return;
  TempDir dir("distributed_setup_error");
  const CliRun r = run_program(mpirun(2) + ATTOGRAD_CLI,
                               "train --corpus " + write_corpus(dir) +
                                   " --preset femto --n-head 5 --steps 5 --out " + (dir / "run"));
  BOOST_TEST_INFO(r.out);
  BOOST_TEST(r.exit_code == 2);
  const std::string message =
      "attograd: error: --n-head 5: n_head must divide femto's n_embd 2 (head_dim = n_embd / "
      "n_head); choose an --n-head that divides 2 (e.g. 2), or an --n-embd that is a multiple of "
      "5 (e.g. 5)";
  BOOST_TEST(said_once(r.out, message));
  BOOST_TEST(!contains(r.out, "rank 1 of 2"));
}

// Ranks started with different command lines (mpirun's A : B form) are stopped before the first
// step, the difference named, instead of training on a global batch nobody asked for.
BOOST_AUTO_TEST_CASE(ranks_started_with_different_options_are_stopped) {
  if (!mpi_available()) return;
  TempDir dir("distributed_disagree");
  const std::string args = " train --corpus " + write_corpus(dir) +
                           " --preset femto --steps 5 --threads 1 --out " + (dir / "run");
  const CliRun r =
      run_program(mpirun(1) + ATTOGRAD_CLI,
                  args + " --batch-size 4 : -np 1 " + ATTOGRAD_CLI + args + " --batch-size 6");
  BOOST_TEST_INFO(r.out);
  BOOST_TEST(r.exit_code == 2);
  BOOST_TEST(
      said_once(r.out,
                "attograd: error: the 2 ranks were started with different training options "
                "(--batch-size, --steps, --lr, --out, ...): give every rank the same command "
                "line"));
  BOOST_TEST(!std::filesystem::exists(dir / "run/ckpt.safetensors"));
  // Other starting weights: refused before the first step, not reported as a drift later.
  const CliRun seeds =
      run_program(mpirun(1) + ATTOGRAD_CLI,
                  args + " --init-seed 1 : -np 1 " + ATTOGRAD_CLI + args + " --init-seed 2");
  BOOST_TEST_INFO(seeds.out);
  BOOST_TEST(seeds.exit_code == 2);
  BOOST_TEST(said_once(seeds.out,
                       "attograd: error: the 2 ranks start from different weights or training "
                       "states (another --init-seed, or a checkpoint that differs between the "
                       "machines)"));
  // An option only rank 1 cannot parse is named by rank 1.
  const CliRun parse =
      run_program(mpirun(1) + ATTOGRAD_CLI, args + " : -np 1 " + ATTOGRAD_CLI + args + " --lr -1");
  BOOST_TEST_INFO(parse.out);
  BOOST_TEST(parse.exit_code == 2);
  BOOST_TEST(said_once(parse.out,
                       "attograd: error: rank 1 of 2: --lr: must be a finite number > 0, got -1"));
}

// A rank given --help (mpirun's `a : b` form) stops the job with a word: leaving at once, it left
// the other waiting at the set-up agreement for ever. --help on every rank prints it once, exit 0.
BOOST_AUTO_TEST_CASE(help_on_one_rank_stops_the_job_and_on_every_rank_prints_once) {
  if (!mpi_available()) return;
  TempDir dir("distributed_help");
  const std::string args = " train --corpus " + write_corpus(dir) +
                           " --preset femto --steps 5 --threads 1 --out " + (dir / "run");
  // timeout: a hang fails the test instead of using CTest's whole budget
  const auto timed = [](std::string command) {
    return command.insert(command.find(ATTOGRAD_MPIRUN), "timeout 120 ");
  };
  const CliRun one = run_program(timed(mpirun(1)) + ATTOGRAD_CLI,
                                 args + " : -np 1 " + ATTOGRAD_CLI + " train --help");
  BOOST_TEST_INFO(one.out);
  BOOST_TEST(one.exit_code == 2);
  BOOST_TEST(said_once(one.out,
                       "attograd: error: rank 1 of 2: --help stops this rank while the others "
                       "set up to train; run `attograd train --help` without mpirun"));
  BOOST_TEST(!std::filesystem::exists(dir / "run/ckpt.safetensors"));
  const CliRun every = run_program(timed(mpirun(2)) + ATTOGRAD_CLI, " train --help");
  BOOST_TEST_INFO(every.out);
  BOOST_TEST(every.exit_code == 0);
  BOOST_TEST(said_once(every.out, "sequences per micro-batch (B)"));
}

// A rank bound to one core (mpirun's default for 2 ranks) that is asked for 2 threads is told
// how to unbind; without --threads each rank takes its share of the CPUs
// it may run on: 1.
BOOST_AUTO_TEST_CASE(threads_beyond_a_ranks_cpus_are_named) {
  if (!mpi_available()) return;
  TempDir dir("distributed_threads");
  const std::string args = "train --corpus " + write_corpus(dir) +
                           " --preset femto --steps 1 --eval-iters 1 --batch-size 2 --out ";
  const std::string bound = mpirun(2) + "--bind-to core " + ATTOGRAD_CLI;
  const CliRun two = run_program(bound, args + (dir / "two") + " --threads 2");
  BOOST_TEST_INFO(two.out);
  BOOST_TEST(two.exit_code == 0);
  BOOST_TEST(contains(two.out,
                      "note    2 threads per rank, but this process may run on 1 CPU only (mpirun "
                      "binds each rank to a core unless told otherwise: add --bind-to none"));
  const CliRun share =
      run_program("OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 " +
                      std::string(ATTOGRAD_MPIRUN) + " -np 2 --bind-to core " + ATTOGRAD_CLI,
                  args + (dir / "share"));
  BOOST_TEST_INFO(share.out);
  BOOST_TEST(share.exit_code == 0);
  BOOST_TEST(contains(share.out, ", 1 thread per rank; 2 ranks"));
  BOOST_TEST(!contains(share.out, "CPU only"));
}

// An error only one rank meets before training (its corpus file is missing) is named by that
// rank; the other, which set up well, stops with it: exit 2, nothing trained.
BOOST_AUTO_TEST_CASE(an_error_one_rank_meets_before_training_stops_both) {
  if (!mpi_available()) return;
  TempDir dir("distributed_one_rank_setup");
  const std::string args =
      " --preset femto --steps 5 --threads 1 --batch-size 4 --out " + (dir / "run");
  const CliRun r =
      run_program(mpirun(1) + ATTOGRAD_CLI, "train --corpus " + write_corpus(dir) + args +
                                                " : -np 1 " + ATTOGRAD_CLI + " train --corpus " +
                                                (dir / "missing.txt") + args);
  BOOST_TEST_INFO(r.out);
  BOOST_TEST(r.exit_code == 2);
  BOOST_TEST(contains(r.out, "attograd: error: rank 1 of 2: corpus file " + (dir / "missing.txt") +
                                 " does not exist"));
  BOOST_TEST(!contains(r.out, "rank 0 of 2"));
  BOOST_TEST(!std::filesystem::exists(dir / "run/ckpt.safetensors"));
}

// An error that only rank 0 meets (here its training log is a directory, which rank 0, the one
// writer, refuses when it takes the run directory) would leave rank 1 waiting at the next
// collective for ever: rank 0 names it and ends the whole job with MPI_Abort, exit code 2.
BOOST_AUTO_TEST_CASE(an_error_on_rank_0_alone_ends_the_job) {
  if (!mpi_available()) return;
  TempDir dir("distributed_one_rank_error");
  std::filesystem::create_directories(dir / "run/train_log.csv");
  const CliRun r = run_program(mpirun(2) + ATTOGRAD_CLI,
                               "train --corpus " + write_corpus(dir) +
                                   " --preset femto --steps 20 --batch-size 4 --threads 1 --out " +
                                   (dir / "run") + " --overwrite");  // past the occupied-dir check
  BOOST_TEST_INFO(r.out);
  BOOST_TEST(r.exit_code == 2);
  BOOST_TEST(contains(r.out, "attograd: error: rank 0 of 2: " + (dir / "run/train_log.csv") +
                                 " is a directory, not a regular file: a run reads and writes "
                                 "it; remove it, or choose another --out"));
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
  // (mpirun's own report, "exited on signal 9 (Killed)", is not asserted: Open MPI 4.1 sometimes
  // loses its help text under load, printing an ORTE_ERROR_LOG line instead.)
  const gpt::Session s = gpt::open_checkpoint(dir / "run");
  BOOST_TEST(s.model->arena().num_non_finite() == 0);
  const gpt::TrainingState state =
      *gpt::read_checkpoint_info(nn::SafetensorsFile::read(ckpt)).training;
  BOOST_TEST(state.step % 20 == 0);
  BOOST_TEST(state.step >= 20);
}
