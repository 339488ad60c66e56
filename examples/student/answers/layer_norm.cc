// S5's answer (examples/student/layer_norm.cc): the formula of docs/derivatives.md, written
// with broadcasting ops so that backward() runs through it.
#include "autograd/ops.h"
#include "examples/student/exercises.h"

namespace attograd::student {

Tensor layer_norm(const Tensor& x, const Tensor& gamma, const Tensor& beta, double eps) {
  const Tensor centred = sub(x, mean(x, {-1}, /*keepdim=*/true));               // x − μ
  const Tensor variance = mean(mul(centred, centred), {-1}, /*keepdim=*/true);  // biased: / C
  const Tensor x_hat = div(centred, sqrt(add_scalar(variance, eps)));
  return add(mul(x_hat, gamma), beta);
}

}  // namespace attograd::student
