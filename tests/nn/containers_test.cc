// Modules that compose (nn/containers.h) and forward hooks (nn/module.h's UnaryModule), against
// PyTorch: torch.nn.Sequential(Linear(2, 2), ReLU(), Linear(2, 1)) with the weights below gives
// these outputs, activations and gradients (torch 1.13, printed by the script in each comment).
#define BOOST_TEST_MODULE containers
#include <boost/test/unit_test.hpp>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "autograd/ops.h"
#include "nn/containers.h"
#include "nn/layers.h"
#include "tests/test_util.h"

using namespace attograd;
using namespace attograd::nn;
using attograd::testing::expect_tensor;
using attograd::testing::expect_throw_with;

namespace {

// m = Sequential(Linear(2, 2), ReLU(), Linear(2, 1)); m[0].weight = [[1, -2], [0.5, 1]],
// m[0].bias = [0.1, -0.2], m[2].weight = [[2, -1]], m[2].bias = [0.3].
std::shared_ptr<Sequential> torch_mlp() {
  auto fc1 = std::make_shared<Linear>(2, 2, true, DType::f64);
  auto fc2 = std::make_shared<Linear>(2, 1, true, DType::f64);
  fc1->weight.copy_from(Tensor::from_vector({1, -2, 0.5, 1}, {2, 2}, DType::f64));
  fc1->bias.copy_from(Tensor::from_vector({0.1, -0.2}, {2}, DType::f64));
  fc2->weight.copy_from(Tensor::from_vector({2, -1}, {1, 2}, DType::f64));
  fc2->bias.copy_from(Tensor::from_vector({0.3}, {1}, DType::f64));
  return std::make_shared<Sequential>(std::initializer_list<std::shared_ptr<UnaryModule>>{
      fc1, std::make_shared<Functional>([](const Tensor& x) { return relu(x); }), fc2});
}

const Tensor kX = Tensor::from_vector({1, 2, -1, 0.5}, {2, 2}, DType::f64);

}  // namespace

// y = m(x); y.sum().backward(): y [[-2.0], [0.3]], m[0].weight.grad [[0, 0], [-1, -2]],
// m[0].bias.grad [0, -1], m[2].weight.grad [[0, 2.3]], m[2].bias.grad [2];
// list(m.state_dict()) ['0.weight', '0.bias', '2.weight', '2.bias'].
BOOST_AUTO_TEST_CASE(sequential_chains_its_modules_as_torch_does) {
  const auto m = torch_mlp();
  const Tensor y = (*m)(kX);
  expect_tensor(y, {2, 1}, {-2.0, 0.3}, 1e-12);
  sum(y).backward();
  const auto& fc1 = dynamic_cast<const Linear&>((*m)[0]);
  const auto& fc2 = dynamic_cast<const Linear&>((*m)[2]);
  expect_tensor(fc1.weight.grad(), {2, 2}, {0, 0, -1, -2}, 1e-12);
  expect_tensor(fc1.bias.grad(), {2}, {0, -1}, 1e-12);
  expect_tensor(fc2.weight.grad(), {1, 2}, {0, 2.3}, 1e-12);
  expect_tensor(fc2.bias.grad(), {1}, {2}, 1e-12);
  std::vector<std::string> keys;
  for (const auto& [key, t] : m->state_dict()) keys.push_back(key);
  BOOST_TEST((keys == std::vector<std::string>{"0.weight", "0.bias", "2.weight", "2.bias"}));
  BOOST_TEST(m->size() == 3u);
  expect_throw_with<std::out_of_range>([&] { (*m)[3]; }, "Sequential: index 3 is past its 3");
  // An empty Sequential is the identity.
  expect_tensor(Sequential()(kX), {2, 2}, {1, 2, -1, 0.5}, 0);
}

