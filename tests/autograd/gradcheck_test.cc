// The gradient checker itself, and the fused ops against their primitive compositions. Every
// op's own gradcheck cases run in op_registry_test, one test case per op.
#define BOOST_TEST_MODULE gradcheck
#include <boost/test/unit_test.hpp>
#include <cmath>

#include "autograd/engine.h"
#include "autograd/gradcheck.h"
#include "autograd/ops.h"
#include "tests/test_util.h"

using namespace attograd;
using attograd::testing::allclose;
using attograd::testing::expect_throw_with;

namespace {

// y = x³ with a VJP scaled by `factor` (1 is right; 0.99 is the planted bug).
Tensor cube_with_vjp(const Tensor& x, double factor) {
  Tensor y;
  {
    NoGradGuard no_grad;
    y = pow(x, 3);
  }
  return record(y, "cube", {x}, {{"x", x}},
                [factor](const Tensor& g, std::span<Tensor> gi, const Tensor& x) {
                  const double* xv = x.data<double>();
                  const double* gv = g.data<double>();
                  double* dx = gi[0].data<double>();
                  for (int64_t i = 0; i < x.numel(); ++i)
                    dx[i] += factor * 3 * xv[i] * xv[i] * gv[i];
                });
}

}  // namespace

BOOST_AUTO_TEST_CASE(checker_accepts_right_and_rejects_planted_wrong_vjp) {
  for (bool fast : {false, true}) {
    GradcheckOptions opt;
    opt.fast_mode = fast;
    Generator gen(3);
    const Tensor x = Tensor::uniform({2, 3}, gen, 0.5, 2.0, DType::f64).set_requires_grad();
    const GradcheckResult right =
        run_gradcheck([](const auto& in) { return cube_with_vjp(in[0], 1.0); }, {x}, opt);
    BOOST_TEST(right.passed);
    BOOST_TEST(right.inputs.at(0).max_abs_err < 1e-7);
    const GradcheckResult wrong =
        run_gradcheck([](const auto& in) { return cube_with_vjp(in[0], 0.99); }, {x}, opt);
    BOOST_TEST_INFO(wrong.message);
    BOOST_TEST(!wrong.passed);
    BOOST_TEST(wrong.inputs.at(0).max_rel_err > 0.009);  // the 1% error is measured, not hidden
    BOOST_TEST(wrong.message.find("gradient mismatch") != std::string::npos);
  }
}

// Known input 4: f(x) = x³ at 1.1, f'(1.1) = 3.63.
BOOST_AUTO_TEST_CASE(float64_step_is_right_and_float32_tiny_step_is_refused) {
  const Tensor x = Tensor::scalar(1.1, DType::f64).set_requires_grad();
  const GradcheckResult r = run_gradcheck([](const auto& in) { return pow(in[0], 3); }, {x});
  BOOST_TEST(r.passed);
  const Tensor x2 = Tensor::scalar(1.1, DType::f64).set_requires_grad();
  pow(x2, 3).backward();
  BOOST_TEST(std::abs(x2.grad().item() - 3.63) < 1e-12);
  // Why f32 must not run with eps = 1e-6: storing x ± eps in f32 rounds the step itself
  // (1.1f + 1e-6f is 1.10000098, 1.1f - 1e-6f is 1.09999907: a step of 1.9e-6, not 2e-6), so
  // even exact cubes of the stored points give 3.4618; f32 cubes give 3.4571. Neither is 3.63.
  const float xf = 1.1f, h = 1e-6f;
  const float up = xf + h, down = xf - h;
  const double exact_cubes = (double(up) * up * up - double(down) * down * down) / 2e-6;
  BOOST_TEST(std::abs(exact_cubes - 3.4618) < 1e-4);
  const float f32_cubes = (up * up * up - down * down * down) / (2 * h);
  BOOST_TEST(std::abs(f32_cubes - 3.4571) < 1e-3);
  const Tensor xf32 = Tensor::scalar(1.1, DType::f32).set_requires_grad();
  expect_throw_with<std::invalid_argument>(
      [&] { run_gradcheck([](const auto& in) { return pow(in[0], 3); }, {xf32}); }, "float32");
  // With a wide step and loose tolerances, f32 works.
  BOOST_TEST(run_gradcheck([](const auto& in) { return pow(in[0], 3); }, {xf32},
                           GradcheckOptions::float32())
                 .passed);
}

