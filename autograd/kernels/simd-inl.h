// Loops and math helpers that every SIMD kernel file (autograd/kernels/*.cc) shares, compiled
// once per Highway target like the kernels themselves: for_range (threads; the grains that
// decide a split are thread_pool.h's), for_each_vector and elementwise (vectors plus a 1-lane
// tail), sum_of and row_max (horizontal reductions), exp/log with IEEE special values, and
// row_log_sum_exp (the max and exp-sum shared by softmax, log_softmax and cross_entropy). A
// kernel file includes it after highway.h:
//
//   #include "hwy/foreach_target.h"  // IWYU pragma: keep
//   #include "hwy/highway.h"
//   #include "autograd/kernels/simd-inl.h"
//
// and then finds the helpers in its own namespace attograd::kernels::HWY_NAMESPACE. They are
// templates and inline functions, so the identical copy in every kernel file's object is one
// definition (ODR). Helpers that only one kernel file needs stay in that file, under names of
// their own (e.g. reduce.cc's NaN-propagating row_max_or_nan); exp_ieee and log_ieee, so far
// used by elementwise.cc alone, sit here beside exp_nonpositive, which exp_ieee builds on.

// Per-target include guard (Highway's toggle idiom, as in hwy/contrib/math/math-inl.h):
// foreach_target.h re-includes the kernel file once per target and flips HWY_TARGET_TOGGLE
// before each pass, so this opens once per target (a plain #ifndef guard: only for the first).
#if defined(ATTOGRAD_KERNELS_SIMD_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef ATTOGRAD_KERNELS_SIMD_INL_H_
#undef ATTOGRAD_KERNELS_SIMD_INL_H_
#else
#define ATTOGRAD_KERNELS_SIMD_INL_H_
#endif

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <new>
#include <type_traits>

#include "autograd/kernels/thread_pool.h"
#include "hwy/aligned_allocator.h"
#include "hwy/contrib/math/math-inl.h"
#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace attograd::kernels::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// ---- Threads -----------------------------------------------------------------------------------

// Runs body(i) for i in [0, count): on the engine's thread pool (thread_pool.h) when `parallel`,
// else on the calling thread. Each i is done whole by one thread, so results never depend on the
// thread count.
template <class Body>
void for_range(int64_t count, bool parallel, const Body& body) {
  if (!parallel || count < 2) {
    for (int64_t i = 0; i < count; ++i) body(i);
    return;
  }
  parallel_for(count, body);
}

// ---- Per-thread scratch -------------------------------------------------------------------------

// A grow-only, aligned buffer of at least n T's, one per thread and per Tag (a type naming the
// use, so two buffers of one kernel never overlap). The pool keeps its threads, so after the first
// calls a kernel that packs or stages data allocates nothing. Throws std::bad_alloc.
template <typename T, class Tag>
T* thread_scratch(size_t n) {
  thread_local hwy::AlignedFreeUniquePtr<T[]> buffer;
  thread_local size_t size = 0;
  if (size < n) {
    buffer = hwy::AllocateAligned<T>(n);
    if (!buffer) throw std::bad_alloc();
    size = n;
  }
  return buffer.get();
}

// ---- Vectors and the tail ----------------------------------------------------------------------

// Runs body(d, i) on each whole vector of [begin, end), then on the last few elements in
// narrower vectors (tail_vectors below), so the tail runs exactly the same maths as the body.
// (Highway 1.0.3 has no LoadN/StoreN, and its MaskedLoad reads a whole aligned vector on
// SSSE3/SSE4, which may fault past the end of an unaligned buffer.)
template <typename T, class Body>
HWY_INLINE void for_each_vector(int64_t begin, int64_t end, const Body& body);

