#include "gpt/model.h"

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
  const Tensor x1 = add(x, attn->forward(ln_1->forward(x), cache, attn_weights));
  return add(x1, mlp->forward(ln_2->forward(x1)));
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
                       std::vector<Tensor>* attention_weights) const {
  const GPTConfig& c = config_;
  const int64_t past = cache != nullptr ? cache->length() : 0;
  check_inputs(idx, targets, past);
  const int64_t B = idx.size(0);

  Tensor x = add_positions(wte->forward(idx), wpe.get(), sinusoidal_, past);  // (B, T, C)
  x = drop->forward(x);
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
    x = h[i]->forward(x, cache != nullptr ? &cache->layers[i] : nullptr,
                      attention_weights != nullptr ? &(*attention_weights)[i] : nullptr);
  x = ln_f->forward(x);
  // The LM head shares wte's matrix (Press & Wolf 2017): logits = x wteᵀ.
  return tied_head(x, wte->weight, targets);
}

}  // namespace attograd::gpt
