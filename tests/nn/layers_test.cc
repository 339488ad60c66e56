// The nn layers: values against hand computations, gradients against finite differences.
#define BOOST_TEST_MODULE layers
#include <algorithm>
#include <array>
#include <boost/test/unit_test.hpp>
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "autograd/engine.h"
#include "autograd/gradcheck.h"
#include "autograd/ops.h"
#include "nn/layers.h"
#include "tests/test_util.h"

using namespace attograd;
using namespace attograd::nn;
using attograd::testing::allclose;
using attograd::testing::expect_throw_with;
using attograd::testing::randomize_parameters;

BOOST_AUTO_TEST_CASE(linear_is_x_w_transpose_plus_b) {
  Generator gen(0);
  Linear lin(2, 3, true, gen, DType::f64);
  BOOST_TEST((lin.weight.shape() == Shape{3, 2}));  // (out, in)
  lin.weight.data<double>()[0] = 1, lin.weight.data<double>()[1] = 2;
  lin.weight.data<double>()[2] = 3, lin.weight.data<double>()[3] = 4;
  lin.weight.data<double>()[4] = 5, lin.weight.data<double>()[5] = 6;
  lin.bias.fill_(0);
  lin.bias.data<double>()[1] = 0.5;
  const Tensor y = lin.forward(Tensor::from_vector({1, 1, 2, 0}, {2, 2}, DType::f64));
  BOOST_TEST(allclose(y.to_vector(), {3, 7.5, 11, 2, 6.5, 10}, 0, 0));
  expect_throw_with<std::invalid_argument>(
      [&] {
        lin.forward(Tensor::zeros({2, 3}, DType::f64));
      },
      "expected input (..., 2), got (2, 3)");
}

// Loading new weights into a Linear (copy_from) between its forward and the backward would give
// dx from the new weights: backward() refuses, naming linear's 'weight'. After backward the same
// copy is fine, and the next forward uses the new weights: dx = sum over outputs of W's rows.
BOOST_AUTO_TEST_CASE(copying_into_a_linear_weight_before_backward_is_refused) {
  Generator gen(0);
  Linear lin(2, 3, true, gen, DType::f64);
  const Tensor x = Tensor::from_vector({1, 2}, {1, 2}, DType::f64).set_requires_grad();
  const Tensor new_weight = Tensor::from_vector({1, 2, 3, 4, 5, 6}, {3, 2}, DType::f64);
  const Tensor loss = sum(lin.forward(x));
  lin.weight.copy_from(new_weight);
  expect_throw_with<std::logic_error>([&] { loss.backward(); },
                                      "backward: 'linear' saved its tensor 'weight' (3, 2) f64");
  BOOST_TEST(!x.grad().defined());
  sum(lin.forward(x)).backward();
  BOOST_TEST(allclose(x.grad().to_vector(), {1 + 3 + 5, 2 + 4 + 6}, 0, 0));
  lin.weight.copy_from(Tensor::zeros({3, 2}, DType::f64));  // after backward: legitimate
  BOOST_TEST(allclose(x.grad().to_vector(), {9, 12}, 0, 0));
}

BOOST_AUTO_TEST_CASE(gpt2_init_statistics) {
  Generator gen(3);
  Linear lin(256, 256, true, gen, DType::f64, kGpt2InitStd);
  double s = 0, s2 = 0;
  for (double v : lin.weight.to_vector()) s += v, s2 += v * v;
  const double n = 256.0 * 256.0;
  BOOST_TEST(std::abs(s / n) < 0.001);
  BOOST_TEST(std::abs(std::sqrt(s2 / n) - 0.02) < 0.0005);
  for (double v : lin.bias.to_vector()) BOOST_TEST(v == 0.0);
  LayerNorm ln(4, DType::f32);
  BOOST_TEST(ln.weight.to_vector() == std::vector<double>(4, 1.0));
  BOOST_TEST(ln.bias.to_vector() == std::vector<double>(4, 0.0));
}