// The elements [i, end) left after the whole vectors, fewer than a vector, in halving widths
// (kLanes, kLanes / 2, ..., 1), body(dc, i) once per width that fits: a row of 6 floats is a
// 4-lane and a 2-lane step, not six 1-lane ones (rows that short are the lecture's models).
template <typename T, size_t kLanes, class Body>
HWY_INLINE void tail_vectors(int64_t& i, int64_t end, const Body& body) {
  if constexpr (kLanes >= 1) {
    const hn::CappedTag<T, kLanes> dc;
    if (hn::Lanes(dc) == kLanes && end - i >= static_cast<int64_t>(kLanes)) {
      body(dc, i);
      i += static_cast<int64_t>(kLanes);
    }
    if constexpr (kLanes > 1) tail_vectors<T, kLanes / 2>(i, end, body);
  }
}

template <typename T, class Body>
HWY_INLINE void for_each_vector(int64_t begin, int64_t end, const Body& body) {
  const hn::ScalableTag<T> d;
  const int64_t N = static_cast<int64_t>(hn::Lanes(d));
  int64_t i = begin;
  for (; i + N <= end; i += N) body(d, i);
  tail_vectors<T, hn::MaxLanes(hn::ScalableTag<T>()) / 2>(i, end, body);
}

// How a pass over n independent elements is cut up for threads: fixed chunks of `chunk` elements
// (a multiple of every vector length, so only the last chunk has a tail), spread over threads
// from `parallel_min` elements on. Fixed chunks, never per-thread pieces, so the split (and every
// result) does not depend on the number of threads.
struct ElementwiseSplit {
  int64_t chunk;
  int64_t parallel_min;
};

// Runs body(d, i) on each vector of [0, n), chunk by chunk (for_each_vector in each chunk).
template <typename T, class Body>
void elementwise(int64_t n, ElementwiseSplit split, const Body& body) {
  const int64_t chunks = (n + split.chunk - 1) / split.chunk;
  for_range(chunks, n >= split.parallel_min, [&](int64_t c) HWY_ATTR {
    for_each_vector<T>(c * split.chunk, std::min(n, (c + 1) * split.chunk), body);
  });
}

// ---- Horizontal reductions ---------------------------------------------------------------------

// Sum over [0, n) of the vectors f(d, j): one vector accumulator for the whole vectors, summed
// across lanes at the end, then the tail (tail_vectors' narrower vectors, same maths) added in
// order.
template <typename T, class F>
HWY_INLINE T sum_of(int64_t n, const F& f) {
  const hn::ScalableTag<T> d;
  const int64_t N = static_cast<int64_t>(hn::Lanes(d));
  auto acc = hn::Zero(d);
  int64_t j = 0;
  for (; j + N <= n; j += N) acc = hn::Add(acc, f(d, j));
  T s = hn::GetLane(hn::SumOfLanes(d, acc));
  tail_vectors<T, hn::MaxLanes(hn::ScalableTag<T>()) / 2>(
      j, n, [&](auto dc, int64_t i) HWY_ATTR { s += hn::GetLane(hn::SumOfLanes(dc, f(dc, i))); });
  return s;
}

// max of x[0..n) (-inf for n = 0), the shift that keeps every exp(x - max) argument <= 0. If the
// row holds NaN the result may or may not be NaN (Highway's Max, like the x86 maxps it compiles
// to, may drop a NaN operand), which is fine for that use: exp(NaN - m) or exp(x - NaN) is NaN
// either way and reaches the result through the sum. (reduce.cc's max_axis, where the max IS the
// result, propagates NaN explicitly.)
template <typename T>
HWY_INLINE T row_max(const T* x, int64_t n) {
  const hn::ScalableTag<T> d;
  const int64_t N = static_cast<int64_t>(hn::Lanes(d));
  auto vmax = hn::Set(d, -std::numeric_limits<T>::infinity());
  int64_t j = 0;
  for (; j + N <= n; j += N) vmax = hn::Max(vmax, hn::LoadU(d, x + j));
  T m = hn::GetLane(hn::MaxOfLanes(d, vmax));
  for (; j < n; ++j) m = std::max(m, x[j]);
  return m;
}