// Each fused op equals the same computation built from primitives, forward and backward.
namespace {

void expect_same_forward_and_backward(const std::function<Tensor(const Tensor&)>& fused,
                                      const std::function<Tensor(const Tensor&)>& composed,
                                      const Tensor& x0, double atol) {
  Tensor a = x0.clone().set_requires_grad(), b = x0.clone().set_requires_grad();
  Tensor ya = fused(a), yb = composed(b);
  BOOST_TEST(allclose(ya.to_vector(), yb.to_vector(), atol, 0));
  Generator gen(11);
  const Tensor u = Tensor::randn(ya.shape(), gen, ya.dtype());
  ya.backward(u);
  yb.backward(u);
  BOOST_TEST(allclose(a.grad().to_vector(), b.grad().to_vector(), atol, 0));
}

Tensor softmax_primitive(const Tensor& x) {
  const Tensor e = exp(sub(x, max(x, -1, true)));
  return div(e, sum(e, {-1}, true));
}

}  // namespace

BOOST_AUTO_TEST_CASE(fused_ops_equal_their_primitive_compositions) {
  Generator gen(5);
  const Tensor x = Tensor::randn({2, 3, 5}, gen, DType::f64, 2.0);
  expect_same_forward_and_backward([](const Tensor& t) { return softmax(t); }, softmax_primitive, x,
                                   1e-12);
  expect_same_forward_and_backward([](const Tensor& t) { return log_softmax(t); },
                                   [](const Tensor& t) {
                                     const Tensor shifted = sub(t, max(t, -1, true));
                                     return sub(shifted, log(sum(exp(shifted), {-1}, true)));
                                   },
                                   x, 1e-12);
  expect_same_forward_and_backward([](const Tensor& t) { return gelu(t); },
                                   [](const Tensor& t) {
                                     const double s = std::sqrt(2.0 / M_PI);
                                     const Tensor inner =
                                         mul_scalar(add(t, mul_scalar(pow(t, 3), 0.044715)), s);
                                     return mul(mul_scalar(t, 0.5), add_scalar(tanh(inner), 1.0));
                                   },
                                   x, 1e-12);
  const Tensor scores = Tensor::randn({2, 4, 4}, gen, DType::f64);
  expect_same_forward_and_backward(
      [](const Tensor& t) { return causal_softmax(t); },
      [](const Tensor& t) { return softmax_primitive(causal_mask(t)); }, scores, 1e-12);

  // layer_norm, with gamma and beta.
  const Tensor gamma = Tensor::randn({5}, gen, DType::f64),
               beta = Tensor::randn({5}, gen, DType::f64);
  expect_same_forward_and_backward(
      [&](const Tensor& t) { return layer_norm(t, gamma, beta, 1e-5); },
      [&](const Tensor& t) {
        const Tensor centred = sub(t, mean(t, {-1}, true));
        const Tensor var = mean(mul(centred, centred), {-1}, true);  // biased
        return add(mul(div(centred, sqrt(add_scalar(var, 1e-5))), gamma), beta);
      },
      x, 1e-12);

  // cross_entropy = -mean(log_softmax picked at the targets), the pick a gather.
  const Tensor targets = Tensor::from_ids({0, 4, 2, 2, 1, 3}, {2, 3});
  expect_same_forward_and_backward(
      [&](const Tensor& l) { return cross_entropy(l, targets); },
      [&](const Tensor& l) {
        return neg(mean(gather(log_softmax(l), -1, reshape(targets, {2, 3, 1}))));
      },
      x, 1e-12);
}
