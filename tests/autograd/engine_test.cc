// The reverse-mode engine: accumulation, retained graphs, deep graphs, no-grad mode.
#define BOOST_TEST_MODULE engine
#include <boost/test/unit_test.hpp>
#include <cmath>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "autograd/engine.h"
#include "autograd/op_registry.h"
#include "autograd/ops.h"
#include "tests/test_util.h"

using namespace attograd;
using attograd::testing::allclose;
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
  // grad() through the freed graph says the same, not "input 0 was not used" (a newcomer's
  // finding, issue 32): the freed node lost its inputs, so w could not be reached.
  expect_throw_with<std::logic_error>(
      [&] { grad(L, {w}); },
      "grad: the graph through 'mul' was already freed by an earlier backward() or grad(); "
      "pass retain_graph=true");
  // A graph freed by grad() as well, and its output's node first: the message names that node.
  Tensor v = Tensor::scalar(3, DType::f64).set_requires_grad();
  const Tensor M = exp(mul_scalar(v, 2.0));
  BOOST_TEST(grad(M, {v})[0].item() == 2.0 * std::exp(6.0));
  expect_throw_with<std::logic_error>([&] { grad(M, {v}); },
                                      "graph through 'exp' was already freed");
  // A graph partly freed (backward from an intermediate tensor): backward() from the top refuses
  // before adding anything to any leaf.
  Tensor a = Tensor::scalar(1.5, DType::f64).set_requires_grad();
  Tensor b = Tensor::scalar(4.0, DType::f64).set_requires_grad();
  const Tensor h = mul(a, a);
  const Tensor top = add(h, b);
  h.backward();
  BOOST_TEST(a.grad().item() == 3.0);
  expect_throw_with<std::logic_error>([&] { top.backward(); }, "backward: the graph through 'mul'");
  BOOST_TEST(a.grad().item() == 3.0);
  BOOST_TEST(!b.grad().defined());  // add's VJP did not run: refused before the first VJP
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

// ----- version counters: a tensor saved for backward and changed in place (PyTorch #37573) -----

// y = w x with w = 2, x = 3 (x requires grad): mul saved w for dx = dy w. w.fill_(5) before
// backward would give x.grad = 5, not 2: backward refuses, naming the op and the tensor, and
// has touched no gradient. The same product recorded after the change is fine (x.grad = 5).
BOOST_AUTO_TEST_CASE(changing_a_saved_input_in_place_is_refused_by_backward) {
  for (DType dt : {DType::f32, DType::f64}) {
    Tensor w = Tensor::scalar(2, dt);
    Tensor x = Tensor::scalar(3, dt).set_requires_grad();
    Tensor y = mul(w, x);
    w.fill_(5);
    expect_throw_with<std::logic_error>([&] { y.backward(); },
                                        "backward: 'mul' saved its tensor 'a' () " +
                                            std::string(dtype_name(dt)) +
                                            " for the gradient at version 0, and it was changed "
                                            "in place since (version 1 now");
    expect_throw_with<std::logic_error>([&] { y.backward(); },
                                        "clone() the tensor before changing it, or change it "
                                        "after backward()");
    BOOST_TEST(!x.grad().defined());  // refused before any VJP ran
    mul(w, x).backward();
    BOOST_TEST(x.grad().item() == 5.0);
  }
}

// The check runs over the whole graph before the first VJP: a graph whose last op is fine but
// whose first saved tensor changed leaves every gradient as it was (here w.grad stays 1).
BOOST_AUTO_TEST_CASE(a_refused_backward_adds_to_no_gradient) {
  Tensor w = Tensor::scalar(1, DType::f64).set_requires_grad();
  Tensor x = Tensor::scalar(3, DType::f64).set_requires_grad();
  Tensor c = Tensor::scalar(4, DType::f64);
  w.backward();                  // w.grad = 1
  Tensor L = add(mul(c, x), w);  // add runs first in backward and saves nothing
  c.copy_from(Tensor::scalar(7, DType::f64));
  expect_throw_with<std::logic_error>([&] { L.backward(); }, "'mul' saved its tensor 'a'");
  BOOST_TEST(w.grad().item() == 1.0);
  BOOST_TEST(!x.grad().defined());
}

