// Module bookkeeping and the parameter arena.
#define BOOST_TEST_MODULE module
#include <boost/test/unit_test.hpp>
#include <cmath>

#include "autograd/ops.h"
#include "nn/layers.h"
#include "nn/module.h"
#include "tests/test_util.h"

using namespace attograd;
using namespace attograd::nn;
using attograd::testing::allclose;
using attograd::testing::expect_throw_with;

namespace {
// Two linears, nested, to check names and packing order.
class TwoLayer : public Module {
 public:
  explicit TwoLayer(Generator& gen) {
    first = register_module("first", std::make_shared<Linear>(3, 4, true, gen, DType::f64));
    second = register_module("second", std::make_shared<Linear>(4, 2, false, gen, DType::f64));
  }
  Tensor forward(const Tensor& x) const { return second->forward(tanh(first->forward(x))); }
  std::shared_ptr<Linear> first, second;
};
}  // namespace

BOOST_AUTO_TEST_CASE(named_parameters_are_dotted_and_ordered) {
  Generator gen(0);
  TwoLayer m(gen);
  const auto named = m.named_parameters();
  BOOST_REQUIRE_EQUAL(named.size(), 3u);
  BOOST_TEST(named[0].first == "first.weight");
  BOOST_TEST(named[1].first == "first.bias");
  BOOST_TEST(named[2].first == "second.weight");
  BOOST_TEST(m.num_parameters() == 3 * 4 + 4 + 4 * 2);
  BOOST_TEST(m.is_training());
  m.eval();
  BOOST_TEST(!m.first->is_training());
}

BOOST_AUTO_TEST_CASE(arena_allocates_values_and_gradients_in_place) {
  // The same module built without an arena: the values a seed gives.
  Generator gen_plain(1);
  TwoLayer plain(gen_plain);
  const Tensor x = Tensor::randn({5, 3}, gen_plain, DType::f64);

  Generator gen(1);
  ParameterArena arena;
  TwoLayer m(gen);
  // Laid out, not yet allocated: reading a parameter says why it cannot.
  expect_throw_with<std::logic_error>([&] { (void)m.first->weight.to_vector(); },
                                      "has no storage yet");
  arena.allocate(m);
  BOOST_TEST(arena.params().numel() == m.num_parameters());
  BOOST_TEST(arena.named_parameters()[1].first == "first.bias");  // registration order
  // Initialised in registration order from the same generator: the same numbers, in the arena.
  BOOST_TEST(m.first->weight.to_vector() == plain.first->weight.to_vector());
  BOOST_TEST(m.second->weight.to_vector() == plain.second->weight.to_vector());
  BOOST_TEST(m.first->weight.shares_storage(arena.params()));
  BOOST_TEST(m.forward(x).to_vector() == plain.forward(x).to_vector());

  // Backward writes straight into the gradient arena.
  sum(m.forward(x)).backward();
  const Tensor g = m.second->weight.grad();
  BOOST_TEST(g.shares_storage(arena.grads()));
  double sq = 0;
  for (const Tensor& p : m.parameters())
    for (double v : p.grad().to_vector()) sq += v * v;
  BOOST_TEST(std::abs(arena.grad_norm() - std::sqrt(sq)) < 1e-12);

  // Clipping scales all gradients together.
  const double norm = arena.grad_norm();
  const std::vector<double> before = arena.grads().to_vector();
  BOOST_TEST(arena.clip_grad_norm(norm / 2) == norm);
  BOOST_TEST(std::abs(arena.grad_norm() - norm / 2) < 1e-5);
  const std::vector<double> after = arena.grads().to_vector();
  for (size_t i = 0; i < after.size(); ++i)
    BOOST_TEST(std::abs(after[i] - before[i] * (norm / 2) / (norm + 1e-6)) < 1e-15);
  arena.clip_grad_norm(1e9);  // no-op above the norm
  BOOST_TEST(arena.grads().to_vector() == after);

  arena.zero_grad();
  for (double v : m.first->bias.grad().to_vector()) BOOST_TEST(v == 0.0);
}

// A tensor that already has storage is never re-pointed: a view taken of it earlier would keep
// the old data while the module read the arena. allocate() refuses it and names the fix.
BOOST_AUTO_TEST_CASE(arena_refuses_a_module_built_before_it) {
  Generator gen(2);
  TwoLayer early(gen);
  const Tensor view = transpose(early.first->weight, 0, 1);
  ParameterArena arena;
  expect_throw_with<std::logic_error>(
      [&] { arena.allocate(early); },
      "parameter 'first.weight' already has its own storage; build the module after "
      "opening the arena");
  BOOST_TEST(view.shares_storage(early.first->weight));  // untouched
  BOOST_TEST(!early.first->weight.shares_storage(arena.params()));
}

// Every parameter registered while the arena is open must be given to allocate(): one left
// out would stay unallocated.
BOOST_AUTO_TEST_CASE(arena_refuses_a_missing_parameter_and_a_second_allocate) {
  Generator gen(3);
  ParameterArena arena;
  TwoLayer m(gen);
  auto named = m.named_parameters();
  named.pop_back();
  expect_throw_with<std::logic_error>(
      [&] { arena.allocate(named); },
      "a (2, 4) parameter registered while the arena was open is missing");
  ParameterArena second;
  TwoLayer n(gen);
  second.allocate(n);
  expect_throw_with<std::logic_error>([&] { second.allocate(n); }, "already allocated");
  // Closed: a module built now allocates its own parameters at once.
  TwoLayer after(gen);
  BOOST_TEST(!after.first->weight.shares_storage(second.params()));
  BOOST_TEST(after.first->weight.to_vector().size() == 12u);
}
