// S2. Softmax and its backward, about 30 minutes (docs/exercises.md#s2-softmax-and-its-backward).
//
// softmax: x (..., n) -> y (..., n), each row (the last axis) turned into weights summing to 1.
// Subtract each row's max before exp (max(x, -1, true) keeps the axis for broadcasting), so that
// rows of large numbers do not overflow (docs/02-kernels.md, "Softmax without overflow"); a
// -inf entry must give exactly 0.
//
// softmax_backward: from y (the forward's output) and dy = dL/dy, return dx = dL/dx. The
// Jacobian of one row is J = diag(y) − y yᵀ; never form it: work out Jᵀ dy on paper first
// (docs/derivatives.md, "Softmax: the Jacobian"). Engine ops (mul, sub, sum with keepdim)
// make it a line or two.
//
// Check: ctest --test-dir build -C student -L student -R softmax --output-on-failure
#include <stdexcept>

#include "autograd/ops.h"
#include "examples/student/exercises.h"

namespace attograd::student {

Tensor softmax(const Tensor& x) {
  (void)x;
  throw std::logic_error("not implemented yet: see docs/exercises.md#s2-softmax-and-its-backward");
}

Tensor softmax_backward(const Tensor& y, const Tensor& dy) {
  (void)y;
  (void)dy;
  throw std::logic_error("not implemented yet: see docs/exercises.md#s2-softmax-and-its-backward");
}

}  // namespace attograd::student
