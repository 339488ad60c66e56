// AutocastGuard (autograd/autocast.h): under it the f32 products of matmul, linear and
// linear_cross_entropy, forward and both VJPs, are exactly kernels::matmul_bf16's; the precision
// is the one recorded at the forward; f64 is never affected; the guard's state is per thread and
// restored however its scope is left.
#define BOOST_TEST_MODULE autocast
#include <boost/test/unit_test.hpp>
#include <cmath>
#include <stdexcept>
#include <thread>
#include <vector>

#include "autograd/autocast.h"
#include "autograd/engine.h"
#include "autograd/kernels/bf16.h"
#include "autograd/kernels/matmul.h"
#include "autograd/ops.h"
#include "autograd/random.h"
#include "tests/test_util.h"

using namespace attograd;
using attograd::testing::allclose;

namespace {

constexpr double kTwoToMinus8 = 0x1.0p-8;

// A fresh (shape) f32 leaf of N(0, 1) values, requiring grad.
Tensor leaf(const Shape& shape, Generator& gen, DType dtype = DType::f32) {
  return Tensor::randn(shape, gen, dtype).set_requires_grad();
}

std::vector<float> floats(const std::vector<double>& v) {
  return std::vector<float>(v.begin(), v.end());
}
std::vector<float> floats(const Tensor& t) { return floats(t.to_vector()); }

// C (M, N) = op(A) op(B) by kernels::matmul_bf16 on the tensors' (contiguous f32) data.
std::vector<float> bf16_product(const Tensor& a, const Tensor& b, int64_t M, int64_t K, int64_t N,
                                bool a_trans, bool b_trans) {
  std::vector<float> c(static_cast<size_t>(M * N));
  kernels::matmul_bf16(c.data(), a.data<float>(), b.data<float>(), M, K, N, a_trans, b_trans,
                       false);
  return c;
}

// The bound on |bf16 product - f32 product| of one element: each operand's rounding is at most
// 2^-9 relative, so each term a b at most (2^-8 + 2^-18) |a b| off, plus the f32 sums' own
// error (K 2^-24 each, counted twice: both sides sum in f32). Σ |a_ik b_kj| is `abs_sum`.
double bf16_bound(double abs_sum, int64_t K) {
  return (kTwoToMinus8 + 0x1.0p-18 + 2.0 * static_cast<double>(K) * 0x1.0p-24) * abs_sum;
}

// Whether every element of `bf16` is within bf16_bound of `f32`, where abs_products holds
// Σ_k |a_ik b_kj| per element; and at least one differs (the guard did something).
bool within_bf16_rounding(const std::vector<double>& bf16, const std::vector<double>& f32,
                          const std::vector<double>& abs_products, int64_t K) {
  bool differs = false;
  for (size_t i = 0; i < f32.size(); ++i) {
    differs = differs || bf16[i] != f32[i];
    if (std::abs(bf16[i] - f32[i]) > bf16_bound(abs_products[i], K)) return false;
  }
  return differs;
}

// Σ_k |a_ik| |b_kj| for a (M, K) and b given as op(b) (K, N) in f64 through the engine's own
// matmul: the scale of each element's rounding bound.
std::vector<double> abs_products(const Tensor& a, const Tensor& b) {
  NoGradGuard no_grad;
  return matmul(abs(cast(a.detach(), DType::f64)), abs(cast(b.detach(), DType::f64))).to_vector();
}

}  // namespace

