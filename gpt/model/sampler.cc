#include "gpt/model/sampler.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>
#include <string>

#include "autograd/engine.h"
#include "autograd/ops.h"

namespace attograd::gpt {

void SamplingOptions::validate() const {
  // An infinite temperature would flatten every distribution to uniform: refused like NaN.
  if (!(temperature >= 0 && std::isfinite(temperature)))
    throw std::invalid_argument("temperature must be >= 0 (0 means greedy) and finite, got " +
                                std::to_string(temperature));
  if (top_k < 0)
    throw std::invalid_argument("top_k must be >= 0 (0 means off), got " + std::to_string(top_k));
  if (!(top_p > 0 && top_p <= 1))
    throw std::invalid_argument("top_p must be in (0, 1], got " + std::to_string(top_p));
}

std::vector<double> next_token_probabilities(const std::vector<double>& logits,
                                             const SamplingOptions& o) {
  o.validate();
  const size_t V = logits.size();
  if (V == 0) throw std::invalid_argument("next_token_probabilities: no logits");
  std::vector<double> p(V, 0.0);
  // Broken weights must not turn into text, greedy or not.
  for (size_t i = 0; i < V; ++i)
    if (std::isnan(logits[i]))
      throw std::runtime_error("the model produced a NaN logit (id " + std::to_string(i) +
                               "): its weights are not finite; retrain or load another checkpoint");
  if (o.temperature == 0) {  // greedy: max_element returns the first maximum, the lowest id
    p[std::max_element(logits.begin(), logits.end()) - logits.begin()] = 1.0;
    return p;
  }
  std::vector<bool> keep(V, true);
  if (o.top_k > 0 && static_cast<size_t>(o.top_k) < V) {
    std::vector<double> sorted = logits;
    std::nth_element(sorted.begin(), sorted.begin() + (o.top_k - 1), sorted.end(),
                     std::greater<>());
    const double kth = sorted[o.top_k - 1];
    for (size_t i = 0; i < V; ++i) keep[i] = logits[i] >= kth;
  }
  // softmax(logits / T) over the kept entries, computed as exp((x - m) / T) with m the largest
  // kept logit: every exponent is <= 0 whatever T is, so a tiny temperature (even 1e-308, where
  // x / T itself would overflow) gives exp(0) = 1 for the max and exp(-huge) = 0 elsewhere.
  double m = -INFINITY;
  for (size_t i = 0; i < V; ++i)
    if (keep[i]) m = std::max(m, logits[i]);
  if (!std::isfinite(m))
    throw std::runtime_error("the model produced infinite logits: its weights are not finite");
  double total = 0;
  for (size_t i = 0; i < V; ++i)
    if (keep[i]) total += p[i] = std::exp((logits[i] - m) / o.temperature);
  for (double& x : p) x /= total;
  if (o.top_p < 1) {
    // Nucleus (Holtzman et al. 2020): the smallest set of most likely tokens with mass >= top_p.
    std::vector<size_t> order(V);
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return p[a] > p[b]; });
    // The mass is compared with a tolerance: softmax's rounding makes 0.3 + 0.5 sum to
    // 0.7999999999999999, and a strict `mass < 0.8` then kept a third token at an exact boundary
    // (transformers #18976). 1e-9 is far above double rounding and far below any top_p a user
    // means.
    constexpr double kTolerance = 1e-9;
    double mass = 0;
    size_t kept = 0;
    while (kept < V && (kept == 0 || mass < o.top_p - kTolerance)) mass += p[order[kept++]];
    for (size_t i = kept; i < V; ++i) p[order[i]] = 0;
    for (double& x : p) x /= mass;
  }
  return p;
}

int64_t sample_index(const std::vector<double>& probs, Generator& gen) {
  return sample_index(probs, gen.uniform());
}

int64_t sample_index(const std::vector<double>& probs, double u) {
  if (!(u >= 0 && u < 1))
    throw std::invalid_argument("sample_index: u must be in [0, 1), got " + std::to_string(u));
  double cum = 0;
  int64_t last_nonzero = 0;
  for (size_t i = 0; i < probs.size(); ++i) {
    if (probs[i] <= 0) continue;
    last_nonzero = static_cast<int64_t>(i);
    cum += probs[i];
    if (u < cum) return last_nonzero;
  }
  return last_nonzero;  // u within rounding of 1: the last possible token, never a zero one
}

namespace {

// The last position's logits, (1, T, V) -> (V,), as doubles. A plain loop over the contiguous
// row: Tensor::to_vector's strided walk took 1.2 % of a GPT-2 small decode step.
std::vector<double> last_logits(const Tensor& logits) {
  const Tensor row = contiguous(slice(logits, 1, logits.size(1) - 1, logits.size(1)));
  return dispatch_floating(row.dtype(), "generate", [&]<typename T>() {
    return std::vector<double>(row.data<T>(), row.data<T>() + row.numel());
  });
}

}  // namespace

std::vector<int64_t> generate(LanguageModel& model, const std::vector<int64_t>& prompt,
                              const GenerateOptions& options, Generator& gen) {
  options.sampling.validate();
  if (prompt.empty())
    throw std::invalid_argument("generate: the prompt is empty; give at least one token");
  if (options.max_new_tokens < 0)
    throw std::invalid_argument("generate: max_new_tokens must be >= 0");
  NoGradGuard no_grad;
  const bool was_training = model.is_training();
  model.eval();
  std::vector<int64_t> ids = prompt;
  const int64_t block = model.config().block_size;
  // Only a GPT has keys and values to cache; the other models recompute their (cheap) context.
  GPT* const cached = options.use_kv_cache ? dynamic_cast<GPT*>(&model) : nullptr;
  KVCache cache;
  for (int64_t n = 0; n < options.max_new_tokens; ++n) {
    const int64_t context = std::min<int64_t>(static_cast<int64_t>(ids.size()), block);
    // The tokens to feed this step: all of the cropped context, or with a valid cache only
    // the ones it has not seen (the whole prompt first, then one token per step).
    int64_t feed = context;
    if (cached != nullptr) {
      const int64_t uncached = static_cast<int64_t>(ids.size()) - cache.length();
      if (cache.length() > 0 && cache.length() + uncached <= block) {
        feed = uncached;
      } else {
        cache.clear();  // first step, or past block_size: rebuild from the cropped context (same
                        // buffers)
      }
    }
    const std::vector<int64_t> x(ids.end() - feed, ids.end());
    const Tensor idx = Tensor::from_ids(x, {1, feed});
    const Tensor logits = cached != nullptr ? cached->forward(idx, Tensor(), &cache).logits()
                                            : model.forward(idx).logits();
    const std::vector<double> last = last_logits(logits);
    if (options.on_logits) options.on_logits(last);
    const int64_t next = sample_index(next_token_probabilities(last, options.sampling), gen);
    ids.push_back(next);
    if (options.on_token) options.on_token(next);
  }
  model.train(was_training);
  return ids;
}

}  // namespace attograd::gpt