// e = exp(x) is saved by exp for dx = dy e: filling e before backward would give dx = 5.
BOOST_AUTO_TEST_CASE(changing_a_saved_output_in_place_is_refused) {
  Tensor x = Tensor::from_vector({0.5, -1}, {2}, DType::f64).set_requires_grad();
  Tensor e = exp(x);
  Tensor L = sum(e);
  e.fill_(5);
  expect_throw_with<std::logic_error>([&] { L.backward(); },
                                      "backward: 'exp' saved its tensor 'output' (2,) f64");
  // Through a view of the same storage too: versions belong to the storage, as in torch.
  Tensor s = softmax(reshape(x, {1, 2}));
  Tensor L2 = sum(mul(s, Tensor::from_vector({1, 2}, {1, 2}, DType::f64)));
  transpose(s, 0, 1).detach().fill_(0);
  expect_throw_with<std::logic_error>([&] { L2.backward(); },
                                      "'softmax' saved its tensor 'output'");
}

// What is legitimate: changing a tensor after backward; changing one that no VJP reads (add
// saves nothing, exp keeps its output and not its input, mul keeps w only when x needs a
// gradient); a graph recorded under no_grad (it saves nothing). Each gives the gradient of the
// values the forward saw.
BOOST_AUTO_TEST_CASE(changes_that_no_backward_reads_are_allowed) {
  Tensor w = Tensor::scalar(2, DType::f64);
  Tensor x = Tensor::scalar(3, DType::f64).set_requires_grad();
  Tensor y = mul(w, x);
  y.backward();
  w.fill_(5);  // after backward: the graph is gone
  BOOST_TEST(x.grad().item() == 2.0);

  x.zero_grad();
  Tensor a = Tensor::scalar(10, DType::f64);
  Tensor z = add(a, x);
  a.fill_(-1);  // add's VJP reads nothing
  z.backward();
  BOOST_TEST(x.grad().item() == 1.0);

  Tensor v = Tensor::from_vector({0.5, -1}, {2}, DType::f64).set_requires_grad();
  Tensor e = exp(v);
  v.detach().fill_(7);  // exp's VJP reads its output, not its input
  sum(e).backward();
  BOOST_TEST(allclose(v.grad().to_vector(), {std::exp(0.5), std::exp(-1.0)}, 1e-15, 1e-15));

  // w requires grad, x does not: mul keeps x (for dw) and not w, so changing w is fine.
  Tensor w2 = Tensor::scalar(2, DType::f64).set_requires_grad();
  Tensor x2 = Tensor::scalar(3, DType::f64);
  Tensor y2 = mul(w2, x2);
  w2.detach().fill_(100);
  y2.backward();
  BOOST_TEST(w2.grad().item() == 3.0);

  Tensor r;
  {
    NoGradGuard no_grad;
    r = mul(w, x);
  }
  w.fill_(6);
  BOOST_TEST(!r.requires_grad());
  BOOST_TEST(r.item() == 15.0);
}

// no_grad turns recording off, not counting: a change made under it still bumps the version, so
// the graph recorded before is refused (torch does the same).
BOOST_AUTO_TEST_CASE(a_change_under_no_grad_is_still_counted) {
  Tensor w = Tensor::scalar(2, DType::f64);
  Tensor x = Tensor::scalar(3, DType::f64).set_requires_grad();
  Tensor y = mul(w, x);
  {
    NoGradGuard no_grad;
    w.fill_(5);
  }
  expect_throw_with<std::logic_error>([&] { y.backward(); }, "'mul' saved its tensor 'a'");
}

// A retained graph is checked again at each backward: fine twice, refused after a change.
BOOST_AUTO_TEST_CASE(a_retained_graph_is_checked_at_every_backward) {
  Tensor w = Tensor::scalar(2, DType::f64);
  Tensor x = Tensor::scalar(3, DType::f64).set_requires_grad();
  Tensor y = mul(w, x);
  y.backward(Tensor(), /*retain_graph=*/true);
  y.backward(Tensor(), true);
  BOOST_TEST(x.grad().item() == 4.0);
  w.fill_(5);
  expect_throw_with<std::logic_error>([&] { y.backward(Tensor(), true); }, "version 1 now");
  BOOST_TEST(x.grad().item() == 4.0);
}

