// S3's answer (examples/student/attention.cc): the lecture's formula, one op per step.
#include <cmath>

#include "autograd/ops.h"
#include "examples/student/exercises.h"

namespace attograd::student {

Tensor attention(const Tensor& Q, const Tensor& K, const Tensor& V) {
  const double d_k = static_cast<double>(Q.size(-1));
  const Tensor S = mul_scalar(matmul(Q, transpose(K, -2, -1)), 1.0 / std::sqrt(d_k));  // (T, T)
  const Tensor A = attograd::softmax(attograd::causal_mask(S));  // each row sums to 1
  return matmul(A, V);                                           // (T, d_v)
}

}  // namespace attograd::student
