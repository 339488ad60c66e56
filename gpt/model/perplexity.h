// The perplexity of a language model over many batches or windows: exp of the mean negative
// log-likelihood per token, with every token weighted the same.
#pragma once

#include <cstdint>

namespace attograd::gpt {

/// Mean negative log-likelihood over ALL evaluated tokens, and its perplexity exp(mean NLL).
/// Batches are weighted by their token counts, and the perplexity is never a mean of
/// per-batch perplexities (exp is convex: that would overstate it).
class PerplexityMeter {
 public:
  /// Adds a batch whose per-token NLLs sum to sum_nll over `tokens` tokens.
  void add(double sum_nll, int64_t tokens);
  /// Mean NLL in nats per token. Throws std::logic_error before any token was added.
  double mean_nll() const;
  /// exp(mean_nll()).
  double perplexity() const;
  int64_t tokens() const { return tokens_; }

 private:
  double sum_ = 0;
  int64_t tokens_ = 0;
};

}  // namespace attograd::gpt
