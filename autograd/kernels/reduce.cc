// Reductions over one axis of x viewed as (outer, n, inner) (reduce.h), SIMD through Highway with
// runtime dispatch. The scalar specification is reduce_ref.h. See elementwise.cc for how the
// per-target compilation works.
//
// Two shapes of loop, both reading memory contiguously:
//   inner == 1 (reduce the last axis): each output is a horizontal reduction of one row.
//   inner  > 1 (reduce a middle axis): a block of outputs out[o, j..j+w) is carried in vector
//              registers while k runs down the axis, adding the row x[o, k, j..j+w) each time.
// In both, every output is summed in the order k = 0, 1, ..., n-1 by one thread, so the result
// does not depend on the number of threads.
#include "autograd/kernels/reduce.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "autograd/kernels/dispatch.h"

// Highway's per-target includes, in the order its skeleton.cc gives (foreach_target.h
// re-includes this file once per target): never sorted.
// clang-format off
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "autograd/kernels/reduce.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "autograd/kernels/simd-inl.h"
// clang-format on

HWY_BEFORE_NAMESPACE();
namespace attograd::kernels::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// This file's own helpers and kernel bodies get internal linkage (the shared ones come from
// simd-inl.h); only the exported names at the end are visible outside.
namespace {

// ---- sum_axis --------------------------------------------------------------------------------

// Column blocks of the inner > 1 case: 4 vectors of outputs carried in registers down the axis
// (4 independent add chains keep the adder busy), then one vector, then single lanes.
template <typename T>
HWY_INLINE void sum_columns(T* out, const T* x, int64_t n, int64_t inner, int64_t j0, int64_t j1,
                            bool accumulate) {
  const hn::ScalableTag<T> d;
  const int64_t N = static_cast<int64_t>(hn::Lanes(d));
  int64_t j = j0;
  for (; j + 4 * N <= j1; j += 4 * N) {
    auto s0 = hn::Zero(d), s1 = hn::Zero(d), s2 = hn::Zero(d), s3 = hn::Zero(d);
    for (int64_t k = 0; k < n; ++k) {
      const T* xk = x + k * inner + j;
      s0 = hn::Add(s0, hn::LoadU(d, xk));
      s1 = hn::Add(s1, hn::LoadU(d, xk + N));
      s2 = hn::Add(s2, hn::LoadU(d, xk + 2 * N));
      s3 = hn::Add(s3, hn::LoadU(d, xk + 3 * N));
    }
    if (accumulate) {
      s0 = hn::Add(hn::LoadU(d, out + j), s0);
      s1 = hn::Add(hn::LoadU(d, out + j + N), s1);
      s2 = hn::Add(hn::LoadU(d, out + j + 2 * N), s2);
      s3 = hn::Add(hn::LoadU(d, out + j + 3 * N), s3);
    }
    hn::StoreU(s0, d, out + j);
    hn::StoreU(s1, d, out + j + N);
    hn::StoreU(s2, d, out + j + 2 * N);
    hn::StoreU(s3, d, out + j + 3 * N);
  }
  // The remaining columns, one vector (then one lane) at a time.
  for_each_vector<T>(j, j1, [&](auto dt, int64_t jj) HWY_ATTR {
    auto s = hn::Zero(dt);
    for (int64_t k = 0; k < n; ++k) s = hn::Add(s, hn::LoadU(dt, x + k * inner + jj));
    if (accumulate) s = hn::Add(hn::LoadU(dt, out + jj), s);
    hn::StoreU(s, dt, out + jj);
  });
}

// Columns per work item of the inner > 1 case: a multiple of every vector length, small enough
// that a (outer = 1, n = B*T, inner = C) bias-gradient sum still splits over threads.
constexpr int64_t kColumnBlock = 256;

// body(o, j0, j1) for every work item of the inner > 1 case: output row o, columns [j0, j1), a
// block of kColumnBlock (fewer in the last block).
template <class Body>
void for_column_blocks(int64_t outer, int64_t inner, bool parallel, const Body& body) {
  const int64_t blocks = (inner + kColumnBlock - 1) / kColumnBlock;
  for_range(outer * blocks, parallel, [&](int64_t item) HWY_ATTR {
    const int64_t o = item / blocks;
    const int64_t j0 = (item % blocks) * kColumnBlock;
    body(o, j0, std::min(inner, j0 + kColumnBlock));
  });
}

template <typename T>
void sum_axis_impl(T* out, const T* x, int64_t outer, int64_t n, int64_t inner, bool accumulate) {
  const bool parallel = outer * n * inner >= kRowParallelMin;
  if (inner == 1) {
    for_range(outer, parallel, [&](int64_t o) HWY_ATTR {
      const T* row = x + o * n;
      const T s = sum_of<T>(n, [&](auto d, int64_t k) HWY_ATTR { return hn::LoadU(d, row + k); });
      out[o] = accumulate ? out[o] + s : s;
    });
    return;
  }
  for_column_blocks(outer, inner, parallel, [&](int64_t o, int64_t j0, int64_t j1) HWY_ATTR {
    sum_columns(out + o * inner, x + o * n * inner, n, inner, j0, j1, accumulate);
  });
}

// ---- max_axis --------------------------------------------------------------------------------
// Two passes: the maximum (propagating NaN), then the first index holding it; for a slice that
// holds NaN, the max is NaN and the argmax the index of its first NaN. NaN handling is explicit
// because Highway's Max, like the x86 maxps it compiles to, may drop a NaN operand.

// Is v the value we are looking for: equal to m, or NaN when m is NaN.
template <typename T>
bool is_max(T v, T m) {
  return std::isnan(m) ? std::isnan(v) : v == m;
}

// max of row[0..n), n >= 1, NaN if the row holds one. (simd-inl.h's row_max, the shift for a
// softmax, may drop a NaN; here the max is the result.)
template <typename T>
HWY_INLINE T row_max_or_nan(const T* row, int64_t n) {
  const hn::ScalableTag<T> d;
  const int64_t N = static_cast<int64_t>(hn::Lanes(d));
  auto vmax = hn::Set(d, -std::numeric_limits<T>::infinity());
  auto any_nan = hn::FirstN(d, 0);  // all-false mask (1.0.3 has no MaskFalse)
  int64_t k = 0;
  for (; k + N <= n; k += N) {
    const auto v = hn::LoadU(d, row + k);
    vmax = hn::Max(vmax, v);
    any_nan = hn::Or(any_nan, hn::IsNaN(v));
  }
  if (!hn::AllFalse(d, any_nan)) return std::numeric_limits<T>::quiet_NaN();
  T m = hn::GetLane(hn::MaxOfLanes(d, vmax));
  for (; k < n; ++k) {
    if (std::isnan(row[k])) return row[k];
    m = std::max(m, row[k]);
  }
  return m;
}

// Index of the first element of row[0..n) that is m (or NaN, when m is NaN); the row holds one.
template <typename T>
HWY_INLINE int64_t row_find(const T* row, int64_t n, T m) {
  const hn::ScalableTag<T> d;
  const int64_t N = static_cast<int64_t>(hn::Lanes(d));
  const auto vm = hn::Set(d, m);
  const bool find_nan = std::isnan(m);
  int64_t k = 0;
  for (; k + N <= n; k += N) {
    const auto v = hn::LoadU(d, row + k);
    const intptr_t lane = hn::FindFirstTrue(d, find_nan ? hn::IsNaN(v) : hn::Eq(v, vm));
    if (lane >= 0) return k + lane;
  }
  for (; k < n; ++k) {
    if (is_max(row[k], m)) return k;
  }
  return 0;  // unreachable: m came from this row
}

// Pass 1 of the inner > 1 case for out[j0..j1): vertical max down the axis, NaN lanes tracked.
template <typename T>
HWY_INLINE void max_columns(T* out, const T* x, int64_t n, int64_t inner, int64_t j0, int64_t j1) {
  for_each_vector<T>(j0, j1, [&](auto dt, int64_t j) HWY_ATTR {
    auto vmax = hn::LoadU(dt, x + j);
    auto nan = hn::IsNaN(vmax);
    for (int64_t k = 1; k < n; ++k) {
      const auto v = hn::LoadU(dt, x + k * inner + j);
      vmax = hn::Max(vmax, v);
      nan = hn::Or(nan, hn::IsNaN(v));
    }
    hn::StoreU(hn::IfThenElse(nan, hn::NaN(dt), vmax), dt, out + j);
  });
}

template <typename T>
void max_axis_impl(T* out, int64_t* argmax, const T* x, int64_t outer, int64_t n, int64_t inner) {
  const bool parallel = outer * n * inner >= kRowParallelMin;
  if (inner == 1) {
    for_range(outer, parallel, [&](int64_t o) HWY_ATTR {
      const T* row = x + o * n;
      out[o] = row_max_or_nan(row, n);       // pass 1: the maximum
      argmax[o] = row_find(row, n, out[o]);  // pass 2: where it first occurs
    });
    return;
  }
  for_column_blocks(outer, inner, parallel, [&](int64_t o, int64_t j0, int64_t j1) HWY_ATTR {
    const T* xo = x + o * n * inner;
    T* out_o = out + o * inner;
    int64_t* arg_o = argmax + o * inner;
    // pass 1: the maxima of the block, in SIMD
    max_columns(out_o, xo, n, inner, j0, j1);
    // pass 2: walk down the axis once, giving each column the first k where its max appears.
    // (Scalar: argmax over a middle axis is rare; sampling and accuracy use the last axis.)
    std::fill(arg_o + j0, arg_o + j1, int64_t{-1});
    int64_t unfound = j1 - j0;
    for (int64_t k = 0; k < n && unfound > 0; ++k) {
      for (int64_t j = j0; j < j1; ++j) {
        if (arg_o[j] < 0 && is_max(xo[k * inner + j], out_o[j])) {
          arg_o[j] = k;
          --unfound;
        }
      }
    }
  });
}

// ---- broadcast_axis_acc ----------------------------------------------------------------------

// dx[o, k, j] += alpha * dy[o, j]: the VJP of sum_axis (alpha = 1) and of a mean (alpha = 1/n).
template <typename T>
void broadcast_axis_acc_impl(T* dx, const T* dy, T alpha, int64_t outer, int64_t n, int64_t inner) {
  // dst[0..len) += src(d, i) for a row of length len.
  auto add_row = [&](T* dst, int64_t len, const auto& src) HWY_ATTR {
    for_each_vector<T>(0, len, [&](auto dt, int64_t i) HWY_ATTR {
      hn::StoreU(hn::Add(hn::LoadU(dt, dst + i), src(dt, i)), dt, dst + i);
    });
  };
  const bool parallel = outer * n * inner >= kRowParallelMin;
  if (inner == 1) {
    // Row o of dx (n elements) gets the one value alpha * dy[o].
    for_range(outer, parallel, [&](int64_t o) HWY_ATTR {
      const T g = alpha * dy[o];
      add_row(dx + o * n, n, [&](auto dt, int64_t) HWY_ATTR { return hn::Set(dt, g); });
    });
    return;
  }
  // Row (o, k) of dx (inner elements) gets alpha * dy[o, :].
  for_range(outer * n, parallel, [&](int64_t ok) HWY_ATTR {
    const T* dy_o = dy + (ok / n) * inner;
    add_row(dx + ok * inner, inner, [&](auto dt, int64_t i) HWY_ATTR {
      return hn::Mul(hn::Set(dt, alpha), hn::LoadU(dt, dy_o + i));
    });
  });
}

// ---- sum_all_double --------------------------------------------------------------------------

// sum of x[0..n) with every term and partial sum in double. For float, each vector of
// Lanes(double) floats is promoted (PromoteTo) on load, so the sum never rounds in float.
// Single-threaded on purpose: it sums per-row losses (small), and a thread split would change
// the rounding unless the split were fixed; a fixed split can come when a caller needs it.
template <typename T>
double sum_all_double_impl(const T* x, int64_t n) {
#if !HWY_HAVE_FLOAT64
  // A target without f64 lanes (Highway 1.0.3's WASM): the plain double loop of the twin.
  return ::attograd::kernels::reference::sum_all_double(x, n);
#else
  const hn::ScalableTag<double> dd;
  const hn::Rebind<T, decltype(dd)> dt;  // as many T lanes as dd has double lanes
  const int64_t N = static_cast<int64_t>(hn::Lanes(dd));
  auto acc = hn::Zero(dd);
  int64_t i = 0;
  for (; i + N <= n; i += N) {
    if constexpr (std::is_same_v<T, float>) {
      acc = hn::Add(acc, hn::PromoteTo(dd, hn::LoadU(dt, x + i)));
    } else {
      acc = hn::Add(acc, hn::LoadU(dd, x + i));
    }
  }
  double s = hn::GetLane(hn::SumOfLanes(dd, acc));
  for (; i < n; ++i) s += static_cast<double>(x[i]);
  return s;
#endif
}

}  // namespace