// The guard's state: f32 by default, the guard's value inside, the previous one after, nested,
// and restored when an exception leaves the scope.
BOOST_AUTO_TEST_CASE(the_guard_sets_and_restores_the_precision) {
  BOOST_TEST(autocast_precision() == MatmulPrecision::f32);
  {
    const AutocastGuard bf16;  // bf16 is the default argument
    BOOST_TEST(autocast_precision() == MatmulPrecision::bf16);
    {
      const AutocastGuard off(MatmulPrecision::f32);  // torch.autocast(enabled=False) inside
      BOOST_TEST(autocast_precision() == MatmulPrecision::f32);
    }
    BOOST_TEST(autocast_precision() == MatmulPrecision::bf16);
  }
  BOOST_TEST(autocast_precision() == MatmulPrecision::f32);
  try {
    const AutocastGuard bf16(MatmulPrecision::bf16);
    throw std::runtime_error("leaves the scope");
  } catch (const std::runtime_error&) {
  }
  BOOST_TEST(autocast_precision() == MatmulPrecision::f32);
  BOOST_TEST(std::string(matmul_precision_name(MatmulPrecision::bf16)) == "bf16");
  BOOST_TEST(std::string(matmul_precision_name(MatmulPrecision::f32)) == "f32");
}

// Per thread, as grad mode: another thread is not in this thread's autocast. (Skipped in the
// WebAssembly build, which has no threads.)
BOOST_AUTO_TEST_CASE(the_precision_is_per_thread) {
  if (!attograd::testing::build_has(attograd::testing::kBuildHasThreads, "threads")) return;
  const AutocastGuard bf16(MatmulPrecision::bf16);
  MatmulPrecision seen = MatmulPrecision::bf16;
  std::thread other([&seen] { seen = autocast_precision(); });
  other.join();
  BOOST_TEST(seen == MatmulPrecision::f32);
  BOOST_TEST(autocast_precision() == MatmulPrecision::bf16);
}

// Known values: x = (1 + 2^-8, 1 + 2^-8), W = ((1 + 2^-8, 1)), dy = 1 + 2^-8. 1 + 2^-8 lies
// halfway between the bf16 neighbours 1 and 1 + 2^-7 and rounds to the even one, 1, so in bf16
// y = 1 + 1 + b, dx = (1, 1), dW = (1, 1), where f32 gives (1 + 2^-8)^2 + (1 + 2^-8) + b and so on.
// db = dy is a sum, not a product: f32 in both.
BOOST_AUTO_TEST_CASE(linear_known_values_under_the_guard) {
  const double e = 1 + kTwoToMinus8;
  for (const MatmulPrecision p : {MatmulPrecision::f32, MatmulPrecision::bf16}) {
    Tensor x = Tensor::from_vector({e, e}, {1, 2}).set_requires_grad();
    Tensor w = Tensor::from_vector({e, 1}, {1, 2}).set_requires_grad();
    Tensor b = Tensor::from_vector({0.5}, {1}).set_requires_grad();
    const AutocastGuard guard(p);
    const Tensor y = linear(x, w, b);
    y.backward(Tensor::from_vector({e}, {1, 1}));
    if (p == MatmulPrecision::bf16) {
      BOOST_TEST(y.to_vector() == std::vector<double>{2.5});
      BOOST_TEST(x.grad().to_vector() == (std::vector<double>{1, 1}));
      BOOST_TEST(w.grad().to_vector() == (std::vector<double>{1, 1}));
    } else {
      BOOST_TEST(y.to_vector() == std::vector<double>{e * e + e + 0.5});
      BOOST_TEST(x.grad().to_vector() == (std::vector<double>{e * e, e}));
      BOOST_TEST(w.grad().to_vector() == (std::vector<double>{e * e, e * e}));
    }
    BOOST_TEST(b.grad().to_vector() == std::vector<double>{e});
  }
}