// Linear(in, out) is torch.nn.Linear(in, out): W and b ~ U(-1/sqrt(in), 1/sqrt(in)) (torch's
// kaiming_uniform_ with a = sqrt(5)). For U(-k, k): mean 0, variance k²/3. With n = 131,072
// weights the sample mean has standard deviation k / sqrt(3 n) = 1.0e-4 and the sample
// variance a relative one of sqrt(0.8 / n) = 0.25%: the bounds below are 4 of those.
BOOST_AUTO_TEST_CASE(linear_has_torchs_default_init) {
  Generator gen(5);
  const int64_t in = 256, out = 512;
  const double k = 1.0 / std::sqrt(static_cast<double>(in));  // 1/16
  Linear lin(in, out, true, gen, DType::f64);
  auto moments = [](const std::vector<double>& v) {
    double s = 0, s2 = 0, lo = v[0], hi = v[0];
    for (double x : v) s += x, s2 += x * x, lo = std::min(lo, x), hi = std::max(hi, x);
    const double n = static_cast<double>(v.size()), mean = s / n;
    return std::array<double, 4>{mean, s2 / n - mean * mean, lo, hi};
  };
  const auto [mean, var, lo, hi] = moments(lin.weight.to_vector());
  BOOST_TEST(std::abs(mean) < 4 * k / std::sqrt(3.0 * in * out));
  BOOST_TEST(std::abs(var / (k * k / 3) - 1) < 4 * std::sqrt(0.8 / (in * out)));
  BOOST_TEST(lo >= -k);  // within the bound, and reaching near it
  BOOST_TEST(hi < k);
  BOOST_TEST(lo < -0.999 * k);
  BOOST_TEST(hi > 0.999 * k);
  const auto [bmean, bvar, blo, bhi] = moments(lin.bias.to_vector());
  BOOST_TEST(blo >= -k);
  BOOST_TEST(bhi < k);
  BOOST_TEST(std::abs(bmean) < 4 * k / std::sqrt(3.0 * out));
  BOOST_TEST(bvar > 0.5 * k * k / 3);  // not the constant 0 of GPT-2's init
  // Without a generator: the default one, which manual_seed reseeds (torch.manual_seed), and
  // draws the same numbers as a Generator of that seed.
  manual_seed(5);
  Linear a(in, out, true, DType::f64);
  BOOST_TEST(a.weight.to_vector() == lin.weight.to_vector());
  BOOST_TEST(a.bias.to_vector() == lin.bias.to_vector());
  Linear b(3, 4);  // torch.nn.Linear(3, 4): f32, with a bias
  BOOST_TEST((b.weight.shape() == Shape{4, 3}));
  BOOST_TEST((b.weight.dtype() == DType::f32));
  BOOST_TEST(b.bias.defined());
  for (double v : b.weight.to_vector()) BOOST_TEST(std::abs(v) < 1 / std::sqrt(3.0));
}

BOOST_AUTO_TEST_CASE(multi_head_attention_equals_per_head_computation) {
  // Two heads of head_dim 2: the module's output equals running attention on each head's
  // slice of q, k, v by hand and concatenating.
  Generator gen(4);
  CausalSelfAttention attn(4, 2, true, 0.0, false, 0.02, gen, nullptr, DType::f64);
  const Tensor x = Tensor::randn({1, 3, 4}, gen, DType::f64);
  const Tensor y = attn.forward(x);
  const Tensor qkv = attn.c_attn->forward(x);  // (1, 3, 12)
  std::vector<Tensor> heads;
  for (int h = 0; h < 2; ++h) {
    const Tensor q = slice(qkv, -1, 2 * h, 2 * h + 2), k = slice(qkv, -1, 4 + 2 * h, 4 + 2 * h + 2),
                 v = slice(qkv, -1, 8 + 2 * h, 8 + 2 * h + 2);
    const Tensor scores = mul_scalar(matmul(q, transpose(k, -2, -1)), 1 / std::sqrt(2.0));
    heads.push_back(matmul(softmax(causal_mask(scores)), v));
  }
  const Tensor expected = attn.c_proj->forward(concat(heads, -1));
  BOOST_TEST(allclose(y.to_vector(), expected.to_vector(), 1e-14, 0));
}

