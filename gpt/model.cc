#include "gpt/model.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <stdexcept>
#include <string>

#include "autograd/allocator.h"
#include "autograd/engine.h"
#include "autograd/ops.h"
#include "autograd/size_math.h"

namespace attograd::gpt {

namespace {
// GPT-2's weight-decay rule (nanoGPT's configure_optimizers): every 2-D parameter, the
// embeddings and the matrices, decays; biases and LayerNorm gains and shifts do not.
bool decays(const Tensor& p) { return p.dim() >= 2; }
}  // namespace

Block::Block(const GPTConfig& c, Generator& gen, Generator* dropout_gen, DType dtype) {
  // GPT-2 scales the init of the two projections that write into the residual stream by
  // 1/sqrt(2 n_layer): 2 n_layer of them add up along the stream, so its variance stays O(1).
  const double proj_std = 0.02 / std::sqrt(2.0 * static_cast<double>(c.n_layer));
  ln_1 = register_module("ln_1", std::make_shared<nn::LayerNorm>(c.n_embd, dtype, c.bias));
  attn = register_module("attn", std::make_shared<nn::CausalSelfAttention>(
                                     c.n_embd, c.n_head, c.bias, c.dropout, c.pos_encoding == PosEncoding::rope,
                                     proj_std, gen, dropout_gen, dtype));
  ln_2 = register_module("ln_2", std::make_shared<nn::LayerNorm>(c.n_embd, dtype, c.bias));
  mlp = register_module("mlp", std::make_shared<nn::MLP>(c.n_embd, c.bias, c.dropout, proj_std, gen, dropout_gen, dtype));
}

Tensor Block::forward(const Tensor& x, nn::LayerKVCache* cache, Tensor* attn_weights) const {
  const Tensor x1 = add(x, attn->forward(ln_1->forward(x), cache, attn_weights));
  return add(x1, mlp->forward(ln_2->forward(x1)));
}

namespace {

// Refuses a model this machine cannot hold before building it: built layer by layer, it would
// fill the memory (and be killed by the kernel) long before one allocation failed. While the
// parameters are packed into the arena, the layers' own tensors, the arena's parameters and its
// gradients all exist: three copies.
void require_memory(const GPTConfig& c, DType dtype) {
  const size_t have = physical_memory_bytes();
  const auto n = static_cast<size_t>(c.num_parameters());
  const size_t need = checked_mul(checked_mul(n, dtype_size(dtype), "GPT: parameter bytes"), size_t{3}, "GPT: parameter bytes");
  if (have == 0 || need <= have) return;
  auto gb = [](size_t bytes) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1f GB", static_cast<double>(bytes) / 1e9);
    return std::string(buf);
  };
  throw std::runtime_error("GPT: the model's " + std::to_string(n) + " parameters need " + gb(need) + " in " +
                           dtype_name(dtype) + " (weights, gradients, and the weights once more while they are packed), "
                           "more than this machine's " + gb(have) + " of memory; choose a smaller n_layer, n_embd, "
                           "vocab_size or block_size");
}

}  // namespace

GPT::GPT(const GPTConfig& config, uint64_t seed, DType dtype)
    : config_(config), dtype_(dtype), dropout_gen_(std::make_unique<Generator>(seed + 1)) {
  config_.validate();
  if (dtype == DType::i64) throw std::invalid_argument("GPT: the model dtype must be f32 or f64");
  require_memory(config_, dtype);
  Generator gen(seed);
  const GPTConfig& c = config_;
  wte = register_module("wte", std::make_shared<nn::Embedding>(c.vocab_size, c.n_embd, gen, dtype));
  if (c.pos_encoding == PosEncoding::learned)
    wpe = register_module("wpe", std::make_shared<nn::Embedding>(c.block_size, c.n_embd, gen, dtype));
  if (c.pos_encoding == PosEncoding::sinusoidal) sinusoidal_ = nn::sinusoidal_table(c.block_size, c.n_embd, dtype);
  drop = register_module("drop", std::make_shared<nn::Dropout>(c.dropout, dropout_gen_.get()));
  for (int64_t i = 0; i < c.n_layer; ++i)
    h.push_back(register_module("h." + std::to_string(i), std::make_shared<Block>(c, gen, dropout_gen_.get(), dtype)));
  ln_f = register_module("ln_f", std::make_shared<nn::LayerNorm>(c.n_embd, dtype, c.bias));
  // The decayed weights first, so that each of param_groups() is one range of the arena.
  std::vector<std::pair<std::string, Tensor>> named = named_parameters();
  std::stable_partition(named.begin(), named.end(), [](const auto& np) { return decays(np.second); });
  arena_ = std::make_unique<nn::ParameterArena>(std::move(named));
}