// acts = []; m[0].register_forward_hook(lambda mod, i, o: acts.append(o.detach())); m(x):
// acts[0] [[-2.9, 2.3], [-1.9, -0.2]]. A pre-hook returning (2 * x,): m(x) [[-4.5], [0.3]].
BOOST_AUTO_TEST_CASE(forward_hooks_see_and_replace_as_torchs_do) {
  const auto m = torch_mlp();
  UnaryModule& fc1 = (*m)[0];
  std::vector<Tensor> acts;
  HookHandle keep = fc1.register_forward_hook(
      [&](const UnaryModule& module, const Tensor& input, const Tensor& output) {
        BOOST_TEST(&module == &fc1);
        BOOST_TEST(input.to_vector() == kX.to_vector());
        acts.push_back(output.detach());
        return std::optional<Tensor>();
      });
  (*m)(kX);
  BOOST_REQUIRE_EQUAL(acts.size(), 1u);
  expect_tensor(acts[0], {2, 2}, {-2.9, 2.3, -1.9, -0.2}, 1e-12);
  fc1.forward(kX);  // forward() itself skips the hooks, as torch's
  BOOST_TEST(acts.size() == 1u);
  keep.remove();
  keep.remove();  // idempotent
  (*m)(kX);
  BOOST_TEST(acts.size() == 1u);

  HookHandle twice = fc1.register_forward_pre_hook(
      [](const UnaryModule&, const Tensor& input) { return std::optional(mul_scalar(input, 2)); });
  expect_tensor((*m)(kX), {2, 1}, {-4.5, 0.3}, 1e-12);
  // A forward hook's return replaces the output: here the whole model's, negated.
  HookHandle negate =
      m->register_forward_hook([](const UnaryModule&, const Tensor&, const Tensor& output) {
        return std::optional(mul_scalar(output, -1));
      });
  expect_tensor((*m)(kX), {2, 1}, {4.5, -0.3}, 1e-12);
  twice.remove();
  negate.remove();
  expect_tensor((*m)(kX), {2, 1}, {-2.0, 0.3}, 1e-12);
}

// A hook that removes itself runs once; the call in progress keeps the hooks it started with;
// a handle outliving its module does nothing.
BOOST_AUTO_TEST_CASE(hooks_removed_while_running_and_handles_outliving_the_module) {
  auto m = torch_mlp();
  int calls = 0;
  HookHandle self;
  self = m->register_forward_hook([&](const UnaryModule&, const Tensor&, const Tensor&) {
    ++calls;
    self.remove();
    return std::optional<Tensor>();
  });
  (*m)(kX);
  (*m)(kX);
  BOOST_TEST(calls == 1);
  HookHandle orphan = m->register_forward_pre_hook(
      [](const UnaryModule&, const Tensor&) { return std::optional<Tensor>(); });
  m.reset();
  orphan.remove();  // the module is gone: nothing to do, no crash
  expect_throw_with<std::invalid_argument>([] { Linear(2, 2).register_forward_hook(nullptr); },
                                           "register_forward_hook: the hook");
}

// The GPT's layers are UnaryModules: a hook on an MLP's c_fc sees the (B, T, 4C) activation the
// MLP computes with, through the MLP's own call.
BOOST_AUTO_TEST_CASE(a_hook_inside_a_layer_sees_its_activation) {
  Generator gen(3);
  MLP mlp(4, true, 0.0, 0.02, gen, nullptr, DType::f64);
  Tensor captured;
  mlp.c_fc->register_forward_hook([&](const UnaryModule&, const Tensor&, const Tensor& output) {
    captured = output.detach();
    return std::optional<Tensor>();
  });
  const Tensor x = Tensor::randn({2, 3, 4}, gen, DType::f64);
  mlp(x);
  BOOST_REQUIRE(captured.defined());
  BOOST_TEST((captured.shape() == Shape{2, 3, 16}));
  BOOST_TEST(captured.to_vector() == mlp.c_fc->forward(x).to_vector());
}

