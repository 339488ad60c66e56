// S1's answer (examples/student/causal_mask.cc): a (T, T) tensor of 0 on and below the diagonal
// and -inf above it, added to the scores. add() keeps the scores in the graph, so attention built
// on this mask trains; -inf + a finite score is -inf, and the softmax turns it into exactly 0.
#include <limits>
#include <stdexcept>
#include <vector>

#include "autograd/ops.h"
#include "examples/student/exercises.h"

namespace attograd::student {

Tensor causal_mask(const Tensor& scores) {
  if (scores.dim() != 2 || scores.size(0) != scores.size(1))
    throw std::invalid_argument("causal_mask: expected scores (T, T), got " +
                                shape_str(scores.shape()));
  const int64_t T = scores.size(0);
  std::vector<double> mask(static_cast<size_t>(T * T), 0.0);
  for (int64_t t = 0; t < T; ++t)
    for (int64_t j = t + 1; j < T; ++j)  // the keys after query t
      mask[static_cast<size_t>(t * T + j)] = -std::numeric_limits<double>::infinity();
  return add(scores, Tensor::from_vector(mask, {T, T}, scores.dtype()));
}

}  // namespace attograd::student
