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

#include <cmath>
#include <cstddef>
#include <cstdint>

#include "autograd/kernels/dispatch.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "autograd/kernels/cross_entropy.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "autograd/kernels/simd-inl.h"

HWY_BEFORE_NAMESPACE();
namespace attograd::kernels::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// This file's kernel bodies get internal linkage (the shared helpers come from simd-inl.h);
// only the exported names at the end are visible outside.
namespace {

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
  const hn::CappedTag<T, 1> d1;
  for_range(N, N * V >= kParallelMin, [&](int64_t i) HWY_ATTR {
    const T* x = logits + i * V;
    T* dx = dlogits + i * V;
    const int64_t t = targets[i];
    const T dx_t_before = dx[t];

    // pass 1: dx += dloss * p for every j, the target included
    for_each_vector<T>(0, V, [&](auto d, int64_t j) HWY_ATTR {
      const auto p = exp_nonpositive(d, hn::Sub(hn::LoadU(d, x + j), hn::Set(d, lse[i])));
      hn::StoreU(hn::MulAdd(hn::Set(d, dloss[i]), p, hn::LoadU(d, dx + j)), d, dx + j);
    });

    // pass 2: redo the target entry as dloss * (p - 1). Subtracting dloss from dloss * p
    // instead would cancel catastrophically when the model is confident (p close to 1).
    const T p_t = hn::GetLane(exp_nonpositive(d1, hn::Set(d1, x[t] - lse[i])));
    dx[t] = dx_t_before + dloss[i] * (p_t - T(1));
  });
}

}  // namespace

// ---- Exports: HWY_EXPORT takes plain names, not template-ids: one per element type ------------

constexpr auto& cross_entropy_forward_impl_f32 = cross_entropy_forward_impl<float>;
constexpr auto& cross_entropy_forward_impl_f64 = cross_entropy_forward_impl<double>;
constexpr auto& cross_entropy_backward_impl_f32 = cross_entropy_backward_impl<float>;
constexpr auto& cross_entropy_backward_impl_f64 = cross_entropy_backward_impl<double>;

}  // namespace attograd::kernels::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace attograd::kernels {

HWY_EXPORT(cross_entropy_forward_impl_f32);
HWY_EXPORT(cross_entropy_forward_impl_f64);
HWY_EXPORT(cross_entropy_backward_impl_f32);
HWY_EXPORT(cross_entropy_backward_impl_f64);

// Each public template calls the f32 or f64 export for the best target of this CPU (dispatch.h).

template <typename T>
void cross_entropy_forward(T* losses, T* lse, const T* logits, const int64_t* targets, int64_t N,
                           int64_t V) {
  ATTOGRAD_DYNAMIC_DISPATCH(T, cross_entropy_forward_impl)(losses, lse, logits, targets, N, V);
}

template <typename T>
void cross_entropy_backward(T* dlogits, const T* logits, const T* lse, const int64_t* targets,
                            const T* dloss, int64_t N, int64_t V) {
  ATTOGRAD_DYNAMIC_DISPATCH(T, cross_entropy_backward_impl)
  (dlogits, logits, lse, targets, dloss, N, V);
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
