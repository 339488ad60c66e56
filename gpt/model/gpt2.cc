#include "gpt/model/gpt2.h"

#include <optional>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "autograd/engine.h"
#include "autograd/ops.h"

namespace attograd::gpt {

Block::Block(const GPTConfig& c, Generator& gen, Generator* dropout_gen, DType dtype) {
  // GPT-2 scales the init of the two projections that write into the residual stream by
  // 1/sqrt(2 n_layer): 2 n_layer of them add up along the stream, so its variance stays O(1).
  const double proj_std = 0.02 / std::sqrt(2.0 * static_cast<double>(c.n_layer));
  ln_1 = register_module("ln_1", std::make_shared<nn::LayerNorm>(c.n_embd, dtype, c.bias));
  attn = register_module(
      "attn", std::make_shared<nn::CausalSelfAttention>(c.n_embd, c.n_head, c.bias, c.dropout,
                                                        c.pos_encoding == PosEncoding::rope,
                                                        proj_std, gen, dropout_gen, dtype));
  ln_2 = register_module("ln_2", std::make_shared<nn::LayerNorm>(c.n_embd, dtype, c.bias));
  mlp = register_module("mlp", std::make_shared<nn::MLP>(c.n_embd, c.bias, c.dropout, proj_std, gen,
                                                         dropout_gen, dtype));
}

Tensor Block::forward(const Tensor& x, nn::LayerKVCache* cache, Tensor* attn_weights) const {
  // Each child through its call, (*m)(x) as torch's m(x), so that forward hooks run.
  const Tensor x1 = add(x, (*attn)((*ln_1)(x), cache, attn_weights));
  return add(x1, (*mlp)((*ln_2)(x1)));
}

std::vector<std::pair<std::string, Shape>> GPT::parameter_shapes(const GPTConfig& config) {
  config.validate();
  const int64_t C = config.n_embd;
  std::vector<std::pair<std::string, Shape>> shapes{{"wte.weight", {config.vocab_size, C}}};
  if (config.pos_encoding == PosEncoding::learned)
    shapes.push_back({"wpe.weight", {config.block_size, C}});
  // A Linear is weight (out, in) and bias (out); a LayerNorm weight and bias (C).
  auto add = [&](const std::string& name, int64_t out, std::optional<int64_t> in) {
    shapes.push_back({name + ".weight", in ? Shape{out, *in} : Shape{out}});
    if (config.bias) shapes.push_back({name + ".bias", {out}});
  };
  for (int64_t l = 0; l < config.n_layer; ++l) {
    const std::string b = "h." + std::to_string(l) + ".";
    add(b + "ln_1", C, std::nullopt);
    add(b + "attn.c_attn", 3 * C, C);
    add(b + "attn.c_proj", C, C);
    add(b + "ln_2", C, std::nullopt);
    add(b + "mlp.c_fc", 4 * C, C);
    add(b + "mlp.c_proj", C, 4 * C);
  }
  add("ln_f", C, std::nullopt);
  return shapes;
}

GPT::GPT(const GPTConfig& config, uint64_t seed, DType dtype)
    : LanguageModel(ModelKind::gpt, config, seed, dtype, "GPT") {
  Generator gen(seed);
  const GPTConfig& c = config_;
  sinusoidal_ = register_embeddings(gen, wte, wpe);
  drop = register_module("drop", std::make_shared<nn::Dropout>(c.dropout, dropout_gen_.get()));
  for (int64_t i = 0; i < c.n_layer; ++i)
    h.push_back(register_module("h." + std::to_string(i),
                                std::make_shared<Block>(c, gen, dropout_gen_.get(), dtype)));
  ln_f = register_module("ln_f", std::make_shared<nn::LayerNorm>(c.n_embd, dtype, c.bias));
  pack_parameters();
}

void KVCache::reserve(const GPTConfig& config, int64_t B, DType dtype) {
  layers.resize(static_cast<size_t>(config.n_layer));
  for (nn::LayerKVCache& l : layers)
    l.reserve(B, config.n_head, config.block_size, config.head_dim(), dtype);
}

GPTOutput GPT::forward(const Tensor& idx, const Tensor& targets, KVCache* cache,
                       std::vector<Tensor>* attention_weights, double label_smoothing) const {
  const GPTConfig& c = config_;
  const int64_t past = cache != nullptr ? cache->length() : 0;
  check_inputs(idx, targets, past);
  const int64_t B = idx.size(0);

  // Every module through its call, so that forward hooks run on the whole model (a hook on
  // h.3, ln_f or wte as in torch), with a cache or recorded attention too.
  Tensor x = add_positions((*wte)(idx), wpe.get(), sinusoidal_, past);  // (B, T, C)
  x = (*drop)(x);
  if (cache != nullptr) {
    cache->reserve(c, B, dtype_);  // allocates on first use only
    for (const nn::LayerKVCache& l : cache->layers)
      if (l.length() != past)
        throw std::invalid_argument("GPT: the KV cache held " + std::to_string(past) +
                                    " positions made for another batch size or model than idx " +
                                    shape_str(idx.shape()) +
                                    "; it is now remade empty, so feed the context from "
                                    "position 0");
  }
  if (attention_weights != nullptr) attention_weights->assign(h.size(), Tensor());
  for (size_t i = 0; i < h.size(); ++i)
    x = (*h[i])(x, cache != nullptr ? &cache->layers[i] : nullptr,
                attention_weights != nullptr ? &(*attention_weights)[i] : nullptr);
  x = (*ln_f)(x);
  // The LM head shares wte's matrix (Press & Wolf 2017): logits = x wteᵀ.
  return tied_head(x, wte->weight, targets, label_smoothing);
}

}  // namespace attograd::gpt
