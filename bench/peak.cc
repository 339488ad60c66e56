// The machine's arithmetic peak (peak.h): chains of multiply-adds on registers, one set of
// chains per thread. The FMA loops are Highway code compiled for every target and dispatched to
// the best one, as the kernels are, so the peak is that of the vectors the kernels use.
#include "bench/peak.h"

#include "autograd/kernels/matmul.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <iterator>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

// Highway's per-target includes, in the order its skeleton.cc gives: never sorted.
// clang-format off
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "bench/peak.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
// clang-format on

HWY_BEFORE_NAMESPACE();
namespace attograd::bench::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// 16 independent chains c = c * m + a, `iterations` times each; their sum goes to *sink so that
// the compiler keeps them. c tends to a / (1 - m) = 0.1: no overflow, no subnormals. Returns the
// vector's lanes (FLOPs per chain step = 2 * lanes).
template <typename T>
HWY_NOINLINE size_t fma_chains(int64_t iterations, T* sink) {
  const hn::ScalableTag<T> d;
  const auto m = hn::Set(d, T(0.999));
  const auto a = hn::Set(d, T(1e-4));
  auto c0 = hn::Set(d, T(0)), c1 = hn::Set(d, T(1)), c2 = hn::Set(d, T(2)), c3 = hn::Set(d, T(3));
  auto c4 = hn::Set(d, T(4)), c5 = hn::Set(d, T(5)), c6 = hn::Set(d, T(6)), c7 = hn::Set(d, T(7));
  auto c8 = hn::Set(d, T(8)), c9 = hn::Set(d, T(9)), c10 = hn::Set(d, T(10));
  auto c11 = hn::Set(d, T(11)), c12 = hn::Set(d, T(12)), c13 = hn::Set(d, T(13));
  auto c14 = hn::Set(d, T(14)), c15 = hn::Set(d, T(15));
  for (int64_t i = 0; i < iterations; ++i) {
    c0 = hn::MulAdd(c0, m, a);
    c1 = hn::MulAdd(c1, m, a);
    c2 = hn::MulAdd(c2, m, a);
    c3 = hn::MulAdd(c3, m, a);
    c4 = hn::MulAdd(c4, m, a);
    c5 = hn::MulAdd(c5, m, a);
    c6 = hn::MulAdd(c6, m, a);
    c7 = hn::MulAdd(c7, m, a);
    c8 = hn::MulAdd(c8, m, a);
    c9 = hn::MulAdd(c9, m, a);
    c10 = hn::MulAdd(c10, m, a);
    c11 = hn::MulAdd(c11, m, a);
    c12 = hn::MulAdd(c12, m, a);
    c13 = hn::MulAdd(c13, m, a);
    c14 = hn::MulAdd(c14, m, a);
    c15 = hn::MulAdd(c15, m, a);
  }
  const auto sum = hn::Add(
      hn::Add(hn::Add(hn::Add(c0, c1), hn::Add(c2, c3)), hn::Add(hn::Add(c4, c5), hn::Add(c6, c7))),
      hn::Add(hn::Add(hn::Add(c8, c9), hn::Add(c10, c11)),
              hn::Add(hn::Add(c12, c13), hn::Add(c14, c15))));
  *sink = hn::GetLane(hn::SumOfLanes(d, sum));
  return hn::Lanes(d);
}

size_t fma_chains_f32(int64_t iterations, float* sink) { return fma_chains(iterations, sink); }
size_t fma_chains_f64(int64_t iterations, double* sink) { return fma_chains(iterations, sink); }

}  // namespace attograd::bench::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace attograd::bench {

HWY_EXPORT(fma_chains_f32);
HWY_EXPORT(fma_chains_f64);

