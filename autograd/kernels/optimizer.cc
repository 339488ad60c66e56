// The AdamW update and the gradient sum of squares (optimizer.h), SIMD through Highway with
// runtime dispatch. The scalar specification is optimizer_ref.h; see elementwise.cc for how the
// per-target compilation works.
//
// Both run once per training step over every parameter (124 M for GPT-2 small), so they are
// memory-bound: AdamW reads four arrays and writes three, in one pass, with threads over fixed
// chunks. (The scalar double loop they replace took 28% of a GPT-2-small step.)
#include "autograd/kernels/optimizer.h"

#include <cmath>
#include <cstddef>
#include <cstdint>

#include "autograd/kernels/dispatch.h"

// Highway's per-target includes, in the order its skeleton.cc gives (foreach_target.h
// re-includes this file once per target): never sorted.
// clang-format off
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "autograd/kernels/optimizer.cc"
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

// Memory-bound passes: a second thread pays from ~64k elements, in chunks of 16k.
constexpr ElementwiseSplit kSplit{.chunk = 16384, .parallel_min = 65536};

// The AdamW formulas of optimizer.h on [begin, end), with or without the weight decay.
template <typename T, bool kDecay>
void adamw_range(T* param, const T* grad, T* m, T* v, int64_t begin, int64_t end,
                 const AdamWStep& s) {
  const int64_t n = end - begin;
  param += begin, grad += begin, m += begin, v += begin;
  const T decay = static_cast<T>(1 - s.lr * s.weight_decay), scale = static_cast<T>(s.grad_scale);
  const T w1 = static_cast<T>(1 - s.beta1), b2 = static_cast<T>(s.beta2),
          w2 = static_cast<T>(1 - s.beta2);
  const T step_size = static_cast<T>(s.lr / s.bias_correction1);
  const T inv_sqrt_bc2 = static_cast<T>(1 / std::sqrt(s.bias_correction2)),
          eps = static_cast<T>(s.eps);
  elementwise<T>(n, kSplit, [&](auto d, int64_t i) HWY_ATTR {
    const auto g = hn::Mul(hn::LoadU(d, grad + i), hn::Set(d, scale));
    auto p = hn::LoadU(d, param + i);
    if constexpr (kDecay) p = hn::Mul(p, hn::Set(d, decay));
    auto mi = hn::LoadU(d, m + i);
    mi = hn::MulAdd(hn::Set(d, w1), hn::Sub(g, mi), mi);  // lerp(m, g, 1 - beta1)
    const auto vi =
        hn::MulAdd(hn::Set(d, b2), hn::LoadU(d, v + i), hn::Mul(hn::Set(d, w2), hn::Mul(g, g)));
    const auto denom = hn::MulAdd(hn::Sqrt(vi), hn::Set(d, inv_sqrt_bc2), hn::Set(d, eps));
    p = hn::NegMulAdd(hn::Set(d, step_size), hn::Div(mi, denom), p);  // p - step m / denom
    hn::StoreU(mi, d, m + i);
    hn::StoreU(vi, d, v + i);
    hn::StoreU(p, d, param + i);
  });
}

template <typename T>
void adamw_step_impl(T* param, const T* grad, T* m, T* v, int64_t n, int64_t n_decay,
                     const AdamWStep& s) {
  n_decay = std::clamp<int64_t>(n_decay, 0, n);
  adamw_range<T, true>(param, grad, m, v, 0, n_decay, s);
  adamw_range<T, false>(param, grad, m, v, n_decay, n, s);
}

template <typename T>
double sum_squares_double_impl(const T* x, int64_t n) {
#if !HWY_HAVE_FLOAT64
  // A target without f64 lanes (Highway 1.0.3's WASM): the plain double loop of the twin.
  return ::attograd::kernels::reference::sum_squares_double(x, n);
#else
  // Fixed slices of the sum: their totals are added in slice order, whatever the thread count.
  constexpr int64_t kSlices = 64;
  const hn::ScalableTag<double> dd;
  const int64_t N = static_cast<int64_t>(hn::Lanes(dd));
  const int64_t per_slice =
      (n / kSlices + N - 1) / N * N;  // whole vectors, so only the last slice has a tail
  double totals[kSlices] = {};
  for_range(kSlices, n >= 65536, [&](int64_t slice) HWY_ATTR {
    const int64_t begin = std::min(n, slice * per_slice);
    const int64_t end = slice == kSlices - 1 ? n : std::min(n, begin + per_slice);
    const hn::Rebind<T, decltype(dd)> dt;  // as many T lanes as dd has double lanes
    auto acc = hn::Zero(dd);
    int64_t i = begin;
    for (; i + N <= end; i += N) {
      hn::Vec<decltype(dd)> xi;
      if constexpr (std::is_same_v<T, float>) {
        xi = hn::PromoteTo(dd, hn::LoadU(dt, x + i));
      } else {
        xi = hn::LoadU(dd, x + i);
      }
      acc = hn::MulAdd(xi, xi, acc);
    }
    double s = hn::GetLane(hn::SumOfLanes(dd, acc));
    for (; i < end; ++i) s += static_cast<double>(x[i]) * static_cast<double>(x[i]);
    totals[slice] = s;
  });
  double sum = 0;
  for (const double t : totals) sum += t;
  return sum;
#endif
}

}  // namespace

// ---- Exports: the names HWY_EXPORT takes, <name>_impl_f32 and _f64 (dispatch.h) ---------------

ATTOGRAD_KERNEL_TARGET(adamw_step);
ATTOGRAD_KERNEL_TARGET(sum_squares_double);

}  // namespace attograd::kernels::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace attograd::kernels {

ATTOGRAD_KERNEL(void, adamw_step,
                (T * param, const T* grad, T* m, T* v, int64_t n, int64_t n_decay,
                 const AdamWStep& s),
                (param, grad, m, v, n, n_decay, s));

ATTOGRAD_KERNEL(double, sum_squares_double, (const T* x, int64_t n), (x, n));

}  // namespace attograd::kernels
#endif  // HWY_ONCE
