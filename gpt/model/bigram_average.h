// The two models the lecture builds before attention, trained by the same Trainer as the GPT
// (`attograd train --model bigram|average`), so that their val losses compare with pico's.
#pragma once

#include <memory>

#include "gpt/model/language_model.h"
#include "nn/layers.h"

namespace attograd::gpt {

/// Lecture 19's bigram model: a (vocab_size, vocab_size) table of logits, one row per current
/// token: logits[b, t] = wte[idx[b, t]]. It sees one token of context, so its best val loss is
/// the bigram cross-entropy of the corpus (bigram_cross_entropy in gpt/text/dataset.h, add-one
/// smoothed). Of the config only vocab_size and block_size (the longest input) matter. The
/// table is stored as "wte.weight" (V, V), initialised N(0, 0.02²) and weight-decayed like
/// every 2-D weight.
class BigramModel : public LanguageModel {
 public:
  /// Throws as LanguageModel's constructor (a config GPTConfig::validate refuses, an i64 dtype,
  /// a V x V table larger than this machine's memory).
  BigramModel(const GPTConfig& config, uint64_t seed = 1337, DType dtype = DType::f32);
  ModelKind kind() const override { return ModelKind::bigram; }
  ModelOutput forward(const Tensor& idx, const Tensor& targets = Tensor(),
                      double label_smoothing = 0.0) const override;
  std::shared_ptr<nn::Embedding> wte;
};

/// The largest block_size of an AverageModel: its averaging table is (block_size, block_size).
inline constexpr int64_t kMaxAverageBlockSize = 4096;

/// The lecture's first step towards attention, without attention: each position's causal mean
/// of its context's embeddings,
///   x[b, t] = 1/(t+1) · Σ_{s ≤ t} (wte[idx[b, s]] + p[s]),
/// then GPT's final LayerNorm (ln_f) and the head tied to wte: logits = ln_f(x) wteᵀ.
/// Positions p are the config's pos_encoding, as the GPT adds them: a learned wpe table
/// (block_size, n_embd) or the fixed sinusoidal table. The mean of positions 0..t tells the
/// model how long its context is (not the order of the tokens in it, which the mean forgets).
/// RoPE rotates queries and keys inside attention, which this model has none of: refused.
/// The mean is a product with a (block_size, block_size) table, as attention with equal scores,
/// so block_size is capped at kMaxAverageBlockSize (a 64 MiB table in f32).
/// n_layer, n_head and dropout are not used.
class AverageModel : public LanguageModel {
 public:
  /// Throws std::invalid_argument as check_config, else as LanguageModel's constructor.
  AverageModel(const GPTConfig& config, uint64_t seed = 1337, DType dtype = DType::f32);
  /// What the average model refuses of a config that GPTConfig allows, with the fix: rope
  /// positions (it has no attention to rotate inside) and a block_size over
  /// kMaxAverageBlockSize (its (block_size, block_size) averaging table). Returns `config`.
  /// Needs no vocabulary, so train runs it before reading the corpus.
  static const GPTConfig& check_config(const GPTConfig& config);
  ModelKind kind() const override { return ModelKind::average; }
  ModelOutput forward(const Tensor& idx, const Tensor& targets = Tensor(),
                      double label_smoothing = 0.0) const override;
  std::shared_ptr<nn::Embedding> wte, wpe;  // wpe only with learned positions
  std::shared_ptr<nn::LayerNorm> ln_f;

 private:
  Tensor causal_mean_;  // (block_size, block_size): row t holds 1/(t+1) in columns 0..t, 0 after
  Tensor sinusoidal_;   // (block_size, n_embd), only with sinusoidal positions
};

/// A new, initialised model of `kind` (GPT, BigramModel or AverageModel) from `seed`.
/// Throws as that model's constructor.
std::unique_ptr<LanguageModel> make_model(ModelKind kind, const GPTConfig& config,
                                          uint64_t seed = 1337, DType dtype = DType::f32);

}  // namespace attograd::gpt