// ---- Register tiles ----------------------------------------------------------------------------
// Small products (attention's, matmul's few-row case) as register tiles of R rows by NV vectors.
// The vectors live in arrays: fine for every x86 target Highway compiles, whose vectors have a
// size; a sizeless target (SVE, RVV) would need named variables, as matmul's micro-kernel has.
static_assert(!HWY_HAVE_SCALABLE, "the register tiles keep vectors in arrays");

// Vectors per tile row: with R = 4 rows, 16 accumulators fill AVX-512's 32 registers with room
// for the loads, 8 the 16 of AVX2 and SSE.
#if HWY_TARGET <= HWY_AVX3
constexpr int kTileVectors = 4;
#else
constexpr int kTileVectors = 2;
#endif

// Calls tile.template operator()<NV>(d, i) over [0, count) lanes: tiles of MaxNV vectors, then
// the remaining whole vectors in one tile, then (only when `tail`) the last lanes in halving
// widths (tail_vectors). Without `tail`, count is rounded up to whole vectors (the caller's
// buffers are padded).
template <typename T, int MaxNV = kTileVectors, class Tile>
HWY_INLINE void for_each_tile(int64_t count, bool tail, const Tile& tile) {
  static_assert(MaxNV >= 1 && MaxNV <= 4, "tiles of 1 to 4 vectors");
  const hn::ScalableTag<T> d;
  const int64_t N = static_cast<int64_t>(hn::Lanes(d));
  const int64_t vectors = tail ? count / N : (count + N - 1) / N;
  int64_t v = 0;
  for (; v + MaxNV <= vectors; v += MaxNV) tile.template operator()<MaxNV>(d, v * N);
  switch (vectors - v) {
    case 1:
      tile.template operator()<1>(d, v * N);
      break;
    case 2:
      if constexpr (MaxNV > 2) tile.template operator()<2>(d, v * N);
      break;
    case 3:
      if constexpr (MaxNV > 3) tile.template operator()<3>(d, v * N);
      break;
    default:
      break;
  }
  if (tail) {
    int64_t i = vectors * N;
    tail_vectors<T, hn::MaxLanes(hn::ScalableTag<T>()) / 2>(
        i, count, [&](auto dc, int64_t j) HWY_ATTR { tile.template operator()<1>(dc, j); });
  }
}

// The register tile: for R rows r and NV vectors v,
//   acc[r][v] = sum_{s < steps} coef(r, s) * row(s)[v N .. v N + N)
// where each step broadcasts R coefficients and loads NV vectors of one row, shared by the R
// rows; then store(r, v, acc[r][v]).
template <int R, int NV, class D, class Coef, class Row, class Store>
HWY_INLINE void outer_product_tile(D d, int64_t steps, const Coef& coef, const Row& row,
                                   const Store& store) {
  using V = hn::Vec<D>;
  const int64_t N = static_cast<int64_t>(hn::Lanes(d));
  V acc[R][NV];
  for (int r = 0; r < R; ++r)
    for (int v = 0; v < NV; ++v) acc[r][v] = hn::Zero(d);
  for (int64_t s = 0; s < steps; ++s) {
    const auto* x = row(s);
    V xv[NV];
    for (int v = 0; v < NV; ++v) xv[v] = hn::LoadU(d, x + v * N);
    for (int r = 0; r < R; ++r) {
      const V c = hn::Set(d, coef(r, s));
      for (int v = 0; v < NV; ++v) acc[r][v] = hn::MulAdd(c, xv[v], acc[r][v]);
    }
  }
  for (int r = 0; r < R; ++r)
    for (int v = 0; v < NV; ++v) store(r, v, acc[r][v]);
}

// ---- Transcendentals with IEEE edges -----------------------------------------------------------

