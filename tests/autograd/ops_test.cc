// Op forwards and gradients at known values (the foundation issue's list), in f32 and f64.
#define BOOST_TEST_MODULE ops
#include <boost/test/unit_test.hpp>
#include <cmath>
#include <functional>
#include <limits>

#include "autograd/autocast.h"
#include "autograd/detail/tensor_impl.h"
#include "autograd/engine.h"
#include "autograd/ops.h"
#include "tests/test_util.h"

using namespace attograd;
using attograd::testing::allclose;
using attograd::testing::expect_tensor;
using attograd::testing::expect_throw_with;

namespace {
const DType kBoth[] = {DType::f32, DType::f64};
double tol(DType dt) { return dt == DType::f32 ? 1e-6 : 1e-12; }
}  // namespace

BOOST_AUTO_TEST_CASE(broadcasting_forward_and_sum_to_backward) {
  for (DType dt : kBoth) {
    Tensor a = Tensor::from_vector({1, 2, 3, 4, 5, 6}, {2, 3}, dt).set_requires_grad();
    Tensor b = Tensor::from_vector({10, 20, 30}, {3}, dt).set_requires_grad();
    Tensor c = Tensor::from_vector({2, 4}, {2, 1}, dt).set_requires_grad();
    Tensor y = div(add(a, b), c);  // (2, 3)
    expect_tensor(y, {2, 3}, {5.5, 11, 16.5, 3.5, 6.25, 9}, tol(dt));
    sum(y).backward();
    BOOST_TEST(allclose(a.grad().to_vector(), {0.5, 0.5, 0.5, 0.25, 0.25, 0.25}, tol(dt), 0));
    BOOST_TEST(allclose(b.grad().to_vector(), {0.75, 0.75, 0.75}, tol(dt),
                        0));  // summed over the broadcast rows
    // dy/dc = -(a + b) / c², summed over each row: -(66 / 4), -(75 / 16)
    BOOST_TEST(allclose(c.grad().to_vector(), {-16.5, -4.6875}, tol(dt), 0));
  }
  expect_throw_with<std::invalid_argument>(
      [] {
        add(Tensor::zeros({2, 3}), Tensor::zeros({4}));
      },
      "shapes (2, 3) and (4,) cannot be broadcast");
  expect_throw_with<std::invalid_argument>(
      [] { add(Tensor::zeros({2}), Tensor::zeros({2}, DType::f64)); }, "dtypes differ");
}

BOOST_AUTO_TEST_CASE(unary_ops_values) {
  Tensor x = Tensor::from_vector({0.5, 1, 2}, {3}, DType::f64);
  BOOST_TEST(allclose(exp(x).to_vector(), {std::exp(0.5), std::exp(1.0), std::exp(2.0)}, 1e-12, 0));
  BOOST_TEST(allclose(log(x).to_vector(), {std::log(0.5), 0, std::log(2.0)}, 1e-12, 0));
  BOOST_TEST(
      allclose(tanh(x).to_vector(), {std::tanh(0.5), std::tanh(1.0), std::tanh(2.0)}, 1e-12, 0));
  BOOST_TEST(allclose(sqrt(x).to_vector(), {std::sqrt(0.5), 1, std::sqrt(2.0)}, 1e-12, 0));
  BOOST_TEST(allclose(pow(x, 3).to_vector(), {0.125, 1, 8}, 1e-12, 0));
  BOOST_TEST(allclose(relu(Tensor::from_vector({-1, 0, 2}, {3}, DType::f64)).to_vector(), {0, 0, 2},
                      0, 0));
  BOOST_TEST(allclose(neg(x).to_vector(), {-0.5, -1, -2}, 0, 0));
  // GPT-2's tanh-approximate GELU: gelu(1) = 0.5 (1 + tanh(sqrt(2/pi) 1.044715)).
  BOOST_TEST(allclose(gelu(Tensor::from_vector({0, 1}, {2}, DType::f64)).to_vector(),
                      {0, 0.8411919906082768}, 1e-12, 0));
  BOOST_TEST(allclose((2.0 - x).to_vector(), {1.5, 1, 0}, 0, 0));
  BOOST_TEST(allclose((2.0 / x).to_vector(), {4, 2, 1}, 1e-12, 0));
}

BOOST_AUTO_TEST_CASE(reductions_values_and_gradients) {
  for (DType dt : kBoth) {
    Tensor x = Tensor::from_vector({1, 5, 2, 7, 3, 4}, {2, 3}, dt).set_requires_grad();
    expect_tensor(sum(x, {1}), {2}, {8, 14}, tol(dt));
    expect_tensor(sum(x, {0}, true), {1, 3}, {8, 8, 6}, tol(dt));
    expect_tensor(mean(x), {}, {22.0 / 6}, tol(dt));
    Tensor m = max(x, 1);
    expect_tensor(m, {2}, {5, 7}, 0);
    sum(m).backward();
    BOOST_TEST(allclose(x.grad().to_vector(), {0, 1, 0, 1, 0, 0}, 0, 0));
  }
}

// Known input 3: C = Aᵀ B where Aᵀ is a transposed VIEW, L = sum(C).
BOOST_AUTO_TEST_CASE(matmul_with_transposed_view) {
  for (DType dt : kBoth) {
    Tensor A = Tensor::from_vector({1, 4, 2, 5, 3, 6}, {3, 2}, dt).set_requires_grad();
    Tensor B = Tensor::from_vector({1, 0, 0, 1, 1, 1}, {3, 2}, dt).set_requires_grad();
    Tensor At = transpose(A, 0, 1);
    BOOST_TEST(!At.is_contiguous());
    Tensor C = matmul(At, B);
    expect_tensor(C, {2, 2}, {4, 5, 10, 11}, 0);
    sum(C).backward();
    BOOST_TEST(allclose(A.grad().to_vector(), {1, 1, 1, 1, 2, 2}, 0, 0));
    BOOST_TEST(allclose(B.grad().to_vector(), {5, 5, 7, 7, 9, 9}, 0, 0));
  }
  expect_throw_with<std::invalid_argument>(
      [] {
        matmul(Tensor::zeros({2, 3}), Tensor::zeros({4, 5}));
      },
      "inner dimensions differ: (2, 3) @ (4, 5)");
  expect_throw_with<std::invalid_argument>(
      [] {
        matmul(Tensor::zeros({3}), Tensor::zeros({3, 1}));
      },
      "2-D or batched");
}

// y = x Wᵀ + b with x = [[1, 2], [3, 4]], W = [[1, 0], [1, 1], [0, 2]], b = [1, 2, 3], L = sum(y):
// y = [[2, 5, 7], [4, 9, 11]]; dx = 1 W = [2, 3] per row; dW = 1ᵀ x = [4, 6] per row; db = 2.
BOOST_AUTO_TEST_CASE(linear_values_gradients_and_errors) {
  for (DType dt : kBoth) {
    Tensor x = Tensor::from_vector({1, 2, 3, 4}, {2, 2}, dt).set_requires_grad();
    Tensor W = Tensor::from_vector({1, 0, 1, 1, 0, 2}, {3, 2}, dt).set_requires_grad();
    Tensor b = Tensor::from_vector({1, 2, 3}, {3}, dt).set_requires_grad();
    Tensor y = linear(x, W, b);
    expect_tensor(y, {2, 3}, {2, 5, 7, 4, 9, 11}, 0);
    sum(y).backward();
    BOOST_TEST(allclose(x.grad().to_vector(), {2, 3, 2, 3}, 0, 0));
    BOOST_TEST(allclose(W.grad().to_vector(), {4, 6, 4, 6, 4, 6}, 0, 0));
    BOOST_TEST(allclose(b.grad().to_vector(), {2, 2, 2}, 0, 0));
  }
  expect_throw_with<std::invalid_argument>(
      [] {
        linear(Tensor::zeros({4, 64, 256}), Tensor::zeros({5, 384}));
      },
      "linear: expected input (..., in), weight (out, in) and bias (out,), got "
      "input (4, 64, 256), weight (5, 384)");
  expect_throw_with<std::invalid_argument>(
      [] {
        linear(Tensor::zeros({2, 3}), Tensor::zeros({5, 3}), Tensor::zeros({4}));
      },
      "bias (4,)");
}

// No input features (in = 0): every row is the bias, as in PyTorch, and db counts the rows.
BOOST_AUTO_TEST_CASE(linear_with_no_input_features_gives_the_bias) {
  for (DType dt : kBoth) {
    { Tensor junk = Tensor::full({3, 5}, 777, dt); }  // a cached buffer the output might reuse
    Tensor x = Tensor::zeros({3, 0}, dt).set_requires_grad();
    Tensor W = Tensor::zeros({5, 0}, dt).set_requires_grad();
    Tensor b = Tensor::from_vector({1, 2, 3, 4, 5}, {5}, dt).set_requires_grad();
    Tensor y = linear(x, W, b);
    expect_tensor(y, {3, 5}, {1, 2, 3, 4, 5, 1, 2, 3, 4, 5, 1, 2, 3, 4, 5}, 0);
    sum(y).backward();
    BOOST_TEST(allclose(b.grad().to_vector(), {3, 3, 3, 3, 3}, 0, 0));
    expect_tensor(linear(Tensor::zeros({2, 0}, dt), Tensor::zeros({4, 0}, dt)), {2, 4},
                  std::vector<double>(8, 0.0), 0);
  }
}

// The fused op against the composition it replaces, matmul(x, transpose(W)) + b, with a weight
// used twice (a tied head) and a non-contiguous input: values and every gradient agree.
BOOST_AUTO_TEST_CASE(linear_matches_matmul_transpose_add) {
  Generator gen(5);
  const Tensor x0 = Tensor::randn({3, 4, 5}, gen, DType::f64),
               W0 = Tensor::randn({6, 5}, gen, DType::f64);
  const Tensor b0 = Tensor::randn({6}, gen, DType::f64);
  Tensor grads[2][3];
  for (int fused = 0; fused < 2; ++fused) {
    Tensor x = x0.clone().set_requires_grad(), W = W0.clone().set_requires_grad(),
           b = b0.clone().set_requires_grad();
    const Tensor xt = transpose(x, 0, 1);  // (4, 3, 5), not contiguous
    const Tensor y = fused ? linear(xt, W, b) : add(matmul(xt, transpose(W, 0, 1)), b);
    const Tensor twice =
        fused ? linear(y, transpose(W, 0, 1)) : matmul(y, W);  // W again: (4, 3, 5)
    sum(mul(twice, twice)).backward();
    grads[fused][0] = x.grad(), grads[fused][1] = W.grad(), grads[fused][2] = b.grad();
  }
  for (int i = 0; i < 3; ++i)
    BOOST_TEST(allclose(grads[1][i].to_vector(), grads[0][i].to_vector(), 1e-12, 0));
}

