// S1. The causal mask, about 15 minutes (docs/exercises.md#s1-the-causal-mask).
//
// scores (T, T) -> (T, T): keep scores[t][j] for keys j <= t, put -inf where j > t, so that the
// softmax gives the future exactly 0 (docs/03-attention.md, "The causal mask").
//
// Two ways, both fine: read the values with scores.to_vector() (row-major: scores[t][j] is
// element t * T + j), change them and return Tensor::from_vector(values, scores.shape(),
// scores.dtype()); or build a (T, T) tensor of 0 and -inf and add() it to the scores, which
// keeps the result in the graph. -inf is -std::numeric_limits<double>::infinity().
//
// Check: ctest --test-dir build -C student -L student -R causal_mask --output-on-failure
#include <stdexcept>

#include "autograd/ops.h"
#include "examples/student/exercises.h"

namespace attograd::student {

Tensor causal_mask(const Tensor& scores) {
  (void)scores;
  throw std::logic_error("not implemented yet: see docs/exercises.md#s1-the-causal-mask");
}

}  // namespace attograd::student
