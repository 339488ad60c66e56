#include "autograd/gradcheck_cases.h"

#include <cmath>

#include "autograd/ops.h"

namespace attograd {

namespace {

using Inputs = std::vector<Tensor>;
using Sizes = GradcheckSizes;

// A differentiable N(0, 1) input.
Tensor param(const Shape& shape, Generator& gen, DType dtype) {
  return Tensor::randn(shape, gen, dtype).set_requires_grad();
}
// A differentiable input with values in [low, high): keeps log, sqrt, pow and division away
// from their singularities, and relu away from its kink at 0.
Tensor param_in(const Shape& shape, Generator& gen, DType dtype, double low, double high) {
  return Tensor::uniform(shape, gen, low, high, dtype).set_requires_grad();
}
// Values bounded away from 0 with random sign, for relu and division.
Tensor param_away_from_zero(const Shape& shape, Generator& gen, DType dtype) {
  Tensor t = Tensor::uniform(shape, gen, 0.2, 1.5, dtype);
  std::vector<double> v = t.to_vector();
  for (double& x : v) x = gen.uniform() < 0.5 ? -x : x;
  return Tensor::from_vector(v, shape, dtype).set_requires_grad();
}

// The heads the attention cases split C channels into: 2, or 1 when C is odd (`gradcheck -C`
// takes any C from 2 to 16).
int64_t heads_for(int64_t C) { return C % 2 == 0 ? 2 : 1; }

// i64 ids of `shape`, each uniform in [0, n): indices and targets.
Tensor random_ids(const Shape& shape, int64_t n, Generator& gen) {
  std::vector<int64_t> ids(static_cast<size_t>(shape_numel(shape)));
  for (int64_t& v : ids) v = static_cast<int64_t>(gen.below(static_cast<uint64_t>(n)));
  return Tensor::from_ids(ids, shape);
}
// Targets in [0, V) with the second and the last ignored (-1, the losses' default ignore_index).
Tensor targets_with_ignored(const Shape& shape, int64_t V, Generator& gen) {
  std::vector<int64_t> t = random_ids(shape, V, gen).to_ids();
  t.at(1) = t.back() = -1;
  return Tensor::from_ids(t, shape);
}

GradcheckCase unary_case(std::string op, std::function<Tensor(const Tensor&)> f, double low = -2, double high = 2) {
  return {op, "(B, T, C)",
          [low, high](Generator& g, DType d, const Sizes& s) { return Inputs{param_in({s.B, s.T, s.C}, g, d, low, high)}; },
          [f](const Inputs& in) { return f(in[0]); }};
}

std::vector<GradcheckCase> build() {
  std::vector<GradcheckCase> c;
  // ----- elementwise with broadcasting -----
  using BinaryFn = Tensor (*)(const Tensor&, const Tensor&);
  const std::pair<const char*, BinaryFn> binaries[] = {{"add", add}, {"sub", sub}, {"mul", mul}, {"div", div}};
  for (const auto& binary : binaries) {
    // Not a structured binding: the lambdas below capture f, and clang before 16 cannot
    // capture a binding.
    const char* name = binary.first;
    const BinaryFn f = binary.second;
    const bool is_div = std::string(name) == "div";
    auto second = [is_div](const Shape& shape, Generator& g, DType d) {
      return is_div ? param_away_from_zero(shape, g, d) : param(shape, g, d);
    };
    c.push_back({name, "(B, T, C) and (B, T, C)",
                 [second](Generator& g, DType d, const Sizes& s) {
                   return Inputs{param({s.B, s.T, s.C}, g, d), second({s.B, s.T, s.C}, g, d)};
                 },
                 [f](const Inputs& in) { return f(in[0], in[1]); }});
    c.push_back({name, "(B, T, C) and (C,) broadcast",
                 [second](Generator& g, DType d, const Sizes& s) {
                   return Inputs{param({s.B, s.T, s.C}, g, d), second({s.C}, g, d)};
                 },
                 [f](const Inputs& in) { return f(in[0], in[1]); }});
    c.push_back({name, "(B, 1, C) and (T, 1) broadcast both ways",
                 [second](Generator& g, DType d, const Sizes& s) {
                   return Inputs{param({s.B, 1, s.C}, g, d), second({s.T, 1}, g, d)};
                 },
                 [f](const Inputs& in) { return f(in[0], in[1]); }});
  }
  c.push_back(unary_case("add_scalar", [](const Tensor& x) { return add_scalar(x, 0.7); }));
  c.push_back(unary_case("mul_scalar", [](const Tensor& x) { return mul_scalar(x, -1.3); }));
  c.push_back(unary_case("neg", [](const Tensor& x) { return neg(x); }));
  c.push_back(unary_case("exp", [](const Tensor& x) { return exp(x); }));
  c.push_back(unary_case("log", [](const Tensor& x) { return log(x); }, 0.2, 3));
  c.push_back(unary_case("tanh", [](const Tensor& x) { return tanh(x); }));
  c.push_back(unary_case("pow", [](const Tensor& x) { return pow(x, 2.5); }, 0.2, 2));
  c.push_back(unary_case("pow", [](const Tensor& x) { return pow(x, 3.0); }));
  c.push_back(unary_case("sqrt", [](const Tensor& x) { return sqrt(x); }, 0.2, 3));
  c.push_back({"relu", "(B, T, C), |x| >= 0.2",
               [](Generator& g, DType d, const Sizes& s) { return Inputs{param_away_from_zero({s.B, s.T, s.C}, g, d)}; },
               [](const Inputs& in) { return relu(in[0]); }});
  c.push_back(unary_case("gelu", [](const Tensor& x) { return gelu(x); }, -4, 4));
  c.push_back(unary_case("sub_scalar", [](const Tensor& x) { return sub_scalar(x, 0.5); }));
  c.push_back(unary_case("div_scalar", [](const Tensor& x) { return div_scalar(x, 4.0); }));
  c.push_back(unary_case("rsub_scalar", [](const Tensor& x) { return rsub_scalar(2.0, x); }));
  c.push_back(unary_case("rdiv_scalar", [](const Tensor& x) { return rdiv_scalar(2.0, x); }, 0.3, 2));

  // ----- reductions -----
  c.push_back(unary_case("sum", [](const Tensor& x) { return sum(x); }));
  c.push_back(unary_case("sum", [](const Tensor& x) { return sum(x, {-1}); }));
  c.push_back(unary_case("sum", [](const Tensor& x) { return sum(x, {0, 2}, true); }));
  c.push_back(unary_case("mean", [](const Tensor& x) { return mean(x, {1}); }));
  c.push_back(unary_case("mean", [](const Tensor& x) { return mean(x); }));
  c.push_back(unary_case("max", [](const Tensor& x) { return max(x, -1); }));
  c.push_back(unary_case("max", [](const Tensor& x) { return max(x, 1, true); }));

  // ----- shape and layout (each followed by a mul so the output is not a plain view) -----
  c.push_back(unary_case("reshape", [](const Tensor& x) { return reshape(x, {-1, x.size(-1) * x.size(-2)}); }));
  c.push_back(unary_case("reshape", [](const Tensor& x) { return reshape(transpose(x, 0, 2), {-1}); }));
  c.push_back(unary_case("transpose", [](const Tensor& x) { return mul(transpose(x, 1, 2), transpose(x, 1, 2)); }));
  c.push_back(unary_case("permute", [](const Tensor& x) { return exp(permute(x, {2, 0, 1})); }));
  c.push_back(unary_case("slice", [](const Tensor& x) { return tanh(slice(x, 1, 1, x.size(1))); }));
  c.push_back(unary_case("slice", [](const Tensor& x) { return slice(x, -1, 0, 2); }));
  c.push_back({"concat", "(B, T, C) with (B, 2, C) along T",
               [](Generator& g, DType d, const Sizes& s) { return Inputs{param({s.B, s.T, s.C}, g, d), param({s.B, 2, s.C}, g, d)}; },
               [](const Inputs& in) { return tanh(concat({in[0], in[1], in[0]}, 1)); }});
  c.push_back(unary_case("split", [](const Tensor& x) {
    const auto parts = split(x, {1, x.size(-1) - 1}, -1);
    return mul(sum(parts[0], {-1}, true), parts[1]);
  }));
  c.push_back(unary_case("contiguous", [](const Tensor& x) { return exp(contiguous(transpose(x, 0, 1))); }));

  // ----- matmul -----
  c.push_back({"matmul", "(T, C) @ (C, B)",
               [](Generator& g, DType d, const Sizes& s) { return Inputs{param({s.T, s.C}, g, d), param({s.C, s.B}, g, d)}; },
               [](const Inputs& in) { return matmul(in[0], in[1]); }});
  c.push_back({"matmul", "(B, T, C) @ (C, 5), batch folded into rows",
               [](Generator& g, DType d, const Sizes& s) { return Inputs{param({s.B, s.T, s.C}, g, d), param({s.C, 5}, g, d)}; },
               [](const Inputs& in) { return matmul(in[0], in[1]); }});
  c.push_back({"matmul", "(B, T, C) @ (B, C, T) batched",
               [](Generator& g, DType d, const Sizes& s) { return Inputs{param({s.B, s.T, s.C}, g, d), param({s.B, s.C, s.T}, g, d)}; },
               [](const Inputs& in) { return matmul(in[0], in[1]); }});
  c.push_back({"matmul", "(C, T) viewed transposed @ (B, 5, C) viewed transposed, broadcast batch",
               [](Generator& g, DType d, const Sizes& s) { return Inputs{param({s.C, s.T}, g, d), param({s.B, 5, s.C}, g, d)}; },
               [](const Inputs& in) { return matmul(transpose(in[0], 0, 1), transpose(in[1], 1, 2)); }});
  c.push_back({"matmul", "(B, T, C) @ (B, T, C)ᵀ: attention scores Q Kᵀ",
               [](Generator& g, DType d, const Sizes& s) { return Inputs{param({s.B, s.T, s.C}, g, d), param({s.B, s.T, s.C}, g, d)}; },
               [](const Inputs& in) { return matmul(in[0], transpose(in[1], -2, -1)); }});

  c.push_back({"linear", "x (B, T, C), weight (5, C), bias (5,)",
               [](Generator& g, DType d, const Sizes& s) {
                 return Inputs{param({s.B, s.T, s.C}, g, d), param({5, s.C}, g, d), param({5}, g, d)};
               },
               [](const Inputs& in) { return linear(in[0], in[1], in[2]); }});
  c.push_back({"linear", "x (T, B, C) viewed transposed, weight (5, C), no bias",
               [](Generator& g, DType d, const Sizes& s) { return Inputs{param({s.T, s.B, s.C}, g, d), param({5, s.C}, g, d)}; },
               [](const Inputs& in) { return linear(transpose(in[0], 0, 1), in[1]); }});

  // ----- neural-network ops -----
  c.push_back({"embedding", "weight (7, C), ids (B, T) with repeats",
               [](Generator& g, DType d, const Sizes& s) {
                 std::vector<int64_t> ids(static_cast<size_t>(shape_numel({s.B, s.T})));
                 for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int64_t>(i % 3);  // ids repeat
                 return Inputs{param({7, s.C}, g, d), Tensor::from_ids(ids, {s.B, s.T})};
               },
               [](const Inputs& in) { return embedding(in[0], in[1]); }});
  c.push_back({"gather", "x (B, T, C), index (B, 2, C) along T, ids repeating",
               [](Generator& g, DType d, const Sizes& s) {
                 return Inputs{param({s.B, s.T, s.C}, g, d), random_ids({s.B, 2, s.C}, s.T, g)};
               },
               [](const Inputs& in) { return gather(in[0], 1, in[1]); }});
  c.push_back({"gather", "x (C, T, B) viewed transposed, index (B, T, 2) along the last axis",
               [](Generator& g, DType d, const Sizes& s) {
                 return Inputs{param({s.C, s.T, s.B}, g, d), random_ids({s.B, s.T, 2}, s.C, g)};
               },
               [](const Inputs& in) { return gather(transpose(in[0], 0, 2), -1, in[1]); }});
  c.push_back({"take_along_dim", "x (B, 1, C) broadcast against index (B, T, 2) along C",
               [](Generator& g, DType d, const Sizes& s) {
                 return Inputs{param({s.B, 1, s.C}, g, d), random_ids({s.B, s.T, 2}, s.C, g)};
               },
               [](const Inputs& in) { return take_along_dim(in[0], in[1], -1); }});
  c.push_back({"causal_mask", "(B, T, T) then softmax (masked entries are -inf)",
               [](Generator& g, DType d, const Sizes& s) { return Inputs{param({s.B, s.T, s.T}, g, d)}; },
               [](const Inputs& in) { return softmax(causal_mask(in[0])); }});
  c.push_back(unary_case("softmax", [](const Tensor& x) { return softmax(x); }, -3, 3));
  c.push_back({"causal_softmax", "(B, T, T)",
               [](Generator& g, DType d, const Sizes& s) { return Inputs{param({s.B, s.T, s.T}, g, d)}; },
               [](const Inputs& in) { return causal_softmax(in[0]); }});
  c.push_back({"causal_softmax", "(B, 2, T + 2): fewer queries than keys (a KV cache)",
               [](Generator& g, DType d, const Sizes& s) { return Inputs{param({s.B, 2, s.T + 2}, g, d)}; },
               [](const Inputs& in) { return causal_softmax(in[0]); }});
  c.push_back({"causal_attention", "q, k, v (B, NH, T, C / NH): the head-split views of one (B, T, 3C) tensor, NH = 2 (1 for odd C)",
               [](Generator& g, DType d, const Sizes& s) { return Inputs{param({s.B, s.T, 3 * s.C}, g, d)}; },
               [](const Inputs& in) {
                 const int64_t B = in[0].size(0), T = in[0].size(1), C = in[0].size(2) / 3, NH = heads_for(C);
                 const std::vector<Tensor> qkv = split(in[0], {C, C, C}, -1);
                 auto heads = [&](const Tensor& t) { return transpose(reshape(t, {B, T, NH, C / NH}), 1, 2); };
                 return causal_attention(heads(qkv[0]), heads(qkv[1]), heads(qkv[2]));
               }});
  c.push_back({"causal_attention", "q (B, 1, 2, C), k and v (B, 1, T + 2, C): fewer queries than keys (a KV cache)",
               [](Generator& g, DType d, const Sizes& s) {
                 return Inputs{param({s.B, 1, 2, s.C}, g, d), param({s.B, 1, s.T + 2, s.C}, g, d),
                               param({s.B, 1, s.T + 2, s.C}, g, d)};
               },
               [](const Inputs& in) { return causal_attention(in[0], in[1], in[2]); }});
  c.push_back({"causal_attention_qkv", "qkv (B, T, 3C), 2 heads (1 for odd C)",
               [](Generator& g, DType d, const Sizes& s) { return Inputs{param({s.B, s.T, 3 * s.C}, g, d)}; },
               [](const Inputs& in) { return causal_attention_qkv(in[0], heads_for(in[0].size(2) / 3)); }});
  c.push_back(unary_case("log_softmax", [](const Tensor& x) { return log_softmax(x); }, -3, 3));
  c.push_back({"layer_norm", "x (B, T, C), gamma (C), beta (C)",
               [](Generator& g, DType d, const Sizes& s) {
                 return Inputs{param({s.B, s.T, s.C}, g, d), param({s.C}, g, d), param({s.C}, g, d)};
               },
               [](const Inputs& in) { return layer_norm(in[0], in[1], in[2]); }});
  c.push_back({"cross_entropy", "logits (B, T, C), targets (B, T)",
               [](Generator& g, DType d, const Sizes& s) {
                 const Tensor t = random_ids({s.B, s.T}, s.C, g);
                 return Inputs{param({s.B, s.T, s.C}, g, d), t};
               },
               [](const Inputs& in) { return cross_entropy(in[0], in[1]); }});
  c.push_back({"cross_entropy", "logits (B, T, C), targets (B, T) with two ignored (-1)",
               [](Generator& g, DType d, const Sizes& s) {
                 return Inputs{param({s.B, s.T, s.C}, g, d), targets_with_ignored({s.B, s.T}, s.C, g)};
               },
               [](const Inputs& in) { return cross_entropy(in[0], in[1]); }});
  c.push_back({"nll_loss", "log-probabilities (B, T, C), targets (B, T) with two ignored (-1)",
               [](Generator& g, DType d, const Sizes& s) {
                 return Inputs{param({s.B, s.T, s.C}, g, d), targets_with_ignored({s.B, s.T}, s.C, g)};
               },
               [](const Inputs& in) { return nll_loss(log_softmax(in[0]), in[1]); }});
  c.push_back({"linear_cross_entropy", "x (B, T, C), weight (7, C), targets (B, T)",
               [](Generator& g, DType d, const Sizes& s) {
                 const Tensor t = random_ids({s.B, s.T}, 7, g);
                 return Inputs{param({s.B, s.T, s.C}, g, d), param({7, s.C}, g, d), t};
               },
               [](const Inputs& in) { return linear_cross_entropy(in[0], in[1], in[2]); }});
  c.push_back({"linear_cross_entropy", "x (B, T, C), weight (7, C), targets (B, T) with two ignored (-1)",
               [](Generator& g, DType d, const Sizes& s) {
                 return Inputs{param({s.B, s.T, s.C}, g, d), param({7, s.C}, g, d), targets_with_ignored({s.B, s.T}, 7, g)};
               },
               [](const Inputs& in) { return linear_cross_entropy(in[0], in[1], in[2]); }});
  c.push_back(unary_case("dropout", [](const Tensor& x) {
    Generator mask_gen(7);  // the same mask on every evaluation, as within one training step
    return dropout(x, 0.3, true, mask_gen);
  }));
  return c;
}

}  // namespace

const std::vector<GradcheckCase>& gradcheck_cases() {
  static const std::vector<GradcheckCase> cases = build();
  return cases;
}

}  // namespace attograd