// The MLP's first half as one op against the two it replaces, gelu(linear(x, W, b)): the same
// kernels in the same order (the product, then gelu's formula on it; dh = dy ⊙ gelu'(h), then
// linear's products), so values and every gradient are the same bits, in f32 and f64, with and
// without autocast's bf16 products, with a non-contiguous input and a bias-free layer. Without
// grad mode the op saves nothing and gives the same y.
BOOST_AUTO_TEST_CASE(linear_gelu_is_gelu_of_linear_bit_for_bit) {
  for (DType dt : kBoth)
    for (const MatmulPrecision precision : {MatmulPrecision::f32, MatmulPrecision::bf16})
      for (const bool with_bias : {true, false}) {
        if (dt == DType::f64 && precision == MatmulPrecision::bf16) continue;  // f32 only
        BOOST_TEST_CONTEXT("dtype " << dtype_name(dt) << ", bf16 "
                                    << (precision == MatmulPrecision::bf16) << ", bias "
                                    << with_bias) {
          Generator gen(7);
          // 3 x 70 rows, 300 features in (two k blocks), 130 out (edge tiles and a thin tail)
          const Tensor x0 = Tensor::randn({70, 3, 300}, gen, dt),
                       W0 = mul_scalar(Tensor::randn({130, 300}, gen, dt), 0.1);
          const Tensor b0 = Tensor::randn({130}, gen, dt),
                       dy = Tensor::randn({3, 70, 130}, gen, dt);
          std::vector<double> results[2][4];
          for (int fused = 0; fused < 2; ++fused) {
            const AutocastGuard guard(precision);
            Tensor x = x0.clone().set_requires_grad(), W = W0.clone().set_requires_grad(),
                   b = b0.clone().set_requires_grad();
            const Tensor xt = transpose(x, 0, 1);  // (3, 70, 300), not contiguous
            const Tensor bias = with_bias ? b : Tensor();
            const Tensor y = fused ? linear_gelu(xt, W, bias) : gelu(linear(xt, W, bias));
            y.backward(dy);
            results[fused][0] = y.to_vector();
            results[fused][1] = x.grad().to_vector();
            results[fused][2] = W.grad().to_vector();
            if (with_bias) results[fused][3] = b.grad().to_vector();
            const NoGradGuard no_grad;
            BOOST_TEST(linear_gelu(xt, W, bias).to_vector() == results[fused][0]);
          }
          for (int i = 0; i < 4; ++i) BOOST_TEST(results[1][i] == results[0][i]);
        }
      }
  expect_throw_with<std::invalid_argument>(
      [] {
        linear_gelu(Tensor::zeros({4, 64, 256}), Tensor::zeros({5, 384}));
      },
      "linear_gelu: expected input (..., in), weight (out, in) and bias (out,), got "
      "input (4, 64, 256), weight (5, 384)");
}

BOOST_AUTO_TEST_CASE(batched_matmul_broadcasts_batch) {
  // (2, 2, 2) @ (2, 2): every batch uses the same right operand; its gradient sums both.
  Tensor a =
      Tensor::from_vector({1, 2, 3, 4, 5, 6, 7, 8}, {2, 2, 2}, DType::f64).set_requires_grad();
  Tensor b = Tensor::from_vector({1, 1, 0, 1}, {2, 2}, DType::f64).set_requires_grad();
  Tensor c = matmul(a, b);
  expect_tensor(c, {2, 2, 2}, {1, 3, 3, 7, 5, 11, 7, 15}, 0);
  sum(c).backward();
  BOOST_TEST(allclose(b.grad().to_vector(), {16, 16, 20, 20}, 0, 0));
  BOOST_TEST(allclose(a.grad().to_vector(), {2, 1, 2, 1, 2, 1, 2, 1}, 0, 0));
}

// Known input 5: softmax and cross-entropy far outside exp's range, in f32 and f64.
BOOST_AUTO_TEST_CASE(softmax_and_cross_entropy_do_not_overflow) {
  for (DType dt : kBoth) {
    const double t = dt == DType::f32 ? 1e-6 : 1e-7;
    BOOST_TEST(allclose(softmax(Tensor::from_vector({880, 881, 882}, {3}, dt)).to_vector(),
                        {0.09003057, 0.2447285, 0.6652410}, t, 0));
    BOOST_TEST(allclose(softmax(Tensor::from_vector({-900, -900}, {2}, dt)).to_vector(), {0.5, 0.5},
                        0, 0));

    Tensor l1 = Tensor::from_vector({7e5, 7e5, 7e5}, {1, 3}, dt).set_requires_grad();
    BOOST_TEST(std::abs(cross_entropy(l1, Tensor::from_ids({1}, {1})).item() - std::log(3.0)) < t);

    Tensor l2 = Tensor::from_vector({3e4, -2e4, 1e4}, {1, 3}, dt).set_requires_grad();
    Tensor loss = cross_entropy(l2, Tensor::from_ids({2}, {1}));
    BOOST_TEST(loss.item() == 20000.0);
    loss.backward();
    BOOST_TEST(allclose(l2.grad().to_vector(), {1, 0, -1}, 0, 0));
  }
}

// Known input 6: f32 logits [0, 60, -60], target 2: tiny probabilities stay finite.
BOOST_AUTO_TEST_CASE(cross_entropy_underflow_stays_finite_in_f32) {
  Tensor logits = Tensor::from_vector({0, 60, -60}, {1, 3}, DType::f32).set_requires_grad();
  BOOST_TEST(allclose(log_softmax(logits).to_vector(), {-60, 0, -120}, 1e-5, 0));
  Tensor loss = cross_entropy(logits, Tensor::from_ids({2}, {1}));
  BOOST_TEST(loss.item() == 120.0);
  loss.backward();
  const std::vector<double> g = logits.grad().to_vector();
  for (double v : g) BOOST_TEST(std::isfinite(v));
  BOOST_TEST(std::abs(g[0] - 8.756511e-27) < 1e-32);
  BOOST_TEST(g[1] == 1.0);
  BOOST_TEST(g[2] == -1.0);
}

// Known input 7: layer norm at a large mean must not use E[x²] - E[x]².
BOOST_AUTO_TEST_CASE(layer_norm_large_mean_and_biased_variance) {
  Tensor g4 = Tensor::ones({4}), b4 = Tensor::zeros({4});
  BOOST_TEST(
      allclose(layer_norm(Tensor::from_vector({70000, 70001, 70002, 70003}, {1, 4}), g4, b4, 1e-5)
                   .to_vector(),
               {-1.341635, -0.4472118, 0.4472118, 1.341635}, 1e-3, 0));
  Tensor g5 = Tensor::ones({5}, DType::f64), b5 = Tensor::zeros({5}, DType::f64);
  const std::vector<double> y =
      layer_norm(Tensor::from_vector({0, 1, 2, 3, 4}, {5}, DType::f64), g5, b5, 1e-5).to_vector();
  BOOST_TEST(std::abs(y[0] - (-2 / std::sqrt(2 + 1e-5))) < 1e-12);  // biased variance 2
  BOOST_TEST(std::abs(y[0] - (-1.414210)) < 1e-6);
  expect_throw_with<std::invalid_argument>(
      [] {
        layer_norm(Tensor::zeros({4, 64, 256}), Tensor::ones({384}), Tensor::zeros({384}));
      },
      "expected input (..., 384)");
}

BOOST_AUTO_TEST_CASE(causal_ops_mask_exactly) {
  for (DType dt : kBoth) {
    Tensor s = Tensor::from_vector({1, 2, 3, 4, 5, 6, 7, 8, 9}, {3, 3}, dt).set_requires_grad();
    Tensor m = causal_mask(s);
    const double inf = std::numeric_limits<double>::infinity();
    BOOST_TEST(allclose(slice(m, 1, 0, 1).to_vector(), {1, 4, 7}, 0, 0));
    BOOST_TEST(m.at({0, 1}) == -inf);
    BOOST_TEST(m.at({0, 2}) == -inf);
    BOOST_TEST(m.at({1, 2}) == -inf);
    Tensor p = causal_softmax(s);
    BOOST_TEST(p.at({0, 0}) == 1.0);
    BOOST_TEST(p.at({0, 1}) == 0.0);
    BOOST_TEST(p.at({1, 2}) == 0.0);
    // Masked entries get exactly zero gradient from an arbitrary upstream.
    p.backward(Tensor::from_vector({5, 6, 7, 8, 9, 10, 11, 12, 13}, {3, 3}, dt));
    BOOST_TEST(s.grad().at({0, 1}) == 0.0);
    BOOST_TEST(s.grad().at({0, 2}) == 0.0);
    BOOST_TEST(s.grad().at({1, 2}) == 0.0);
    // The fused op equals the two primitives.
    BOOST_TEST(
        allclose(causal_softmax(s).to_vector(), softmax(causal_mask(s)).to_vector(), tol(dt), 0));
  }
  expect_throw_with<std::invalid_argument>(
      [] {
        causal_softmax(Tensor::zeros({3, 2}));
      },
      "Tq <= Tk");
}

// The fused op against the lecture's formula built from primitives,
// matmul(causal_softmax(q kᵀ / sqrt(HS)), v): values and all three gradients, with Tq = Tk and
// with fewer queries than keys; and its errors.
BOOST_AUTO_TEST_CASE(causal_attention_matches_primitives) {
  for (const int64_t Tq : {5, 2}) {
    Generator gen(11);
    const Tensor q0 = Tensor::randn({2, 3, Tq, 4}, gen, DType::f64),
                 k0 = Tensor::randn({2, 3, 5, 4}, gen, DType::f64);
    const Tensor v0 = Tensor::randn({2, 3, 5, 4}, gen, DType::f64),
                 w = Tensor::randn({2, 3, Tq, 4}, gen, DType::f64);
    std::vector<double> results[2][4];
    for (int fused = 0; fused < 2; ++fused) {
      Tensor q = q0.clone().set_requires_grad(), k = k0.clone().set_requires_grad(),
             v = v0.clone().set_requires_grad();
      const Tensor y =
          fused ? causal_attention(q, k, v)
                : matmul(causal_softmax(mul_scalar(matmul(q, transpose(k, -2, -1)), 0.5)), v);
      sum(mul(y, w)).backward();
      results[fused][0] = y.to_vector();
      results[fused][1] = q.grad().to_vector();
      results[fused][2] = k.grad().to_vector();
      results[fused][3] = v.grad().to_vector();
    }
    for (int i = 0; i < 4; ++i) BOOST_TEST(allclose(results[1][i], results[0][i], 1e-12, 0));
  }
  expect_throw_with<std::invalid_argument>(
      [] {
        causal_attention(Tensor::zeros({1, 2, 6, 4}), Tensor::zeros({1, 2, 5, 4}),
                         Tensor::zeros({1, 2, 5, 4}));
      },
      "1 <= Tq <= Tk, got q (1, 2, 6, 4), k (1, 2, 5, 4)");
  expect_throw_with<std::invalid_argument>(
      [] {
        causal_attention(Tensor::zeros({2, 5, 4}), Tensor::zeros({2, 5, 4}),
                         Tensor::zeros({2, 5, 4}));
      },
      "expected q (B, NH, Tq, HS)");
}

