// S6's answer (examples/student/perplexity.cc): weight each batch by its tokens, so that every
// token counts once, then take the exponential of the mean. A mean of the batch means weighs a
// short batch like a long one; a mean of per-batch perplexities overstates it (exp is convex).
#include <cmath>
#include <stdexcept>

#include "examples/student/exercises.h"

namespace attograd::student {

double perplexity(const std::vector<BatchLoss>& log) {
  double total_loss = 0;
  int64_t tokens = 0;
  for (const BatchLoss& batch : log) {
    total_loss += batch.mean_loss * static_cast<double>(batch.tokens);  // the batch's summed loss
    tokens += batch.tokens;
  }
  if (tokens <= 0) throw std::invalid_argument("perplexity: the log holds no tokens");
  return std::exp(total_loss / static_cast<double>(tokens));
}

}  // namespace attograd::student