// docs/03-attention.md, "Q, K and V": the lecture's per-head W_Q, W_K, W_V (each C x HS) are
// rows of c_attn's weight (3C, C), transposed: head h's W_Q is rows h*HS .. (h+1)*HS - 1, its W_K
// the same rows of the second C, its W_V of the third. Q = X W_Q + b_Q etc., attention per head,
// heads side by side, c_proj: equal to the fused op the layer runs, and the weights to the ones
// the layer records.
BOOST_AUTO_TEST_CASE(c_attn_rows_are_the_lectures_w_q_w_k_w_v) {
  const int64_t B = 2, T = 4, C = 6, NH = 3, HS = 2;
  Generator gen(19);
  CausalSelfAttention attn(C, NH, true, 0.0, false, 0.02, gen, nullptr, DType::f64);
  randomize_parameters(attn.parameters(), gen, 0.5);  // far from uniform attention
  const Tensor x = Tensor::randn({B, T, C}, gen, DType::f64);
  const Tensor fused = attn.forward(x);  // causal_attention_qkv on c_attn's output
  Tensor recorded;
  attn.forward(x, nullptr, &recorded);
  const Tensor& W = attn.c_attn->weight;  // (3C, C), (out, in)
  const Tensor& b = attn.c_attn->bias;    // (3C)
  // part 0, 1, 2 = Q, K, V: X (T, C) @ W_part (C, HS) + b_part (HS)
  auto project = [&](const Tensor& X, int64_t part, int64_t h) {
    const int64_t from = part * C + h * HS;
    return add(matmul(X, transpose(slice(W, 0, from, from + HS), 0, 1)),
               slice(b, 0, from, from + HS));
  };
  for (int64_t s = 0; s < B; ++s) {
    const Tensor X = reshape(slice(x, 0, s, s + 1), {T, C});
    std::vector<Tensor> heads;
    for (int64_t h = 0; h < NH; ++h) {
      const Tensor Q = project(X, 0, h), K = project(X, 1, h), V = project(X, 2, h);
      BOOST_TEST((Q.shape() == Shape{T, HS}));
      const Tensor A =
          softmax(causal_mask(mul_scalar(matmul(Q, transpose(K, 0, 1)), 1 / std::sqrt(2.0))));
      const Tensor A_recorded = reshape(slice(slice(recorded, 0, s, s + 1), 1, h, h + 1), {T, T});
      BOOST_TEST(allclose(A.to_vector(), A_recorded.to_vector(), 1e-14, 0), "head " << h);
      heads.push_back(matmul(A, V));  // Z = A V, (T, HS)
    }
    const Tensor y = attn.c_proj->forward(concat(heads, -1));  // (T, C)
    BOOST_TEST(allclose(y.to_vector(), slice(fused, 0, s, s + 1).to_vector(), 1e-12, 0),
               "sequence " << s);
  }
}

BOOST_AUTO_TEST_CASE(attention_gradients_pass_gradcheck) {
  for (bool rope : {false, true}) {
    Generator gen(5);
    CausalSelfAttention attn(4, 2, true, 0.0, rope, 0.02, gen, nullptr, DType::f64);
    // Larger weights than GPT-2's init so that the softmax is far from uniform.
    randomize_parameters(attn.parameters(), gen, 0.5);
    std::vector<Tensor> inputs = attn.parameters();
    inputs.push_back(Tensor::randn({2, 3, 4}, gen, DType::f64).set_requires_grad());
    const GradcheckResult r = run_gradcheck(
        [&](const std::vector<Tensor>& in) { return attn.forward(in.back()); }, inputs);
    BOOST_TEST_INFO("rope " << rope << ": " << r.message);
    BOOST_TEST(r.passed);
  }
}

