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

BOOST_AUTO_TEST_CASE(arena_packs_values_and_gradients_in_place) {
  Generator gen(1);
  TwoLayer m(gen);
  const std::vector<double> w_before = m.first->weight.to_vector();
  const Tensor x = Tensor::randn({5, 3}, gen, DType::f64);
  const std::vector<double> y_before = m.forward(x).to_vector();

  ParameterArena arena(m);
  BOOST_TEST(arena.params().numel() == m.num_parameters());
  BOOST_TEST(arena.named_parameters()[1].first == "first.bias");  // registration order
  // Same values, now living in the arena: the module's own handles see the move.
  BOOST_TEST(m.first->weight.to_vector() == w_before);
  BOOST_TEST(m.first->weight.impl()->storage == arena.params().impl()->storage);
  BOOST_TEST(m.forward(x).to_vector() == y_before);

  // Backward writes straight into the gradient arena.
  sum(m.forward(x)).backward();
  const Tensor g = m.second->weight.grad();
  BOOST_TEST(g.impl()->storage == arena.grads().impl()->storage);
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
  for (size_t i = 0; i < after.size(); ++i) BOOST_TEST(std::abs(after[i] - before[i] * (norm / 2) / (norm + 1e-6)) < 1e-15);
  arena.clip_grad_norm(1e9);  // no-op above the norm
  BOOST_TEST(arena.grads().to_vector() == after);

  arena.zero_grad();
  for (double v : m.first->bias.grad().to_vector()) BOOST_TEST(v == 0.0);
}
