// Data-parallel training over MPI: the few collective operations the trainer needs, behind one
// small class with a single-process implementation, so the trainer never sees MPI (or #ifdefs).
//
// A process started by a launcher (Open MPI's mpirun, Slurm's srun) is one rank of `size()`
// processes; Communicator::world() initialises MPI once for it and finalises it at exit. Started
// directly, or in a build without MPI, it is rank 0 of 1 and every collective is a no-op (a sum
// over one rank is the value itself). Launched with several ranks in a build without MPI,
// world() refuses: each rank would train alone and write the same files. CMake compiles one of
// two files behind this header (ATTOGRAD_MPI): distributed_mpi.cc, the MPI calls, or
// distributed_single.cc, one process only; distributed.cc holds what both share.
//
// Every collective must be called by every rank in the same order (MPI's rule): the trainer
// calls them at the same points of each step on every rank. An error one rank alone sees (a
// full disk on rank 0) cannot reach the others, which would wait forever at the next
// collective: the caller ends the job with abort() instead.
//
// ## The set-up agreement
//
// Before training, each rank sets up alone (its command line, the corpus, the model) and may
// fail where the others did not (a file only it cannot read) or where all did (a bad option).
// So the ranks agree once before training starts: each calls exactly one of
// agree_on_setup(false), once set up, or fail_setup(), from where it failed. Both are the same
// collective, a sum of the failures, after which
//   - no rank failed: all train;
//   - every rank failed (the same bad input, most likely): rank 0 alone says why, once;
//   - some failed: each of those says why, naming its rank; the others stop silently;
// and every rank that stops exits with 2 after a barrier, since mpirun ends the job at the first
// non-zero exit and would cut a report short. Without it, each rank would report the same
// error (N times over), or the ranks that set up would wait for ever for the others.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <ostream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>

#include "autograd/tensor.h"

namespace attograd::gpt {

/// The ranks a data-parallel run spans, and the collectives over them.
class Communicator {
 public:
  /// The job this process belongs to: MPI_COMM_WORLD when a launcher started it and MPI was
  /// compiled in (initialising MPI on the first call), else the single-process communicator.
  /// Throws std::runtime_error when a launcher started several ranks in a build without MPI.
  static const Communicator& world();
  /// One process, rank 0 of 1: every collective returns its input.
  static const Communicator& single_process();

  int rank() const { return rank_; }
  int size() const { return size_; }
  /// Rank 0: the one that prints, logs and writes checkpoints.
  bool is_root() const { return rank_ == 0; }
  /// How many ranks of the job run on this machine (MPI_COMM_TYPE_SHARED), this one included:
  /// they share its cores.
  int local_size() const { return local_size_; }

  /// Sums a contiguous f32 or f64 tensor over all ranks, in place, every rank getting the sum
  /// (MPI_Allreduce). One call for the whole buffer: the trainer passes the parameter arena's
  /// gradients, all of them contiguous. Throws std::invalid_argument for i64 or a view.
  void all_reduce_sum(const Tensor& t) const;
  /// Sums n doubles over all ranks, in place.
  void all_reduce_sum(double* values, int n) const;
  /// Whether `value` is the same on every rank (one collective: the min and max agree).
  bool all_equal(uint64_t value) const;
  /// Waits until every rank has called it (MPI_Barrier): e.g. for rank 0 to finish printing an
  /// error all ranks met, before the others exit and mpirun ends the job.
  void barrier() const;
  /// Ends every rank of the job with exit code `code` (MPI_Abort); std::_Exit on one process.
  [[noreturn]] void abort(int code) const;

