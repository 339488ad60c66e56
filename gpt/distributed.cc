// The collectives of gpt/distributed.h: MPI calls when compiled in (ATTOGRAD_HAVE_MPI) and the
// job has more than one rank; nothing otherwise.
#include "gpt/distributed.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>

#ifdef ATTOGRAD_HAVE_MPI
#include <mpi.h>
#endif

namespace attograd::gpt {

namespace {

#ifdef ATTOGRAD_HAVE_MPI
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
#endif

}  // namespace

int launched_ranks() {
  // Not SLURM_NTASKS: an sbatch script running a plain command has it too, without srun.
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE"})
    if (const char* v = std::getenv(name))
      if (const int n = std::atoi(v); n >= 1) return n;
  return 1;
}

int launched_rank() {
  for (const char* name : {"OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK", "SLURM_PROCID"})
    if (const char* v = std::getenv(name))
      if (const int r = std::atoi(v); r >= 0) return r;
  return 0;
}

const Communicator& Communicator::single_process() {
  static const Communicator one(0, 1, 1, false);
  return one;
}

const Communicator& Communicator::world() {
  // Only a launched process initialises MPI: a singleton MPI_Init would start Open MPI's
  // runtime for nothing on every plain `attograd train`.
  static const Communicator& w = []() -> const Communicator& {
#ifdef ATTOGRAD_HAVE_MPI
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
#else
    if (const int launched = launched_ranks(); launched > 1)
      throw std::runtime_error(
          "launched as one of " + std::to_string(launched) +
          " ranks, but this attograd was built without MPI, so each rank would train alone: "
          "install libopenmpi-dev (scripts/install-deps.sh) and rebuild, or run one process");
    return single_process();
#endif
  }();
  return w;
}

void Communicator::all_reduce_sum(const Tensor& t) const {
  if (!t.is_contiguous() || t.dtype() == DType::i64)
    throw std::invalid_argument(
        "Communicator::all_reduce_sum: needs a contiguous f32 or f64 tensor");
  if (!mpi_ || size_ == 1) return;
#ifdef ATTOGRAD_HAVE_MPI
  const MPI_Datatype type = t.dtype() == DType::f32 ? MPI_FLOAT : MPI_DOUBLE;
  const auto elem = static_cast<int64_t>(dtype_size(t.dtype()));
  constexpr int64_t kChunk = int64_t{1} << 30;  // MPI counts are int
  for (int64_t done = 0; done < t.numel(); done += kChunk)
    check(MPI_Allreduce(MPI_IN_PLACE, t.bytes() + done * elem,
                        static_cast<int>(std::min(kChunk, t.numel() - done)), type, MPI_SUM,
                        MPI_COMM_WORLD),
          "MPI_Allreduce of the gradients");
#endif
}

void Communicator::all_reduce_sum([[maybe_unused]] double* values, [[maybe_unused]] int n) const {
  if (!mpi_ || size_ == 1) return;
#ifdef ATTOGRAD_HAVE_MPI
  check(MPI_Allreduce(MPI_IN_PLACE, values, n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD),
        "MPI_Allreduce");
#endif
}

bool Communicator::all_equal(uint64_t value) const {
  if (!mpi_ || size_ == 1) return true;
  uint64_t both[2] = {value, ~value};  // max(v), and max(~v) = ~min(v): one collective
#ifdef ATTOGRAD_HAVE_MPI
  check(MPI_Allreduce(MPI_IN_PLACE, both, 2, MPI_UINT64_T, MPI_MAX, MPI_COMM_WORLD),
        "MPI_Allreduce of a fingerprint");
#endif
  return both[0] == ~both[1];
}

void Communicator::barrier() const {
  if (!mpi_ || size_ == 1) return;
#ifdef ATTOGRAD_HAVE_MPI
  check(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier");
#endif
}

void Communicator::abort(int code) const {
#ifdef ATTOGRAD_HAVE_MPI
  if (mpi_) MPI_Abort(MPI_COMM_WORLD, code);
#endif
  std::_Exit(code);
}

uint64_t fingerprint(std::string_view bytes) {
  constexpr uint64_t kPrime = 0x100000001b3ULL;
  uint64_t h = 0xcbf29ce484222325ULL;
  size_t i = 0;
  for (; i + 8 <= bytes.size(); i += 8) {
    uint64_t word;
    std::memcpy(&word, bytes.data() + i, 8);
    h = (h ^ word) * kPrime;
  }
  for (; i < bytes.size(); ++i) h = (h ^ static_cast<unsigned char>(bytes[i])) * kPrime;
  return h;
}

uint64_t fingerprint(const Tensor& t) {
  if (!t.is_contiguous()) throw std::invalid_argument("fingerprint: needs a contiguous tensor");
  return fingerprint(std::string_view(reinterpret_cast<const char*>(t.bytes()),
                                      static_cast<size_t>(t.numel()) * dtype_size(t.dtype())));
}

}  // namespace attograd::gpt