// The fused lm_head + loss against linear then cross_entropy: loss and gradients agree; a second
// backward through a retained graph (after the first turned the logits into their gradient in
// place) gives the same gradients again; bad targets are refused.
BOOST_AUTO_TEST_CASE(linear_cross_entropy_matches_linear_then_cross_entropy) {
  Generator gen(12);
  const Tensor x0 = Tensor::randn({2, 3, 4}, gen, DType::f64),
               W0 = Tensor::randn({9, 4}, gen, DType::f64);
  const Tensor t = Tensor::from_ids({0, 8, 3, 3, 5, 1}, {2, 3});
  std::vector<double> results[2][3];
  for (int fused = 0; fused < 2; ++fused) {
    Tensor x = x0.clone().set_requires_grad(), W = W0.clone().set_requires_grad();
    const Tensor loss = fused ? linear_cross_entropy(x, W, t) : cross_entropy(linear(x, W), t);
    loss.backward(Tensor(), true);
    results[fused][0] = {loss.item()};
    results[fused][1] = x.grad().to_vector();
    results[fused][2] = W.grad().to_vector();
    loss.backward();  // again: the gradients double
    BOOST_TEST(allclose(
        x.grad().to_vector(),
        [&] {
          auto v = results[fused][1];
          for (double& g : v) g *= 2;
          return v;
        }(),
        1e-14, 0));
  }
  for (int i = 0; i < 3; ++i) BOOST_TEST(allclose(results[1][i], results[0][i], 1e-13, 0));
  expect_throw_with<std::out_of_range>(
      [&] {
        linear_cross_entropy(x0, W0, Tensor::from_ids({0, 9, 0, 0, 0, 0}, {2, 3}));
      },
      "target 9 at position 1 is outside [0, 9)");
  expect_throw_with<std::invalid_argument>(
      [&] {
        linear_cross_entropy(x0, W0, Tensor::from_ids({0, 1}, {2}));
      },
      "expected targets (2, 3), got x (2, 3, 4) and targets (2,)");
}

// The packed op against the layer's long way: split c_attn's output into heads with slice,
// reshape and transpose, causal_attention, merge the heads: values and the gradient of qkv.
BOOST_AUTO_TEST_CASE(causal_attention_qkv_matches_split_heads) {
  Generator gen(13);
  const int64_t B = 2, T = 5, C = 6, NH = 3;
  const Tensor qkv0 = Tensor::randn({B, T, 3 * C}, gen, DType::f64),
               w = Tensor::randn({B, T, C}, gen, DType::f64);
  std::vector<double> results[2][2];
  for (int fused = 0; fused < 2; ++fused) {
    Tensor qkv = qkv0.clone().set_requires_grad();
    Tensor y;
    if (fused) {
      y = causal_attention_qkv(qkv, NH);
    } else {
      auto heads = [&](int64_t part) {
        return transpose(reshape(slice(qkv, -1, part * C, (part + 1) * C), {B, T, NH, C / NH}), 1,
                         2);
      };
      y = reshape(transpose(causal_attention(heads(0), heads(1), heads(2)), 1, 2), {B, T, C});
    }
    sum(mul(y, w)).backward();
    results[fused][0] = y.to_vector();
    results[fused][1] = qkv.grad().to_vector();
  }
  for (int i = 0; i < 2; ++i) BOOST_TEST(allclose(results[1][i], results[0][i], 1e-13, 0));
  expect_throw_with<std::invalid_argument>(
      [] {
        causal_attention_qkv(Tensor::zeros({2, 5, 18}), 4);
      },
      "n_head dividing C, got qkv (2, 5, 18) and n_head 4");
}

BOOST_AUTO_TEST_CASE(embedding_gathers_and_scatter_adds) {
  Tensor w = Tensor::from_vector({0, 1, 10, 11, 20, 21}, {3, 2}, DType::f64).set_requires_grad();
  Tensor ids = Tensor::from_ids({2, 0, 2}, {1, 3});
  Tensor y = embedding(w, ids);
  expect_tensor(y, {1, 3, 2}, {20, 21, 0, 1, 20, 21}, 0);
  sum(y).backward();
  BOOST_TEST(allclose(w.grad().to_vector(), {1, 1, 0, 0, 2, 2}, 0, 0));  // id 2 used twice
  expect_throw_with<std::out_of_range>(
      [&] {
        embedding(w, Tensor::from_ids({1, 3}, {2}));
      },
      "token id 3 at position 1 is outside [0, 3)");
  expect_throw_with<std::out_of_range>([&] { embedding(w, Tensor::from_ids({-1}, {1})); },
                                       "token id -1");
}

BOOST_AUTO_TEST_CASE(cross_entropy_errors) {
  Tensor logits = Tensor::zeros({2, 3});
  expect_throw_with<std::out_of_range>(
      [&] {
        cross_entropy(logits, Tensor::from_ids({0, 3}, {2}));
      },
      "target 3 at position 1 is outside [0, 3)");
  expect_throw_with<std::invalid_argument>(
      [&] { cross_entropy(logits, Tensor::from_ids({0}, {1})); }, "targets (1,)");
  expect_throw_with<std::invalid_argument>([&] { cross_entropy(logits, Tensor::zeros({2})); },
                                           "expected i64 targets");
}

BOOST_AUTO_TEST_CASE(shape_ops) {
  Tensor x = Tensor::from_vector({1, 2, 3, 4, 5, 6}, {2, 3}, DType::f64).set_requires_grad();
  expect_tensor(reshape(x, {3, -1}), {3, 2}, {1, 2, 3, 4, 5, 6}, 0);
  expect_tensor(permute(reshape(x, {1, 2, 3}), {2, 0, 1}), {3, 1, 2}, {1, 4, 2, 5, 3, 6}, 0);
  expect_tensor(concat({x, x}, 0), {4, 3}, {1, 2, 3, 4, 5, 6, 1, 2, 3, 4, 5, 6}, 0);
  const auto parts = split(x, {1, 2}, 1);
  expect_tensor(parts[1], {2, 2}, {2, 3, 5, 6}, 0);
  // Gradients through views land in the right places.
  sum(mul(parts[1], Tensor::from_vector({1, 2, 3, 4}, {2, 2}, DType::f64))).backward();
  BOOST_TEST(allclose(x.grad().to_vector(), {0, 1, 2, 0, 3, 4}, 0, 0));
  expect_throw_with<std::invalid_argument>([&] { reshape(x, {4, -1}); }, "cannot infer -1");
  expect_throw_with<std::invalid_argument>([&] { reshape(x, {4, 2}); }, "cannot view (2, 3)");
  expect_throw_with<std::invalid_argument>([&] { slice(x, 1, 2, 4); }, "range [2, 4)");
  expect_throw_with<std::invalid_argument>([&] { split(x, {1, 1}, 1); }, "add up to 2");
  expect_throw_with<std::invalid_argument>(
      [&] {
        concat({x, Tensor::zeros({2, 2}, DType::f64)}, 0);
      },
      "differ outside");
  expect_throw_with<std::invalid_argument>([&] { transpose(x, 0, 2); },
                                           "dimension 2 is out of range");
}

// reshape is a view whenever the strides allow it, as torch's view: splitting the last dimension
// of a column slice (how attention splits c_attn's output into heads) shares storage; flattening
// a transpose cannot, and copies. Values and gradients are right either way.
BOOST_AUTO_TEST_CASE(reshape_views_when_strides_allow) {
  Tensor x = Tensor::from_vector({0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}, {2, 6}, DType::f64)
                 .set_requires_grad();
  const Tensor cols = slice(x, 1, 2, 6);  // (2, 4), row stride 6: not contiguous
  const Tensor heads = reshape(cols, {2, 2, 2});
  expect_tensor(heads, {2, 2, 2}, {2, 3, 4, 5, 8, 9, 10, 11}, 0);
  BOOST_TEST(heads.data<double>() == x.data<double>() + 2);  // a view: same storage, no copy
  BOOST_TEST((heads.strides() == Shape{6, 2, 1}));
  const Tensor flat = reshape(transpose(x, 0, 1), {12});  // (6, 2) transposed: must copy
  expect_tensor(flat, {12}, {0, 6, 1, 7, 2, 8, 3, 9, 4, 10, 5, 11}, 0);
  BOOST_TEST(flat.is_contiguous());
  add(sum(mul(heads, heads)), sum(flat)).backward();
  // d/dx of x² over the slice, plus 1 everywhere from the flattened copy
  BOOST_TEST(allclose(x.grad().to_vector(), {1, 1, 5, 7, 9, 11, 1, 1, 17, 19, 21, 23}, 0, 0));
}

BOOST_AUTO_TEST_CASE(dropout_is_seeded_and_scaled) {
  Tensor x = Tensor::ones({1000}, DType::f64).set_requires_grad();
  Generator g1(5), g2(5);
  Tensor y1 = dropout(x, 0.25, true, g1), y2 = dropout(x, 0.25, true, g2);
  BOOST_TEST(y1.to_vector() == y2.to_vector());
  int zeros = 0;
  for (double v : y1.to_vector()) {
    BOOST_TEST((v == 0.0 || std::abs(v - 4.0 / 3.0) < 1e-15));
    zeros += v == 0.0;
  }
  BOOST_TEST(zeros > 200);  // 250 expected, sd ~14
  BOOST_TEST(zeros < 300);
  Generator g3(5);
  BOOST_TEST(detail::impl(dropout(x, 0.25, false, g3)) ==
             detail::impl(x));  // identity in eval mode
  expect_throw_with<std::invalid_argument>([&] { dropout(x, 1.5, true, g3); },
                                           "p must be in [0, 1]");
}

// ----- PyTorch's values (torch 1.13 via /usr/bin/python3, float64), computed once -----

