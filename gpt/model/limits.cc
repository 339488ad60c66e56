#include "gpt/model/limits.h"

#include <algorithm>
#include <stdexcept>
#include <thread>

#include "autograd/kernels/thread_pool.h"

namespace attograd::gpt {

std::string range_str(IntRange r) {
  // Appended piece by piece: "[" + std::to_string(...) trips gcc 12's -Wrestrict false positive.
  std::string s = "[";
  s += std::to_string(r.min);
  s += ", ";
  s += std::to_string(r.max);
  s += ']';
  return s;
}

void check_range(const std::string& owner, const char* field, int64_t v, IntRange r) {
  if (!r.contains(v))
    throw std::invalid_argument((owner.empty() ? std::string() : owner + ": ") + field +
                                " must be in " + range_str(r) + ", got " + std::to_string(v));
}

int max_threads() {
  // hardware_concurrency() may be 0 when the machine does not say: then allow 4.
  return std::min(kernels::kMaxThreads,
                  4 * static_cast<int>(std::max(1u, std::thread::hardware_concurrency())));
}

}  // namespace attograd::gpt
