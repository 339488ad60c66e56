// The layers of a GPT, as Modules built from autograd ops; those of one input are UnaryModules,
// called as layer(x) so that forward hooks run (module.h). Shapes: B batch, T time,
// C = n_embd channels, NH = n_head, HS = head_dim = C / NH.
//
// Initialisation: a Linear built as torch.nn.Linear (`Linear(in, out)`) gets torch's default
// init; the GPT's layers (MLP, CausalSelfAttention, Embedding) follow GPT-2 (Radford et al.
// 2019, section 2.3, and its released code): weights N(0, 0.02²) (standard deviation
// kGpt2InitStd), biases 0, LayerNorm gamma 1 and beta 0. The GPT model rescales the residual
// projections by 1/sqrt(2 n_layer): N(0, (0.02/sqrt(2 n_layer))²).
#pragma once

#include <memory>

#include "autograd/random.h"
#include "nn/module.h"

namespace attograd::nn {

/// GPT-2's init standard deviation of its weights (Radford et al. 2019; its released code).
inline constexpr double kGpt2InitStd = 0.02;

/// y = x Wᵀ + b with W (out_features, in_features) (PyTorch's and llm.c's layout: each
/// output is a dot product of two contiguous rows). x (..., in) -> y (..., out).
class Linear : public UnaryModule {
 public:
  /// torch.nn.Linear(in_features, out_features, bias): W and b ~ U(-1/sqrt(in_features),
  /// 1/sqrt(in_features)), torch's default (reset_parameters: kaiming_uniform_ with a = sqrt(5)
  /// gives the bound gain * sqrt(3 / fan_in) = sqrt(1/3) * sqrt(3 / in_features), and the bias
  /// the same bound), drawn from default_generator() (seeded by manual_seed): W row by row,
  /// then b. Throws std::invalid_argument for non-positive sizes.
  Linear(int64_t in_features, int64_t out_features, bool bias = true, DType dtype = DType::f32);
  /// torch's default init as above, drawn from `gen` (which must live until a ParameterArena
  /// open around this constructor is allocated).
  Linear(int64_t in_features, int64_t out_features, bool bias, Generator& gen,
         DType dtype = DType::f32);
  /// GPT-2's init: W ~ N(0, init_std²) (kGpt2InitStd, or the scaled residual std), b = 0.
  Linear(int64_t in_features, int64_t out_features, bool bias, Generator& gen, DType dtype,
         double init_std);
  /// Throws std::invalid_argument when x's last dimension is not in_features.
  Tensor forward(const Tensor& x) const override;
  /// gelu(forward(x)) as one op (linear_gelu: the same values), without this module's hooks;
  /// errors as forward.
  Tensor forward_gelu(const Tensor& x) const;
  Tensor weight, bias;  // bias undefined when constructed without one
};

/// Token (or position) lookup table: ids i64 (...) -> (..., embedding_dim).
class Embedding : public UnaryModule {
 public:
  /// weight ~ N(0, init_std²), shape (num_embeddings, embedding_dim).
  Embedding(int64_t num_embeddings, int64_t embedding_dim, Generator& gen, DType dtype,
            double init_std = kGpt2InitStd);
  /// Throws std::out_of_range for an id outside [0, num_embeddings).
  Tensor forward(const Tensor& ids) const override;
  Tensor weight;
};

/// GPT-2's layer-norm epsilon (Hugging Face's layer_norm_epsilon), the LayerNorm default.
inline constexpr double kGpt2LayerNormEps = 1e-5;

/// Layer norm over the last axis (Ba et al. 2016): x (..., C) -> (..., C); weight (gamma) 1,
/// bias (beta) 0 at init; eps 1e-5 as GPT-2.
class LayerNorm : public UnaryModule {
 public:
  LayerNorm(int64_t C, DType dtype, bool bias = true, double eps = kGpt2LayerNormEps);
  Tensor forward(const Tensor& x) const override;
  Tensor weight, bias;
  double eps;
};

/// Inverted dropout (Srivastava et al. 2014) with masks drawn from a shared generator;
/// identity in eval mode or when p = 0.
class Dropout : public UnaryModule {
 public:
  /// gen must outlive the layer (the model owns it, so that its state is checkpointed).
  Dropout(double p, Generator* gen);
  Tensor forward(const Tensor& x) const override;
  double p;

