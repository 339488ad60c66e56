// Autoregressive sampling from a GPT: temperature, top-k, top-p (nucleus), greedy.
//
// Tie rule for top-k (used everywhere): keep every token whose logit is >= the k-th largest
// logit, as nanoGPT does (logits < v[-1] are set to -inf), so tied tokens at the cut-off are
// all kept; k >= V means top-k is off.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "autograd/random.h"
#include "gpt/model/gpt2.h"

namespace attograd::gpt {

/// How to turn logits into the next token.
struct SamplingOptions {
  double temperature = 1.0;  // 0 = greedy argmax (ties to the lowest id); must be >= 0
  int64_t top_k = 0;         // 0 = off; keep the k largest logits (ties kept, see above)
  double top_p = 1.0;        // 1 = off; keep the smallest most-likely set with mass >= top_p
  /// Throws std::invalid_argument for temperature < 0, infinite or NaN, top_k < 0, top_p
  /// outside (0, 1].
  void validate() const;
};

/// The next-token distribution: softmax(logits / temperature) restricted by top-k and top-p and
/// renormalised, computed max-subtracted in double so a tiny temperature stays finite.
/// With temperature 0 it is one-hot at the argmax (lowest id on ties); no division happens.
std::vector<double> next_token_probabilities(const std::vector<double>& logits,
                                             const SamplingOptions& options);

/// The index whose CDF interval holds u in [0, 1): the smallest i with u < probs[0] + ... +
/// probs[i] among the non-zero probs (torch.searchsorted(probs.cumsum(0), u, right=True)), so a
/// zero probability is never chosen; u within rounding of 1 gives the last non-zero one.
/// probs should sum to 1. Throws std::invalid_argument for u outside [0, 1) or NaN.
int64_t sample_index(const std::vector<double>& probs, double u);
/// sample_index(probs, gen.uniform()): one draw from gen.
int64_t sample_index(const std::vector<double>& probs, Generator& gen);

/// What generate() does besides sampling.
struct GenerateOptions {
  int64_t max_new_tokens = 100;
  SamplingOptions sampling;
  /// Reuse each layer's keys and values (KVCache) instead of re-running the whole context for
  /// every token. Within block_size each step feeds one token. Past block_size every absolute
  /// position shifts by one per token, so no cached key stays valid: the cache is rebuilt from
  /// the cropped context (the last block_size tokens) at each step, which is exactly what the
  /// uncached path computes. Either way the logits are the same (tests/gpt/model/sampler_test.cc).
  /// The cache's buffers are allocated once, at the first step, and reused by every rebuild.
  /// Only a GPT has a cache: other models (bigram, average) always take the uncached path.
  bool use_kv_cache = true;
  /// Called with each new id as soon as it is chosen (for streaming).
  std::function<void(int64_t)> on_token;
  /// Called with the (V,) logits each step sampled from.
  std::function<void(const std::vector<double>&)> on_logits;
};

/// Generates options.max_new_tokens after `prompt` (non-empty ids) with the model in eval mode
/// and no graph. Each step conditions on the last <= block_size tokens (the context is cropped,
/// so generation can run past block_size) and samples from the last position's logits.
/// Returns prompt + new tokens. Throws std::invalid_argument for an empty prompt or negative
/// max_new_tokens; ids are checked by the model.
std::vector<int64_t> generate(LanguageModel& model, const std::vector<int64_t>& prompt,
                              const GenerateOptions& options, Generator& gen);

}  // namespace attograd::gpt
