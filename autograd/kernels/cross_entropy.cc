// Cross-entropy of logits (N, V) against targets (N), fused with log-softmax (cross_entropy.h),
// SIMD through Highway with runtime dispatch. The scalar specification is cross_entropy_ref.h;
// see elementwise.cc for how the per-target compilation works.
//
//   lse_i  = m + log(sum_j exp(x_ij - m)),  m = max_j x_ij
//   loss_i = lse_i - x_i[t_i]                        (computed as (m - x_i[t_i]) + log(sum))
//   dx_ij += dloss_i * (exp(x_ij - lse_i) - [j == t_i])
//
// Every row is done whole by one thread, so results do not depend on the thread count.
#include "autograd/kernels/cross_entropy.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <type_traits>

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "autograd/kernels/cross_entropy.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "hwy/contrib/math/math-inl.h"

HWY_BEFORE_NAMESPACE();
namespace attograd::kernels::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Helpers and kernel bodies get internal linkage: every kernel file has its own for_range,
// row_max etc., compiled into the same per-target namespace, and they must not be merged by the
// linker (one definition rule). Only the exported wrappers at the end are visible outside.
namespace {

// ---- Loops and exp (same helpers as softmax.cc) ------------------------------------------------

// body(i) for i in [0, count), on all OpenMP threads when `parallel` (plain branch: an
// `omp parallel if(false)` still costs ~0.2 us per call).
template <class Body>
void for_range(int64_t count, bool parallel, const Body& body) {
  if (!parallel || count < 2) {
    for (int64_t i = 0; i < count; ++i) body(i);
    return;
  }
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < count; ++i) body(i);
}

// Threads only pay from about 32k logits (N * V) on.
constexpr int64_t kParallelMin = 32768;

// Sum over [0, n) of the vectors f(d, j): one vector accumulator for the whole vectors, summed
// across lanes at the end, plus the tail lanes through a 1-lane tag (same maths).
template <typename T, class F>
HWY_INLINE T sum_of(int64_t n, const F& f) {
  const hn::ScalableTag<T> d;
  const hn::CappedTag<T, 1> d1;
  const int64_t N = static_cast<int64_t>(hn::Lanes(d));
  auto acc = hn::Zero(d);
  int64_t j = 0;
  for (; j + N <= n; j += N) acc = hn::Add(acc, f(d, j));
  T s = hn::GetLane(hn::SumOfLanes(d, acc));
  for (; j < n; ++j) s += hn::GetLane(f(d1, j));
  return s;
}

// max of x[0..n). A NaN logit may or may not win (Highway's Max may drop it); the loss is NaN
// either way, because exp of the NaN difference enters the sum.
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

// exp(x) for x <= 0, -inf (exactly 0: Highway's Exp is only specified from -FLT_MAX) or NaN
// (kept NaN: Highway's Exp would return 0 and hide it).
template <class D, class V>
HWY_INLINE V exp_nonpositive(D d, V x) {
  using T = hn::TFromD<D>;
  const V minus_inf = hn::Set(d, -std::numeric_limits<T>::infinity());
  const V y = hn::IfThenZeroElse(hn::Eq(x, minus_inf), hn::Exp(d, x));
  return hn::IfThenElse(hn::IsNaN(x), x, y);
}

// ---- forward ---------------------------------------------------------------------------------

template <typename T>
void cross_entropy_forward_impl(T* losses, T* lse, const T* logits, const int64_t* targets,
                                int64_t N, int64_t V) {
  for_range(N, N * V >= kParallelMin, [&](int64_t i) HWY_ATTR {
    const T* x = logits + i * V;

    // pass 1: row max, so every exp argument is <= 0
    const T m = row_max(x, V);

    // pass 2: sum of exp(x - m), in [1, V]
    const T sum = sum_of<T>(V, [&](auto d, int64_t j) HWY_ATTR {
      return exp_nonpositive(d, hn::Sub(hn::LoadU(d, x + j), hn::Set(d, m)));
    });

    // One scalar log per row (std::log: more accurate than SIMD Log, and negligible here).
    const T log_sum = std::log(sum);
    lse[i] = m + log_sum;
    // Not lse - x[t]: for logits near 7e5 a float lse is a multiple of 1/16 and the difference
    // would lose log_sum, whereas m - x[t] is exact for nearby values (Sterbenz).
    losses[i] = (m - x[targets[i]]) + log_sum;
  });
}

// ---- backward --------------------------------------------------------------------------------

