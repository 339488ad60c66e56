#include "gpt/model/field_ranges.h"

#include <algorithm>
#include <stdexcept>
#include <thread>

#include "autograd/kernels/thread_pool.h"

namespace attograd::gpt {

int max_threads() {
  // hardware_concurrency() may be 0 when the machine does not say: then allow 4.
  return std::min(kernels::kMaxThreads,
                  4 * static_cast<int>(std::max(1u, std::thread::hardware_concurrency())));
}

}  // namespace attograd::gpt