// A write through data() is not seen until bump_version() says so (torch's data_ptr() and
// torch.autograd.graph.increment_version).
BOOST_AUTO_TEST_CASE(writes_through_data_count_after_bump_version) {
  Tensor w = Tensor::scalar(2, DType::f64);
  Tensor x = Tensor::scalar(3, DType::f64).set_requires_grad();
  Tensor y = mul(w, x);
  w.data<double>()[0] = 5;
  w.bump_version();
  expect_throw_with<std::logic_error>([&] { y.backward(); }, "'mul' saved its tensor 'a'");
}

// register_hook on a leaf: called once per pass with the pass's total over both uses of x
// (d/dx [sum(x·x) + sum(3x)] = 2x + 3), and its return replaces what grad() gets; a second
// pass adds the hooked gradient again.
BOOST_AUTO_TEST_CASE(a_leaf_hook_sees_the_total_and_may_replace_it) {
  Tensor x = Tensor::from_vector({1.0, 2.0}, {2}, DType::f64).requires_grad_();
  std::vector<std::vector<double>> seen;
  x.register_hook([&](const Tensor& g) {
    seen.push_back(g.to_vector());
    return mul_scalar(g, 2.0);
  });
  add(sum(mul(x, x)), sum(mul_scalar(x, 3.0))).backward();
  BOOST_TEST(seen.size() == 1u);
  BOOST_TEST(seen[0] == (std::vector<double>{5.0, 7.0}), boost::test_tools::per_element());
  BOOST_TEST(x.grad().to_vector() == (std::vector<double>{10.0, 14.0}),
             boost::test_tools::per_element());
  sum(x).backward();  // the hook again: 2 · 1 added
  BOOST_TEST(x.grad().to_vector() == (std::vector<double>{12.0, 16.0}),
             boost::test_tools::per_element());
}

// register_hook on a non-leaf: its complete gradient, before it flows to the inputs and before
// retain_grad() keeps it; hooks chain in order; an undefined return keeps the gradient; a
// wrong shape is refused by name; a tensor without grad cannot take a hook.
BOOST_AUTO_TEST_CASE(a_non_leaf_hook_changes_what_flows_below) {
  Tensor x = Tensor::from_vector({1.0, -2.0}, {2}, DType::f64).requires_grad_();
  Tensor h = mul_scalar(x, 2.0);
  h.retain_grad();
  int calls = 0;
  h.register_hook([&](const Tensor&) {
    ++calls;
    return Tensor();  // keep
  });
  h.register_hook([](const Tensor& g) { return mul_scalar(g, 10.0); });
  sum(mul(h, h)).backward();  // dL/dh = 2h = (4, -8), hooked to (40, -80); dL/dx = 2 · that
  BOOST_TEST(calls == 1);
  BOOST_TEST(h.grad().to_vector() == (std::vector<double>{40.0, -80.0}),
             boost::test_tools::per_element());
  BOOST_TEST(x.grad().to_vector() == (std::vector<double>{80.0, -160.0}),
             boost::test_tools::per_element());
  Tensor y = mul_scalar(x, 3.0);
  y.register_hook([](const Tensor&) { return Tensor::zeros({3}, DType::f64); });
  expect_throw_with<std::invalid_argument>(
      [&] { sum(y).backward(); },
      "register_hook: a hook returned a gradient of shape (3,) f64, expected (2,) f64");
  expect_throw_with<std::logic_error>(
      [] {
        Tensor::from_vector({1.0}, {1}, DType::f64).register_hook([](const Tensor&) {
          return Tensor();
        });
      },
      "register_hook: the tensor does not require grad");
}

