// What both builds of gpt/train/distributed.h share: the launcher's environment, the single-process
// communicator, the set-up agreement (built on the collectives of distributed_mpi.cc or
// distributed_single.cc) and the fingerprint.
#include "gpt/train/distributed.h"

#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>

namespace attograd::gpt {

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

void Communicator::require_reducible(const Tensor& t) {
  if (!t.is_contiguous() || t.dtype() == DType::i64)
    throw std::invalid_argument(
        "Communicator::all_reduce_sum: needs a contiguous f32 or f64 tensor");
}

int Communicator::agree_on_setup(bool failed) const {
  double count = failed ? 1 : 0;
  all_reduce_sum(&count, 1);
  return static_cast<int>(count);
}

int Communicator::fail_setup(const std::string& message, const std::function<void()>& say_alone,
                             std::ostream& err) const {
  const int failed = agree_on_setup(true);
  if (failed < size())
    err << rank_error(message) << std::flush;
  else if (is_root())
    say_alone();
  barrier();  // before any rank exits: mpirun ends the job at the first non-zero exit
  return failed;
}

std::string Communicator::rank_error(std::string_view message) const {
  return "attograd: error: rank " + std::to_string(rank()) + " of " + std::to_string(size()) +
         ": " + std::string(message) + "\n";
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