// e^x for the arguments max-subtraction produces: x <= 0, -inf (an entry masked to -inf) or NaN.
// Highway's Exp is specified on [-FLT_MAX, 104] (float) / [-DBL_MAX, 706] (double) and returns 0
// for NaN: map -inf to exactly 0 ourselves, and keep NaN as NaN, so that a NaN input is never
// silently turned into a valid probability.
template <class D, class V>
HWY_INLINE V exp_nonpositive(D d, V x) {
  using T = hn::TFromD<D>;
  const V minus_inf = hn::Set(d, -std::numeric_limits<T>::infinity());
  const V y = hn::IfThenZeroElse(hn::Eq(x, minus_inf), hn::Exp(d, x));
  return hn::IfThenElse(hn::IsNaN(x), x, y);
}

// e^x for every x: exp_nonpositive's edges, plus +inf above log(max) = 88.72 (float) / 709.78
// (double), where e^x overflows (Highway's Exp is unspecified above 104 / 706). (Measured: Exp is
// within 1e-7 (float) / 2e-16 (double) relative of std::exp right up to those thresholds.)
template <class D, class V>
HWY_INLINE V exp_ieee(D d, V x) {
  using T = hn::TFromD<D>;
  const V log_max =
      hn::Set(d, std::is_same_v<T, float> ? T(88.72283935546875) : T(709.782712893384));
  return hn::IfThenElse(hn::Gt(x, log_max), hn::Inf(d), exp_nonpositive(d, x));
}

// log(x) for every x. Highway's Log is specified on (0, max] and returns garbage elsewhere. Add
// the edges: log(+-0) = -inf, log(+inf) = +inf, log(x < 0) = log(NaN) = NaN.
// (Measured: exact to 1e-7 (float) / 2e-16 (double) relative down to the smallest subnormal.)
template <class D, class V>
HWY_INLINE V log_ieee(D d, V x) {
  using T = hn::TFromD<D>;
  const V zero = hn::Zero(d);
  V y = hn::Log(d, x);
  y = hn::IfThenElse(hn::Eq(x, zero), hn::Set(d, -std::numeric_limits<T>::infinity()), y);
  y = hn::IfThenElse(hn::Eq(x, hn::Inf(d)), x, y);
  return hn::IfThenElse(hn::Ge(x, zero), y, hn::NaN(d));  // false for x < 0 and for NaN
}

// ---- Log-sum-exp -------------------------------------------------------------------------------

// log(sum_j exp(x_j)) of a row, = max + log(sum), kept in its two parts: the max m by which every
// caller shifts x, and sum = sum_j exp(x_j - m), which softmax divides by and log_softmax and
// cross_entropy take the log of. (They add m and log(sum) late or not at all, to stay exact at
// large |m|: see log_softmax in softmax.cc and cross_entropy.cc.)
template <typename T>
struct LogSumExp {
  T max;  // m = max_j x_j, the shift that keeps every exp argument <= 0
  T sum;  // sum_j exp(x_j - m): in [1, n] for a finite row (the max adds exactly 1); 0 if n = 0
  // One scalar std::log per row: more accurate than the SIMD Log, and it costs nothing here.
  T log_sum() const { return std::log(sum); }
};

// pass 1: m = row_max(x, n); pass 2: sum of exp(x_j - m), also stored to exps[j] when exps is
// not null (softmax's numerators). exps may alias x: each x_j is read before exps_j is written.
template <typename T>
HWY_INLINE LogSumExp<T> row_log_sum_exp(const T* x, int64_t n, T* exps = nullptr) {
  const T m = row_max(x, n);
  const T sum = sum_of<T>(n, [&](auto d, int64_t j) HWY_ATTR {
    const auto e = exp_nonpositive(d, hn::Sub(hn::LoadU(d, x + j), hn::Set(d, m)));
    if (exps != nullptr) hn::StoreU(e, d, exps + j);
    return e;
  });
  return {m, sum};
}

}  // namespace attograd::kernels::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // ATTOGRAD_KERNELS_SIMD_INL_H_
