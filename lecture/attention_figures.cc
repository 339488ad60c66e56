#include "lecture/attention_figures.h"

#include <algorithm>

#include "autograd/engine.h"
#include "autograd/ops.h"
#include "autograd/random.h"
#include "nn/layers.h"

namespace attograd::lecture {

AttentionInputs two_token_example() {
  return {Tensor::from_vector({1, 2}, {2, 1}, DType::f64),
          Tensor::from_vector({1, 3}, {2, 1}, DType::f64),
          Tensor::from_vector({10, 20}, {2, 1}, DType::f64)};
}

MultiHeadSplit MultiHeadExample::compute() const {
  NoGradGuard no_grad;
  Generator gen(seed);
  const nn::CausalSelfAttention layer(n_embd, n_head, /*bias=*/true, /*dropout=*/0,
                                      /*rope=*/false, /*proj_init_std=*/0.02, gen, nullptr,
                                      DType::f64);
  for (const Tensor* w : {&layer.c_attn->weight, &layer.c_proj->weight}) {
    const std::vector<double> drawn = Tensor::randn(w->shape(), gen, DType::f64, 0.5).to_vector();
    std::copy(drawn.begin(), drawn.end(), w->data<double>());
  }
  MultiHeadSplit s;
  s.n_head = n_head;
  s.head_dim = n_embd / n_head;
  const Tensor x = Tensor::randn({1, T, n_embd}, gen, DType::f64);
  Tensor weights;  // (1, n_head, T, T)
  s.layer_out = reshape(layer.forward(x, nullptr, &weights), {T, n_embd});
  s.x = reshape(x, {T, n_embd});
  // c_attn's output (T, 3C) holds q, k and v side by side, each head a block of head_dim
  // channels in each: the split is slicing, as the fused op reads it through strides.
  const Tensor qkv = reshape((*layer.c_attn)(x), {T, 3 * n_embd});
  s.q = slice(qkv, 1, 0, n_embd);
  s.k = slice(qkv, 1, n_embd, 2 * n_embd);
  s.v = slice(qkv, 1, 2 * n_embd, 3 * n_embd);
  for (int64_t h = 0; h < n_head; ++h) {
    s.weights.push_back(reshape(slice(weights, 1, h, h + 1), {T, T}));
    s.head_out.push_back(
        matmul(s.weights.back(), slice(s.v, 1, h * s.head_dim, (h + 1) * s.head_dim)));
  }
  s.concat = concat(std::span<const Tensor>(s.head_out), 1);
  s.out = (*layer.c_proj)(s.concat);
  return s;
}

}  // namespace attograd::lecture