 private:
  Generator* gen_;
};

/// The transformer's position-wise feed-forward network, GPT-2 style:
/// c_fc (C -> 4C), GELU, c_proj (4C -> C), dropout. (B, T, C) -> (B, T, C).
class MLP : public UnaryModule {
 public:
  /// c_proj is initialised with std proj_init_std (GPT-2's residual scaling).
  MLP(int64_t n_embd, bool bias, double dropout, double proj_init_std, Generator& gen,
      Generator* dropout_gen, DType dtype);
  Tensor forward(const Tensor& x) const override;
  std::shared_ptr<Linear> c_fc, c_proj;
  std::shared_ptr<Dropout> drop;
};

/// softmax(Q Kᵀ / sqrt(d_k)) V with the causal mask: Vaswani et al. 2017, eq. 1.
/// q (..., Tq, d_k), k (..., Tk, d_k), v (..., Tk, d_v) -> (..., Tq, d_v), Tq <= Tk; query t
/// attends to keys j <= t + (Tk - Tq). attn_dropout (may be null) applies to the weights.
/// weights (may be null) receives the attention weights (..., Tq, Tk) before dropout: each row
/// sums to 1 and the masked entries are exactly 0. They are the tensor the output is computed
/// from, part of the graph when it is recorded (detach() them to keep them).
Tensor scaled_dot_product_attention(const Tensor& q, const Tensor& k, const Tensor& v,
                                    const Dropout* attn_dropout = nullptr,
                                    Tensor* weights = nullptr);

/// Rotary position embedding (Su et al. 2021, RoFormer, eq. 34) of x (..., T, HS), HS even,
/// for positions pos_offset .. pos_offset + T - 1. Uses the "rotate half" pairing of GPT-NeoX
/// and Hugging Face: channel i is rotated with channel i + HS/2 by angle pos * 10000^(-2i/HS).
/// (Meta's Llama reference rotates adjacent pairs (2i, 2i+1) instead: the same map up to a fixed
/// permutation of q's and k's channels, so checkpoints of one need their weights permuted.)
/// Built from primitives (slice, mul, sub, add, concat), so it needs no VJP of its own.
Tensor apply_rope(const Tensor& x, int64_t pos_offset = 0);

/// The sinusoidal position table of Vaswani et al. 2017, section 3.5: (T, C) with
/// PE[pos, 2i] = sin(pos / 10000^(2i/C)), PE[pos, 2i+1] = cos(pos / 10000^(2i/C)).
/// Throws std::invalid_argument for T or C < 1, std::overflow_error when T * C does not fit.
Tensor sinusoidal_table(int64_t T, int64_t C, DType dtype);

/// The keys and values one attention layer has already computed, for incremental decoding.
/// Two buffers (B, NH, capacity, HS) are allocated once by reserve(); each step writes its new
/// positions in place after the cached ones (no copy of the old ones, no allocation), and
/// attention reads the first length() positions as views. Plain data: no graph.
struct LayerKVCache {
  /// Makes the buffers (B, NH, capacity, HS) of `dtype`. A no-op when they already have that
  /// shape and dtype (the cached positions are kept); otherwise it allocates new buffers and
  /// forgets the cached positions. Throws std::invalid_argument for a non-positive size or i64,
  /// std::overflow_error when the buffers' byte count does not fit int64_t.
  void reserve(int64_t B, int64_t NH, int64_t capacity, int64_t HS, DType dtype);
  /// Writes k_new and v_new (B, NH, T, HS), any strides, at positions length() ..
  /// length() + T - 1 and advances length() by T. Throws std::invalid_argument when their shape
  /// or dtype does not match the buffers', std::length_error when length() + T > capacity()
  /// (nothing is written then), std::logic_error before reserve(). Bumps the buffers' version
  /// (Tensor::version()), as any in-place change.
  void append(const Tensor& k_new, const Tensor& v_new);
  /// Views (B, NH, length(), HS) of the cached keys and values (undefined before reserve()).
  Tensor keys() const;
  Tensor values() const;
  /// Number of positions cached (T_cached).
  int64_t length() const { return length_; }
  /// Positions the buffers hold (0 before reserve()).
  int64_t capacity() const { return k_buffer_.defined() ? k_buffer_.size(2) : 0; }
  /// Forgets the cached positions and keeps the buffers.
  void clear() { length_ = 0; }

 private:
  Tensor k_buffer_, v_buffer_;  // (B, NH, capacity, HS), contiguous
  int64_t length_ = 0;
};

/// Multi-head causal self-attention, GPT-2 style: c_attn (C -> 3C) makes q, k, v; each is
/// split into n_head heads of head_dim = C / n_head; scaled dot-product attention with the
/// causal mask per head; heads concatenated; c_proj (C -> C); dropout. (B, T, C) -> (B, T, C).
class CausalSelfAttention : public UnaryModule {
 public:
  /// Throws std::invalid_argument unless n_head divides n_embd (and head_dim is even with rope).
  CausalSelfAttention(int64_t n_embd, int64_t n_head, bool bias, double dropout, bool rope,
                      double proj_init_std, Generator& gen, Generator* dropout_gen, DType dtype);
  /// Without a cache: x (B, T, C) are positions 0 .. T-1. With a cache: x holds the NEXT
  /// positions (cache->length() onward); their queries attend to the cached keys and values and
  /// to each other causally, and their keys and values are written into the cache, which must
  /// have been reserved with room for them (see LayerKVCache::append for the errors). For
  /// inference only: throws std::logic_error with a cache while grad mode is on (gradients do
  /// not flow through the cache), so run it under NoGradGuard.
  ///
  /// weights (optional) receives the attention weights (B, NH, T, Tk) this forward applies,
  /// softmax(q kᵀ / sqrt(HS) + mask) per head before dropout, with Tk = T, or the cached
  /// length plus T with a cache. The fused attention never stores them, so asking for them
  /// takes the unfused path (scaled_dot_product_attention on the same q, k, v from c_attn),
  /// which returns the same output up to rounding (tests/nn/layers_test.cc).
  Tensor forward(const Tensor& x, LayerKVCache* cache, Tensor* weights = nullptr) const;
  /// Positions 0 .. T-1, no cache: the call `attn(x)` runs (with the forward hooks).
  Tensor forward(const Tensor& x) const override { return forward(x, nullptr, nullptr); }
  /// The call with a cache or recorded weights: the forward above with the forward hooks around
  /// it, as attn(x) (UnaryModule::call_with_hooks); with a cache they see the new positions.
  using UnaryModule::operator();
  Tensor operator()(const Tensor& x, LayerKVCache* cache, Tensor* weights = nullptr) const {
    return call_with_hooks(x, [&](const Tensor& in) { return forward(in, cache, weights); });
  }
  int64_t n_embd, n_head;
  bool rope;
  std::shared_ptr<Linear> c_attn, c_proj;
  std::shared_ptr<Dropout> attn_dropout, resid_dropout;
};

}  // namespace attograd::nn