// dx_ij += dloss_i * (p_ij - [j == t_i]),  p_ij = exp(x_ij - lse_i) <= 1.
// Precision: p is only as exact as the saved lse; in float that is a relative error of about
// |lse| * 2^-24 (see cross_entropy_ref.h): negligible for real logits, 3% near 7e5.
template <typename T>
void cross_entropy_backward_impl(T* dlogits, const T* logits, const T* lse, const int64_t* targets,
                                 const T* dloss, int64_t N, int64_t V) {
  const hn::ScalableTag<T> d;
  const hn::CappedTag<T, 1> d1;
  const int64_t L = static_cast<int64_t>(hn::Lanes(d));
  for_range(N, N * V >= kParallelMin, [&](int64_t i) HWY_ATTR {
    const T* x = logits + i * V;
    T* dx = dlogits + i * V;
    const int64_t t = targets[i];
    const T dx_t_before = dx[t];

    // pass 1: dx += dloss * p for every j, the target included
    auto add_grad = [&](auto dt, int64_t j) HWY_ATTR {
      const auto p = exp_nonpositive(dt, hn::Sub(hn::LoadU(dt, x + j), hn::Set(dt, lse[i])));
      hn::StoreU(hn::MulAdd(hn::Set(dt, dloss[i]), p, hn::LoadU(dt, dx + j)), dt, dx + j);
    };
    int64_t j = 0;
    for (; j + L <= V; j += L) add_grad(d, j);
    for (; j < V; ++j) add_grad(d1, j);

    // pass 2: redo the target entry as dloss * (p - 1). Subtracting dloss from dloss * p
    // instead would cancel catastrophically when the model is confident (p close to 1).
    const T p_t = hn::GetLane(exp_nonpositive(d1, hn::Set(d1, x[t] - lse[i])));
    dx[t] = dx_t_before + dloss[i] * (p_t - T(1));
  });
}

}  // namespace

// ---- Exports: HWY_EXPORT needs plain (non-template) names, one per element type ---------------

void cross_entropy_forward_impl_f32(float* losses, float* lse, const float* logits,
                                    const int64_t* targets, int64_t N, int64_t V) {
  cross_entropy_forward_impl(losses, lse, logits, targets, N, V);
}
void cross_entropy_forward_impl_f64(double* losses, double* lse, const double* logits,
                                    const int64_t* targets, int64_t N, int64_t V) {
  cross_entropy_forward_impl(losses, lse, logits, targets, N, V);
}
void cross_entropy_backward_impl_f32(float* dlogits, const float* logits, const float* lse,
                                     const int64_t* targets, const float* dloss, int64_t N,
                                     int64_t V) {
  cross_entropy_backward_impl(dlogits, logits, lse, targets, dloss, N, V);
}
void cross_entropy_backward_impl_f64(double* dlogits, const double* logits, const double* lse,
                                     const int64_t* targets, const double* dloss, int64_t N,
                                     int64_t V) {
  cross_entropy_backward_impl(dlogits, logits, lse, targets, dloss, N, V);
}

}  // namespace attograd::kernels::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace attograd::kernels {

HWY_EXPORT(cross_entropy_forward_impl_f32);
HWY_EXPORT(cross_entropy_forward_impl_f64);
HWY_EXPORT(cross_entropy_backward_impl_f32);
HWY_EXPORT(cross_entropy_backward_impl_f64);

// Each public template calls the f32 or f64 export for the best target of this CPU.

template <typename T>
void cross_entropy_forward(T* losses, T* lse, const T* logits, const int64_t* targets, int64_t N,
                           int64_t V) {
  if constexpr (std::is_same_v<T, float>) {
    HWY_DYNAMIC_DISPATCH(cross_entropy_forward_impl_f32)(losses, lse, logits, targets, N, V);
  } else {
    HWY_DYNAMIC_DISPATCH(cross_entropy_forward_impl_f64)(losses, lse, logits, targets, N, V);
  }
}

template <typename T>
void cross_entropy_backward(T* dlogits, const T* logits, const T* lse, const int64_t* targets,
                            const T* dloss, int64_t N, int64_t V) {
  if constexpr (std::is_same_v<T, float>) {
    HWY_DYNAMIC_DISPATCH(cross_entropy_backward_impl_f32)
    (dlogits, logits, lse, targets, dloss, N, V);
  } else {
    HWY_DYNAMIC_DISPATCH(cross_entropy_backward_impl_f64)
    (dlogits, logits, lse, targets, dloss, N, V);
  }
}

#define ATTOGRAD_INSTANTIATE(T)                                                               \
  template void cross_entropy_forward<T>(T*, T*, const T*, const int64_t*, int64_t, int64_t); \
  template void cross_entropy_backward<T>(T*, const T*, const T*, const int64_t*, const T*,   \
                                          int64_t, int64_t);
ATTOGRAD_INSTANTIATE(float)
ATTOGRAD_INSTANTIATE(double)
#undef ATTOGRAD_INSTANTIATE

}  // namespace attograd::kernels
#endif  // HWY_ONCE
