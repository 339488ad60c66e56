// Where the layer norm goes in a transformer block, measured on attograd's own Block
// (`attograd figure pre-post-ln`, chapter 4): pre-LN, what gpt::Block computes (GPT-2),
//   x1 = x + attn(ln_1(x)),   y = x1 + mlp(ln_2(x1)),
// beside post-LN, the original Transformer's (Vaswani et al. 2017), run with the same modules
// and weights,
//   x1 = ln_1(x + attn(x)),   y = ln_2(x1 + mlp(x1)).
// Each stage's size is its RMS over the channels, averaged over the tokens; the gradient's
// straight path is the ratio |dL/dx| / |dL/dy| for L = sum(y * dy) with a random dy.
//
// Shapes: x and every stage (T, C), C = n_embd.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "autograd/tensor.h"
#include "gpt/model/config.h"

namespace attograd::gpt {

/// One point of a block's data flow: what it is ("ln_1(x)", "x1 = x + attn(ln_1(x))") and
/// its value (T, C).
struct BlockStage {
  std::string name;
  Tensor value;
};

/// One layout of the block, its stages in order from x to y, and the gradient that reaches x.
struct BlockLayout {
  std::vector<BlockStage> stages;  // stages.front() is x, stages.back() is y
  double grad_ratio = 0;           // |dL/dx| / |dL/dy|, L = sum(y * dy)
};

/// RMS over the channels of each token, averaged over the tokens: x (T, C).
double mean_rms(const Tensor& x);

/// Both layouts of one block.
struct LayerNormPlacement {
  BlockLayout pre_ln, post_ln;
  Tensor block_out;  // (T, C): gpt::Block::forward(x), which pre_ln's y equals
};

/// A gpt::Block of `config` (dropout 0, f64) at GPT-2's initialisation from Generator(seed), on
/// x ~ N(0, x_rms²) (T, C): a residual stream grown past unit scale, as it does along a trained
/// model's layers. Throws std::invalid_argument (from the block) for a config it refuses.
LayerNormPlacement layer_norm_placement(GPTConfig config, int64_t T, double x_rms = 3.0,
                                        uint64_t seed = 1337);

}  // namespace attograd::gpt
