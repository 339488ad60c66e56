// The reverse-mode engine: accumulation, retained graphs, deep graphs, no-grad mode.
#define BOOST_TEST_MODULE engine
#include <boost/test/unit_test.hpp>
#include <cmath>

#include "autograd/engine.h"
#include "autograd/ops.h"
#include "tests/test_util.h"

using namespace attograd;
using attograd::testing::expect_throw_with;

// Known input 1: leaf w = 2, constant x = 3, h = w x, L = h²  =>  dL/dw = 2 h x = 36.
BOOST_AUTO_TEST_CASE(repeated_backward_accumulates_only_in_leaves) {
  for (DType dt : {DType::f32, DType::f64}) {
    Tensor w = Tensor::scalar(2, dt).set_requires_grad();
    Tensor x = Tensor::scalar(3, dt);
    Tensor L = pow(mul(w, x), 2);
    L.backward(Tensor(), /*retain_graph=*/true);
    BOOST_TEST(w.grad().item() == 36.0);
    BOOST_TEST(!x.grad().defined());  // constants get no gradient buffer at all

    w.zero_grad();
    L.backward(Tensor(), true);
    BOOST_TEST(w.grad().item() == 36.0);  // not 72: zero_grad cleared the leaf

    L.backward(Tensor(), true);
    BOOST_TEST(w.grad().item() ==
               72.0);  // leaf accumulation; intermediate grads never leak (not 108)
  }
}

BOOST_AUTO_TEST_CASE(second_backward_through_freed_graph_is_a_clear_error) {
  Tensor w = Tensor::scalar(2, DType::f64).set_requires_grad();
  Tensor L = mul(w, w);
  L.backward();
  BOOST_TEST(w.grad().item() == 4.0);
  expect_throw_with<std::logic_error>([&] { L.backward(); }, "retain_graph");
}

// Known input 2a: 50,000 steps of v = 0.9999 v + 0.0001: dv/dx = 0.9999^50000.
BOOST_AUTO_TEST_CASE(deep_chain_of_fifty_thousand_affine_steps) {
  Tensor x = Tensor::scalar(0.5, DType::f64).set_requires_grad();
  Tensor v = x;
  for (int i = 0; i < 50000; ++i) v = add_scalar(mul_scalar(v, 0.9999), 0.0001);
  v.backward();
  BOOST_TEST(std::abs(x.grad().item() - 0.006736263) < 1e-9);
  BOOST_TEST(std::abs(x.grad().item() - std::pow(0.9999, 50000)) < 1e-12);
}

// Known input 2b: a million-node chain neither overflows the stack in backward nor when freed.
BOOST_AUTO_TEST_CASE(million_node_chain_backward_and_destruction) {
  Tensor x = Tensor::scalar(0.5, DType::f64).set_requires_grad();
  {
    Tensor v = x;
    for (int i = 0; i < 1000000; ++i) v = add_scalar(v, 1.0);
    BOOST_TEST(v.item() == 1000000.5);
    v.backward(Tensor(), /*retain_graph=*/true);  // keep the graph so its destruction is tested too
    BOOST_TEST(x.grad().item() == 1.0);
  }  // v, and with it the whole chain, is destroyed here
  // And a chain destroyed without ever running backward.
  {
    Tensor v = x;
    for (int i = 0; i < 1000000; ++i) v = add_scalar(v, 1.0);
  }
  BOOST_TEST(x.grad().item() == 1.0);
}

BOOST_AUTO_TEST_CASE(fan_out_accumulates) {
  // y = x * x + x: dy/dx = 2x + 1 = 7 at x = 3; x is used three times.
  Tensor x = Tensor::scalar(3, DType::f64).set_requires_grad();
  Tensor y = add(mul(x, x), x);
  y.backward();
  BOOST_TEST(x.grad().item() == 7.0);
}

BOOST_AUTO_TEST_CASE(no_grad_guard_records_nothing_and_nests) {
  Tensor w = Tensor::scalar(2, DType::f64).set_requires_grad();
  {
    NoGradGuard outer;
    {
      NoGradGuard inner;
      BOOST_TEST(!grad_enabled());
    }
    BOOST_TEST(!grad_enabled());
    Tensor y = mul(w, w);
    BOOST_TEST(!y.requires_grad());
    BOOST_TEST(y.is_leaf());
  }
  BOOST_TEST(grad_enabled());
  BOOST_TEST(mul(w, w).requires_grad());
}