// F.cross_entropy(x, t, ignore_index=-1) for the example: row 1 is ignored, the mean
// runs over rows 0 and 2. linear_cross_entropy with W = I computes the same logits and must
// agree, loss and gradient, with the same exact zeros.
BOOST_AUTO_TEST_CASE(cross_entropy_ignore_index_matches_torch) {
  const std::vector<double> logits = {1, 2, 3, 4, 0, 0, 0, 0, 2, -1, 0, 1};
  const Tensor targets = Tensor::from_ids({2, -1, 0}, {3});
  const std::vector<double> expected_grad = {
      0.016029301640,  0.043572159371, -0.381558590955, 0.321957129944, 0, 0, 0, 0,
      -0.178042870056, 0.016029301640, 0.043572159371,  0.118441409045};
  for (DType dt : kBoth) {
    for (const bool fused : {false, true}) {
      BOOST_TEST_CONTEXT(dtype_name(dt) << (fused ? " linear_cross_entropy" : " cross_entropy")) {
        Tensor x = Tensor::from_vector(logits, {3, 4}, dt).set_requires_grad();
        const Tensor eye =
            Tensor::from_vector({1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1}, {4, 4}, dt);
        const Tensor loss =
            fused ? linear_cross_entropy(x, eye, targets) : cross_entropy(x, targets);
        BOOST_TEST(std::abs(loss.item() - 0.9401896985611953) < tol(dt));
        loss.backward();
        BOOST_TEST(allclose(x.grad().to_vector(), expected_grad, tol(dt), 0));
        for (int64_t j = 0; j < 4; ++j) BOOST_TEST(x.grad().at({1, j}) == 0.0);  // exactly
      }
    }
  }
  // Another ignore_index: 0 is a real class (as PyTorch allows), so target 0 is skipped instead.
  const Tensor x = Tensor::from_vector(logits, {3, 4}, DType::f64);
  BOOST_TEST(std::abs(cross_entropy(x, Tensor::from_ids({2, 1, 0}, {3}), 0).item() -
                      cross_entropy(slice(x, 0, 0, 2), Tensor::from_ids({2, 1}, {2})).item()) <
             1e-15);
  expect_throw_with<std::out_of_range>(
      [&] {
        cross_entropy(x, Tensor::from_ids({2, -2, 0}, {3}));
      },
      "target -2 at position 1 is outside [0, 4) (vocab_size) and is not ignore_index -1");
}

// Every row ignored: torch's mean over zero rows is NaN (its gradient 0). Here the loss is 0 and
// the gradient 0, so a fully padded micro-batch cannot poison a run.
BOOST_AUTO_TEST_CASE(all_ignored_rows_give_zero_loss_and_gradient) {
  const Tensor t = Tensor::from_ids({-1, -1}, {2});
  Tensor x = Tensor::from_vector({1, 2, 3, 4, 5, 6}, {2, 3}, DType::f64).set_requires_grad();
  Tensor W =
      Tensor::from_vector({1, 0, 0, 1, 1, 1, 0, 0, 2}, {3, 3}, DType::f64).set_requires_grad();
  for (const Tensor& loss : {cross_entropy(x, t), nll_loss(x, t), linear_cross_entropy(x, W, t)}) {
    BOOST_TEST(loss.item() == 0.0);
    loss.backward();
  }
  BOOST_TEST(allclose(x.grad().to_vector(), std::vector<double>(6, 0.0), 0, 0));
  BOOST_TEST(allclose(W.grad().to_vector(), std::vector<double>(9, 0.0), 0, 0));
}

// F.nll_loss(F.log_softmax(x, -1), t) where some logits are -inf (masked classes): finite loss and
// gradient, where picking with a one-hot product gives NaN (-inf * 0).
BOOST_AUTO_TEST_CASE(nll_loss_of_log_softmax_with_minus_inf_matches_torch) {
  const double inf = std::numeric_limits<double>::infinity();
  for (DType dt : kBoth) {
    BOOST_TEST_CONTEXT(dtype_name(dt)) {
      Tensor x =
          Tensor::from_vector({0, -inf, 1, 2, -inf, 3, 0, -inf}, {2, 4}, dt).set_requires_grad();
      const Tensor t = Tensor::from_ids({2, 1}, {2});
      const Tensor loss = nll_loss(log_softmax(x), t);
      BOOST_TEST(std::abs(loss.item() - 0.7280966580090612) < tol(dt));
      loss.backward();
      BOOST_TEST(allclose(x.grad().to_vector(),
                          {0.045015286585, 0, -0.377635764473, 0.332620477887, 0, -0.023712936589,
                           0.023712936589, 0},
                          tol(dt), 0));
      const Tensor onehot = Tensor::from_vector({0, 0, 1, 0, 0, 1, 0, 0}, {2, 4}, dt);
      BOOST_TEST(std::isnan(neg(mean(sum(mul(log_softmax(x.detach()), onehot), {-1}))).item()));
    }
  }
  // F.nll_loss(lp, [1, -1, 2], ignore_index=-1) on given log-probabilities: (1.2 + 1.0) / 2.
  Tensor lp =
      Tensor::from_vector({-0.5, -1.2, -2.0, -0.1, -3, -0.7, -1, -1, -1}, {3, 3}, DType::f64)
          .set_requires_grad();
  const Tensor loss = nll_loss(lp, Tensor::from_ids({1, -1, 2}, {3}));
  BOOST_TEST(std::abs(loss.item() - 1.1) < 1e-15);
  loss.backward();
  BOOST_TEST(allclose(lp.grad().to_vector(), {0, -0.5, 0, 0, 0, 0, 0, 0, -0.5}, 0, 0));
  // The fused loss is the pick of log_softmax: cross_entropy == nll_loss(log_softmax).
  Generator gen(3);
  const Tensor z = Tensor::randn({2, 3, 5}, gen, DType::f64);
  const Tensor targets = Tensor::from_ids({0, 4, -1, 2, 1, 3}, {2, 3});
  BOOST_TEST(std::abs(cross_entropy(z, targets).item() - nll_loss(log_softmax(z), targets).item()) <
             1e-14);
  expect_throw_with<std::invalid_argument>(
      [&] { nll_loss(Tensor::scalar(1.0), targets); },
      "nll_loss: expected log-probabilities (..., V), got a 0-d tensor");
}

// torch.gather and torch.take_along_dim: values and the scatter-add gradient, repeated indices
// adding up, and take_along_dim's broadcasting of both operands.
BOOST_AUTO_TEST_CASE(gather_and_take_along_dim_match_torch) {
  for (DType dt : kBoth) {
    BOOST_TEST_CONTEXT(dtype_name(dt)) {
      Tensor x = Tensor::from_vector({1, 2, 3, 4, 5, 6}, {2, 3}, dt).set_requires_grad();
      Tensor y = gather(x, 1, Tensor::from_ids({2, 0, 1, 1}, {2, 2}));
      expect_tensor(y, {2, 2}, {3, 1, 5, 5}, 0);
      sum(mul(y, Tensor::from_vector({1, 2, 3, 4}, {2, 2}, dt))).backward();
      BOOST_TEST(allclose(x.grad().to_vector(), {2, 0, 1, 0, 7, 0}, 0, 0));  // 3 + 4 into x[1][1]
      x.zero_grad();
      y = gather(x, 0, Tensor::from_ids({1, 0, 1}, {1, 3}));
      expect_tensor(y, {1, 3}, {4, 2, 6}, 0);
      sum(y).backward();
      BOOST_TEST(allclose(x.grad().to_vector(), {0, 1, 0, 1, 0, 1}, 0, 0));

      // torch.take_along_dim(x, i, 1) with i (1, 2) broadcast over x's rows.
      x.zero_grad();
      y = take_along_dim(x, Tensor::from_ids({0, 2}, {1, 2}), 1);
      expect_tensor(y, {2, 2}, {1, 3, 4, 6}, 0);
      sum(mul(y, Tensor::from_vector({1, 2, 3, 4}, {2, 2}, dt))).backward();
      BOOST_TEST(allclose(x.grad().to_vector(), {1, 0, 2, 3, 0, 4}, 0, 0));
      // ... and x (1, 3) broadcast against i (2, 1): the gradient sums over the broadcast rows.
      Tensor row = Tensor::from_vector({1, 2, 3}, {1, 3}, dt).set_requires_grad();
      y = take_along_dim(row, Tensor::from_ids({2, 1}, {2, 1}), 1);
      expect_tensor(y, {2, 1}, {3, 2}, 0);
      sum(mul(y, Tensor::from_vector({1, 10}, {2, 1}, dt))).backward();
      BOOST_TEST(allclose(row.grad().to_vector(), {0, 10, 1}, 0, 0));
    }
  }
  // The argmax pick: torch.take_along_dim(x, x.argmax(-1, keepdim=True), -1) = [[5], [6]].
  const Tensor x = Tensor::from_vector({1, 5, 3, 4, 2, 6}, {2, 3}, DType::f64);
  expect_tensor(take_along_dim(x, Tensor::from_ids({1, 2}, {2, 1}), -1), {2, 1}, {5, 6}, 0);
  expect_throw_with<std::out_of_range>(
      [&] {
        gather(x, 1, Tensor::from_ids({0, 3}, {2, 1}));
      },
      "gather: index 3 at position 1 is outside [0, 3) along dimension 1 of (2, 3)");
  expect_throw_with<std::invalid_argument>(
      [&] {
        gather(x, 1, Tensor::from_ids({0, 0, 0}, {3, 1}));
      },
      "gather: index (3, 1) is larger than the input (2, 3) in dimension 0");
  expect_throw_with<std::invalid_argument>(
      [&] {
        gather(x, 1, Tensor::from_ids({0, 0}, {2}));
      },
      "expected an index with as many dimensions as the input (2, 3), got (2,)");
  expect_throw_with<std::invalid_argument>(
      [&] {
        take_along_dim(x, Tensor::from_ids({0, 0, 0}, {3, 1}), 1);
      },
      "take_along_dim: input (2, 3) and index (3, 1) cannot be broadcast in dimension 0");
  expect_throw_with<std::invalid_argument>(
      [&] {
        gather(x, 1, Tensor::zeros({2, 1}));
      },
      "expected an i64 index, got f32");
}