// grad(output, inputs), torch.autograd.grad: the gradients returned in the inputs' order, of
// leaves and of an intermediate tensor, with grad() of every tensor left alone (retain_grad's
// too); hooks still run; an input the output does not use, or one without grad, is named.
BOOST_AUTO_TEST_CASE(grad_returns_gradients_without_touching_grad) {
  Tensor x = Tensor::from_vector({1.0, 2.0}, {2}, DType::f64).requires_grad_();
  Tensor w = Tensor::from_vector({3.0, -1.0}, {2}, DType::f64).requires_grad_();
  Tensor unused = Tensor::from_vector({5.0}, {1}, DType::f64).requires_grad_();
  Tensor h = mul(x, w);  // L = sum(h · x) = sum(w x²): dL/dx = 2wx, dL/dw = x², dL/dh = x
  h.retain_grad();
  const Tensor L = sum(mul(h, x));
  const std::vector<Tensor> g = grad(L, {w, x, h}, Tensor(), /*retain_graph=*/true);
  BOOST_TEST(g[0].to_vector() == (std::vector<double>{1.0, 4.0}), boost::test_tools::per_element());
  BOOST_TEST(g[1].to_vector() == (std::vector<double>{6.0, -4.0}),
             boost::test_tools::per_element());
  BOOST_TEST(g[2].to_vector() == (std::vector<double>{1.0, 2.0}), boost::test_tools::per_element());
  BOOST_TEST(!x.grad().defined());
  BOOST_TEST(!w.grad().defined());
  BOOST_TEST(!h.grad().defined());
  int calls = 0;
  w.register_hook([&](const Tensor& gw) {
    ++calls;
    return mul_scalar(gw, -1.0);
  });
  BOOST_TEST(grad(L, {w}, Tensor(), true)[0].to_vector() == (std::vector<double>{-1.0, -4.0}),
             boost::test_tools::per_element());
  BOOST_TEST(calls == 1);
  expect_throw_with<std::invalid_argument>(
      [&] {
        grad(L, {x, unused}, Tensor(), true);
      },
      "grad: input 1 was not used to compute the output");
  expect_throw_with<std::invalid_argument>(
      [&] { grad(L, {Tensor::from_vector({1.0}, {1}, DType::f64)}); },
      "grad: input 0 does not require grad");
  // torch.autograd.grad(L, []) raises too ("grad requires non-empty inputs"): an empty list
  // is a mistake (a filter that kept nothing), not a request for no work.
  expect_throw_with<std::invalid_argument>([&] { grad(L, {}, Tensor(), true); },
                                           "grad: no inputs given");
  // And backward afterwards accumulates as usual, the graph kept by retain_graph above.
  L.backward();
  BOOST_TEST(x.grad().to_vector() == (std::vector<double>{6.0, -4.0}),
             boost::test_tools::per_element());
}

// Issue 32's example: grad(sum(x * 2 + y), {y}) threw "Tensor::data: the tensor is undefined"
// when x was a trainable leaf too: the engine handed mul_scalar's VJP no buffer for x. Only the
// VJPs on a path to y run now (x's is not called at all), y asked for twice comes back twice,
// and create_graph is refused by name.
BOOST_AUTO_TEST_CASE(grad_of_one_leaf_with_other_trainable_leaves_in_the_graph) {
  Tensor x = Tensor::from_vector({1.0, 2.0}, {2}, DType::f64).requires_grad_();
  Tensor y = Tensor::from_vector({3.0, 4.0}, {2}, DType::f64).requires_grad_();
  int x_side_calls = 0;
  Tensor twice_x = x * 2.0;
  twice_x.register_hook([&](const Tensor&) {
    ++x_side_calls;
    return Tensor();
  });
  const Tensor L = sum(twice_x + y);
  const std::vector<Tensor> g = grad(L, {y, y}, Tensor(), /*retain_graph=*/true);
  BOOST_REQUIRE_EQUAL(g.size(), 2u);
  BOOST_TEST(g[0].to_vector() == (std::vector<double>{1.0, 1.0}), boost::test_tools::per_element());
  BOOST_TEST(g[1].to_vector() == (std::vector<double>{1.0, 1.0}), boost::test_tools::per_element());
  BOOST_TEST(x_side_calls == 0);  // the branch to x is not walked
  BOOST_TEST(!x.grad().defined());
  // Both leaves: x's branch runs now.
  const std::vector<Tensor> both = grad(L, {x, y}, Tensor(), true);
  BOOST_TEST(both[0].to_vector() == (std::vector<double>{2.0, 2.0}),
             boost::test_tools::per_element());
  BOOST_TEST(x_side_calls == 1);
  expect_throw_with<std::invalid_argument>(
      [&] { grad(L, {y}, Tensor(), true, /*create_graph=*/true); },
      "grad: create_graph=true (double backward, a gradient of a gradient) is not supported");
  // Errors of the pass name grad(), the call made, not backward().
  expect_throw_with<std::invalid_argument>(
      [&] { grad(twice_x, {x}); },
      "grad: grad_output can be omitted only for a one-element output");
  expect_throw_with<std::logic_error>([&] { grad(sum(x.detach() * 2.0), {x}); },
                                      "grad: the output does not require grad");
}

