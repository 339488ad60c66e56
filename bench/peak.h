// The machine's limit, measured: the arithmetic peak of this CPU's cores, against which the
// benchmarks state each rate as a share ("62 % of the FMA peak"), so that a ratio to PyTorch,
// which runs the same BLAS, is not the only yardstick (docs/performance.md).
//
// Each peak is measured, not computed from a data sheet: `threads` threads (std::thread, one per
// core the process may use) each run a loop of independent multiply-adds on registers only,
// with enough accumulators to hide the instruction's latency on every port (16 vectors: two FMA
// pipes of 4-cycle latency need 8 in flight; AMX: 6 tiles), for about `seconds`; the rate counts
// 2 FLOPs per multiply-add. Nothing touches memory, so the result is the core's own limit, the
// same whatever the caches and the memory bus do.
#pragma once

#include <string>

namespace attograd::bench {

/// The measured peaks of `threads` threads, in GFLOP/s (10⁹ FLOPs per second, a multiply-add = 2).
struct Peak {
  int threads = 1;
  double f32_fma = 0;      // f32 FMAs of the dispatched Highway target's widest vectors
  double f64_fma = 0;      // the same in f64
  double bf16_dot = 0;     // vdpbf16ps (AVX512-BF16: 2 bf16 products per f32 lane); 0 without it
  double amx_bf16 = 0;     // AMX's tdpbf16ps (16 x 16 x 32 bf16 products a tile); 0 without it
  std::string fma_target;  // the Highway target the FMA loops ran on, e.g. "AVX3"
};

/// Measures every peak of `threads` threads for about `seconds` each (the best of three runs of a
/// third each: a descheduled thread lowers a run, never raises it). Throws std::invalid_argument
/// unless 1 <= threads <= 1024 and 0.01 <= seconds <= 60.
Peak measure_peak(int threads, double seconds);

/// The unit matmul_bf16 runs on here (kernels::matmul_bf16_uses_amx, ..._uses_avx512_bf16) and
/// its peak in `p`, the limit a bf16 product is a share of: "AMX" (tdpbf16ps), "vdpbf16ps", or
/// "FMA" (the portable path widens bf16 to f32 for FMAs).
struct UnitPeak {
  const char* unit;
  double gflops;
};
UnitPeak bf16_unit_peak(const Peak& p);

/// One line for the benchmarks' output and for bench/compare.py, which reads it:
/// "peak threads 1 f32_fma_gflops 140.2 f64_fma_gflops 70.1 bf16_dot_gflops 280.3
/// amx_bf16_gflops 0.0 target AVX3".
std::string peak_line(const Peak& peak);

}  // namespace attograd::bench