// PyTorch's label_smoothing (F.cross_entropy(x, t, ignore_index=2, label_smoothing=0.1), values
// from torch 1.13 in f64): each row's loss is (1 − ε)(−log p_t) + ε mean_c(−log p_c), the mean
// over the two rows not ignored. The three losses agree: cross_entropy, the fused head with an
// identity weight, and nll_loss of log_softmax.
BOOST_AUTO_TEST_CASE(label_smoothing_matches_torch) {
  const std::vector<double> logits = {1, 2,  3, 4, 0.5, 0,   0,   0,    0,   0,
                                      2, -1, 0, 1, 3,   0.3, 0.2, -0.1, 0.9, -2};
  const Tensor targets = Tensor::from_ids({2, 2, 0, 4}, {4});
  struct Case {
    int64_t ignore_index;
    double eps, loss;
    std::vector<double> grad;
  };
  const Case cases[] = {
      {2,
       0.1,
       2.5847219444526495,
       {0,
        0,
        0,
        0,
        0,
        0,
        0,
        0,
        0,
        0,
        -0.342939171374,
        -0.00417188452198,
        0.00584246039806,
        0.0330642722181,
        0.308204323279,
        0.101172005993,
        0.0905925908604,
        0.064520824175,
        0.192568602197,
        -0.448854023225}},
      // ε = 1: the target no longer matters, only the mean of −log p over the classes.
      {2,
       1.0,
       2.1977219444526495,
       {0,
        0,
        0,
        0,
        0,
        0,
        0,
        0,
        0,
        0,
        0.0170608286264,
        -0.094171884522,
        -0.0841575396019,
        -0.0569357277819,
        0.218204323279,
        0.0111720059928,
        0.000592590860411,
        -0.025479175825,
        0.102568602197,
        -0.0888540232248}},
      // No row ignored (ignore_index -100, torch's default), ε = 0.25: the uniform row gets
      // exactly p − q = 0.2 − (0.75 [c = 2] + 0.05), over 4 rows.
      {-100,
       0.25,
       2.0835823490764533,
       {-0.00463821780665,
        0.00887053967549,
        -0.141908850336,
        0.145408116527,
        -0.00773158805975,
        0.0375,
        0.0375,
        -0.15,
        0.0375,
        0.0375,
        -0.141469585687,
        -0.00958594226099,
        -0.00457876980097,
        0.00903213610907,
        0.14660216164,
        0.0430860029964,
        0.0377962954302,
        0.0247604120875,
        0.0887843010983,
        -0.194427011612}}};
  const Tensor eye5 = [] {
    std::vector<double> e(25, 0.0);
    for (int i = 0; i < 5; ++i) e[i * 6] = 1;
    return Tensor::from_vector(e, {5, 5}, DType::f64);
  }();
  for (const Case& c : cases) {
    for (DType dt : kBoth) {
      for (const int op : {0, 1, 2}) {
        BOOST_TEST_CONTEXT(dtype_name(dt) << " eps " << c.eps << " op " << op) {
          Tensor x = Tensor::from_vector(logits, {4, 5}, dt).set_requires_grad();
          const Tensor w = Tensor::from_vector(eye5.to_vector(), {5, 5}, dt);
          const Tensor loss = op == 0   ? cross_entropy(x, targets, c.ignore_index, c.eps)
                              : op == 1 ? linear_cross_entropy(x, w, targets, c.ignore_index, c.eps)
                                        : nll_loss(log_softmax(x), targets, c.ignore_index, c.eps);
          BOOST_TEST(std::abs(loss.item() - c.loss) < (dt == DType::f32 ? 1e-6 : 1e-14));
          loss.backward();
          // The reference gradients are printed to 12 significant digits.
          BOOST_TEST(allclose(x.grad().to_vector(), c.grad, dt == DType::f32 ? 1e-6 : 1e-11, 0));
        }
      }
    }
  }
  // ε = 0 is the plain loss, bit for bit.
  const Tensor x = Tensor::from_vector(logits, {4, 5}, DType::f64);
  BOOST_TEST(cross_entropy(x, targets, 2, 0.0).item() == cross_entropy(x, targets, 2).item());
}

// nll_loss smoothed on given log-probabilities, against torch's formula
// −mean_i((1 − ε) lp_i[t_i] + ε lp_i.mean()) over the rows not ignored (torch's nll_loss has no
// label_smoothing), ε = 0.2, rows 0 and 2: (0.8·1.2 + 0.2·3.7/3 + 1) / 2 = 1.10333…; and a −inf
// logit, which smoothing reads: the loss becomes +inf as in torch, the gradient stays finite.
BOOST_AUTO_TEST_CASE(label_smoothing_in_nll_loss_and_with_minus_inf) {
  Tensor lp =
      Tensor::from_vector({-0.5, -1.2, -2.0, -0.1, -3, -0.7, -1, -1, -1}, {3, 3}, DType::f64)
          .set_requires_grad();
  const Tensor loss = nll_loss(lp, Tensor::from_ids({1, -1, 2}, {3}), -1, 0.2);
  BOOST_TEST(std::abs(loss.item() - 1.1033333333333333) < 1e-15);
  loss.backward();
  const double a = -0.2 / 3 / 2, b = -0.8 / 2 + a;  // ε/V and (1 − ε) + ε/V, over N = 2
  BOOST_TEST(allclose(lp.grad().to_vector(), {a, b, a, 0, 0, 0, a, a, b}, 1e-16, 0));

  const double inf = std::numeric_limits<double>::infinity();
  for (DType dt : kBoth) {
    BOOST_TEST_CONTEXT(dtype_name(dt)) {
      Tensor x = Tensor::from_vector({0, -inf, 1}, {1, 3}, dt).set_requires_grad();
      const Tensor l = cross_entropy(x, Tensor::from_ids({0}, {1}), -1, 0.1);
      BOOST_TEST(l.item() == inf);
      l.backward();
      BOOST_TEST(allclose(x.grad().to_vector(), {-0.664391911963, -0.0333333333333, 0.697725245297},
                          1e-6, 0));
    }
  }
}

// ε outside [0, 1] (or NaN) is refused by each of the three losses, naming it and the range.
BOOST_AUTO_TEST_CASE(label_smoothing_outside_zero_one_is_refused) {
  const Tensor x = Tensor::zeros({2, 3}), w = Tensor::zeros({3, 3});
  const Tensor t = Tensor::from_ids({0, 1}, {2});
  for (const double eps : {-0.1, 1.5, std::numeric_limits<double>::quiet_NaN()}) {
    BOOST_TEST_CONTEXT("eps " << eps) {
      expect_throw_with<std::invalid_argument>([&] { cross_entropy(x, t, -1, eps); },
                                               "cross_entropy: label_smoothing must be in [0, 1]");
      expect_throw_with<std::invalid_argument>([&] { nll_loss(x, t, -1, eps); },
                                               "nll_loss: label_smoothing must be in [0, 1]");
      expect_throw_with<std::invalid_argument>(
          [&] { linear_cross_entropy(x, w, t, -1, eps); },
          "linear_cross_entropy: label_smoothing must be in [0, 1]");
    }
  }
  expect_throw_with<std::invalid_argument>(
      [&] { cross_entropy(x, t, -1, 1.5); },
      "cross_entropy: label_smoothing must be in [0, 1], got 1.5 (the weight of the uniform "
      "distribution mixed into the targets: 0 turns smoothing off, 0.1 is the usual choice)");
}

// ----- the ops users reach for (issue 20), against torch 1.13 in float64 -----

// torch.sigmoid, torch.abs and torch.clamp at x = [-3, -0.5, 0, 0.25, 2, 40], each backpropagated
// from L = sum(y * [1, 2, 3, 4, 5, 6]). clamp's bounds pass the gradient (x = -0.5 and x = 2 at
// min -0.5, max 2), as torch's; min > max gives max everywhere and no gradient.
BOOST_AUTO_TEST_CASE(sigmoid_abs_clamp_match_torch) {
  const std::vector<double> xs = {-3, -0.5, 0, 0.25, 2, 40};
  const std::vector<double> w = {1, 2, 3, 4, 5, 6};
  struct Case {
    const char* what;
    Tensor (*f)(const Tensor&);
    std::vector<double> y, dx;
  };
  const Case cases[] = {
      {"sigmoid",
       [](const Tensor& x) { return sigmoid(x); },
       {0.04742587317756678, 0.3775406687981454, 0.5, 0.5621765008857981, 0.8807970779778823, 1},
       {0.04517665973091214, 0.470007424403189, 0.75, 0.9845363309503934, 0.524967927017533, 0}},
      {"abs",
       [](const Tensor& x) { return abs(x); },
       {3, 0.5, 0, 0.25, 2, 40},
       {-1, -2, 0, 4, 5, 6}},
      {"clamp(x, -0.5, 2)",
       [](const Tensor& x) { return clamp(x, -0.5, 2.0); },
       {-0.5, -0.5, 0, 0.25, 2, 2},
       {0, 2, 3, 4, 5, 0}},
      {"clamp(x, min=0.1)",
       [](const Tensor& x) { return clamp(x, 0.1); },
       {0.1, 0.1, 0.1, 0.25, 2, 40},
       {0, 0, 0, 4, 5, 6}},
      {"clamp(x, max=0.1)",
       [](const Tensor& x) { return clamp(x, std::nullopt, 0.1); },
       {-3, -0.5, 0, 0.1, 0.1, 0.1},
       {1, 2, 3, 0, 0, 0}},
      {"clamp(x, 2, -1)",
       [](const Tensor& x) { return clamp(x, 2.0, -1.0); },
       {-1, -1, -1, -1, -1, -1},
       {0, 0, 0, 0, 0, 0}},
  };
  for (const Case& c : cases) {
    for (DType dt : kBoth) {
      BOOST_TEST_CONTEXT(c.what << " " << dtype_name(dt)) {
        Tensor x = Tensor::from_vector(xs, {6}, dt).set_requires_grad();
        const Tensor y = c.f(x);
        BOOST_TEST((y.dtype() == dt));
        // f32: half an ulp of the values (0.1 is 0.100000001490116...)
        expect_tensor(y, {6}, c.y, dt == DType::f32 ? 1e-7 : 1e-15);
        sum(mul(y, Tensor::from_vector(w, {6}, dt))).backward();
        BOOST_TEST(allclose(x.grad().to_vector(), c.dx, tol(dt), 0));
      }
    }
  }
  // NaN: abs and clamp keep it and give it no gradient (torch: abs'(nan) = 0, clamp's mask is
  // false); clamp keeps -0.0.
  const double nan = std::numeric_limits<double>::quiet_NaN();
  Tensor n = Tensor::from_vector({nan, 0.0, -0.0}, {3}, DType::f64).set_requires_grad();
  const Tensor a = abs(n), c = clamp(n, -1.0, 1.0);
  BOOST_TEST(std::isnan(a.at({0})));
  BOOST_TEST(std::isnan(c.at({0})));
  BOOST_TEST(std::signbit(c.at({2})));
  sum(add(a, c)).backward();
  BOOST_TEST(allclose(n.grad().to_vector(), {0, 1, 1}, 0, 0));
  // Saturation: exactly 0 and 1, never NaN (exp(-x) overflows to inf for x = -800).
  BOOST_TEST(allclose(sigmoid(Tensor::from_vector({-800, 800}, {2}, DType::f64)).to_vector(),
                      {0, 1}, 0, 0));
  // Errors name the problem and the fix.
  const Tensor x = Tensor::zeros({2});
  expect_throw_with<std::invalid_argument>(
      [&] { clamp(x, std::nullopt, std::nullopt); },
      "clamp: no bound given; give min, max or both (clamp(x, 0.0) for min only");
  expect_throw_with<std::invalid_argument>(
      [&] { clamp(x, 0.0, nan); },
      "clamp: the max bound is NaN; give a number, or std::nullopt for no bound");
  expect_throw_with<std::invalid_argument>([] { sigmoid(Tensor::from_ids({1}, {1})); },
                                           "sigmoid: expected a floating tensor (f32 or f64), got "
                                           "i64; cast(x, DType::f32) converts one");
}