BOOST_AUTO_TEST_CASE(mlp_gradients_pass_gradcheck) {
  Generator gen(6);
  MLP mlp(3, true, 0.0, 0.02, gen, nullptr, DType::f64);
  std::vector<Tensor> inputs = mlp.parameters();
  inputs.push_back(Tensor::randn({2, 2, 3}, gen, DType::f64).set_requires_grad());
  const GradcheckResult r =
      run_gradcheck([&](const std::vector<Tensor>& in) { return mlp.forward(in.back()); }, inputs);
  BOOST_TEST_INFO(r.message);
  BOOST_TEST(r.passed);
}

// The MLP runs c_fc and GELU as one op (linear_gelu) while c_fc has no hook; a hook on c_fc
// makes it call c_fc and gelu apart, so the hook sees c_fc's own output, (B, T, 4C), and a tensor
// it returns replaces that output. The values are the same bits either way; removing the hook
// fuses again.
BOOST_AUTO_TEST_CASE(mlp_with_a_hook_on_c_fc_calls_it_apart) {
  Generator gen(8);
  MLP mlp(3, true, 0.0, 0.02, gen, nullptr, DType::f64);
  randomize_parameters(mlp.parameters(), gen, 0.5);
  const Tensor x = Tensor::randn({2, 2, 3}, gen, DType::f64).set_requires_grad();
  // The op that made the MLP's hidden activation: the input of c_proj's linear node.
  const auto hidden_op = [](const Tensor& y) {
    return std::string(y.grad_fn()->inputs()[0].grad_fn()->name());
  };
  const Tensor fused = mlp(x);
  BOOST_TEST(hidden_op(fused) == "linear_gelu");

  std::vector<Tensor> seen;
  HookHandle hook = mlp.c_fc->register_forward_hook(
      [&](const UnaryModule&, const Tensor&, const Tensor& out) -> std::optional<Tensor> {
        seen.push_back(out.detach());
        return std::nullopt;
      });
  const Tensor apart = mlp(x);
  BOOST_TEST(hidden_op(apart) == "gelu");
  BOOST_REQUIRE(seen.size() == 1);
  BOOST_TEST((seen[0].shape() == Shape{2, 2, 12}));
  BOOST_TEST(seen[0].to_vector() == linear(x, mlp.c_fc->weight, mlp.c_fc->bias).to_vector());
  BOOST_TEST(apart.to_vector() == fused.to_vector());

  // A hook that returns zeros: gelu(0) = 0, so the MLP gives c_proj's bias in every row.
  HookHandle zero = mlp.c_fc->register_forward_hook(
      [](const UnaryModule&, const Tensor&, const Tensor& out) -> std::optional<Tensor> {
        return Tensor::zeros(out.shape(), out.dtype());
      });
  const std::vector<double> zeroed = mlp(x).to_vector(), bias = mlp.c_proj->bias.to_vector();
  for (size_t i = 0; i < zeroed.size(); ++i) BOOST_TEST(zeroed[i] == bias[i % 3]);

  hook.remove();
  zero.remove();
  BOOST_TEST(hidden_op(mlp(x)) == "linear_gelu");
}