BOOST_AUTO_TEST_CASE(module_list_and_module_dict_name_their_children_as_torch_does) {
  auto a = std::make_shared<Linear>(2, 3), b = std::make_shared<Linear>(3, 1, false);
  ModuleList list{a, b};
  BOOST_TEST(&list.get<Linear>(1) == b.get());
  expect_throw_with<std::invalid_argument>([&] { list.get<LayerNorm>(0); },
                                           "ModuleList: module 0 is not of the kind asked for");
  std::vector<std::string> names;
  for (const auto& [name, t] : list.named_parameters()) names.push_back(name);
  BOOST_TEST((names == std::vector<std::string>{"0.weight", "0.bias", "1.weight"}));
  int n = 0;
  for (const auto& m : list) n += m->num_parameters() > 0;
  BOOST_TEST(n == 2);

  ModuleDict dict{{"encoder", a}, {"head", b}};
  BOOST_TEST((dict.keys() == std::vector<std::string>{"encoder", "head"}));
  BOOST_TEST(dict.contains("head"));
  BOOST_TEST(&dict["encoder"] == a.get());
  expect_throw_with<std::out_of_range>([&] { dict["decoder"]; },
                                       "ModuleDict: no key 'decoder'; its keys are 'encoder', "
                                       "'head'");
  expect_throw_with<std::invalid_argument>([&] { dict.insert("head", a); }, "'head'");
  expect_throw_with<std::invalid_argument>([&] { dict.insert("h.0", a); },
                                           "ModuleDict: key 'h.0' has a dot");
  names.clear();
  for (const auto& [name, t] : dict.named_parameters()) names.push_back(name);
  BOOST_TEST((names == std::vector<std::string>{"encoder.weight", "encoder.bias", "head.weight"}));
}

// The same module twice in a Sequential is applied twice and trained once: its parameters are
// listed once (torch's named_parameters() removes duplicates too), its gradient the sum of both
// uses. y = W (W x) with W = [[2]]: dy/dW = 2 W x = 12 at x = 3.
BOOST_AUTO_TEST_CASE(a_module_added_twice_is_applied_twice_and_listed_once) {
  auto w = std::make_shared<Linear>(1, 1, false, DType::f64);
  w->weight.fill_(2);
  Sequential twice{w, w};
  BOOST_TEST(twice.parameters().size() == 1u);
  const Tensor y = twice(Tensor::from_vector({3}, {1, 1}, DType::f64));
  expect_tensor(y, {1, 1}, {12}, 0);
  y.backward();
  expect_tensor(w->weight.grad(), {1, 1}, {12}, 0);
}

// A module inside itself, directly (s->push_back(s)) or through a chain (a holds b, b takes a),
// made every walk of the tree endless: parameters() overflowed the stack. register_module refuses
// it, naming the way in and the fix, and the container is left as it was. A module shared by two
// parents (no cycle) is still taken.
BOOST_AUTO_TEST_CASE(a_module_registered_inside_itself_is_refused) {
  auto s = std::make_shared<Sequential>();
  s->push_back(std::make_shared<Linear>(2, 2));
  expect_throw_with<std::invalid_argument>(
      [&] { s->push_back(s); },
      "register_module: '1' is this module itself, so registering it would put the module inside "
      "itself, and every walk of the tree (parameters(), state_dict(), train()) would never end; "
      "register another module, or a new one built alike if you meant a copy");
  BOOST_TEST(s->size() == 1u);
  BOOST_TEST(s->parameters().size() == 2u);

  // a -> b -> c, then c takes a: a holds c as its "0.blocks".
  auto a = std::make_shared<ModuleList>();
  auto b = std::make_shared<ModuleDict>();
  auto c = std::make_shared<ModuleList>();
  a->push_back(b);
  b->insert("blocks", c);
  expect_throw_with<std::invalid_argument>([&] { c->push_back(a); },
                                           "register_module: '0' holds this module (as its "
                                           "'0.blocks'), so registering it would put the module "
                                           "inside itself");
  expect_throw_with<std::invalid_argument>([&] { b->insert("up", a); },
                                           "register_module: 'up' holds this module (as its '0')");
  BOOST_TEST(c->size() == 0u);
  BOOST_TEST((b->keys() == std::vector<std::string>{"blocks"}));

  // Shared, not inside itself: one Linear under two Sequentials, both under a third.
  auto shared = std::make_shared<Linear>(2, 2);
  auto left =
      std::make_shared<Sequential>(std::initializer_list<std::shared_ptr<UnaryModule>>{shared});
  auto right =
      std::make_shared<Sequential>(std::initializer_list<std::shared_ptr<UnaryModule>>{shared});
  Sequential both{left, right};
  BOOST_TEST(both.parameters().size() == 2u);
  BOOST_TEST(both.named_modules().size() == 5u);  // both, left, left.0, right, right.0
}