// torch.where(cond, a, b) with cond (2, 1) and with cond (3,), a (2, 3), b (3,): values and the
// gradients of L = sum(y * [[1, 2, 3], [4, 5, 6]]), b's summed over the broadcast rows. cond may be
// i64, f32 or f64, holding 0 and 1.
BOOST_AUTO_TEST_CASE(where_matches_torch) {
  const std::vector<double> w = {1, 2, 3, 4, 5, 6};
  for (DType dt : kBoth) {
    for (DType cond_dt : {DType::i64, DType::f32, DType::f64}) {
      BOOST_TEST_CONTEXT(dtype_name(dt) << ", cond " << dtype_name(cond_dt)) {
        const auto mask = [&](const std::vector<double>& v, const Shape& shape) {
          return cond_dt == DType::i64
                     ? Tensor::from_ids(std::vector<int64_t>(v.begin(), v.end()), shape)
                     : Tensor::from_vector(v, shape, cond_dt);
        };
        Tensor a = Tensor::from_vector({1, 2, 3, 4, 5, 6}, {2, 3}, dt).set_requires_grad();
        Tensor b = Tensor::from_vector({10, 20, 30}, {3}, dt).set_requires_grad();
        Tensor y = where(mask({1, 0}, {2, 1}), a, b);
        expect_tensor(y, {2, 3}, {1, 2, 3, 10, 20, 30}, 0);
        sum(mul(y, Tensor::from_vector(w, {2, 3}, dt))).backward();
        BOOST_TEST(allclose(a.grad().to_vector(), {1, 2, 3, 0, 0, 0}, 0, 0));
        BOOST_TEST(allclose(b.grad().to_vector(), {4, 5, 6}, 0, 0));
        a.zero_grad();
        b.zero_grad();
        y = where(mask({1, 0, 1}, {3}), a, b);
        expect_tensor(y, {2, 3}, {1, 20, 3, 4, 20, 6}, 0);
        sum(mul(y, Tensor::from_vector(w, {2, 3}, dt))).backward();
        BOOST_TEST(allclose(a.grad().to_vector(), {1, 0, 3, 4, 0, 6}, 0, 0));
        BOOST_TEST(allclose(b.grad().to_vector(), {0, 7, 0}, 0, 0));
      }
    }
  }
  // The side not chosen may hold inf or NaN: it never reaches y or a gradient (a select, not a
  // product with the mask), as torch.where.
  const double inf = std::numeric_limits<double>::infinity();
  Tensor a = Tensor::from_vector({1, inf}, {2}, DType::f64).set_requires_grad();
  Tensor b = Tensor::from_vector({std::nan(""), 2}, {2}, DType::f64).set_requires_grad();
  const Tensor y = where(Tensor::from_ids({1, 0}, {2}), a, b);
  expect_tensor(y, {2}, {1, 2}, 0);
  sum(y).backward();
  BOOST_TEST(allclose(a.grad().to_vector(), {1, 0}, 0, 0));
  BOOST_TEST(allclose(b.grad().to_vector(), {0, 1}, 0, 0));
  // Errors: a mask that is not 0/1, dtypes, shapes.
  const Tensor x = Tensor::zeros({2, 3}, DType::f64);
  expect_throw_with<std::invalid_argument>(
      [&] {
        where(Tensor::from_ids({1, 2}, {2, 1}), x, x);
      },
      "where: cond must hold only 0 and 1 (a mask; attograd has no bool dtype), got 2 at position "
      "1 of (2, 1) i64; make it 1 where the first choice is wanted and 0 elsewhere");
  expect_throw_with<std::invalid_argument>([&] { where(Tensor::from_vector({0.5}, {1}), x, x); },
                                           "got 0.5 at position 0 of (1,) f32");
  expect_throw_with<std::invalid_argument>(
      [&] { masked_fill(x, Tensor::from_ids({2}, {1}), 0.0); },
      "got 2 at position 0 of (1,) i64; make it 1 where the value is to be filled in");
  expect_throw_with<std::invalid_argument>(
      [&] { where(Tensor::from_ids({1}, {1}), x, Tensor::zeros({3})); },
      "where: dtypes differ, f64 (2, 3) vs f32 (3,) (attograd never converts implicitly; "
      "cast(x, DType::f64) makes them one)");
  expect_throw_with<std::invalid_argument>(
      [&] {
        where(Tensor::from_ids({1, 0}, {2}), x, x);
      },
      "where: shapes (2,) and (2, 3) cannot be broadcast");
  expect_throw_with<std::invalid_argument>([&] { where(Tensor(), x, x); }, "where: undefined cond");
}

// x.masked_fill(mask, value), the attention mask's op: -1e9 and -inf where mask is 1, no gradient
// there; mask broadcasts with x (torch: a (2, 3) mask on a (3,) x gives (2, 3)).
BOOST_AUTO_TEST_CASE(masked_fill_matches_torch) {
  const double inf = std::numeric_limits<double>::infinity();
  for (DType dt : kBoth) {
    BOOST_TEST_CONTEXT(dtype_name(dt)) {
      Tensor x = Tensor::from_vector({1, 2, 3, 4, 5, 6}, {2, 3}, dt).set_requires_grad();
      const Tensor mask = Tensor::from_ids({0, 1, 0}, {3});
      Tensor y = masked_fill(x, mask, -1e9);
      expect_tensor(y, {2, 3}, {1, -1e9, 3, 4, -1e9, 6}, 0);
      sum(mul(y, Tensor::from_vector({1, 2, 3, 4, 5, 6}, {2, 3}, dt))).backward();
      BOOST_TEST(allclose(x.grad().to_vector(), {1, 0, 3, 4, 0, 6}, 0, 0));
      // softmax over a row with -inf filled in: the masked entries get probability 0.
      const Tensor p = softmax(masked_fill(x, mask, -inf));
      BOOST_TEST(p.at({0, 1}) == 0.0);
      BOOST_TEST(std::abs(p.at({0, 0}) - 0.11920292202211755) < tol(dt));
      expect_tensor(masked_fill(Tensor::zeros({3}, dt), Tensor::ones({2, 3}, dt), 1.5), {2, 3},
                    {1.5, 1.5, 1.5, 1.5, 1.5, 1.5}, 0);
    }
  }
  expect_throw_with<std::invalid_argument>(
      [] {
        masked_fill(Tensor::zeros({2}), Tensor::from_vector({1, -1}, {2}), 0);
      },
      "masked_fill: mask must hold only 0 and 1 (a mask; attograd has no bool dtype), got -1 at "
      "position 1 of (2,) f32");
  expect_throw_with<std::invalid_argument>(
      [] {
        masked_fill(Tensor::from_ids({1, 2}, {2}), Tensor::from_ids({1, 0}, {2}), 0);
      },
      "masked_fill: expected a floating tensor (f32 or f64), got i64");
}

// x.to(dtype): f64 -> f32 rounds to nearest (torch's float32 values below, printed as doubles), the
// gradient comes back in f64; f32 -> f64 and back; i64 <-> floating (toward zero, no gradient).
BOOST_AUTO_TEST_CASE(cast_matches_torch) {
  Tensor x =
      Tensor::from_vector({0.1, 1.0 / 3, 1e-40, 3.4e38}, {2, 2}, DType::f64).set_requires_grad();
  const Tensor y = cast(x, DType::f32);
  BOOST_TEST((y.dtype() == DType::f32));
  BOOST_TEST(y.requires_grad());
  expect_tensor(
      y, {2, 2},
      {0.10000000149011612, 0.3333333432674408, 9.99994610111476e-41, 3.3999999521443642e+38}, 0);
  sum(mul(y, Tensor::from_vector({1, 2, 3, 4}, {2, 2}, DType::f32))).backward();
  BOOST_TEST((x.grad().dtype() == DType::f64));
  BOOST_TEST(allclose(x.grad().to_vector(), {1, 2, 3, 4}, 0, 0));

  // f32 -> f64 is exact; the f64 gradient 1/3 comes back rounded to f32.
  Tensor s = Tensor::from_vector({0.5, -2}, {2}, DType::f32).set_requires_grad();
  const Tensor d = cast(s, DType::f64);
  BOOST_TEST((d.dtype() == DType::f64));
  expect_tensor(d, {2}, {0.5, -2}, 0);
  sum(mul_scalar(d, 1.0 / 3)).backward();
  BOOST_TEST((s.grad().dtype() == DType::f32));
  BOOST_TEST(s.grad().to_vector()[0] == static_cast<double>(1.0f / 3));
  // The same dtype is x itself, as torch's .to; a non-contiguous input is read in its order.
  BOOST_TEST(detail::impl(cast(x, DType::f64)) == detail::impl(x));
  expect_tensor(
      cast(transpose(x, 0, 1), DType::f32), {2, 2},
      {0.10000000149011612, 9.99994610111476e-41, 0.3333333432674408, 3.3999999521443642e+38}, 0);
  // f64 beyond f32's range becomes inf, as in torch.
  BOOST_TEST(cast(Tensor::scalar(1e300, DType::f64), DType::f32).item() ==
             std::numeric_limits<double>::infinity());

  // torch.tensor([2.7, -2.7, 1e10]).to(torch.int64) -> [2, -2, 10000000000]; no gradient.
  Tensor f = Tensor::from_vector({2.7, -2.7, 1e10}, {3}, DType::f64).set_requires_grad();
  const Tensor ids = cast(f, DType::i64);
  BOOST_TEST((ids.dtype() == DType::i64));
  BOOST_TEST(!ids.requires_grad());
  BOOST_TEST((ids.to_ids() == std::vector<int64_t>{2, -2, 10000000000}));
  expect_tensor(cast(Tensor::from_ids({-3, 7}, {2}), DType::f32), {2}, {-3, 7}, 0);
  expect_throw_with<std::out_of_range>(
      [] {
        cast(Tensor::from_vector({1, std::nan("")}, {2}, DType::f64), DType::i64);
      },
      "cast: f64 value nan at position 1 of (2,) does not fit i64 (integers in [-2^63, 2^63)); "
      "replace NaN and infinities first, e.g. with where or clamp");
  expect_throw_with<std::out_of_range>([] { cast(Tensor::from_vector({1e19}, {1}), DType::i64); },
                                       "f32 value 1e+19 at position 0");
  expect_throw_with<std::invalid_argument>([] { cast(Tensor(), DType::f32); },
                                           "cast: undefined tensor");
}