// linear (B, T, C) -> (B, T, out) under the guard: y, dx and dW equal matmul_bf16's bit for bit,
// db is f32's, and each differs from the f32 op's by no more than bf16's rounding bound.
BOOST_AUTO_TEST_CASE(linear_under_the_guard_is_matmul_bf16) {
  Generator gen(21);
  const int64_t B = 2, T = 5, C = 37, out = 40, rows = B * T;
  const Tensor x = leaf({B, T, C}, gen), w = leaf({out, C}, gen), b = leaf({out}, gen);
  const Tensor dy = Tensor::randn({B, T, out}, gen);
  const auto run = [&](MatmulPrecision p) {
    x.zero_grad(), w.zero_grad(), b.zero_grad();
    const AutocastGuard guard(p);
    const Tensor y = linear(x, w, b);
    y.backward(dy);
    return std::vector<std::vector<double>>{y.to_vector(), x.grad().to_vector(),
                                            w.grad().to_vector(), b.grad().to_vector()};
  };
  const auto f32 = run(MatmulPrecision::f32), bf16 = run(MatmulPrecision::bf16);
  // y (rows, out) = x Wᵀ + b: the kernel with the bias fused.
  std::vector<float> y(static_cast<size_t>(rows * out));
  kernels::matmul_bf16(y.data(), x.data<float>(), w.data<float>(), rows, C, out, false, true, false,
                       b.data<float>());
  BOOST_TEST(floats(bf16[0]) == y);
  // dx (rows, C) = dy W; dW (out, C) = dyᵀ x.
  BOOST_TEST(floats(bf16[1]) == bf16_product(dy, w, rows, out, C, false, false));
  BOOST_TEST(floats(bf16[2]) == bf16_product(dy, x, out, rows, C, true, false));
  BOOST_TEST(bf16[3] == f32[3]);  // db is a sum of dy, in f32 either way
  // Within bf16's rounding of the f32 results.
  const Tensor x2 = reshape(x, {rows, C}), dy2 = reshape(dy, {rows, out});
  BOOST_TEST(within_bf16_rounding(bf16[0], f32[0], abs_products(x2, transpose(w, 0, 1)), C));
  BOOST_TEST(within_bf16_rounding(bf16[1], f32[1], abs_products(dy2, w), out));
  BOOST_TEST(within_bf16_rounding(bf16[2], f32[2], abs_products(transpose(dy2, 0, 1), x2), rows));
}

// Batched matmul (B, M, K) @ (B, K, N), and a transposed view: each batch's product and both
// gradients are matmul_bf16's.
BOOST_AUTO_TEST_CASE(batched_matmul_under_the_guard_is_matmul_bf16) {
  Generator gen(22);
  const int64_t B = 2, M = 3, K = 37, N = 5;
  const Tensor a = leaf({B, M, K}, gen), b = leaf({B, N, K}, gen);  // b used as its transpose
  const Tensor dc = Tensor::randn({B, M, N}, gen);
  const AutocastGuard bf16(MatmulPrecision::bf16);
  const Tensor c = matmul(a, transpose(b, 1, 2));
  c.backward(dc);
  const std::vector<double> cv = c.to_vector(), da = a.grad().to_vector(),
                            db = b.grad().to_vector();
  for (int64_t i = 0; i < B; ++i) {
    const Tensor ai = select(a.detach(), 0, i).contiguous(),
                 bi = select(b.detach(), 0, i).contiguous(), dci = select(dc, 0, i).contiguous();
    const auto slice = [i](const std::vector<double>& v, int64_t n) {
      return std::vector<float>(v.begin() + i * n, v.begin() + (i + 1) * n);
    };
    // C_i = A_i B_iᵀ (B_i stored (N, K): the b_trans layout); dA_i = dC_i B_i; dB_i = dC_iᵀ A_i
    // (the gradient of the (N, K) tensor b, whose transposed view was multiplied).
    BOOST_TEST(slice(cv, M * N) == bf16_product(ai, bi, M, K, N, false, true));
    BOOST_TEST(slice(da, M * K) == bf16_product(dci, bi, M, N, K, false, false));
    BOOST_TEST(slice(db, N * K) == bf16_product(dci, ai, N, M, K, true, false));
  }
}

