#include "gpt/model/layer_norm_placement.h"

#include <cmath>

#include "autograd/engine.h"
#include "autograd/ops.h"
#include "autograd/random.h"
#include "gpt/model/gpt2.h"

namespace attograd::gpt {

namespace {

double norm(const Tensor& t) {
  double s = 0;
  for (const double v : t.to_vector()) s += v * v;
  return std::sqrt(s);
}

// Runs `stages` (each from the previous values) on a leaf copy of x, then backward from
// L = sum(y * dy): the stages as values, and |dL/dx| / |dL/dy|.
template <class Stages>
BlockLayout run_layout(const Tensor& x, const Tensor& dy, Stages stages) {
  Tensor leaf = x.detach();
  leaf.set_requires_grad();
  BlockLayout layout;
  const std::vector<BlockStage> recorded = stages(leaf);
  sum(mul(recorded.back().value, dy)).backward();
  layout.grad_ratio = norm(leaf.grad()) / norm(dy);
  for (const BlockStage& s : recorded) layout.stages.push_back({s.name, s.value.detach()});
  return layout;
}

}  // namespace

double mean_rms(const Tensor& x) {
  const int64_t T = x.size(0), C = x.size(1);
  const std::vector<double> v = x.to_vector();
  double total = 0;
  for (int64_t t = 0; t < T; ++t) {
    double s = 0;
    for (int64_t c = 0; c < C; ++c) s += v[t * C + c] * v[t * C + c];
    total += std::sqrt(s / static_cast<double>(C));
  }
  return total / static_cast<double>(T);
}

LayerNormPlacement layer_norm_placement(GPTConfig config, int64_t T, double x_rms, uint64_t seed) {
  config.dropout = 0;
  Generator gen(seed);
  const Block block(config, gen, nullptr, DType::f64);
  const int64_t C = config.n_embd;
  const Tensor x = Tensor::randn({T, C}, gen, DType::f64, x_rms);
  const Tensor dy = Tensor::randn({T, C}, gen, DType::f64);
  // The block works on (B, T, C): each stage runs on a batch of one and is kept as (T, C).
  auto batch = [&](const Tensor& t) { return reshape(t, {1, T, C}); };
  auto rows = [&](const Tensor& t) { return reshape(t, {T, C}); };
  auto ln_1 = [&](const Tensor& t) { return rows((*block.ln_1)(batch(t))); };
  auto ln_2 = [&](const Tensor& t) { return rows((*block.ln_2)(batch(t))); };
  auto attn = [&](const Tensor& t) { return rows((*block.attn)(batch(t))); };
  auto mlp = [&](const Tensor& t) { return rows((*block.mlp)(batch(t))); };

  LayerNormPlacement p;
  p.pre_ln = run_layout(x, dy, [&](const Tensor& in) {
    const Tensor n1 = ln_1(in), a = attn(n1), x1 = add(in, a), n2 = ln_2(x1), m = mlp(n2),
                 y = add(x1, m);
    return std::vector<BlockStage>{{"x", in},
                                   {"ln_1(x)", n1},
                                   {"attn(ln_1(x))", a},
                                   {"x1 = x + attn(ln_1(x))", x1},
                                   {"ln_2(x1)", n2},
                                   {"mlp(ln_2(x1))", m},
                                   {"y = x1 + mlp(ln_2(x1))", y}};
  });
  p.post_ln = run_layout(x, dy, [&](const Tensor& in) {
    const Tensor a = attn(in), s1 = add(in, a), x1 = ln_1(s1), m = mlp(x1), s2 = add(x1, m),
                 y = ln_2(s2);
    return std::vector<BlockStage>{{"x", in},
                                   {"attn(x)", a},
                                   {"x + attn(x)", s1},
                                   {"x1 = ln_1(x + attn(x))", x1},
                                   {"mlp(x1)", m},
                                   {"x1 + mlp(x1)", s2},
                                   {"y = ln_2(x1 + mlp(x1))", y}};
  });
  NoGradGuard no_grad;
  p.block_out = rows(block.forward(batch(x)));
  return p;
}

}  // namespace attograd::gpt
