// Built against the core component of an installed attograd: a matmul and its gradient.
#include <cstdio>

#include "autograd/ops.h"

int main() {
  using namespace attograd;
  // c = a @ b = [[1, 2], [3, 4]] @ [[5, 6], [7, 8]] = [[19, 22], [43, 50]], and
  // d sum(c) / da = ones(2, 2) @ bᵀ: each row holds b's row sums, 5 + 6 and 7 + 8.
  Tensor a = Tensor::from_vector({1, 2, 3, 4}, {2, 2}).requires_grad_();
  const Tensor c = matmul(a, Tensor::from_vector({5, 6, 7, 8}, {2, 2}));
  sum(c).backward();
  const Tensor g = a.grad();
  std::printf("matmul %g %g %g %g\ngrad %g %g %g %g\n", c.at({0, 0}), c.at({0, 1}), c.at({1, 0}),
              c.at({1, 1}), g.at({0, 0}), g.at({0, 1}), g.at({1, 0}), g.at({1, 1}));
}