// grad() without retain_graph frees only the nodes it ran, as torch: a branch it did not need
// (exp(y) below, for x's gradient) still backpropagates afterwards (a newcomer's finding, issue
// 32: the second call said the graph was freed). torch: [e^3 * 3, e^4 * 3] = [60.26, 163.79].
BOOST_AUTO_TEST_CASE(grad_frees_only_the_nodes_it_ran) {
  Tensor x = Tensor::from_vector({1.0, 2.0}, {2}, DType::f64).requires_grad_();
  Tensor y = Tensor::from_vector({3.0, 4.0}, {2}, DType::f64).requires_grad_();
  const Tensor b = exp(y);
  const Tensor L = sum(exp(x) + b), L2 = sum(b * 3.0);
  BOOST_TEST(allclose(grad(L, {x})[0].to_vector(), {std::exp(1.0), std::exp(2.0)}, 1e-15, 0));
  BOOST_TEST(
      allclose(grad(L2, {y})[0].to_vector(), {3 * std::exp(3.0), 3 * std::exp(4.0)}, 1e-15, 0));
  // A wanted intermediate tensor: the nodes below it did not run and are kept.
  const Tensor h = exp(x);
  BOOST_TEST(allclose(grad(sum(h), {h})[0].to_vector(), {1, 1}, 0, 0));
  BOOST_TEST(allclose(grad(sum(h * 2.0), {x})[0].to_vector(),
                      {2 * std::exp(1.0), 2 * std::exp(2.0)}, 1e-15, 0));
  // What did run is freed: x's path through L.
  expect_throw_with<std::logic_error>([&] { grad(L, {x}); }, "was already freed");
  // And a new output over a freed node is refused, never answered without that node's share
  // (a second newcomer's finding: exp's path was dropped, cos(x) alone returned).
  const Tensor a = exp(x), c = sin(x);
  grad(sum(a), {x});
  expect_throw_with<std::logic_error>([&] { grad(sum(a + c), {x}); },
                                      "grad: the graph through 'exp' was already freed");
  // Inside a backward pass grad mode is off: a graph built in a hook records nothing, said so.
  x.register_hook([&](const Tensor& g) {
    expect_throw_with<std::logic_error>([&] { grad(sum(x * x), {x}); }, "grad mode was off");
    return g;
  });
  sum(x * 2.0).backward();
}

// accumulate_grad, the public way a VJP of one's own adds into an input's gradient: an op
// a (3,) + s * b (2, 3) broadcasting a, written with record(). a's gradient (3,) sums dy over the
// broadcast rows; an input used twice (b as both operands of a second call) gets both
// contributions; an input that needs no gradient gets an undefined buffer, which is skipped.
BOOST_AUTO_TEST_CASE(accumulate_grad_sums_broadcast_dimensions_back) {
  auto add_scaled = [](const Tensor& a, const Tensor& b, double s) {
    Tensor y;
    {
      NoGradGuard no_grad;
      y = a + b * s;
    }
    return record(y, "add_scaled", {a, b}, [s](const Tensor& g, std::span<Tensor> gi) {
      accumulate_grad(gi[0], g);  // (2, 3) into (3,): the rows summed
      accumulate_grad(gi[1], g * s);
    });
  };
  const Tensor a = Tensor::from_vector({1, 2, 3}, {3}, DType::f64).requires_grad_();
  const Tensor b = Tensor::from_vector({1, 2, 3, 4, 5, 6}, {2, 3}, DType::f64).requires_grad_();
  const Tensor dy = Tensor::from_vector({1, 10, 100, 2, 20, 200}, {2, 3}, DType::f64);
  add_scaled(a, b, 0.5).backward(dy);
  BOOST_TEST(a.grad().to_vector() == (std::vector<double>{3, 30, 300}));
  BOOST_TEST(b.grad().to_vector() == (std::vector<double>{0.5, 5, 50, 1, 10, 100}));
  b.zero_grad();
  sum(add_scaled(b, b, 2.0)).backward();  // d/db (b + 2 b) = 3
  BOOST_TEST(b.grad().to_vector() == std::vector<double>(6, 3.0));
  const Tensor c = Tensor::from_vector({1, 1, 1}, {3}, DType::f64);  // needs no gradient
  sum(add_scaled(c, b, 1.0)).backward();
  BOOST_TEST(!c.grad().defined());
  const Tensor g3 = Tensor::zeros({3}, DType::f64);
  accumulate_grad(Tensor(), g3);  // undefined buffer: nothing to do
  expect_throw_with<std::invalid_argument>(
      [&] {
        accumulate_grad(g3, Tensor::zeros({2, 4}, DType::f64));
      },
      "a value (2, 4) cannot be added into a gradient (3,)");
  expect_throw_with<std::invalid_argument>(
      [&] { accumulate_grad(g3, Tensor::zeros({3}, DType::f32)); },
      "the value is f32 but the gradient is f64; cast() it first");
}

