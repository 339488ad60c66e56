// Cross-entropy of logits (N, V) against targets (N), fused with log-softmax (cross_entropy.h),
// SIMD through Highway with runtime dispatch. The scalar specification is cross_entropy_ref.h;
// see elementwise.cc for how the per-target compilation works.
//
//   lse_i  = m + log(sum_j exp(x_ij - m)),  m = max_j x_ij
//   loss_i = lse_i - x_i[t_i] + eps (x_i[t_i] - mean_j x_ij)
//                          (computed as (m - x_i[t_i]) + log(sum), plus the eps term when eps > 0)
//   dx_ij += dloss_i * (exp(x_ij - lse_i) - q_ij),  q_ij = (1 - eps) [j == t_i] + eps / V
// A row whose target is ignore_index adds no loss and gets no gradient (zeros when overwriting).
//
// Every row is done whole by one thread, so results do not depend on the thread count.
#include "autograd/kernels/cross_entropy.h"

#include <cstddef>
#include <cstdint>

#include "autograd/kernels/dispatch.h"

// Highway's per-target includes, in the order its skeleton.cc gives (foreach_target.h
// re-includes this file once per target): never sorted.
// clang-format off
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "autograd/kernels/cross_entropy.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "autograd/kernels/simd-inl.h"
// clang-format on

HWY_BEFORE_NAMESPACE();
namespace attograd::kernels::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// This file's kernel bodies get internal linkage (the shared helpers come from simd-inl.h);
// only the exported names at the end are visible outside.
namespace {

// ---- forward ---------------------------------------------------------------------------------

template <typename T>
void cross_entropy_forward_impl(T* losses, T* lse, const T* logits, const int64_t* targets,
                                int64_t N, int64_t V, int64_t ignore_index, T label_smoothing) {
  for_range(N, N * V >= kRowParallelMin, [&](int64_t i) HWY_ATTR {
    if (targets[i] == ignore_index) {
      losses[i] = lse[i] = T(0);
      return;
    }
    const T* x = logits + i * V;

    // passes 1 and 2 (simd-inl.h): row max m, so every exp argument is <= 0, and the sum of
    // exp(x - m), in [1, V]
    const LogSumExp<T> row = row_log_sum_exp(x, V);
    const T m = row.max, log_sum = row.log_sum();
    lse[i] = m + log_sum;
    // Not lse - x[t]: for logits near 7e5 a float lse is a multiple of 1/16 and the difference
    // would lose log_sum, whereas m - x[t] is exact for nearby values (Sterbenz).
    losses[i] = (m - x[targets[i]]) + log_sum;
    // pass 3, label smoothing only: eps (x_t - mean_j x_j). Skipped at eps = 0, where a -inf
    // logit would make it 0 * inf = NaN.
    if (label_smoothing != T(0)) {
      const T mean = sum_of<T>(V, [&](auto d, int64_t j) HWY_ATTR { return hn::LoadU(d, x + j); }) /
                     static_cast<T>(V);
      losses[i] += label_smoothing * (x[targets[i]] - mean);
    }
  });
}

// ---- backward --------------------------------------------------------------------------------

// dx_ij (+)= dloss_i * (p_ij - q_ij),  p_ij = exp(x_ij - lse_i) <= 1,
// q_ij = (1 - eps) [j == t_i] + eps / V. Without accumulate
// the gradient overwrites dx, which may then be the logits themselves (each x_ij is read before
// dx_ij is written; x_it is read first of all).
// Precision: p is only as exact as the saved lse; in float that is a relative error of about
// |lse| * 2^-24 (see cross_entropy_ref.h): negligible for real logits, 3% near 7e5.
template <typename T>
void cross_entropy_backward_impl(T* dlogits, const T* logits, const T* lse, const int64_t* targets,
                                 const T* dloss, int64_t N, int64_t V, int64_t ignore_index,
                                 bool accumulate, T label_smoothing) {
  const hn::CappedTag<T, 1> d1;
  const T smooth = label_smoothing / static_cast<T>(V);  // eps / V, 0 without smoothing
  for_range(N, N * V >= kRowParallelMin, [&](int64_t i) HWY_ATTR {
    const T* x = logits + i * V;
    T* dx = dlogits + i * V;
    const int64_t t = targets[i];
    if (t == ignore_index) {  // exactly 0, even where the logits are infinite or NaN
      if (!accumulate)
        for_each_vector<T>(0, V,
                           [&](auto d, int64_t j) HWY_ATTR { hn::StoreU(hn::Zero(d), d, dx + j); });
      return;
    }
    const T x_t = x[t];
    const T dx_t_before = accumulate ? dx[t] : T(0);

    // pass 1: dx (+)= dloss * (p - eps/V) for every j, the target included (p - 0 is p exactly)
    if (accumulate) {
      for_each_vector<T>(0, V, [&](auto d, int64_t j) HWY_ATTR {
        const auto p = exp_nonpositive(d, hn::Sub(hn::LoadU(d, x + j), hn::Set(d, lse[i])));
        hn::StoreU(
            hn::MulAdd(hn::Set(d, dloss[i]), hn::Sub(p, hn::Set(d, smooth)), hn::LoadU(d, dx + j)),
            d, dx + j);
      });
    } else {
      for_each_vector<T>(0, V, [&](auto d, int64_t j) HWY_ATTR {
        const auto p = exp_nonpositive(d, hn::Sub(hn::LoadU(d, x + j), hn::Set(d, lse[i])));
        hn::StoreU(hn::Mul(hn::Set(d, dloss[i]), hn::Sub(p, hn::Set(d, smooth))), d, dx + j);
      });
    }

    // pass 2: redo the target entry as dloss * ((p - 1) + (eps - eps/V)), q_t = 1 - eps + eps/V.
    // Subtracting dloss from dloss * p instead would cancel catastrophically when the model is
    // confident (p close to 1).
    const T p_t = hn::GetLane(exp_nonpositive(d1, hn::Set(d1, x_t - lse[i])));
    dx[t] = dx_t_before + dloss[i] * ((p_t - T(1)) + (label_smoothing - smooth));
  });
}

}  // namespace

// ---- Exports: the names HWY_EXPORT takes, <name>_impl_f32 and _f64 (dispatch.h) ---------------

ATTOGRAD_KERNEL_TARGET(cross_entropy_forward);
ATTOGRAD_KERNEL_TARGET(cross_entropy_backward);

}  // namespace attograd::kernels::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace attograd::kernels {

// The public kernels: each forwards to the f32 or f64 export for the best target of this CPU and
// is instantiated for float and double (ATTOGRAD_KERNEL, dispatch.h).

ATTOGRAD_KERNEL(void, cross_entropy_forward,
                (T * losses, T* lse, const T* logits, const int64_t* targets, int64_t N, int64_t V,
                 int64_t ignore_index, T label_smoothing),
                (losses, lse, logits, targets, N, V, ignore_index, label_smoothing));

ATTOGRAD_KERNEL(void, cross_entropy_backward,
                (T * dlogits, const T* logits, const T* lse, const int64_t* targets, const T* dloss,
                 int64_t N, int64_t V, int64_t ignore_index, bool accumulate, T label_smoothing),
                (dlogits, logits, lse, targets, dloss, N, V, ignore_index, accumulate,
                 label_smoothing));

}  // namespace attograd::kernels
#endif  // HWY_ONCE