  /// The set-up agreement (above), for a rank that has set up (failed = false) or, through
  /// fail_setup(), one that has not: how many ranks failed, the same on every rank. Training
  /// starts only when it is 0. Collective; on one process it is `failed` itself.
  int agree_on_setup(bool failed) const;
  /// The set-up agreement for a rank that failed to set up with the error `message`: joins the
  /// others' agree_on_setup, then reports, one write each: when every rank failed, rank 0 alone,
  /// by calling say_alone (the message as one process would print it); otherwise this rank, as
  /// rank_error(message) on `err`. Waits at a barrier, so that every report is out before any
  /// rank exits. Returns how many ranks failed, the same on every rank (size(): all of them).
  int fail_setup(const std::string& message, const std::function<void()>& say_alone,
                 std::ostream& err) const;
  /// "attograd: error: rank r of N: <message>\n": how a rank says what it alone met, in one
  /// write (mpirun interleaves the ranks' output by writes).
  std::string rank_error(std::string_view message) const;

 private:
  Communicator(int rank, int size, int local_size, bool mpi)
      : rank_(rank), size_(size), local_size_(local_size), mpi_(mpi) {}
  // all_reduce_sum's argument check, the same in both builds.
  static void require_reducible(const Tensor& t);
  int rank_, size_, local_size_;
  bool mpi_;  // false: the single-process communicator (no MPI calls at all)
};

/// Thrown by set_up_together() on every rank of a job whose set-up failed on some rank, once
/// that failure has been reported (see the set-up agreement above): the caller exits with
/// exit_code() and says nothing more.
class SetupFailed : public std::runtime_error {
 public:
  SetupFailed() : std::runtime_error("the set-up failed on a rank, which has said why") {}
  int exit_code() const { return 2; }
};

/// Runs set_up() on this rank within the set-up agreement (above) and returns what it returns,
/// once every rank has set up. On one process it is set_up() itself: its exceptions pass
/// through. On several ranks, one whose set_up() throws reports as fail_setup() says, on
/// `err` ("attograd: error: ..." from rank 0 when every rank failed), and every rank then
/// throws SetupFailed.
template <class SetUp>
auto set_up_together(const Communicator& comm, std::ostream& err, SetUp&& set_up)
    -> decltype(set_up()) {
  if (comm.size() == 1) return set_up();
  std::optional<decltype(set_up())> result;
  try {
    result.emplace(set_up());
  } catch (const std::exception& e) {
    const auto say_alone = [&] {
      err << "attograd: error: " + std::string(e.what()) + "\n" << std::flush;
    };
    comm.fail_setup(e.what(), say_alone, err);
    throw SetupFailed();
  }
  // Every rank has set up, or thrown and joined this same collective from its catch.
  if (comm.agree_on_setup(false) > 0) {
    comm.barrier();  // until the failed ranks have said why
    throw SetupFailed();
  }
  return std::move(*result);
}

/// The number of ranks a launcher started this process among, read from its environment
/// (OMPI_COMM_WORLD_SIZE of mpirun, PMI_SIZE of srun with PMI-2); 1 when none did. Needs no
/// MPI: the commands other than `train` use it to refuse running N times. (srun with PMIx sets
/// no size: there they run once per rank.)
int launched_ranks();
/// This process's rank as the launcher numbered it (OMPI_COMM_WORLD_RANK, PMI_RANK, PMIX_RANK,
/// SLURM_PROCID), 0 when none did: before MPI is initialised, which rank alone reports an error
/// every rank meets.
int launched_rank();

/// A 64-bit hash of `bytes`: FNV-1a's step (xor, multiply by its prime) over 8-byte words, then
/// the last bytes one at a time (about 1 ns per word: 60 ms for GPT-2 small's 498 MB). Every
/// step is a bijection of the state, so one changed word always changes the result; two runs
/// agree exactly when their bytes do, up to a 2^-64 collision. The empty input gives FNV's
/// offset basis, 0xcbf29ce484222325.
uint64_t fingerprint(std::string_view bytes);
/// fingerprint() over the bytes of a contiguous tensor: how the trainer proves the ranks'
/// parameters have not drifted apart. Throws std::invalid_argument for a view.
uint64_t fingerprint(const Tensor& t);

}  // namespace attograd::gpt