// ---- First writes (GradBuffers::first_write) ---------------------------------------------------

namespace {

// The gradients of `leaves` through f (upstream u), with the engine handing first_write VJPs
// fresh buffers (the default) or, with first_write = false, zero-filled ones as for every other op.
std::vector<Tensor> gradients(const std::function<Tensor()>& f, const std::vector<Tensor>& leaves,
                              uint64_t seed, bool first_write) {
  detail::set_first_write_enabled(first_write);
  struct Restore {
    ~Restore() { detail::set_first_write_enabled(true); }
  } restore;
  const Tensor y = f();
  if (!y.requires_grad()) return {};  // a comparison, argmax, ...: no gradient flows
  Generator gen(seed);
  const Tensor u = Tensor::randn(y.shape(), gen, y.dtype());
  return grad(y, leaves, u);
}

// Each gradient of `a` equals the same one of `b`, element by element (+0 and -0 are equal: a
// written 0 * x may be -0 where 0 + 0 * x is +0).
void check_same_gradients(const std::vector<Tensor>& a, const std::vector<Tensor>& b,
                          const std::string& what) {
  BOOST_TEST_REQUIRE(a.size() == b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    const Tensor x = cast(a[i], DType::f64), y = cast(b[i], DType::f64);
    BOOST_TEST_REQUIRE(x.shape() == y.shape());
    int64_t differ = 0;
    for (int64_t k = 0; k < x.numel(); ++k) differ += x.data<double>()[k] != y.data<double>()[k];
    BOOST_TEST(differ == 0, what << ": gradient " << i << " differs in " << differ << " of "
                                 << x.numel() << " elements");
  }
}

}  // namespace

// Every op of the registry, on every case, with each differentiable input made an intermediate
// tensor (x * 1, so that its gradient buffer is the engine's, fresh for a first_write VJP): the
// leaves' gradients are the same as when every buffer is zero-filled and added into. An op
// declared first_write that adds into its buffer anyway reads garbage here, and one that writes
// where it must add loses a gradient in the fan-out case (the input used twice: x' and x' * 1
// both read it).
BOOST_AUTO_TEST_CASE(first_writes_give_the_gradients_of_adding_for_every_op) {
  for (const OpEntry& e : op_registry().entries())
    for (const GradcheckCase& c : e.cases)
      for (const DType dtype : {DType::f64, DType::f32})
        for (const bool fan_out : {false, true}) {
          Generator gen(5);
          const std::vector<Tensor> inputs = c.make_inputs(gen, dtype, GradcheckSizes{});
          std::vector<Tensor> leaves;
          for (const Tensor& x : inputs)
            if (x.requires_grad()) leaves.push_back(x);
          if (leaves.empty()) continue;
          const auto f = [&] {
            std::vector<Tensor> interior;
            for (const Tensor& x : inputs)
              interior.push_back(x.requires_grad() ? mul_scalar(x, 1.0) : x);
            Tensor y = c.fn(interior);
            // Fan-out: the first intermediate input also feeds a second op, summed into y.
            if (fan_out)
              for (const Tensor& x : interior)
                if (x.requires_grad()) {
                  y = add(y, mul_scalar(sum(x), 0.5));
                  break;
                }
            return y;
          };
          const std::string what =
              e.name + " " + c.label + " " + dtype_name(dtype) + (fan_out ? " fan-out" : "");
          check_same_gradients(gradients(f, leaves, 9, true), gradients(f, leaves, 9, false), what);
        }
}