namespace {

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
// vdpbf16ps: each of the 16 f32 lanes adds the products of 2 bf16 pairs (4 FLOPs), so one
// instruction is 64 FLOPs. Highway 1.0.3 has no op for it (matmul.cc says the same); the
// function carries its own target attribute and runs only where the CPU has the instruction.
// Inputs 0x3A83 ≈ 0.001 each: the sums grow by 2e-6 a step and stay far from overflow.
// noipa: gcc sees that the result only feeds a comparison and would drop the calibration call.
// Returns the FLOPs of one step of the 16 chains.
__attribute__((target("avx512f,avx512bf16"), noipa)) double dpbf16_chains(int64_t iterations,
                                                                          float* sink) {
  const __m512bh x = (__m512bh)_mm512_set1_epi16(0x3A83);
  __m512 c[16];
  for (int j = 0; j < 16; ++j) c[j] = _mm512_set1_ps(static_cast<float>(j));
  for (int64_t i = 0; i < iterations; ++i)
    for (int j = 0; j < 16; ++j) c[j] = _mm512_dpbf16_ps(c[j], x, x);
  __m512 sum = c[0];
  for (int j = 1; j < 16; ++j) sum = _mm512_add_ps(sum, c[j]);
  alignas(64) float lanes[16];  // (_mm512_reduce_add_ps trips gcc 12's -Wuninitialized)
  _mm512_store_ps(lanes, sum);
  *sink = 0;
  for (float v : lanes) *sink += v;
  return 16.0 * 32 * 2;  // 16 chains x 32 bf16 products x 2 FLOPs
}

bool has_dpbf16() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bf16");
}

// AMX's tdpbf16ps: a 16 x 16 f32 tile += a 16 x 32 bf16 tile times a 32 x 16 one, 8,192
// multiply-adds an instruction. Six C tiles (all the registers beside the two inputs) take turns
// against the same two input tiles, so that an instruction seldom waits for the one before it on
// its tile; nothing but the two input tiles' first load touches memory. The tile configuration
// (ldtilecfg: all eight tiles 16 rows x 64 bytes, palette 1) is per thread, so each call sets it,
// and releases the tiles at the end so that Linux need not save them at a context switch.
struct alignas(64) TileConfig {
  uint8_t palette = 1, start_row = 0, reserved[14] = {};
  uint16_t bytes_per_row[16] = {};
  uint8_t rows[16] = {};
};
__attribute__((target("amx-tile,amx-bf16"), noipa)) double amx_chains(int64_t iterations,
                                                                      float* sink) {
  TileConfig config;
  for (int t = 0; t < 8; ++t) {
    config.bytes_per_row[t] = 64;
    config.rows[t] = 16;
  }
  asm volatile("ldtilecfg %0" ::"m"(config));  // (matmul.cc says why not _tile_loadconfig)
  alignas(64) uint16_t x[16 * 32];
  std::fill(std::begin(x), std::end(x), uint16_t{0x3A83});
  _tile_loadd(6, x, 64);
  _tile_loadd(7, x, 64);
  _tile_zero(0);
  _tile_zero(1);
  _tile_zero(2);
  _tile_zero(3);
  _tile_zero(4);
  _tile_zero(5);
  for (int64_t i = 0; i < iterations; ++i) {
    _tile_dpbf16ps(0, 6, 7);
    _tile_dpbf16ps(1, 6, 7);
    _tile_dpbf16ps(2, 6, 7);
    _tile_dpbf16ps(3, 6, 7);
    _tile_dpbf16ps(4, 6, 7);
    _tile_dpbf16ps(5, 6, 7);
  }
  alignas(64) float tile[16 * 16];
  _tile_stored(5, tile, 64);
  _tile_release();
  *sink = tile[0];
  return 6.0 * 16 * 16 * 32 * 2;  // 6 instructions x 8,192 multiply-adds x 2 FLOPs
}

// Where the kernels run matmul_bf16 on AMX: the CPU has it and Linux granted the process the
// tiles' state (matmul.cc asks once, as the library loads).
bool has_amx() { return kernels::matmul_bf16_uses_amx(); }
#else
double dpbf16_chains(int64_t, float*) { return 0; }
bool has_dpbf16() { return false; }
double amx_chains(int64_t, float*) { return 0; }
bool has_amx() { return false; }
#endif

// Runs `chains(iterations)` on `threads` threads started together; returns GFLOP/s. `chains`
// returns the FLOPs of one of its iterations.
template <typename Chains>
double rate(int threads, int64_t iterations, const Chains& chains) {
  std::atomic<bool> go{false};
  std::vector<double> flops(threads);
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      while (!go.load(std::memory_order_acquire)) std::this_thread::yield();
      flops[t] = chains(iterations);
    });
  const auto start = std::chrono::steady_clock::now();
  go.store(true, std::memory_order_release);
  for (std::thread& th : pool) th.join();
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return flops[0] * static_cast<double>(iterations) * threads / seconds / 1e9;
}