// torch.argmax: the first maximum along dim, a NaN counting as the maximum (row 2, column 0);
// i64, never requiring grad.
BOOST_AUTO_TEST_CASE(argmax_matches_torch) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  for (DType dt : kBoth) {
    BOOST_TEST_CONTEXT(dtype_name(dt)) {
      Tensor x = Tensor::from_vector({1, 5, 3, 5, 7, 2, 7, 0, nan, 1, 2, 3}, {3, 4}, dt)
                     .set_requires_grad();
      const Tensor rows = argmax(x, 1);
      BOOST_TEST((rows.dtype() == DType::i64));
      BOOST_TEST(!rows.requires_grad());
      BOOST_TEST((rows.shape() == Shape{3}));
      BOOST_TEST((rows.to_ids() == std::vector<int64_t>{1, 0, 0}));
      BOOST_TEST((argmax(x, 0).to_ids() == std::vector<int64_t>{2, 0, 1, 0}));
      BOOST_TEST((argmax(x, -1, true).shape() == Shape{3, 1}));
      // A transposed view: the same answer as the copy.
      BOOST_TEST((argmax(transpose(x, 0, 1), 0).to_ids() == std::vector<int64_t>{1, 0, 0}));
    }
  }
  const Tensor x = Tensor::zeros({2, 3});
  expect_throw_with<std::invalid_argument>([&] { argmax(x, 2); },
                                           "argmax: dimension 2 is out of range for a 2-d tensor");
  expect_throw_with<std::invalid_argument>(
      [] {
        argmax(Tensor::zeros({2, 0}), 1);
      },
      "argmax: dimension 1 of (2, 0) is empty, so it has no maximum");
  expect_throw_with<std::invalid_argument>([] { argmax(Tensor::from_ids({1}, {1}), 0); },
                                           "argmax: expected a floating tensor");
}

// torch.stack([a, b], dim) for every dim of two (2, 2) tensors, and the gradient of
// L = sum(stack([a, b, a], 1) * arange(12).reshape(2, 3, 2)): a's two uses add up.
BOOST_AUTO_TEST_CASE(stack_matches_torch) {
  for (DType dt : kBoth) {
    BOOST_TEST_CONTEXT(dtype_name(dt)) {
      Tensor a = Tensor::from_vector({1, 2, 3, 4}, {2, 2}, dt).set_requires_grad();
      Tensor b = Tensor::from_vector({5, 6, 7, 8}, {2, 2}, dt).set_requires_grad();
      expect_tensor(stack({a, b}, 0), {2, 2, 2}, {1, 2, 3, 4, 5, 6, 7, 8}, 0);
      expect_tensor(stack({a, b}, 1), {2, 2, 2}, {1, 2, 5, 6, 3, 4, 7, 8}, 0);
      expect_tensor(stack({a, b}, 2), {2, 2, 2}, {1, 5, 2, 6, 3, 7, 4, 8}, 0);
      expect_tensor(stack({a, b}, -1), {2, 2, 2}, {1, 5, 2, 6, 3, 7, 4, 8}, 0);
      expect_tensor(stack({a}, -3), {1, 2, 2}, {1, 2, 3, 4}, 0);
      std::vector<double> ramp(12);
      for (size_t i = 0; i < ramp.size(); ++i) ramp[i] = static_cast<double>(i);
      sum(mul(stack({a, b, a}, 1), Tensor::from_vector(ramp, {2, 3, 2}, dt))).backward();
      BOOST_TEST(allclose(a.grad().to_vector(), {4, 6, 16, 18}, 0, 0));
      BOOST_TEST(allclose(b.grad().to_vector(), {2, 3, 8, 9}, 0, 0));
    }
  }
  // Scalars stack into a vector; a vector of tensors works as well as a braced list.
  const std::vector<Tensor> scalars = {Tensor::scalar(1.5), Tensor::scalar(-2)};
  expect_tensor(stack(scalars, 0), {2}, {1.5, -2}, 0);
  const Tensor a = Tensor::zeros({2, 2});
  expect_throw_with<std::invalid_argument>(
      [&] {
        stack({a, Tensor::zeros({2, 3})}, 0);
      },
      "stack: every tensor must have one shape, but tensor 0 is (2, 2) and tensor 1 is (2, 3); to "
      "join along an existing dimension, use concat");
  expect_throw_with<std::invalid_argument>(
      [&] {
        stack({a, a}, 3);
      },
      "stack: dimension 3 is out of range for stacking 2-d tensors (the new dimension goes in "
      "[-3, 2])");
  expect_throw_with<std::invalid_argument>(
      [&] {
        stack({a, Tensor::zeros({2, 2}, DType::f64)}, 0);
      },
      "stack: dtypes differ");
  expect_throw_with<std::invalid_argument>([] { stack(std::vector<Tensor>{}, 0); },
                                           "stack: no tensors given");
}

// x.select(dim, index) on arange(24).reshape(2, 3, 4): a view, a negative index from the end, and
// the gradient of L = sum(x.select(1, -1) * [[1, 2, 3, 4], [5, 6, 7, 8]]).
BOOST_AUTO_TEST_CASE(select_matches_torch) {
  for (DType dt : kBoth) {
    BOOST_TEST_CONTEXT(dtype_name(dt)) {
      std::vector<double> ramp(24);
      for (size_t i = 0; i < ramp.size(); ++i) ramp[i] = static_cast<double>(i);
      Tensor x = Tensor::from_vector(ramp, {2, 3, 4}, dt).set_requires_grad();
      const Tensor s = select(x, 1, -1);
      expect_tensor(s, {2, 4}, {8, 9, 10, 11, 20, 21, 22, 23}, 0);
      BOOST_TEST(s.shares_storage(x));
      expect_tensor(select(x, 0, 1), {3, 4}, std::vector<double>(ramp.begin() + 12, ramp.end()), 0);
      expect_tensor(select(select(x, 2, 3), 0, 0), {3}, {3, 7, 11}, 0);
      sum(mul(s, Tensor::from_vector({1, 2, 3, 4, 5, 6, 7, 8}, {2, 4}, dt))).backward();
      std::vector<double> dx(24, 0.0);
      for (int i = 0; i < 4; ++i) dx[8 + i] = 1 + i, dx[20 + i] = 5 + i;
      BOOST_TEST(allclose(x.grad().to_vector(), dx, 0, 0));
    }
  }
  const Tensor x = Tensor::zeros({2, 3});
  expect_throw_with<std::out_of_range>(
      [&] { select(x, 1, 3); },
      "select: index 3 is out of range for dimension 1 of (2, 3) (size 3; valid: -3 to 2)");
  expect_throw_with<std::out_of_range>([&] { select(x, 0, -3); }, "select: index -3");
  expect_throw_with<std::invalid_argument>([&] { select(x, 2, 0); },
                                           "select: dimension 2 is out of range for a 2-d tensor");
  expect_throw_with<std::invalid_argument>([] { select(Tensor::scalar(1), 0, 0); },
                                           "select: a 0-d tensor has no dimension to index");
}