// A subclass of Linear in c_fc (here one that doubles its output, as an adapter adds its own
// term) runs its own forward: the MLP must not fuse it into linear_gelu, which would use only
// the weight and bias and silently drop the subclass's change.
BOOST_AUTO_TEST_CASE(mlp_with_a_linear_subclass_in_c_fc_runs_its_forward) {
  struct Doubled : Linear {
    using Linear::Linear;
    Tensor forward(const Tensor& x) const override { return mul_scalar(Linear::forward(x), 2.0); }
  };
  Generator gen(9);
  MLP mlp(3, true, 0.0, 0.02, gen, nullptr, DType::f64);
  auto doubled = std::make_shared<Doubled>(3, 12, true, gen, DType::f64, 0.5);
  mlp.c_fc = mlp.replace_module("c_fc", doubled);
  // The module tree reaches the new layer: its weight is the one an optimizer and a state dict
  // see.
  BOOST_TEST(mlp.named_parameters()[0].first == "c_fc.weight");
  BOOST_TEST(mlp.named_parameters()[0].second.is_same(doubled->weight));
  const Tensor x = Tensor::randn({2, 2, 3}, gen, DType::f64);
  const Tensor y = mlp(x);
  BOOST_TEST(std::string(y.grad_fn()->inputs()[0].grad_fn()->name()) == "gelu");
  const Tensor expected = linear(gelu(mul_scalar(linear(x, doubled->weight, doubled->bias), 2.0)),
                                 mlp.c_proj->weight, mlp.c_proj->bias);
  BOOST_TEST(y.to_vector() == expected.to_vector(), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(rope_rotates_pairs_and_scores_depend_on_relative_position) {
  Generator gen(7);
  const Tensor q = Tensor::randn({1, 4}, gen, DType::f64),
               k = Tensor::randn({1, 4}, gen, DType::f64);
  // Position 0 is the identity; a rotation preserves the norm.
  BOOST_TEST(allclose(apply_rope(q, 0).to_vector(), q.to_vector(), 1e-15, 0));
  const Tensor r5 = apply_rope(q, 5);
  BOOST_TEST(std::abs(sum(mul(r5, r5)).item() - sum(mul(q, q)).item()) < 1e-12);
  // Channel 0 pairs with channel 2 (rotate-half) and turns by angle pos * 10000^0 = pos.
  const std::vector<double> qv = q.to_vector(), rv = r5.to_vector();
  BOOST_TEST(std::abs(rv[0] - (qv[0] * std::cos(5.0) - qv[2] * std::sin(5.0))) < 1e-14);
  BOOST_TEST(std::abs(rv[2] - (qv[0] * std::sin(5.0) + qv[2] * std::cos(5.0))) < 1e-14);
  // <rope(q, m), rope(k, n)> depends on m - n only: (7, 4) and (13, 10) give the same score.
  auto score = [&](int64_t m, int64_t n) {
    return sum(mul(apply_rope(q, m), apply_rope(k, n))).item();
  };
  BOOST_TEST(std::abs(score(7, 4) - score(13, 10)) < 1e-12);
  BOOST_TEST(std::abs(score(7, 4) - score(7, 5)) > 1e-6);
  expect_throw_with<std::invalid_argument>(
      [] {
        apply_rope(Tensor::zeros({2, 3}));
      },
      "must be even");
}

BOOST_AUTO_TEST_CASE(sinusoidal_table_values) {
  const Tensor pe = sinusoidal_table(3, 4, DType::f64);
  // PE[pos, 2i] = sin(pos / 10000^(2i/C)), PE[pos, 2i+1] = cos(same angle).
  BOOST_TEST(allclose(slice(pe, 0, 0, 1).to_vector(), {0, 1, 0, 1}, 0, 0));
  BOOST_TEST(allclose(slice(pe, 0, 1, 2).to_vector(),
                      {std::sin(1.0), std::cos(1.0), std::sin(0.01), std::cos(0.01)}, 1e-15, 0));
}

// The example: T = 3074457345618258603 rows of C = 6 wrap to 2 elements mod 2^64;
// the table is refused before anything is allocated, naming T * C.
BOOST_AUTO_TEST_CASE(a_sinusoidal_table_whose_size_overflows_is_refused) {
  expect_throw_with<std::overflow_error>(
      [] { sinusoidal_table(3074457345618258603, 6, DType::f32); },
      "sinusoidal_table: T * C: 3074457345618258603 * 6 exceeds");
  expect_throw_with<std::invalid_argument>([] { sinusoidal_table(0, 6, DType::f32); },
                                           "sinusoidal_table: T must be positive");
  LayerKVCache cache;
  expect_throw_with<std::overflow_error>(
      [&] { cache.reserve(int64_t{1} << 40, 1 << 10, 1 << 10, 1 << 10, DType::f32); },
      "LayerKVCache: bytes of the buffers (1099511627776, 1024, 1024, 1024)");
}

BOOST_AUTO_TEST_CASE(dropout_layer_respects_train_and_eval) {
  Generator gen(8);
  Dropout drop(0.5, &gen);
  const Tensor x = Tensor::ones({100});
  BOOST_TEST(drop.forward(x).to_vector() != x.to_vector());
  drop.eval();
  BOOST_TEST(drop.forward(x).to_vector() == x.to_vector());
  expect_throw_with<std::invalid_argument>([&] { Dropout bad(1.0, &gen); }, "[0, 1)");
}

BOOST_AUTO_TEST_CASE(bad_configurations_are_clear_errors) {
  Generator gen(9);
  expect_throw_with<std::invalid_argument>(
      [&] { CausalSelfAttention a(6, 4, true, 0, false, 0.02, gen, nullptr, DType::f32); },
      "must divide n_embd");
  expect_throw_with<std::invalid_argument>(
      [&] { CausalSelfAttention a(6, 2, true, 0, true, 0.02, gen, nullptr, DType::f32); },
      "must be even");
  CausalSelfAttention a(4, 2, true, 0, false, 0.02, gen, nullptr, DType::f32);
  expect_throw_with<std::invalid_argument>(
      [&] {
        a.forward(Tensor::zeros({2, 3, 5}));
      },
      "expected x (B, T, 4)");
}

// Feeding x in pieces through a preallocated cache gives the full forward's output, writes into
// the same buffers every step, and refuses positions past its capacity.
BOOST_AUTO_TEST_CASE(kv_cache_writes_in_place_and_matches_the_full_forward) {
  for (bool rope : {false, true}) {
    BOOST_TEST_INFO("rope " << rope);
    Generator gen(10);
    CausalSelfAttention attn(8, 2, true, 0.0, rope, 0.02, gen, nullptr, DType::f64);
    randomize_parameters(attn.parameters(), gen, 0.5);
    const Tensor x = Tensor::randn({2, 5, 8}, gen, DType::f64);
    const Tensor full = attn.forward(x);
    LayerKVCache cache;
    expect_throw_with<std::logic_error>([&] { attn.forward(x, &cache); }, "NoGradGuard");
    NoGradGuard no_grad;
    expect_throw_with<std::logic_error>([&] { attn.forward(x, &cache); }, "reserve()");
    cache.reserve(2, 2, 6, 4, DType::f64);  // (B, NH, capacity, HS)
    BOOST_TEST(cache.capacity() == 6);
    const double* k_data = cache.keys().data<double>();
    const double* v_data = cache.values().data<double>();
    std::vector<Tensor> pieces;
    for (const auto& [start, end] : {std::pair<int64_t, int64_t>{0, 3}, {3, 4}, {4, 5}}) {
      pieces.push_back(attn.forward(slice(x, 1, start, end), &cache));
      BOOST_TEST(cache.length() == end);
      BOOST_TEST((cache.keys().shape() == Shape{2, 2, end, 4}));
      BOOST_TEST(cache.keys().data<double>() == k_data);  // written in place: no new storage
      BOOST_TEST(cache.values().data<double>() == v_data);
    }
    BOOST_TEST(allclose(concat(pieces, 1).to_vector(), full.to_vector(), 1e-12, 0));
    // The same shape again keeps the buffers and the positions.
    cache.reserve(2, 2, 6, 4, DType::f64);
    BOOST_TEST(cache.length() == 5);
    expect_throw_with<std::length_error>([&] { attn.forward(slice(x, 1, 0, 2), &cache); },
                                         "exceed its capacity 6");
    BOOST_TEST(cache.length() == 5);  // nothing written
    expect_throw_with<std::invalid_argument>([&] { attn.forward(slice(x, 0, 0, 1), &cache); },
                                             "expected new keys and values f64 (2, 2, T, 4)");
    cache.clear();
    BOOST_TEST(cache.length() == 0);
    attn.forward(x, &cache);
    BOOST_TEST(cache.keys().data<double>() == k_data);
  }
}

// An append writes the cache's buffers in place: a graph that saved a view of them (keys() in a
// recorded product) refuses to backpropagate through the changed rows.
BOOST_AUTO_TEST_CASE(a_kv_cache_append_is_counted_as_an_in_place_change) {
  LayerKVCache cache;
  cache.reserve(1, 1, 4, 2, DType::f64);
  const Tensor kv = Tensor::from_vector({1, 2}, {1, 1, 1, 2}, DType::f64);
  cache.append(kv, kv);
  const uint64_t before = cache.keys().version();
  const Tensor q = Tensor::from_vector({3, 4}, {1, 1, 1, 2}, DType::f64).set_requires_grad();
  const Tensor score = sum(mul(q, cache.keys()));  // saves keys() for dq
  cache.append(kv, kv);
  BOOST_TEST(cache.keys().version() == before + 1);
  expect_throw_with<std::logic_error>([&] { score.backward(); },
                                      "'mul' saved its tensor 'b' (1, 1, 1, 2) f64");
}

// docs/03-attention.md: without positions, order is invisible in two different ways. The plain
// mean of the context is permutation-invariant: "dog bites man" and "man bites dog" average to
// the same vector. Self-attention without a mask is permutation-equivariant: permuting the input
// rows permutes the output rows the same way, so a word's output does not depend on where it
// stands. With the causal mask, position t's output depends on its own word and on the set of
// words before it, not on their order.
BOOST_AUTO_TEST_CASE(without_positions_the_mean_is_invariant_and_attention_equivariant) {
  // rows: dog, bites, man (any three distinct embeddings)
  const std::vector<double> dog{1.0, 0.2}, bites{-0.3, 0.8}, man{0.5, -1.1};
  auto rows = [](const std::vector<std::vector<double>>& r) {
    std::vector<double> v;
    for (const auto& x : r) v.insert(v.end(), x.begin(), x.end());
    return Tensor::from_vector(v, {3, 2}, DType::f64);
  };
  const Tensor a = rows({dog, bites, man}), b = rows({man, bites, dog});  // b = rows 2, 1, 0 of a
  BOOST_TEST(allclose(mean(a, {0}).to_vector(), mean(b, {0}).to_vector(), 1e-15, 0));
  // full (unmasked) attention with q = k = v = x: softmax(x xᵀ / sqrt(2)) x
  auto full_attention = [](const Tensor& x) {
    return matmul(softmax(mul_scalar(matmul(x, transpose(x, 0, 1)), 1.0 / std::sqrt(2.0))), x);
  };
  const std::vector<double> za = full_attention(a).to_vector(), zb = full_attention(b).to_vector();
  for (int t = 0; t < 3; ++t)
    BOOST_TEST(
        allclose({zb[2 * t], zb[2 * t + 1]}, {za[2 * (2 - t)], za[2 * (2 - t) + 1]}, 1e-15, 0));
  BOOST_TEST(std::abs(za[1] - za[5]) > 0.1);  // different words do get different outputs
  // causal: "bites dog man" gives "man" the same output as "dog bites man", but not "dog"
  const Tensor c = rows({bites, dog, man});
  const std::vector<double> ca = scaled_dot_product_attention(a, a, a).to_vector();
  const std::vector<double> cc = scaled_dot_product_attention(c, c, c).to_vector();
  BOOST_TEST(allclose({cc[4], cc[5]}, {ca[4], ca[5]}, 1e-15, 0));
  BOOST_TEST(std::abs(cc[2] - ca[0]) >
             0.1);  // dog second sees bites too; dog first sees only itself
}

// `attograd attention` reads the weights a forward records. They must be the ones the layer
// applies: a distribution over the keys a query may see (rows sum to 1, exactly 0 after the
// query), equal to softmax(q kᵀ / sqrt(HS) + mask) recomputed here in plain loops from
// c_attn's q and k, and, multiplied by c_attn's v, equal to the fused attention op's output
// (the layer's output before c_proj). Recording them must not change the layer's output.
BOOST_AUTO_TEST_CASE(recorded_attention_weights_are_the_ones_the_layer_applies) {
  for (bool rope : {false, true}) {
    BOOST_TEST_INFO("rope " << rope);
    const int64_t B = 2, T = 5, C = 8, NH = 2, HS = 4;
    Generator gen(11);
    CausalSelfAttention attn(C, NH, true, 0.0, rope, 0.02, gen, nullptr, DType::f64);
    randomize_parameters(attn.parameters(), gen, 0.5);  // far from uniform attention
    const Tensor x = Tensor::randn({B, T, C}, gen, DType::f64);
    Tensor w;
    const Tensor recorded = attn.forward(x, nullptr, &w);
    BOOST_TEST(allclose(recorded.to_vector(), attn.forward(x).to_vector(), 1e-12, 0));
    BOOST_REQUIRE((w.shape() == Shape{B, NH, T, T}));

    const Tensor qkv = attn.c_attn->forward(x);  // (B, T, 3C)
    auto heads = [&](int64_t part) {             // (B, NH, T, HS)
      return transpose(reshape(slice(qkv, -1, part * C, (part + 1) * C), {B, T, NH, HS}), 1, 2);
    };
    Tensor q = heads(0), k = heads(1);
    const Tensor v = heads(2);
    if (rope) q = apply_rope(q), k = apply_rope(k);
    for (int64_t b = 0; b < B; ++b)
      for (int64_t h = 0; h < NH; ++h)
        for (int64_t t = 0; t < T; ++t) {
          std::vector<double> scores(static_cast<size_t>(t + 1));
          double max_score = -INFINITY, row_sum = 0, z = 0;
          for (int64_t j = 0; j <= t; ++j) {
            for (int64_t d = 0; d < HS; ++d) scores[j] += q.at({b, h, t, d}) * k.at({b, h, j, d});
            scores[j] /= std::sqrt(static_cast<double>(HS));
            max_score = std::max(max_score, scores[j]);
          }
          for (int64_t j = 0; j <= t; ++j) z += std::exp(scores[j] - max_score);
          for (int64_t j = 0; j < T; ++j) {
            const double wj = w.at({b, h, t, j});
            row_sum += wj;
            if (j > t) {
              BOOST_TEST(wj == 0.0);  // exactly: masked, never rounded to 0
            } else {
              BOOST_TEST(std::abs(wj - std::exp(scores[j] - max_score) / z) <= 1e-12);
            }
          }
          BOOST_TEST(std::abs(row_sum - 1) <= 1e-12);
        }
    // A V per head against the fused op, which never stores A.
    const Tensor av = matmul(w, v);  // (B, NH, T, HS)
    const Tensor fused =
        rope ? causal_attention(q, k, v)
             : transpose(reshape(causal_attention_qkv(qkv, NH), {B, T, NH, HS}), 1, 2);
    BOOST_TEST(allclose(contiguous(av).to_vector(), contiguous(fused).to_vector(), 1e-12, 0));
  }
}

// With a KV cache the new queries' weights span the cached keys too: the last position's row
// is the last row of the whole prompt's weights.
BOOST_AUTO_TEST_CASE(recorded_attention_weights_with_a_kv_cache_span_the_cached_keys) {
  Generator gen(12);
  CausalSelfAttention attn(8, 2, true, 0.0, false, 0.02, gen, nullptr, DType::f64);
  randomize_parameters(attn.parameters(), gen, 0.5);
  const Tensor x = Tensor::randn({1, 5, 8}, gen, DType::f64);
  NoGradGuard no_grad;
  Tensor full, last;
  attn.forward(x, nullptr, &full);
  LayerKVCache cache;
  cache.reserve(1, 2, 5, 4, DType::f64);
  attn.forward(slice(x, 1, 0, 4), &cache);
  attn.forward(slice(x, 1, 4, 5), &cache, &last);
  BOOST_REQUIRE((last.shape() == Shape{1, 2, 1, 5}));
  BOOST_TEST(allclose(contiguous(last).to_vector(), contiguous(slice(full, 2, 4, 5)).to_vector(),
                      1e-12, 0));
}
