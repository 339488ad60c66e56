// Prints the HWY_DISABLED_TARGETS value that leaves, of the SIMD targets Highway would compile,
// only the best one this machine supports (cmake/native_target.cmake runs it at configure time).
// The portable fallback (SCALAR with gcc 12) is never disabled: Highway always compiles it.
#include <cstdint>
#include <cstdio>

#include "hwy/targets.h"

int main() {
  const int64_t simd = HWY_ATTAINABLE_TARGETS & ~(HWY_SCALAR | HWY_EMU128);
  const int64_t here = hwy::SupportedTargets() & simd;
  const int64_t best = here & -here;  // lower bits are better targets
  std::printf("%lld;%s", static_cast<long long>(simd & ~best),
              best != 0 ? hwy::TargetName(best) : "none");
  return 0;
}
