// GPT-2 (Radford et al. 2019) on attograd: token and position embeddings, n_layer pre-LayerNorm
// transformer blocks, a final LayerNorm and a language-model head tied to the token embedding.
// Parameter names follow Hugging Face's GPT-2 state dict without the "transformer." prefix
// (wte.weight, h.0.attn.c_attn.weight, ...), so checkpoints map one to one.
#pragma once

#include <memory>
#include <vector>

#include "autograd/random.h"
#include "gpt/model/config.h"
#include "gpt/model/language_model.h"
#include "nn/layers.h"
#include "nn/module.h"
#include "nn/optim.h"

namespace attograd::gpt {

/// One transformer block, pre-LayerNorm as GPT-2:
///   x = x + attn(ln_1(x));  x = x + mlp(ln_2(x)).   (B, T, C) -> (B, T, C)
class Block : public nn::UnaryModule {
 public:
  Block(const GPTConfig& config, Generator& gen, Generator* dropout_gen, DType dtype);
  /// cache (optional): this block's attention keys and values, see nn::LayerKVCache.
  /// attn_weights (optional): receives this block's attention weights (B, NH, T, Tk), see
  /// nn::CausalSelfAttention::forward.
  Tensor forward(const Tensor& x, nn::LayerKVCache* cache, Tensor* attn_weights = nullptr) const;
  /// (B, T, C) -> (B, T, C) without a cache; called as block(x), the forward hooks run (a hook
  /// on h.3 sees the residual stream after layer 3).
  Tensor forward(const Tensor& x) const override { return forward(x, nullptr, nullptr); }
  /// As nn::CausalSelfAttention's: with a cache or recorded weights, the forward above with the
  /// forward hooks around it (a hook on h.3 runs at every step of cached decoding too, and sees
  /// the new positions only).
  using UnaryModule::operator();
  Tensor operator()(const Tensor& x, nn::LayerKVCache* cache,
                    Tensor* attn_weights = nullptr) const {
    return call_with_hooks(x, [&](const Tensor& in) { return forward(in, cache, attn_weights); });
  }
  std::shared_ptr<nn::LayerNorm> ln_1, ln_2;
  std::shared_ptr<nn::CausalSelfAttention> attn;
  std::shared_ptr<nn::MLP> mlp;
};

/// The output of GPT::forward (while training, logits computed when read: ModelOutput::logits).
using GPTOutput = ModelOutput;

/// Cached keys and values of every layer, for generation that feeds one new token at a time
/// instead of the whole context (see GPT::forward). Positions 0 .. length()-1 are cached.
/// Each layer holds (B, NH, block_size, HS) buffers allocated once, on the first forward (or by
/// reserve()); later steps write into them in place, so a generation step allocates no cache
/// storage and copies no cached position.
struct KVCache {
  std::vector<nn::LayerKVCache> layers;
  int64_t length() const { return layers.empty() ? 0 : layers.front().length(); }
  /// Forgets the cached positions and keeps the buffers (rebuilding after a crop reuses them).
  void clear() {
    for (nn::LayerKVCache& l : layers) l.clear();
  }
  /// Gives every layer of `config` buffers (B, n_head, block_size, head_dim) of `dtype`;
  /// a no-op when it already has them (see nn::LayerKVCache::reserve; reallocating forgets
  /// the cached positions). Throws std::invalid_argument for B < 1 or an i64 dtype.
  void reserve(const GPTConfig& config, int64_t B, DType dtype);
};

/// The GPT-2 language model.
class GPT : public LanguageModel {
 public:
  /// Builds and initialises the model from `seed` (GPT-2 init: N(0, 0.02²), residual
  /// projections N(0, (0.02 / sqrt(2 n_layer))²), zero biases, LayerNorm 1 and 0), then packs the
  /// parameters into one arena. dtype f32 for training, f64 for gradient checks. Throws
  /// std::invalid_argument for an inconsistent config (GPTConfig::validate), std::runtime_error
  /// before allocating anything when the model needs more than this machine's physical memory.
  GPT(const GPTConfig& config, uint64_t seed = 1337, DType dtype = DType::f32);

  /// The names and shapes of the parameters GPT(config) has, in its order (wte.weight (V, C),
  /// wpe.weight (block_size, C) with learned positions, then per block ln_1, attn.c_attn
  /// (3C, C), attn.c_proj (C, C), ln_2, mlp.c_fc (4C, C), mlp.c_proj (C, 4C), then ln_f; biases
  /// only with config.bias), computed from the config without allocating a weight: `attograd
  /// info --preset gpt2` needs no 500 MB. Checked equal to a built model's named_parameters()
  /// by tests/gpt/model/gpt2_test.cc. Throws as GPTConfig::validate.
  static std::vector<std::pair<std::string, Shape>> parameter_shapes(const GPTConfig& config);

  /// idx: i64 (B, T) token ids with T <= block_size and ids in [0, vocab_size);
  /// targets: i64 (B, T) in [0, vocab_size) or kIgnoreTarget, or undefined. Both are checked
  /// before any memory is read:
  /// std::invalid_argument for a shape problem, std::out_of_range for an id.
  ///
  /// With a KV cache, idx holds the NEXT positions cache->length() .. cache->length() + T - 1
  /// (under NoGradGuard, else std::logic_error): keys and values of earlier positions are read
  /// from the cache instead of being recomputed, and the new ones are written into it (its
  /// buffers are reserved for this model and B on first use). cache->length() + T must not
  /// exceed block_size: the caller crops (see generate() in sampler.h); a longer sequence, or a
  /// batch size other than the cached one, is std::invalid_argument.
  ///
  /// attention_weights (optional) receives, per layer, the attention weights (B, n_head, T, Tk)
  /// the forward applied (query rows, key columns; Tk = T, or cache->length() + T with a cache):
  /// each row sums to 1 and entries after the query's position are exactly 0. Recording them
  /// runs attention unfused (see nn::CausalSelfAttention::forward), for inspection, not training.
  ///
  /// label_smoothing as LanguageModel::forward's (the training loss's).
  GPTOutput forward(const Tensor& idx, const Tensor& targets, KVCache* cache,
                    std::vector<Tensor>* attention_weights = nullptr,
                    double label_smoothing = 0.0) const;
  /// forward without a cache or attention weights (the LanguageModel interface).
  GPTOutput forward(const Tensor& idx, const Tensor& targets = Tensor(),
                    double label_smoothing = 0.0) const override {
    return forward(idx, targets, nullptr, nullptr, label_smoothing);
  }
  ModelKind kind() const override { return ModelKind::gpt; }

  std::shared_ptr<nn::Embedding> wte, wpe;  // wpe only with learned positions
  std::vector<std::shared_ptr<Block>> h;
  std::shared_ptr<nn::LayerNorm> ln_f;
  std::shared_ptr<nn::Dropout> drop;

 private:
  Tensor sinusoidal_;  // (block_size, n_embd), only with sinusoidal positions
};

}  // namespace attograd::gpt
