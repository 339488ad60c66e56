#include "autograd/autocast.h"

#include <ostream>

namespace attograd {

namespace {
// Per thread, as grad mode: see autocast.h.
thread_local MatmulPrecision g_autocast = MatmulPrecision::f32;
}  // namespace

const char* matmul_precision_name(MatmulPrecision p) {
  return p == MatmulPrecision::bf16 ? kMatmulPrecisionNames[1] : kMatmulPrecisionNames[0];
}

std::ostream& operator<<(std::ostream& os, MatmulPrecision p) {
  return os << matmul_precision_name(p);
}

MatmulPrecision autocast_precision() { return g_autocast; }

AutocastGuard::AutocastGuard(MatmulPrecision precision) : previous_(g_autocast) {
  g_autocast = precision;
}

AutocastGuard::~AutocastGuard() { g_autocast = previous_; }

}  // namespace attograd
