// Passes over a model's whole parameter arena: the AdamW update and the sum of squares behind
// gradient-norm clipping. Each is one SIMD pass over contiguous memory, split over the
// engine's threads (thread_pool.h) in fixed chunks (so results do not depend on the thread count).
// Scalar reference twins: optimizer_ref.h.
#pragma once

#include <cstdint>

namespace attograd::kernels {

/// The scalars of one AdamW step (Loshchilov & Hutter 2019, algorithm 2, as torch.optim.AdamW).
struct AdamWStep {
  double lr;                // learning rate of this step
  double beta1, beta2;      // moment decay rates, in [0, 1)
  double eps;               // added to sqrt(v_hat)
  double weight_decay;      // decoupled decay, applied to the first n_decay parameters only
  double bias_correction1;  // 1 - beta1^t, t = this step's number (1 for the first)
  double bias_correction2;  // 1 - beta2^t
  double grad_scale;  // each gradient is multiplied by this first (the clipping factor; 1 = none)
};

/// One AdamW step over n parameters, in T arithmetic, as torch.optim.AdamW computes it:
///   g = grad * grad_scale
///   p = p * (1 - lr * weight_decay)                      (i < n_decay only)
///   m = m + (1 - beta1) (g - m)                          (lerp: beta1 m + (1 - beta1) g)
///   v = beta2 v + (1 - beta2) g²
///   p = p - lr / bias_correction1 * m / (sqrt(v) / sqrt(bias_correction2) + eps)
/// param, m, v (n,) are updated in place; grad (n,) is read only.
template <typename T>
void adamw_step(T* param, const T* grad, T* m, T* v, int64_t n, int64_t n_decay,
                const AdamWStep& s);

/// sum of x[i]² over [0, n), every square and partial sum in double, summed in 64 fixed slices
/// whose totals are added in order: the same result for any number of threads.
template <typename T>
double sum_squares_double(const T* x, int64_t n);

}  // namespace attograd::kernels
