// Which machine a benchmark ran on, for the first line of its output: every speed figure in
// docs/performance.md names its machine kind, and the VMs this project is measured on change
// CPU between sessions under the same model name ("AMD EPYC" has been a Zen 4 and a Zen 5).
#pragma once

#include <string>

namespace attograd::bench {

/// The microarchitecture of an x86 CPU from its cpuid vendor, family and model (as /proc/cpuinfo
/// prints them: "AuthenticAMD", 25, 17), e.g. "Zen 4", "Sapphire Rapids"; "" when this list does
/// not know it. Sources: AMD's processor programming references (family 19h: Zen 3 and Zen 4 by
/// model range; 1Ah: Zen 5) and Intel's model numbers (the SDM's table 2-1).
std::string cpu_kind(const std::string& vendor, int family, int model);

/// One line naming this machine, from /proc/cpuinfo and the cache sizes the kernels block for
/// (kernels::matmul_blocking): "machine AMD EPYC | AuthenticAMD family 25 model 17 (Zen 4) |
/// 2 CPUs | L1d 32 KiB, L2 1024 KiB, L3 32 MiB". Fields /proc/cpuinfo lacks read "?".
std::string machine_line();

}  // namespace attograd::bench