BOOST_AUTO_TEST_CASE(only_needed_gradients_are_computed) {
  // b is a constant: after backward it has no gradient buffer, a has one.
  Tensor a = Tensor::from_vector({1, 2}, {2}, DType::f64).set_requires_grad();
  Tensor b = Tensor::from_vector({3, 4}, {2}, DType::f64);
  sum(mul(a, b)).backward();
  BOOST_TEST(a.grad().to_vector() == std::vector<double>({3, 4}));
  BOOST_TEST(!b.grad().defined());
  BOOST_TEST(!b.requires_grad());
}

BOOST_AUTO_TEST_CASE(backward_errors_name_the_problem) {
  Tensor c = Tensor::scalar(1);
  expect_throw_with<std::logic_error>([&] { c.backward(); }, "does not require grad");
  Tensor x = Tensor::ones({2, 2}).set_requires_grad();
  Tensor y = mul_scalar(x, 2);
  expect_throw_with<std::invalid_argument>([&] { y.backward(); }, "(2, 2)");
  expect_throw_with<std::invalid_argument>([&] { y.backward(Tensor::ones({3})); },
                                           "expected (2, 2)");
  expect_throw_with<std::logic_error>([&] { y.set_requires_grad(); }, "only leaf");
}

BOOST_AUTO_TEST_CASE(explicit_upstream_gradient) {
  Tensor x = Tensor::from_vector({1, 2, 3}, {3}, DType::f64).set_requires_grad();
  Tensor y = mul_scalar(x, 2);
  y.backward(Tensor::from_vector({1, 10, 100}, {3}, DType::f64));
  BOOST_TEST(x.grad().to_vector() == std::vector<double>({2, 20, 200}));
}

BOOST_AUTO_TEST_CASE(detach_cuts_the_graph) {
  Tensor x = Tensor::scalar(3, DType::f64).set_requires_grad();
  Tensor y = mul(x.detach(), x);  // d/dx treats the detached factor as a constant: 3
  y.backward();
  BOOST_TEST(x.grad().item() == 3.0);
}

// torch: a = [1, 2, 3] (leaf); y = a * a; y.retain_grad(); z = (y * [1, 10, 100]).sum().
// Two backward calls: y.grad = [1, 10, 100], then [2, 20, 200] (it accumulates like a leaf's);
// a.grad = [2, 40, 600], then [4, 80, 1200].
BOOST_AUTO_TEST_CASE(retain_grad_keeps_a_non_leaf_gradient_as_torch) {
  Tensor a = Tensor::from_vector({1, 2, 3}, {3}, DType::f64).requires_grad_();
  BOOST_TEST(a.requires_grad());
  Tensor y = mul(a, a);
  BOOST_TEST(!y.retains_grad());
  y.retain_grad();
  BOOST_TEST(y.retains_grad());
  BOOST_TEST(!a.retains_grad());  // false for leaves, as in torch
  const Tensor z = sum(mul(y, Tensor::from_vector({1, 10, 100}, {3}, DType::f64)));
  z.backward(Tensor(), /*retain_graph=*/true);
  BOOST_TEST(y.grad().to_vector() == std::vector<double>({1, 10, 100}));
  BOOST_TEST(a.grad().to_vector() == std::vector<double>({2, 40, 600}));
  z.backward();
  BOOST_TEST(y.grad().to_vector() == std::vector<double>({2, 20, 200}));
  BOOST_TEST(a.grad().to_vector() == std::vector<double>({4, 80, 1200}));
  // Without retain_grad a non-leaf keeps nothing; the root itself can be retained too.
  Tensor u = mul_scalar(a, 3), r = sum(u);
  r.retain_grad();
  r.backward();
  BOOST_TEST(!u.grad().defined());
  BOOST_TEST(r.grad().item() == 1.0);
  expect_throw_with<std::logic_error>([] { Tensor::ones({2}).retain_grad(); },
                                      "retain_grad: the tensor does not require grad");
  expect_throw_with<std::logic_error>([&] { u.requires_grad_(false); }, "only leaf");
}
