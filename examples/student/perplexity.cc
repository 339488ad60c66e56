// S6. Perplexity from a loss log, about 10 minutes
// (docs/exercises.md#s6-perplexity-from-a-loss-log).
//
// Each line of the log is one batch: its mean loss per token, in nats, and its number of
// tokens. Return the perplexity of all the log's tokens, exp(mean loss per token) with every
// token weighing the same (docs/05-training.md, "Loss and perplexity"). Throw
// std::invalid_argument when the log holds no tokens.
//
// Check: ctest --test-dir build -C student -L student -R perplexity --output-on-failure
#include <stdexcept>

#include "examples/student/exercises.h"

namespace attograd::student {

double perplexity(const std::vector<BatchLoss>& log) {
  (void)log;
  throw std::logic_error(
      "not implemented yet: see docs/exercises.md#s6-perplexity-from-a-loss-log");
}

}  // namespace attograd::student