// The lm_head and its loss: under the guard the logits are matmul_bf16's, the cross-entropy and
// its gradient f32 (the same loss as cross_entropy of those logits), and dx, dW matmul_bf16's of
// that gradient.
BOOST_AUTO_TEST_CASE(linear_cross_entropy_under_the_guard_rounds_its_products_only) {
  Generator gen(23);
  const int64_t N = 6, C = 37, V = 33;
  const Tensor x = leaf({N, C}, gen), w = leaf({V, C}, gen);
  const Tensor t = Tensor::from_ids({0, 5, 32, 7, 7, 1}, {N});
  const AutocastGuard bf16(MatmulPrecision::bf16);
  const Tensor loss = linear_cross_entropy(x, w, t);
  loss.backward();
  // The reference: the logits by the kernel, then the plain f32 loss of a leaf holding them.
  const std::vector<float> l = bf16_product(x, w, N, C, V, false, true);
  const Tensor logits =
      Tensor::from_vector(std::vector<double>(l.begin(), l.end()), {N, V}).set_requires_grad();
  const Tensor ref = cross_entropy(logits, t);
  ref.backward();
  BOOST_TEST(allclose(loss.to_vector(), ref.to_vector(), 1e-6, 1e-6));
  const Tensor dlogits = logits.grad();
  const std::vector<float> dx = bf16_product(dlogits, w, N, V, C, false, false);
  const std::vector<float> dw = bf16_product(dlogits, x, V, N, C, true, false);
  BOOST_TEST(allclose(x.grad().to_vector(), std::vector<double>(dx.begin(), dx.end()), 1e-6, 1e-5));
  BOOST_TEST(allclose(w.grad().to_vector(), std::vector<double>(dw.begin(), dw.end()), 1e-6, 1e-5));
}

// The precision is the forward's: a graph recorded under the guard runs its VJPs in bf16 after
// the guard is gone, and one recorded without it runs them in f32 inside a guard.
BOOST_AUTO_TEST_CASE(backward_uses_the_precision_recorded_at_the_forward) {
  Generator gen(24);
  const int64_t rows = 7, C = 37, out = 33;
  const Tensor x = leaf({rows, C}, gen), w = leaf({out, C}, gen);
  const Tensor dy = Tensor::randn({rows, out}, gen);
  Tensor y_bf16;
  {
    const AutocastGuard bf16(MatmulPrecision::bf16);
    y_bf16 = linear(x, w);
  }
  BOOST_TEST(autocast_precision() == MatmulPrecision::f32);
  y_bf16.backward(dy);  // no guard now
  BOOST_TEST(floats(x.grad()) == bf16_product(dy, w, rows, out, C, false, false));
  BOOST_TEST(floats(w.grad()) == bf16_product(dy, x, out, rows, C, true, false));

  x.zero_grad(), w.zero_grad();
  const Tensor y_f32 = linear(x, w);
  std::vector<float> dx_f32(static_cast<size_t>(rows * C));
  kernels::matmul<float>(dx_f32.data(), dy.data<float>(), w.data<float>(), rows, out, C, false,
                         false, false);
  {
    const AutocastGuard bf16(MatmulPrecision::bf16);
    y_f32.backward(dy);
  }
  BOOST_TEST(floats(x.grad()) == dx_f32);
}

// f64 tensors are never autocast: the same bits inside the guard as outside.
BOOST_AUTO_TEST_CASE(f64_is_unaffected) {
  Generator gen(25);
  const Tensor x = leaf({4, 37}, gen, DType::f64), w = leaf({9, 37}, gen, DType::f64);
  const Tensor dy = Tensor::randn({4, 9}, gen, DType::f64);
  const auto run = [&](MatmulPrecision p) {
    x.zero_grad(), w.zero_grad();
    const AutocastGuard guard(p);
    const Tensor y = add(linear(x, w), matmul(x, transpose(w, 0, 1)));
    y.backward(dy);
    return std::vector<std::vector<double>>{y.to_vector(), x.grad().to_vector(),
                                            w.grad().to_vector()};
  };
  BOOST_TEST((run(MatmulPrecision::bf16) == run(MatmulPrecision::f32)));
}
