#include "gpt/model/perplexity.h"

#include <cmath>
#include <stdexcept>

#include "autograd/size_math.h"

namespace attograd::gpt {

void PerplexityMeter::add(double sum_nll, int64_t tokens) {
  sum_ += sum_nll;
  tokens_ = checked_add(tokens_, tokens, "PerplexityMeter: tokens");
}

double PerplexityMeter::mean_nll() const {
  if (tokens_ == 0) throw std::logic_error("PerplexityMeter: no tokens were added");
  return sum_ / static_cast<double>(tokens_);
}

double PerplexityMeter::perplexity() const { return std::exp(mean_nll()); }

}  // namespace attograd::gpt
