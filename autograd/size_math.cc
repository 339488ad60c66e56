#include "autograd/size_math.h"

#include <stdexcept>

namespace attograd::detail {

void throw_size_overflow(const std::string& what, const char* op, const std::string& a,
                         const std::string& b, const std::string& max) {
  throw std::overflow_error(what + ": " + a + " " + op + " " + b + " exceeds " + max);
}

}  // namespace attograd::detail