// Slicing with a step, as torch's x[1:8:3] and x[:, 0:4:2]: views, ceil((end - start) / step)
// elements, the gradient scattered back to every step-th place.
BOOST_AUTO_TEST_CASE(slice_with_a_step_matches_torch) {
  for (DType dt : kBoth) {
    BOOST_TEST_CONTEXT(dtype_name(dt)) {
      Tensor x = Tensor::from_vector({0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, {10}, dt).set_requires_grad();
      const Tensor s = slice(x, 0, 1, 8, 3);
      expect_tensor(s, {3}, {1, 4, 7}, 0);
      BOOST_TEST(s.shares_storage(x));
      sum(mul(s, Tensor::from_vector({1, 2, 3}, {3}, dt))).backward();
      BOOST_TEST(allclose(x.grad().to_vector(), {0, 1, 0, 0, 2, 0, 0, 3, 0, 0}, 0, 0));
      const Tensor m = Tensor::from_vector({0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}, {3, 4}, dt);
      expect_tensor(slice(m, 1, 0, 4, 2), {3, 2}, {0, 2, 4, 6, 8, 10}, 0);
      expect_tensor(slice(m, -1, 1, 3, 5), {3, 1}, {1, 5, 9}, 0);
      expect_tensor(slice(m, 1, 2, 2, 2), {3, 0}, {}, 0);
      // a stepped slice of a stepped slice, then flattened (a copy: the strides do not allow a
      // view)
      expect_tensor(reshape(slice(slice(m, 1, 0, 4, 2), 0, 0, 3, 2), {-1}), {4}, {0, 2, 8, 10}, 0);
    }
  }
  expect_throw_with<std::invalid_argument>(
      [] { slice(Tensor::zeros({4}), 0, 0, 4, 0); },
      "slice: step 0 must be at least 1 (as torch's; for the reverse order, index the positions "
      "with gather)");
}

// Issue 32's ops for a custom loss, against torch (values printed by python3-torch 1.13,
// float64): x = [[1, -2, 3.5], [0.5, 4, -1]].
// Ties (a newcomer's finding, issue 32): torch.amax, torch.amin, torch.max(x) and torch.min(x)
// split the gradient evenly among equal extremes; torch.max(x, dim) and torch.min(x, dim) give
// it to the first, the index they return. Each output i weighted by i + 1 (the sum of y * [1, 2,
// ...]) so a gradient sent to the wrong row shows. Values from torch 1.13 (f64).
BOOST_AUTO_TEST_CASE(ties_split_as_torch_splits_them) {
  const auto grad_of = [](const std::function<Tensor(const Tensor&)>& f,
                          const std::vector<double>& values) {
    const Tensor x =
        Tensor::from_vector(values, {2, static_cast<int64_t>(values.size() / 2)}, DType::f64)
            .set_requires_grad();
    const Tensor y = f(x);
    std::vector<double> weights(static_cast<size_t>(y.numel()));
    for (size_t i = 0; i < weights.size(); ++i) weights[i] = static_cast<double>(i + 1);
    sum(mul(y, Tensor::from_vector(weights, y.shape(), DType::f64))).backward();
    return x.grad().to_vector();
  };
  const std::vector<double> x = {1, 3, 3, 2, 5, 5, 5, 0};  // (2, 4)
  BOOST_TEST(allclose(grad_of([](const Tensor& t) { return amax(t, 1); }, x),
                      {0, 0.5, 0.5, 0, 2.0 / 3, 2.0 / 3, 2.0 / 3, 0}, 1e-15, 0));
  BOOST_TEST(allclose(grad_of([](const Tensor& t) { return max(t, 1); }, x),
                      {0, 1, 0, 0, 2, 0, 0, 0}, 0, 0));
  BOOST_TEST(allclose(grad_of([](const Tensor& t) { return max(t); }, x),
                      {0, 0, 0, 0, 1.0 / 3, 1.0 / 3, 1.0 / 3, 0}, 1e-15, 0));
  BOOST_TEST(allclose(grad_of([](const Tensor& t) { return amax(t, 0); }, x),
                      {0, 0, 0, 4, 1, 2, 3, 0}, 0, 0));
  const std::vector<double> z = {2, 1, 1, 0, 4, 0};  // (2, 3)
  BOOST_TEST(allclose(grad_of([](const Tensor& t) { return amin(t, 1); }, z),
                      {0, 0.5, 0.5, 1, 0, 1}, 0, 0));
  BOOST_TEST(
      allclose(grad_of([](const Tensor& t) { return min(t, 1); }, z), {0, 1, 0, 2, 0, 0}, 0, 0));
  BOOST_TEST(
      allclose(grad_of([](const Tensor& t) { return min(t); }, z), {0, 0, 0, 0.5, 0, 0.5}, 0, 0));
  // NaNs are the max, and tie among themselves: torch.max(x) of [[1, nan, 3, nan], [0, 1, 2, 2]]
  // gives x.grad [[0, .5, 0, .5], [0, 0, 0, 0]] (torch.amax would give the NaN row NaN).
  const double nan = std::nan("");
  const std::vector<double> with_nan = {1, nan, 3, nan, 0, 1, 2, 2};
  BOOST_TEST(allclose(grad_of([](const Tensor& t) { return max(t); }, with_nan),
                      {0, 0.5, 0, 0.5, 0, 0, 0, 0}, 0, 0));
  BOOST_TEST(allclose(grad_of([](const Tensor& t) { return amax(t, 1); }, with_nan),
                      {0, 0.5, 0, 0.5, 0, 0, 1, 1}, 0, 0));
  // The max of nothing: refused by the name called (torch refuses it too).
  expect_throw_with<std::invalid_argument>(
      [] { min(Tensor::zeros({0})); },
      "min: the tensor (0,) has no element, so it has no min (torch refuses it too)");
  expect_throw_with<std::invalid_argument>(
      [] {
        max(Tensor::zeros({2, 0}));
      },
      "max: the tensor (2, 0) has no element");
  // Ops built on others say their own name (a second newcomer's finding, issue 32).
  expect_throw_with<std::invalid_argument>(
      [] { argmin(Tensor::zeros({0}), 0); },
      "argmin: dimension 0 of (0,) is empty, so it has no minimum");
  expect_throw_with<std::invalid_argument>(
      [] {
        attograd::std(Tensor::zeros({2, 3}), {5});
      },
      "std: ");
  expect_throw_with<std::invalid_argument>(
      [] {
        min(Tensor::from_ids({1, 2}, {2}));
      },
      "min: expected a floating tensor");
  expect_throw_with<std::invalid_argument>(
      [] {
        amin(Tensor::from_ids({1, 2}, {2}), 0);
      },
      "amin: expected a floating tensor");
}

BOOST_AUTO_TEST_CASE(var_std_min_squeeze_and_softmax_over_any_dim_match_torch) {
  const auto input = [] {
    return Tensor::from_vector({1, -2, 3.5, 0.5, 4, -1}, {2, 3}, DType::f64).set_requires_grad();
  };
  const Tensor x = input();
  BOOST_TEST(allclose(var(x, {0}).to_vector(), {0.125, 18.0, 10.125}, 1e-15, 0));
  BOOST_TEST(
      allclose(var(x, {1}, 0).to_vector(), {5.055555555555556, 4.388888888888889}, 1e-15, 0));
  BOOST_TEST(std::abs(var(x).item() - 5.7) < 1e-14);
  BOOST_TEST(std::abs(attograd::std(x).item() - 2.3874672772626644) < 1e-14);
  const Tensor s = attograd::std(x, {1}, 1, true);
  BOOST_TEST((s.shape() == Shape{2, 1}));
  BOOST_TEST(allclose(s.to_vector(), {2.753785273643051, 2.565800719723442}, 1e-14, 0));
  // torch.std(x, dim=1).sum().backward(): x.grad
  const Tensor y = input();
  sum(attograd::std(y, {1})).backward();
  BOOST_TEST(allclose(y.grad().to_vector(),
                      {0.030261376633440116, -0.5144434027684821, 0.4841820261350419,
                       -0.1299139604923262, 0.5521343320923862, -0.42222037160006015},
                      1e-13, 0));
  // A row of equal values: std 0, and torch's gradient there is 0 (std_backward masks it), where
  // sqrt(var) alone gave inf * 0 = NaN. torch.std(z, dim=1).sum().backward(): z.grad = [0, 0, 0,
  // -0.5, 0, 0.5] for z = [[2, 2, 2], [1, 2, 3]].
  const Tensor z = Tensor::from_vector({2, 2, 2, 1, 2, 3}, {2, 3}, DType::f64).set_requires_grad();
  const Tensor sz = attograd::std(z, {1});
  BOOST_TEST(allclose(sz.to_vector(), {0, 1}, 0, 0));
  sum(sz).backward();
  BOOST_TEST(allclose(z.grad().to_vector(), {0, 0, 0, -0.5, 0, 0.5}, 1e-15, 0));
  expect_throw_with<std::invalid_argument>(
      [&] { var(x, {0}, 2); },
      "var: 2 element(s) reduced with correction 2 leave n − correction = 0");

  BOOST_TEST(allclose(amin(x, 1).to_vector(), {-2, -1}, 0, 0));
  BOOST_TEST(allclose(min(x, 1).to_vector(), {-2, -1}, 0, 0));
  BOOST_TEST(argmin(x, 0).to_ids() == std::vector<int64_t>({1, 0, 1}));
  BOOST_TEST(min(x).item() == -2.0);
  BOOST_TEST(max(x).item() == 4.0);
  BOOST_TEST(allclose(amax(x, 0).to_vector(), {1, 4, 3.5}, 0, 0));

  BOOST_TEST(allclose(softmax(x, 0).to_vector(),
                      {0.6224593312018546, 0.0024726231566347748, 0.9890130573694068,
                       0.37754066879814546, 0.9975273768433653, 0.01098694263059318},
                      1e-15, 0));
  BOOST_TEST(allclose(log_softmax(x, 0).to_vector(),
                      {-0.4740769841801067, -6.00247568513773, -0.011047744848593777,
                       -0.9740769841801067, -0.002475685137730357, -4.511047744848594},
                      1e-14, 0));

  BOOST_TEST((squeeze(Tensor::zeros({2, 1, 3, 1})).shape() == Shape{2, 3}));
  BOOST_TEST((squeeze(Tensor::zeros({2, 1, 3}), 1).shape() == Shape{2, 3}));
  BOOST_TEST((squeeze(Tensor::zeros({2, 1, 3}), 0).shape() == Shape{2, 1, 3}));  // size 2 stays
  BOOST_TEST((unsqueeze(Tensor::zeros({2, 3}), -1).shape() == Shape{2, 3, 1}));
  BOOST_TEST((unsqueeze(Tensor::zeros({2, 3}), 0).shape() == Shape{1, 2, 3}));
  expect_throw_with<std::invalid_argument>(
      [] {
        unsqueeze(Tensor::zeros({2, 3}), 3);
      },
      "unsqueeze: dimension 3 is out of range for a 2-d tensor (a new dimension goes at 0 to 2, "
      "or −1 to −3 from the end)");
}

// The comparisons as torch gives them: torch.gt(a, b).double() etc. for a = [[1, nan, 3]],
// b = [[2], [1]] broadcast to (2, 3); a NaN compares false but for ne.
BOOST_AUTO_TEST_CASE(comparisons_match_torch) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const Tensor a = Tensor::from_vector({1, nan, 3}, {1, 3}, DType::f64);
  const Tensor b = Tensor::from_vector({2, 1}, {2, 1}, DType::f64);
  BOOST_TEST(allclose(gt(a, b).to_vector(), {0, 0, 1, 0, 0, 1}, 0, 0));
  BOOST_TEST(allclose(lt(a, b).to_vector(), {1, 0, 0, 0, 0, 0}, 0, 0));
  BOOST_TEST(allclose(ge(a, b).to_vector(), {0, 0, 1, 1, 0, 1}, 0, 0));
  BOOST_TEST(allclose(le(a, b).to_vector(), {1, 0, 0, 1, 0, 0}, 0, 0));
  BOOST_TEST(allclose(eq(a, b).to_vector(), {0, 0, 0, 1, 0, 0}, 0, 0));
  BOOST_TEST(allclose(ne(a, b).to_vector(), {1, 1, 1, 0, 1, 1}, 0, 0));
  BOOST_TEST((gt(a, b).shape() == Shape{2, 3}));
  BOOST_TEST(allclose(gt(a, 1.5).to_vector(), {0, 0, 1}, 0, 0));  // a > 1.5
  // A mask for where and masked_fill: relu by hand, and NaN replaced.
  const Tensor x = Tensor::from_vector({-1, 2, -3, 4}, {4}, DType::f32).set_requires_grad();
  const Tensor y = where(gt(x, 0.0), x, Tensor::zeros({}, DType::f32));
  BOOST_TEST(allclose(y.to_vector(), {0, 2, 0, 4}, 0, 0));
  sum(y).backward();
  BOOST_TEST(allclose(x.grad().to_vector(), {0, 1, 0, 1}, 0, 0));
  BOOST_TEST(!gt(x, 0.0).requires_grad());
  BOOST_TEST(allclose(masked_fill(a, ne(a, a), 0.0).to_vector(), {1, 0, 3}, 0, 0));
  expect_throw_with<std::invalid_argument>([&] { gt(a, Tensor::zeros({2}, DType::f64)); },
                                           "gt: shapes (1, 3) and (2,) cannot be broadcast");
  expect_throw_with<std::invalid_argument>([&] { eq(a, cast(a, DType::f32)); }, "eq:");
}
