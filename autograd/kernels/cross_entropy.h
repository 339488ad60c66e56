// Cross-entropy of logits (N, V) against integer targets (N), fused with log-softmax, with
// label smoothing eps in [0, 1] (Szegedy et al. 2016, sec. 7; PyTorch's label_smoothing): the
// target distribution is q = (1 - eps) onehot(target) + eps / V, so
//   loss_i = (1 - eps) (lse_i - x_i[t_i]) + eps mean_j (lse_i - x_ij)
//          = lse_i - x_i[t_i] + eps (x_i[t_i] - mean_j x_ij),   lse = m + log(sum exp(x - m))
//   VJP:  dx_i = dloss_i * (softmax(x_i) - q_i)
// eps = 0 is plain cross-entropy, bit for bit. A row whose target equals ignore_index (PyTorch's
// ignore_index) is skipped: its loss is 0 and its gradient exactly 0. The mean over the rows that
// count is taken by the caller in double. Targets and eps are validated by the caller. Scalar
// reference twins: cross_entropy_ref.h.
#pragma once

#include <cstdint>

namespace attograd::kernels {

/// losses (N) = per-row negative log-likelihood; lse (N) = per-row logsumexp, saved for the
/// backward. targets[i] must be in [0, V) or equal ignore_index (then losses[i] = lse[i] = 0).
/// With label_smoothing eps > 0, each loss mixes in eps times the row's mean of -log p.
template <typename T>
void cross_entropy_forward(T* losses, T* lse, const T* logits, const int64_t* targets, int64_t N,
                           int64_t V, int64_t ignore_index, T label_smoothing = T(0));

/// dlogits (N, V) += dloss[i] * (exp(logits - lse_i) - q_i), q_i = (1 - eps) onehot(targets[i]) +
/// eps / V (eps = label_smoothing; q_i = onehot(targets[i]) without smoothing), where dloss (N) is
/// the upstream gradient of each row's loss (1/N times the scalar upstream for a mean). Without
/// accumulate, dlogits = that gradient instead, and dlogits may be logits itself (the gradient
/// then replaces the logits in place: linear_cross_entropy keeps one (N, V) buffer). The row of
/// an ignored target gets nothing (accumulate) or zeros.
template <typename T>
void cross_entropy_backward(T* dlogits, const T* logits, const T* lse, const int64_t* targets,
                            const T* dloss, int64_t N, int64_t V, int64_t ignore_index,
                            bool accumulate, T label_smoothing = T(0));

}  // namespace attograd::kernels