// The best of three runs of about seconds / 3 each, the step count calibrated on one thread.
// Every call of `chains` runs on a thread of its own, never the caller's: amx_chains sets the
// caller's tile configuration and releases it, and the kernels' AMX micro-kernel configures a
// thread's tiles once (matmul.cc), so a benchmark thread released here would fault at its next
// bf16 product.
template <typename Chains>
double best_rate(int threads, double seconds, const Chains& chains) {
  int64_t iterations = 1 << 16;
  for (;;) {  // grow until a run takes 10 ms, then scale to the wanted length
    const auto start = std::chrono::steady_clock::now();
    volatile double used = 0;  // a call whose result is unused could be dropped
    std::thread([&] { used = chains(iterations); }).join();
    const double s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (s > 0.01) {
      iterations = std::max<int64_t>(1, static_cast<int64_t>(iterations * (seconds / 3) / s));
      break;
    }
    iterations *= 4;
    if (iterations > (int64_t{1} << 40))  // seconds of work that took no time: not measured
      throw std::logic_error("measure_peak: the multiply-add loop takes no time (optimised away?)");
  }
  double best = 0;
  for (int run = 0; run < 3; ++run) best = std::max(best, rate(threads, iterations, chains));
  return best;
}

}  // namespace

Peak measure_peak(int threads, double seconds) {
  if (threads < 1 || threads > 1024)
    throw std::invalid_argument("measure_peak: threads must be in [1, 1024], got " +
                                std::to_string(threads));
  // Below 10 ms a run is mostly its threads' start (about 0.1 ms each) and the peak it reads
  // is a fraction of the core's: 1e-9 s read 0.1 GFLOP/s.
  if (!(seconds >= 0.01 && seconds <= 60)) {
    char got[32];  // %g: std::to_string prints 1e-9 as 0.000000
    std::snprintf(got, sizeof got, "%g", seconds);
    throw std::invalid_argument(std::string("measure_peak: seconds must be in [0.01, 60], got ") +
                                got);
  }
  Peak p;
  p.threads = threads;
  p.fma_target = hwy::TargetName(hwy::SupportedAndGeneratedTargets().front());  // dispatch's pick
  p.f32_fma = best_rate(threads, seconds, [](int64_t n) {
    float sink = 0;
    const size_t lanes = HWY_DYNAMIC_DISPATCH(fma_chains_f32)(n, &sink);
    return sink == -1.0f ? 0 : 16.0 * 2 * lanes;  // reads sink: the chains are not dead code
  });
  p.f64_fma = best_rate(threads, seconds, [](int64_t n) {
    double sink = 0;
    const size_t lanes = HWY_DYNAMIC_DISPATCH(fma_chains_f64)(n, &sink);
    return sink == -1.0 ? 0 : 16.0 * 2 * lanes;  // 16 chains x lanes x 2 FLOPs
  });
  if (has_dpbf16())
    p.bf16_dot = best_rate(threads, seconds, [](int64_t n) {
      float sink = 0;
      const double flops = dpbf16_chains(n, &sink);
      return sink == -1.0f ? 0 : flops;
    });
  if (has_amx())
    p.amx_bf16 = best_rate(threads, seconds, [](int64_t n) {
      float sink = 0;
      const double flops = amx_chains(n, &sink);
      return sink == -1.0f ? 0 : flops;
    });
  return p;
}

UnitPeak bf16_unit_peak(const Peak& p) {
  if (kernels::matmul_bf16_uses_amx()) return {"AMX", p.amx_bf16};
  if (kernels::matmul_bf16_uses_avx512_bf16()) return {"vdpbf16ps", p.bf16_dot};
  return {"FMA", p.f32_fma};
}

std::string peak_line(const Peak& p) {
  char line[256];
  std::snprintf(line, sizeof line,
                "peak threads %d f32_fma_gflops %.1f f64_fma_gflops %.1f bf16_dot_gflops %.1f "
                "amx_bf16_gflops %.1f target %s",
                p.threads, p.f32_fma, p.f64_fma, p.bf16_dot, p.amx_bf16, p.fma_target.c_str());
  return line;
}

}  // namespace attograd::bench
#endif  // HWY_ONCE
