// S5. Layer norm, about 20 minutes (docs/exercises.md#s5-layer-norm).
//
// x (..., C), gamma (C), beta (C) -> y (..., C). For each row of C channels:
//   μ = mean of the row,  σ² = mean of (x − μ)²  (the biased variance: divide by C)
//   y = gamma ⊙ (x − μ) / √(σ² + eps) + beta
// mean(x, {-1}, true), sub, pow or mul, add_scalar, sqrt, div, mul, add (autograd/ops.h; they
// broadcast). Write it with the engine's ops: the check runs a gradient check through it.
// (docs/derivatives.md, "Layer norm"; docs/04-gpt.md, "Residual connections and layer norm".)
//
// Check: ctest --test-dir build -C student -L student -R layer_norm --output-on-failure
#include <stdexcept>

#include "autograd/ops.h"
#include "examples/student/exercises.h"

namespace attograd::student {

Tensor layer_norm(const Tensor& x, const Tensor& gamma, const Tensor& beta, double eps) {
  (void)x;
  (void)gamma;
  (void)beta;
  (void)eps;
  throw std::logic_error("not implemented yet: see docs/exercises.md#s5-layer-norm");
}

}  // namespace attograd::student
