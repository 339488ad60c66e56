// S3. Scaled dot-product attention for one head, about 20 minutes
// (docs/exercises.md#s3-scaled-dot-product-attention).
//
// Q (T, d_k), K (T, d_k), V (T, d_v) -> Z (T, d_v):
//   S = Q Kᵀ / √d_k   (T, T)     matmul, transpose(K, -2, -1), mul_scalar
//   A = softmax of each row of causal_mask(S)   (T, T)
//   Z = A V           (T, d_v)
// (docs/03-attention.md, "Scaled dot-product attention"). Use the library's mask and softmax,
// attograd::causal_mask and attograd::softmax (autograd/ops.h; the names need their namespace
// here, beside yours), or yours, student::causal_mask and student::softmax, once S1 and S2 pass.
// Write it with the engine's ops, so that backward() reaches Q, K and V: the check runs a
// gradient check through it.
//
// Check: ctest --test-dir build -C student -L student -R attention --output-on-failure
#include <stdexcept>

#include "autograd/ops.h"
#include "examples/student/exercises.h"

namespace attograd::student {

Tensor attention(const Tensor& Q, const Tensor& K, const Tensor& V) {
  (void)Q;
  (void)K;
  (void)V;
  throw std::logic_error(
      "not implemented yet: see docs/exercises.md#s3-scaled-dot-product-attention");
}

}  // namespace attograd::student
