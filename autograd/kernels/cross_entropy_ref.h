// Scalar reference twins of cross_entropy.h: the fused log-softmax + negative log-likelihood
// of logits (N, V) against targets (N), as plain loops. The oracle for cross_entropy_test.cc.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

namespace attograd::kernels::reference {

/// lse_i = m + log(sum_j exp(x_ij - m)),  loss_i = (m - x_i[t]) + log(sum)
///
/// The loss is deliberately NOT computed as lse_i - x_i[t]: with logits near 7e5 a float lse
/// rounds to a multiple of 1/16 and the difference would lose log(sum) entirely, while
/// m - x_i[t] is exact for nearby values (Sterbenz) and log(sum) is then added unharmed.
///
/// Label smoothing eps (PyTorch's label_smoothing) mixes in eps times the mean over the row of
/// -log p_j = lse_i - x_ij:  loss_i += eps (x_i[t] - mean_j x_ij), added only when eps > 0 (a
/// -inf logit would make 0 * inf = NaN).
///
/// A row whose target is ignore_index is skipped: losses_i = lse_i = 0.
template <typename T>
void cross_entropy_forward(T* losses, T* lse, const T* logits, const int64_t* targets, int64_t N,
                           int64_t V, int64_t ignore_index, T label_smoothing = T(0)) {
  for (int64_t i = 0; i < N; ++i) {
    if (targets[i] == ignore_index) {
      losses[i] = lse[i] = T(0);
      continue;
    }
    const T* x = logits + i * V;
    T m = -std::numeric_limits<T>::infinity();
    for (int64_t j = 0; j < V; ++j) m = std::max(m, x[j]);
    T sum = 0;
    for (int64_t j = 0; j < V; ++j) sum += std::exp(x[j] - m);
    const T log_sum = std::log(sum);
    lse[i] = m + log_sum;
    losses[i] = (m - x[targets[i]]) + log_sum;
    if (label_smoothing != T(0)) {
      T sum_x = 0;
      for (int64_t j = 0; j < V; ++j) sum_x += x[j];
      losses[i] += label_smoothing * (x[targets[i]] - sum_x / static_cast<T>(V));
    }
  }
}

/// dx_ij += dloss_i * (p_ij - q_ij),  p_ij = exp(x_ij - lse_i),
/// q_ij = (1 - eps) [j == t_i] + eps / V  (eps = label_smoothing; q = onehot without it)
///
/// The target entry is computed as dloss * ((p - 1) + (eps - eps/V)), never dloss * p - dloss: when
/// the model is confident (p close to 1) the subtraction is exact and the product keeps the small
/// result's bits. Precision note: exp(x - lse) can only be as exact as lse itself. In float, lse is
/// rounded to within |lse| * 2^-24 (about 6e-8 |lse|), which is then the relative error of every
/// p: 1e-6 for logits of size 20, but 3% for logits near 7e5, where only the loss stays exact.
/// Without accumulate, dlogits = the gradient (and may be logits itself: each entry is read
/// before it is written). The row of an ignored target gets a gradient of exactly 0.
template <typename T>
void cross_entropy_backward(T* dlogits, const T* logits, const T* lse, const int64_t* targets,
                            const T* dloss, int64_t N, int64_t V, int64_t ignore_index,
                            bool accumulate = true, T label_smoothing = T(0)) {
  const T smooth = label_smoothing / static_cast<T>(V);
  for (int64_t i = 0; i < N; ++i) {
    if (targets[i] == ignore_index) {
      if (!accumulate) std::fill(dlogits + i * V, dlogits + (i + 1) * V, T(0));
      continue;
    }
    for (int64_t j = 0; j < V; ++j) {
      const T p = std::exp(logits[i * V + j] - lse[i]);
      const T g =
          dloss[i] * (j == targets[i] ? (p - T(1)) + (label_smoothing - smooth) : p - smooth);
      dlogits[i * V + j] = accumulate ? dlogits[i * V + j] + g : g;
    }
  }
}

}  // namespace attograd::kernels::reference
