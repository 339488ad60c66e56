// S1. The causal mask, about 15 minutes (docs/exercises.md#s1-the-causal-mask).
//
// scores (T, T) -> (T, T): keep scores[t][j] for keys j <= t, put -inf where j > t, so that the
// softmax gives the future exactly 0 (docs/03-attention.md, "The causal mask").
//
// Build a (T, T) tensor of 0 and -inf (Tensor::from_vector(values, {T, T}, scores.dtype()),
// row-major: element t * T + j is row t, column j) and add() it to the scores: the result stays
// in the graph, so S3's attention can train through it. Changing scores.to_vector() and
// returning a new Tensor::from_vector of it gives the right numbers but leaves the graph: no
// gradient would reach the scores, and the check says so. -inf is
// -std::numeric_limits<double>::infinity().
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
