#include "examples/lecture/attention_by_hand.h"

#include <cmath>

#include "autograd/ops.h"

namespace attograd::lecture {

Tensor causal_average(const Tensor& x) {
  const int64_t T = x.size(0);
  const Tensor weights = softmax(causal_mask(Tensor::zeros({T, T}, x.dtype())));  // uniform over the past
  return matmul(weights, x);
}

AttentionSteps causal_attention_steps(const Tensor& Q, const Tensor& K, const Tensor& V) {
  AttentionSteps s;
  const double d_k = static_cast<double>(Q.size(-1));
  s.scores = mul_scalar(matmul(Q, transpose(K, -2, -1)), 1.0 / std::sqrt(d_k));
  s.masked = causal_mask(s.scores);
  s.weights = softmax(s.masked);
  s.out = matmul(s.weights, V);
  return s;
}

Tensor column_softmax(const Tensor& masked) { return transpose(softmax(transpose(masked, -2, -1)), -2, -1); }

}  // namespace attograd::lecture
