// gpt/train/distributed.h over MPI (ATTOGRAD_MPI=ON, or AUTO with MPI found): MPI calls when a
// launcher started this process and the job has more than one rank; nothing otherwise.
#include <mpi.h>

#include <algorithm>
#include <cstdlib>
#include <stdexcept>
#include <string>

#include "gpt/train/distributed.h"

namespace attograd::gpt {

namespace {

void check(int rc, const char* what) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, text, &len);
  throw std::runtime_error(std::string(what) + " failed: " + std::string(text, len));
}

void finalize_at_exit() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Finalize();
}

}  // namespace

const Communicator& Communicator::world() {
  // Only a launched process initialises MPI: a singleton MPI_Init would start Open MPI's
  // runtime for nothing on every plain `attograd train`.
  static const Communicator& w = []() -> const Communicator& {
    // mpirun sets OMPI_COMM_WORLD_SIZE; srun sets PMI_SIZE (PMI-2) or PMIX_RANK (PMIx).
    if (std::getenv("OMPI_COMM_WORLD_SIZE") == nullptr && std::getenv("PMI_SIZE") == nullptr &&
        std::getenv("PMIX_RANK") == nullptr)
      return single_process();
    check(MPI_Init(nullptr, nullptr), "MPI_Init");
    std::atexit(finalize_at_exit);
    int rank = 0, size = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm node;
    int local_size = 1;
    check(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node),
          "MPI_Comm_split_type");
    MPI_Comm_size(node, &local_size);
    MPI_Comm_free(&node);
    static const Communicator c(rank, size, local_size, true);
    return c;
  }();
  return w;
}

void Communicator::all_reduce_sum(const Tensor& t) const {
  require_reducible(t);
  if (!mpi_ || size_ == 1) return;
  const MPI_Datatype type = t.dtype() == DType::f32 ? MPI_FLOAT : MPI_DOUBLE;
  const auto elem = static_cast<int64_t>(dtype_size(t.dtype()));
  constexpr int64_t kChunk = int64_t{1} << 30;  // MPI counts are int
  for (int64_t done = 0; done < t.numel(); done += kChunk)
    check(MPI_Allreduce(MPI_IN_PLACE, t.bytes() + done * elem,
                        static_cast<int>(std::min(kChunk, t.numel() - done)), type, MPI_SUM,
                        MPI_COMM_WORLD),
          "MPI_Allreduce of the gradients");
}

void Communicator::all_reduce_sum(double* values, int n) const {
  if (!mpi_ || size_ == 1) return;
  check(MPI_Allreduce(MPI_IN_PLACE, values, n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD),
        "MPI_Allreduce");
}

bool Communicator::all_equal(uint64_t value) const {
  if (!mpi_ || size_ == 1) return true;
  uint64_t both[2] = {value, ~value};  // max(v), and max(~v) = ~min(v): one collective
  check(MPI_Allreduce(MPI_IN_PLACE, both, 2, MPI_UINT64_T, MPI_MAX, MPI_COMM_WORLD),
        "MPI_Allreduce of a fingerprint");
  return both[0] == ~both[1];
}

void Communicator::barrier() const {
  if (!mpi_ || size_ == 1) return;
  check(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier");
}

void Communicator::abort(int code) const {
  if (mpi_) MPI_Abort(MPI_COMM_WORLD, code);
  std::_Exit(code);
}

}  // namespace attograd::gpt
