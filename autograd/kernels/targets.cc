// Which Highway SIMD targets the kernels were compiled for and which one runs (targets.h).
//
// Every kernel file is compiled for the same list of targets (HWY_TARGETS: AVX3, AVX2, SSE4,
// SSSE3 and SCALAR on x86 with gcc 12), and HWY_DYNAMIC_DISPATCH picks the best one the CPU
// supports, so the answers here hold for all of them. Both follow
// hwy::SetSupportedTargetsForTest, as the kernels do.
#include "autograd/kernels/targets.h"

#include <cstdint>
#include <string>
#include <vector>

#include "hwy/highway.h"
#include "hwy/targets.h"

namespace attograd::kernels {

std::vector<std::string> supported_targets() {
  std::vector<std::string> names;
  // Highway lists the targets best first (a lower bit is a better target).
  for (const int64_t target : hwy::SupportedAndGeneratedTargets()) {
    names.emplace_back(hwy::TargetName(target));
  }
  return names;
}

std::string active_target() {
  const std::vector<int64_t> targets = hwy::SupportedAndGeneratedTargets();
  // Never empty in practice: SCALAR (or EMU128) is always compiled in and always supported.
  return targets.empty() ? std::string("none") : std::string(hwy::TargetName(targets.front()));
}

std::string highway_version() {
  return std::to_string(HWY_MAJOR) + "." + std::to_string(HWY_MINOR) + "." +
         std::to_string(HWY_PATCH);
}

}  // namespace attograd::kernels