// The cases the VJPs must tell apart, with known values: add(x, x) writes dy then adds it
// (dx = 2 dy); gelu's input also added to the output (the writer and an adder of one buffer).
BOOST_AUTO_TEST_CASE(first_writes_with_known_values) {
  Tensor x = Tensor::from_vector({0.5, -1.0, 2.0}, {3}, DType::f64);
  x.set_requires_grad(true);
  // add(x', x'): one buffer, both inputs of one VJP
  for (const bool first_write : {true, false}) {
    const std::vector<Tensor> g = gradients(
        [&] {
          const Tensor h = mul_scalar(x, 3.0);
          return add(h, h);
        },
        {x}, 1, first_write);
    Generator gen(1);
    const Tensor u = Tensor::randn({3}, gen, DType::f64);
    for (int64_t i = 0; i < 3; ++i) BOOST_TEST(g[0].data<double>()[i] == 6.0 * u.data<double>()[i]);
  }
  // y = gelu(h) + h, h = 2x: dh = u gelu'(h) + u, dx = 2 dh (gelu' at 1, -2, 4 from PyTorch:
  // torch.nn.functional.gelu(h, approximate='tanh').backward)
  const double gelu_prime[] = {1.0829640838, -0.0860992566, 1.0003351232};
  for (const bool first_write : {true, false}) {
    const std::vector<Tensor> g = gradients(
        [&] {
          const Tensor h = mul_scalar(x, 2.0);
          return add(gelu(h), h);
        },
        {x}, 2, first_write);
    Generator gen(2);
    const Tensor u = Tensor::randn({3}, gen, DType::f64);
    for (int64_t i = 0; i < 3; ++i)
      BOOST_TEST(g[0].data<double>()[i] == 2.0 * u.data<double>()[i] * (gelu_prime[i] + 1.0),
                 boost::test_tools::tolerance(1e-9));
  }
}

// A fresh buffer the VJP leaves unclaimed (an op of one's own, recorded first_write, whose VJP
// writes nothing) reaches the producer as zeros, not as whatever the memory held: here the pool's
// last block of that size, filled with NaN just before.
BOOST_AUTO_TEST_CASE(an_unclaimed_fresh_buffer_reads_as_zeros) {
  Tensor x = Tensor::from_vector({1.0, 2.0, 3.0, 4.0}, {4}, DType::f64);
  x.set_requires_grad(true);
  Tensor::full({4}, std::nan(""), DType::f64);  // freed at once: its block is the next one taken
  const Tensor h = mul_scalar(x, 1.0);
  const Tensor y = record(
      Tensor::zeros({4}, DType::f64), "writes_nothing", {h},
      [](const Tensor&, std::span<Tensor>) {}, GradBuffers::first_write);
  y.backward(Tensor::ones({4}, DType::f64));
  for (int64_t i = 0; i < 4; ++i) BOOST_TEST(x.grad().data<double>()[i] == 0.0);
}

// A retained graph walked by this thread and then by another: each backward runs every node. The
// passes' marks on the nodes were numbered per thread, so the other thread's first pass took the
// nodes this thread's pass had marked for visited and ran only the root: x.grad() stayed 0.
BOOST_AUTO_TEST_CASE(a_retained_graph_backpropagates_from_another_thread) {
  if (!attograd::testing::build_has(attograd::testing::kBuildHasThreads, "threads")) return;
  Tensor x = Tensor::from_vector({1.0, -2.0, 0.5}, {3}, DType::f64);
  x.set_requires_grad(true);
  const Tensor loss = sum(mul_scalar(mul_scalar(x, 2.0), 3.0));  // dloss/dx = 6
  for (int pass = 0; pass < 3; ++pass) {
    loss.backward(Tensor(), true);
    x.zero_grad();
    std::thread other([&] { loss.backward(Tensor(), true); });
    other.join();
    for (int64_t i = 0; i < 3; ++i) BOOST_TEST(x.grad().data<double>()[i] == 6.0);
    x.zero_grad();
  }
}
