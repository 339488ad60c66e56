// Data-parallel training over MPI: the few collective operations the trainer needs, behind one
// small class with a single-process implementation, so the trainer never sees MPI (or #ifdefs).
//
// A process started by a launcher (Open MPI's mpirun, Slurm's srun) is one rank of `size()`
// processes; Communicator::world() initialises MPI once for it and finalises it at exit. Started
// directly, or in a build without MPI, it is rank 0 of 1 and every collective is a no-op (a sum
// over one rank is the value itself). Launched with several ranks in a build without MPI,
// world() refuses: each rank would train alone and write the same files.
//
// Every collective must be called by every rank in the same order (MPI's rule): the trainer
// calls them at the same points of each step on every rank. An error one rank alone sees (a
// full disk on rank 0) cannot reach the others, which would wait forever at the next
// collective: the caller ends the job with abort() instead.
#pragma once

#include <cstdint>
#include <string_view>

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

 private:
  Communicator(int rank, int size, int local_size, bool mpi)
      : rank_(rank), size_(size), local_size_(local_size), mpi_(mpi) {}
  int rank_, size_, local_size_;
  bool mpi_;  // false: the single-process communicator (no MPI calls at all)
};

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
