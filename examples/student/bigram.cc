// S7. The cross-entropy of the counted bigram, about 25 minutes
// (docs/exercises.md#s7-the-counted-bigrams-cross-entropy).
//
// Count the pairs (a, b) of consecutive tokens of train, and the pairs that start with each a.
// With add-one smoothing, P(b | a) = (count(a, b) + 1) / (count(a, ·) + V): every pair gets one
// imaginary extra sighting, so a pair never seen in train keeps P > 0, and each P(· | a) still
// sums to 1. Return the mean of −ln P(val[i] | val[i−1]) over the pairs of val, in nats; throw
// std::invalid_argument when val has fewer than 2 tokens. (docs/05-training.md, "Baselines".
// The library's version, gpt/text/dataset.h's bigram_cross_entropy, is not in reach: the track's
// files see only the engine, autograd/.)
//
// Check: ctest --test-dir build -C student -L student -R bigram --output-on-failure
#include <stdexcept>

#include "examples/student/exercises.h"

namespace attograd::student {

double bigram_cross_entropy(const std::vector<int64_t>& train, const std::vector<int64_t>& val,
                            int64_t vocab_size) {
  (void)train;
  (void)val;
  (void)vocab_size;
  throw std::logic_error(
      "not implemented yet: see docs/exercises.md#s7-the-counted-bigrams-cross-entropy");
}

}  // namespace attograd::student
