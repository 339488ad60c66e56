// Cross-entropy of logits (N, V) against integer targets (N), fused with log-softmax:
//   loss_i = logsumexp(x_i) - x_i[target_i],  logsumexp(x) = m + log(sum exp(x - m))
//   VJP:  dx_i = dloss_i * (softmax(x_i) - onehot(target_i))
// A row whose target equals ignore_index (PyTorch's ignore_index) is skipped: its loss is 0 and
// its gradient exactly 0. The mean over the rows that count is taken by the caller in double.
// Targets are validated by the caller. Scalar reference twins: cross_entropy_ref.h.
#pragma once

#include <cstdint>

namespace attograd::kernels {

/// losses (N) = per-row negative log-likelihood; lse (N) = per-row logsumexp, saved for the
/// backward. targets[i] must be in [0, V) or equal ignore_index (then losses[i] = lse[i] = 0).
template <typename T>
void cross_entropy_forward(T* losses, T* lse, const T* logits, const int64_t* targets, int64_t N,
                           int64_t V, int64_t ignore_index);

/// dlogits (N, V) += dloss[i] * (exp(logits - lse_i) - onehot(targets[i])), where dloss (N) is
/// the upstream gradient of each row's loss (1/N times the scalar upstream for a mean). Without
/// accumulate, dlogits = that gradient instead, and dlogits may be logits itself (the gradient
/// then replaces the logits in place: linear_cross_entropy keeps one (N, V) buffer). The row of
/// an ignored target gets nothing (accumulate) or zeros.
template <typename T>
void cross_entropy_backward(T* dlogits, const T* logits, const T* lse, const int64_t* targets,
                            const T* dloss, int64_t N, int64_t V, int64_t ignore_index,
                            bool accumulate);

}  // namespace attograd::kernels
