#include "gpt/model/bigram_average.h"

#include <stdexcept>

#include "autograd/ops.h"
#include "gpt/model/gpt2.h"

namespace attograd::gpt {

BigramModel::BigramModel(const GPTConfig& config, uint64_t seed, DType dtype)
    : LanguageModel(ModelKind::bigram, config, seed, dtype, "BigramModel") {
  Generator gen(seed);
  wte = register_module(
      "wte", std::make_shared<nn::Embedding>(config_.vocab_size, config_.vocab_size, gen, dtype));
  pack_parameters();
}

ModelOutput BigramModel::forward(const Tensor& idx, const Tensor& targets,
                                 double label_smoothing) const {
  check_inputs(idx, targets);
  ModelOutput out;
  out.set_logits((*wte)(idx));  // (B, T, V): the row of each current token
  if (targets.defined())
    out.loss = cross_entropy(out.logits(), targets, kIgnoreTarget, label_smoothing);
  return out;
}

const GPTConfig& AverageModel::check_config(const GPTConfig& c) {
  if (c.pos_encoding == PosEncoding::rope)
    throw std::invalid_argument(
        "AverageModel: rope positions rotate queries and keys inside attention, and the "
        "average model has no attention; use --pos-encoding learned or sinusoidal");
  // Checked before the table is built: a checkpoint of a few KB claiming block_size 16,384
  // made eval allocate over 1 GB (the table is not in the file, so no file size bounds it).
  if (c.block_size > kMaxAverageBlockSize)
    throw std::invalid_argument(
        "AverageModel: block_size " + std::to_string(c.block_size) +
        " would need a (block_size, block_size) averaging table of " +
        std::to_string(c.block_size * c.block_size * 4 >> 20) + " MiB; the average model allows " +
        "block_size <= " + std::to_string(kMaxAverageBlockSize) + " (use --block-size " +
        std::to_string(kMaxAverageBlockSize) + " or less)");
  return c;
}

AverageModel::AverageModel(const GPTConfig& config, uint64_t seed, DType dtype)
    : LanguageModel(ModelKind::average, check_config(config), seed, dtype, "AverageModel") {
  Generator gen(seed);
  const GPTConfig& c = config_;
  sinusoidal_ = register_embeddings(gen, wte, wpe);
  ln_f = register_module("ln_f", std::make_shared<nn::LayerNorm>(c.n_embd, dtype, c.bias));
  const int64_t T = c.block_size;
  std::vector<double> mean(static_cast<size_t>(T * T), 0.0);
  for (int64_t t = 0; t < T; ++t)
    for (int64_t s = 0; s <= t; ++s)
      mean[static_cast<size_t>(t * T + s)] = 1.0 / static_cast<double>(t + 1);
  // Computed from block_size: a buffer no checkpoint holds.
  causal_mean_ = register_buffer("causal_mean", Tensor::from_vector(mean, {T, T}, dtype),
                                 /*persistent=*/false);
  pack_parameters();
}

ModelOutput AverageModel::forward(const Tensor& idx, const Tensor& targets,
                                  double label_smoothing) const {
  check_inputs(idx, targets);
  const int64_t T = idx.size(1);
  Tensor x = add_positions((*wte)(idx), wpe.get(), sinusoidal_, 0);  // (B, T, C)
  // The top-left T x T corner of the table is the causal mean of T positions.
  const Tensor mean = T == config_.block_size
                          ? causal_mean_
                          : contiguous(slice(slice(causal_mean_, 0, 0, T), 1, 0, T));
  x = matmul(mean, x);  // (T, T) @ (B, T, C) -> (B, T, C)
  return tied_head((*ln_f)(x), wte->weight, targets, label_smoothing);
}

std::unique_ptr<LanguageModel> make_model(ModelKind kind, const GPTConfig& config, uint64_t seed,
                                          DType dtype) {
  switch (kind) {
    case ModelKind::gpt:
      return std::make_unique<GPT>(config, seed, dtype);
    case ModelKind::bigram:
      return std::make_unique<BigramModel>(config, seed, dtype);
    case ModelKind::average:
      return std::make_unique<AverageModel>(config, seed, dtype);
  }
  throw std::invalid_argument("make_model: unknown model kind");
}

}  // namespace attograd::gpt
