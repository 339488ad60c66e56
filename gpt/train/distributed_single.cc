// gpt/train/distributed.h in a build without MPI (ATTOGRAD_MPI=OFF, or AUTO with no MPI found): one
// process, rank 0 of 1, and every collective returns its input.
#include <cstdlib>
#include <stdexcept>
#include <string>

#include "gpt/train/distributed.h"

namespace attograd::gpt {

const Communicator& Communicator::world() {
  if (const int launched = launched_ranks(); launched > 1)
    throw std::runtime_error(
        "launched as one of " + std::to_string(launched) +
        " ranks, but this attograd was built without MPI, so each rank would train alone: "
        "install libopenmpi-dev (scripts/install-deps.sh) and configure with -DATTOGRAD_MPI=ON, "
        "or run one process");
  return single_process();
}

void Communicator::all_reduce_sum(const Tensor& t) const { require_reducible(t); }

void Communicator::all_reduce_sum(double*, int) const {}

bool Communicator::all_equal(uint64_t) const { return true; }

void Communicator::barrier() const {}

void Communicator::abort(int code) const { std::_Exit(code); }

}  // namespace attograd::gpt
