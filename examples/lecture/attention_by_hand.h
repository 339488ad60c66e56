// The lecture's single-head causal attention, one step at a time, so each intermediate can be
// printed (examples/attention_by_hand.cc) and asserted (tests/examples/attention_by_hand_test.cc).
//
//   scores  = Q Kᵀ / sqrt(d_k)                       (T, T)   scaled dot-product (Vaswani et al. 2017, eq. 1)
//   masked  = scores with -inf where key j > query t  (T, T)   causal: no looking ahead
//   weights = softmax over each ROW of masked         (T, T)   each query's weights sum to 1
//   out     = weights V                               (T, d_v)
#pragma once

#include "autograd/tensor.h"

namespace attograd::lecture {

/// The lecture's starting point, before any Q, K or V: each position's output is the plain
/// average of the vectors up to it, y_t = (1/(t+1)) sum_{j<=t} x_j. Written as attention with
/// all scores equal: softmax(causal_mask(0)) has rows [1, 0, ..], [1/2, 1/2, 0, ..], ...
/// x (T, C) -> (T, C).
Tensor causal_average(const Tensor& x);

/// Every intermediate of single-head causal attention.
struct AttentionSteps {
  Tensor scores;   // (T, T) = Q Kᵀ / sqrt(d_k)
  Tensor masked;   // (T, T), -inf above the diagonal
  Tensor weights;  // (T, T), rows sum to 1, exactly 0 above the diagonal
  Tensor out;      // (T, d_v)
};

/// Q, K: (T, d_k); V: (T, d_v); any floating dtype. Throws std::invalid_argument on shape
/// mismatch (from the ops).
AttentionSteps causal_attention_steps(const Tensor& Q, const Tensor& K, const Tensor& V);

/// The common mistake: softmax over each COLUMN of the masked scores (over queries instead of
/// keys). Columns then sum to 1 and rows do not, so outputs are no longer weighted averages.
Tensor column_softmax(const Tensor& masked);

}  // namespace attograd::lecture
