// gpt/train/distributed.h without a launcher: what every build, with MPI or without, must do in one
// process. The single-process collectives return their input, the fingerprint sees one bit,
// launched_ranks reads mpirun's and srun's variables, and a command started as several ranks is
// refused: sample and eval in any build, and train in a build without MPI (the core build of
// scripts/core.sh, which CI builds under the sanitizers: so CI runs both branches).
#define BOOST_TEST_MODULE communicator
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "autograd/ops.h"
#include "autograd/tensor.h"
#include "gpt/train/distributed.h"
#include "tests/cli/cli_run.h"
#include "tests/test_util.h"

using attograd::DType;
using attograd::Tensor;
using attograd::testing::CliRun;
using attograd::testing::contains;
using attograd::testing::run_cli;
namespace gpt = attograd::gpt;

namespace {

// Sets an environment variable for one scope, restoring what was there.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    value ? ::setenv(name, value, 1) : ::unsetenv(name);
  }
  ~ScopedEnv() { old_.empty() ? ::unsetenv(name_) : ::setenv(name_, old_.c_str(), 1); }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  std::string old_;
};

}  // namespace

BOOST_AUTO_TEST_CASE(one_process_is_rank_0_of_1_and_its_collectives_return_their_input) {
  const gpt::Communicator& c = gpt::Communicator::single_process();
  BOOST_TEST(c.rank() == 0);
  BOOST_TEST(c.size() == 1);
  BOOST_TEST(c.is_root());
  const Tensor t = Tensor::from_vector({1.5, -2.25, 3}, {3}, DType::f32);
  c.all_reduce_sum(t);
  BOOST_TEST(t.to_vector() == std::vector<double>({1.5, -2.25, 3}),
             boost::test_tools::per_element());
  double sums[2] = {0.25, 7};
  c.all_reduce_sum(sums, 2);
  BOOST_TEST(sums[0] == 0.25);
  BOOST_TEST(sums[1] == 7);
  BOOST_TEST(c.all_equal(42));
  // Started without a launcher, world() is this same process, in every build.
  BOOST_TEST(&gpt::Communicator::world() == &gpt::Communicator::single_process());
}

BOOST_AUTO_TEST_CASE(all_reduce_refuses_integers_and_views) {
  const gpt::Communicator& c = gpt::Communicator::single_process();
  BOOST_CHECK_THROW(c.all_reduce_sum(Tensor::from_vector({1, 2}, {2}, DType::i64)),
                    std::invalid_argument);
  const Tensor m = Tensor::from_vector({1, 2, 3, 4, 5, 6}, {2, 3}, DType::f32);
  BOOST_CHECK_THROW(c.all_reduce_sum(attograd::transpose(m, 0, 1)), std::invalid_argument);
}

// The replica check compares fingerprints: equal values give equal ones, and one bit more or
// less (the last bit of a float, or the sign of a zero) gives another.
BOOST_AUTO_TEST_CASE(fingerprint_sees_one_bit) {
  const std::vector<double> v = {0.1, -3.5, 1e-30, 0.0};
  const Tensor a = Tensor::from_vector(v, {4}, DType::f32);
  const Tensor b = Tensor::from_vector(v, {4}, DType::f32);
  BOOST_TEST(gpt::fingerprint(a) == gpt::fingerprint(b));
  std::vector<double> next = v;
  next[0] = std::nextafter(0.1f, 1.0f);
  BOOST_TEST(gpt::fingerprint(a) != gpt::fingerprint(Tensor::from_vector(next, {4}, DType::f32)));
  std::vector<double> negative_zero = v;
  negative_zero[3] = -0.0;
  BOOST_TEST(gpt::fingerprint(a) !=
             gpt::fingerprint(Tensor::from_vector(negative_zero, {4}, DType::f32)));
  // FNV-1a's offset basis: the fingerprint of no bytes.
  BOOST_TEST(gpt::fingerprint(Tensor::from_vector({}, {0}, DType::f32)) == 0xcbf29ce484222325ULL);
  const Tensor m = Tensor::from_vector({1, 2, 3, 4}, {2, 2}, DType::f32);
  BOOST_CHECK_THROW(gpt::fingerprint(attograd::transpose(m, 0, 1)), std::invalid_argument);
}

BOOST_AUTO_TEST_CASE(launched_ranks_reads_mpirun_and_srun) {
  ScopedEnv ompi("OMPI_COMM_WORLD_SIZE", nullptr), pmi("PMI_SIZE", nullptr);
  BOOST_TEST(gpt::launched_ranks() == 1);
  {
    ScopedEnv set("OMPI_COMM_WORLD_SIZE", "3");
    BOOST_TEST(gpt::launched_ranks() == 3);
  }
  {
    ScopedEnv set("PMI_SIZE", "8");
    BOOST_TEST(gpt::launched_ranks() == 8);
  }
  for (const char* bad : {"0", "-2", "many", ""}) {
    ScopedEnv set("OMPI_COMM_WORLD_SIZE", bad);
    BOOST_TEST(gpt::launched_ranks() == 1, "OMPI_COMM_WORLD_SIZE=" << bad);
  }
}

// The set-up agreement on one process: the count is this process's own failure, and a failure is
// said once, the way one process says it (say_alone), with no rank number.
BOOST_AUTO_TEST_CASE(one_process_agrees_with_itself_on_its_set_up) {
  const gpt::Communicator& c = gpt::Communicator::single_process();
  BOOST_TEST(c.agree_on_setup(false) == 0);
  BOOST_TEST(c.agree_on_setup(true) == 1);
  std::ostringstream err;
  int said = 0;
  BOOST_TEST(c.fail_setup(
                 "a bad option", [&] { ++said; }, err) == 1);
  BOOST_TEST(said == 1);
  BOOST_TEST(err.str().empty());
  BOOST_TEST(c.rank_error("a file only I cannot read") ==
             "attograd: error: rank 0 of 1: a file only I cannot read\n");
}

// Only train is data-parallel: the other commands refuse to run once per rank, in any build,
// before they read anything.
BOOST_AUTO_TEST_CASE(sample_and_eval_refuse_when_launched_as_several_ranks) {
  for (const std::string command : {"sample", "eval"}) {
    const CliRun r = run_cli(command + " --checkpoint nowhere", true, "OMPI_COMM_WORLD_SIZE=4 ");
    BOOST_TEST_INFO(r.out);
    BOOST_TEST(r.exit_code == 2);
    BOOST_TEST(contains(r.out, "attograd: error: `attograd " + command +
                                   "` runs in one process, but 4 ranks were launched (mpirun -np / "
                                   "srun): run it without the launcher"));
  }
}

#ifndef ATTOGRAD_HAVE_MPI
// A build without MPI cannot take part in a job: each rank would train alone and write the same
// files. (With MPI, these variables would make world() initialise MPI instead.)
BOOST_AUTO_TEST_CASE(a_build_without_mpi_refuses_to_train_as_several_ranks) {
  const CliRun r =
      run_cli("train --preset femto --steps 1 --out nowhere", true, "OMPI_COMM_WORLD_SIZE=2 ");
  BOOST_TEST_INFO(r.out);
  BOOST_TEST(r.exit_code != 0);
  BOOST_TEST(contains(r.out,
                      "launched as one of 2 ranks, but this attograd was built without MPI, "
                      "so each rank would train alone: install libopenmpi-dev "
                      "(scripts/install-deps.sh) and configure with -DATTOGRAD_MPI=ON, or run "
                      "one process"));
  BOOST_TEST(!std::filesystem::exists("nowhere"));
}
#endif