std::vector<nn::ParamGroup> GPT::param_groups(double weight_decay) const {
  std::vector<nn::ParamGroup> groups{{.params = {}, .weight_decay = weight_decay}, {.params = {}, .weight_decay = 0.0}};
  for (const auto& [name, p] : arena_->named_parameters()) groups[decays(p) ? 0 : 1].params.push_back(p);
  return groups;
}

void KVCache::reserve(const GPTConfig& config, int64_t B, DType dtype) {
  layers.resize(static_cast<size_t>(config.n_layer));
  for (nn::LayerKVCache& l : layers) l.reserve(B, config.n_head, config.block_size, config.head_dim(), dtype);
}

GPTOutput GPT::forward(const Tensor& idx, const Tensor& targets, KVCache* cache,
                       std::vector<Tensor>* attention_weights) const {
  const GPTConfig& c = config_;
  if (!idx.defined() || idx.dtype() != DType::i64 || idx.dim() != 2)
    throw std::invalid_argument("GPT: expected idx as i64 token ids (B, T), got " +
                                (idx.defined() ? std::string(dtype_name(idx.dtype())) + " " + shape_str(idx.shape())
                                               : std::string("an undefined tensor")));
  const int64_t B = idx.size(0), T = idx.size(1);
  const int64_t past = cache != nullptr ? cache->length() : 0;
  if (past + T > c.block_size)
    throw std::invalid_argument("GPT: sequence length T = " + std::to_string(T) +
                                (past > 0 ? " after " + std::to_string(past) + " cached positions" : std::string()) +
                                " exceeds block_size " + std::to_string(c.block_size) +
                                " (crop the context to the last block_size tokens)");
  if (T == 0 || B == 0) throw std::invalid_argument("GPT: empty input " + shape_str(idx.shape()));
  if (targets.defined() && (targets.dtype() != DType::i64 || targets.shape() != idx.shape()))
    throw std::invalid_argument("GPT: expected targets i64 " + shape_str(idx.shape()) + " like idx, got " +
                                dtype_name(targets.dtype()) + " " + shape_str(targets.shape()));
  for (const Tensor* t : {&idx, &targets}) {
    if (!t->defined()) continue;
    const Tensor ids_tensor = contiguous(*t);  // t itself when contiguous: read in place
    const int64_t* ids = ids_tensor.data<int64_t>();
    for (int64_t i = 0; i < ids_tensor.numel(); ++i)
      if ((ids[i] < 0 || ids[i] >= c.vocab_size) && !(t == &targets && ids[i] == kIgnoreTarget))
        throw std::out_of_range(std::string("GPT: ") + (t == &idx ? "token id " : "target id ") +
                                std::to_string(ids[i]) + " at (" + std::to_string(i / T) + ", " +
                                std::to_string(i % T) + ") is outside [0, " + std::to_string(c.vocab_size) +
                                ") (vocab_size " + std::to_string(c.vocab_size) + ")");
  }

  Tensor x = wte->forward(idx);  // (B, T, C)
  if (wpe) {
    Tensor pos = Tensor::empty({T}, DType::i64);
    for (int64_t t = 0; t < T; ++t) pos.data<int64_t>()[t] = past + t;
    x = add(x, wpe->forward(pos));  // (T, C) broadcast over B
  } else if (sinusoidal_.defined()) {
    x = add(x, slice(sinusoidal_, 0, past, past + T));
  }
  x = drop->forward(x);
  if (cache != nullptr) {
    cache->reserve(c, B, dtype_);  // allocates on first use only
    for (const nn::LayerKVCache& l : cache->layers)
      if (l.length() != past)
        throw std::invalid_argument("GPT: the KV cache held " + std::to_string(past) +
                                    " positions made for another batch size or model than idx " +
                                    shape_str(idx.shape()) + "; it is now remade empty, so feed the context from "
                                    "position 0");
  }
  if (attention_weights != nullptr) attention_weights->assign(h.size(), Tensor());
  for (size_t i = 0; i < h.size(); ++i)
    x = h[i]->forward(x, cache != nullptr ? &cache->layers[i] : nullptr,
                      attention_weights != nullptr ? &(*attention_weights)[i] : nullptr);
  x = ln_f->forward(x);
  // The LM head shares wte's matrix (Press & Wolf 2017): logits = x wteᵀ.
  GPTOutput out;
  if (targets.defined() && grad_enabled()) {
    // Training: the head and the loss as one op, whose (B T, V) logits become their own gradient
    // in the backward, so the largest tensor of the step exists once (ops.h).
    out.loss = linear_cross_entropy(x, wte->weight, targets, kIgnoreTarget);
  } else {
    out.logits = linear(x, wte->weight);  // (B, T, V)
    if (targets.defined()) out.loss = cross_entropy(out.logits, targets, kIgnoreTarget);
  }
  return out;
}

}  // namespace attograd::gpt
