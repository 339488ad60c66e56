// Which Highway SIMD target the kernels dispatch to, for `attograd info` and benchmarks.
#pragma once

#include <string>
#include <vector>

namespace attograd::kernels {

/// Name of the best target this CPU supports among those compiled in (e.g. "AVX3", "AVX2").
std::string active_target();

/// Names of every target compiled into the kernels that this CPU can run, best first.
std::vector<std::string> supported_targets();

/// The Highway release the kernels were compiled against, e.g. "1.0.3".
std::string highway_version();

}  // namespace attograd::kernels