// ---- Exports: the names HWY_EXPORT takes, <name>_impl_f32 and _f64 (dispatch.h) ---------------

ATTOGRAD_KERNEL_TARGET(sum_axis);
ATTOGRAD_KERNEL_TARGET(max_axis);
ATTOGRAD_KERNEL_TARGET(broadcast_axis_acc);
ATTOGRAD_KERNEL_TARGET(sum_all_double);

}  // namespace attograd::kernels::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace attograd::kernels {

// The public kernels: each forwards to the f32 or f64 export for the best target of this CPU and
// is instantiated for float and double (ATTOGRAD_KERNEL, dispatch.h).

ATTOGRAD_KERNEL(void, sum_axis,
                (T * out, const T* x, int64_t outer, int64_t n, int64_t inner, bool accumulate),
                (out, x, outer, n, inner, accumulate));

ATTOGRAD_KERNEL(void, max_axis,
                (T * out, int64_t* argmax, const T* x, int64_t outer, int64_t n, int64_t inner),
                (out, argmax, x, outer, n, inner));

ATTOGRAD_KERNEL(void, broadcast_axis_acc,
                (T * dx, const T* dy, T alpha, int64_t outer, int64_t n, int64_t inner),
                (dx, dy, alpha, outer, n, inner));

ATTOGRAD_KERNEL(double, sum_all_double, (const T* x, int64_t n), (x, n));

}  // namespace attograd::kernels
#endif  // HWY_ONCE
