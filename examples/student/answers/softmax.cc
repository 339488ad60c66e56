// S2's answer (examples/student/softmax.cc).
//
// Forward: y = e^{x − m} / Σ e^{x − m} with m the row's max, the same weights as without m
// (the factor e^{−m} cancels) but no exp of a large number; a -inf entry gives e^{−inf} = 0.
// Backward: dx_j = Σ_i dy_i ∂y_i/∂x_j = Σ_i dy_i (y_i [i = j] − y_i y_j) = y_j (dy_j − Σ_i dy_i
// y_i), so dx = y ⊙ (dy − (dy · y)), the dot product taken over each row (the axis the softmax
// normalised): O(n) per row, without forming the (n, n) Jacobian.
#include "autograd/ops.h"
#include "examples/student/exercises.h"

namespace attograd::student {

Tensor softmax(const Tensor& x) {
  const Tensor e = exp(sub(x, max(x, -1, /*keepdim=*/true)));
  return div(e, sum(e, {-1}, /*keepdim=*/true));
}

Tensor softmax_backward(const Tensor& y, const Tensor& dy) {
  return mul(y, sub(dy, sum(mul(dy, y), {-1}, /*keepdim=*/true)));
}

}  // namespace attograd::student
