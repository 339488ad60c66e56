// Module bookkeeping and the parameter arena.
#define BOOST_TEST_MODULE module
#include <boost/test/unit_test.hpp>
#include <cmath>

#include "autograd/ops.h"
#include "nn/containers.h"
#include "nn/layers.h"
#include "nn/module.h"
#include "nn/optim.h"
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

// ParameterArena::zero_grad writes nothing (issue 35: the fill was 2.8% of GPT-2 small's step):
// the next backward writes each gradient's first value, and whatever reads the gradients writes
// the zeros of a parameter that backward did not reach. Checked against the same module without
// an arena, zeroed by filling: through an op that writes its first gradient (linear), one that
// adds into zeros (mul), a leaf hook, a parameter left out, the flat views and an AdamW step
// whose one range runs over all parameters.
BOOST_AUTO_TEST_CASE(arena_zero_grad_defers_its_fill_and_reads_as_zeros) {
  Generator gen_plain(3), gen(3);
  TwoLayer plain(gen_plain);
  ParameterArena arena;
  TwoLayer m(gen);
  arena.allocate(m);
  const Tensor x = Tensor::randn({5, 3}, gen_plain, DType::f64);
  for (TwoLayer* model : {&plain, &m}) sum(model->forward(x)).backward();  // gradients != 0
  const Tensor flat = arena.grads();
  const std::vector<double> old = flat.to_vector();

  arena.zero_grad();
  plain.zero_grad();
  BOOST_TEST(flat.to_vector() == old);  // not written: the values of the last step are there
  // first.bias twice through a hook; first.weight through linear (its first gradient written);
  // second.weight not reached this time.
  int hooked = 0;
  for (TwoLayer* model : {&plain, &m}) {
    model->first->bias.register_hook([&hooked](const Tensor& g) {
      ++hooked;
      return mul_scalar(g, 2.0);
    });
    const Tensor b = model->first->bias;
    sum(add(model->first->forward(x), mul(b, b))).backward();
  }
  BOOST_TEST(hooked == 2);
  for (size_t i = 0; i < 3; ++i) {
    const Tensor p = plain.parameters()[i], q = m.parameters()[i];
    BOOST_TEST(q.grad().to_vector() == p.grad().to_vector());
  }
  for (double v : m.second->weight.grad().to_vector()) BOOST_TEST(v == 0.0);

  // Zeroed again, and nothing reached: the flat gradients and their norm read zeros ...
  arena.zero_grad();
  BOOST_TEST(arena.grad_norm() == 0.0);
  for (double v : arena.grads().to_vector()) BOOST_TEST(v == 0.0);
  // ... and an AdamW step after a backward that reaches one layer moves the weights as the plain
  // module's, its one range (all three tensors) read with second.weight's zeros.
  arena.zero_grad();
  plain.zero_grad();
  AdamW plain_opt(plain.parameters(), AdamWOptions(0.1));
  AdamW opt(m.parameters(), AdamWOptions(0.1));
  BOOST_TEST(opt.num_ranges() == 1u);
  for (TwoLayer* model : {&plain, &m}) sum(model->first->forward(x)).backward();
  plain_opt.step();
  opt.step();
  for (size_t i = 0; i < 3; ++i)
    BOOST_TEST(m.parameters()[i].to_vector() == plain.parameters()[i].to_vector());
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

namespace {
// A module with buffers beside its parameters, as torch's BatchNorm1d: a running mean (f64) and
// a count of batches (i64, torch's num_batches_tracked), then a child Linear.
class Scaled : public Module {
 public:
  explicit Scaled(Generator& gen) {
    scale = register_parameter("scale", Tensor::full({3}, 2.0, DType::f64));
    running_mean = register_buffer("running_mean", Tensor::zeros({3}, DType::f64));
    num_batches_tracked = register_buffer("num_batches_tracked", Tensor::from_ids({0}, {}));
    table = register_buffer("table", Tensor::ones({2}, DType::f64), /*persistent=*/false);
    head = register_module("head", std::make_shared<Linear>(3, 2, true, gen, DType::f64));
  }
  Tensor scale, running_mean, num_batches_tracked, table;
  std::shared_ptr<Linear> head;
};

// The values of a state dict, key by key, for comparisons.
std::vector<std::pair<std::string, std::vector<double>>> values_of(const StateDict& state) {
  std::vector<std::pair<std::string, std::vector<double>>> out;
  for (const auto& [key, t] : state) out.emplace_back(key, t.to_vector());
  return out;
}
}  // namespace

// Buffers belong to the module but are not parameters: no gradient, not in parameters() (so no
// optimizer or arena sees them), listed by named_buffers(); a non-persistent one stays out of
// state_dict(). The state dict is each module's parameters, then its buffers, then its
// children's, under dotted names (torch's order), as detached views of the module's tensors.
BOOST_AUTO_TEST_CASE(buffers_and_the_state_dict_in_torchs_order) {
  Generator gen(0);
  Scaled m(gen);
  BOOST_TEST(m.parameters().size() == 3u);  // scale, head.weight, head.bias
  BOOST_TEST(m.num_parameters() == 3 + 6 + 2);
  const auto buffers = m.named_buffers();
  BOOST_REQUIRE_EQUAL(buffers.size(), 3u);
  BOOST_TEST(buffers[0].first == "running_mean");
  BOOST_TEST(buffers[2].first == "table");
  BOOST_TEST(!buffers[0].second.requires_grad());
  const StateDict state = m.state_dict();
  std::vector<std::string> keys;
  for (const auto& [key, t] : state) keys.push_back(key);
  BOOST_TEST((keys == std::vector<std::string>{"scale", "running_mean", "num_batches_tracked",
                                               "head.weight", "head.bias"}));
  BOOST_TEST(!state[0].second.requires_grad());         // detached ...
  BOOST_TEST(state[0].second.shares_storage(m.scale));  // ... views, no copy
  BOOST_TEST((state[2].second.dtype() == DType::i64));
  // A buffer is never trained: one that requires grad, a dotted name, a name taken, refused.
  Tensor w = Tensor::zeros({2}, DType::f64).requires_grad_();
  expect_throw_with<std::invalid_argument>([&] { m.register_buffer("w", w); },
                                           "'w' requires grad; a buffer is never trained");
  expect_throw_with<std::invalid_argument>([&] { m.register_buffer("a.b", Tensor::zeros({1})); },
                                           "'a.b' holds a dot");
  expect_throw_with<std::invalid_argument>([&] { m.register_buffer("head", Tensor::zeros({1})); },
                                           "already has a 'head'");
  expect_throw_with<std::invalid_argument>(
      [&] { m.register_parameter("scale", Tensor::zeros({1})); }, "already has a 'scale'");
  // A child's name may hold dots ("h.0"), never an empty part: "a." would give the key
  // "a..weight" (a newcomer's finding, issue 32).
  struct Parent : Module {
  } parent;  // register_module is public, as torch's (a newcomer's finding, issue 32)
  for (const char* name : {"a.", ".b", "a..b", "."})
    expect_throw_with<std::invalid_argument>(
        [&] { parent.register_module(name, std::make_shared<Linear>(1, 1)); },
        std::string("register_module: '") + name + "' has an empty part between its dots");
  BOOST_TEST(parent.register_module("h.0", std::make_shared<Linear>(1, 1)) != nullptr);
  BOOST_TEST(parent.state_dict()[0].first == "h.0.weight");
}

// named_modules: the module itself as "", then depth first with dotted names; apply: children
// first, then the module (torch's order), e.g. to re-initialise every Linear.
BOOST_AUTO_TEST_CASE(named_modules_and_apply_children_first) {
  class Outer : public Module {
   public:
    explicit Outer(Generator& gen) {
      inner = register_module("inner", std::make_shared<TwoLayer>(gen));
      last = register_module("last", std::make_shared<Linear>(2, 1, true, gen, DType::f64));
    }
    std::shared_ptr<TwoLayer> inner;
    std::shared_ptr<Linear> last;
  };
  Generator gen(1);
  Outer m(gen);
  std::vector<std::string> names;
  for (const auto& [name, module] : m.named_modules()) names.push_back(name);
  BOOST_TEST(
      (names == std::vector<std::string>{"", "inner", "inner.first", "inner.second", "last"}));
  BOOST_TEST(m.named_modules()[2].second == m.inner->first.get());
  std::vector<const Module*> order;
  int linears = 0;
  m.apply([&](Module& module) {
    order.push_back(&module);
    if (auto* linear = dynamic_cast<Linear*>(&module)) {
      linear->weight.fill_(0.5);
      ++linears;
    }
  });
  BOOST_TEST(linears == 3);
  BOOST_REQUIRE_EQUAL(order.size(), 5u);
  BOOST_TEST(order[0] == m.inner->first.get());  // children first ...
  BOOST_TEST(order[2] == m.inner.get());
  BOOST_TEST(order[4] == &m);  // ... the module last
  for (double v : m.last->weight.to_vector()) BOOST_TEST(v == 0.5);
}

// load_state_dict copies every tensor into place, converting f32 to f64, into the parameters of
// an arena and into the buffers, and returns nothing left out.
BOOST_AUTO_TEST_CASE(load_state_dict_round_trips_into_an_arena) {
  Generator gen_a(1), gen_b(2);
  Scaled a(gen_a);
  a.running_mean.fill_(0.25);
  a.num_batches_tracked.fill_(7);
  ParameterArena arena;
  Scaled b(gen_b);
  arena.allocate(b);
  BOOST_TEST((values_of(b.state_dict()) != values_of(a.state_dict())));
  StateDict state = a.state_dict();
  state[3].second = cast(state[3].second, DType::f32);  // head.weight in f32: converted
  const LoadStateDictResult r = b.load_state_dict(state);
  BOOST_TEST(r.missing_keys.empty());
  BOOST_TEST(r.unexpected_keys.empty());
  BOOST_TEST(b.head->weight.shares_storage(arena.params()));  // written in place
  BOOST_TEST(allclose(b.head->weight.to_vector(), a.head->weight.to_vector(), 1e-7, 1e-7));
  BOOST_TEST(b.head->bias.to_vector() == a.head->bias.to_vector());
  BOOST_TEST(b.running_mean.to_vector() == std::vector<double>(3, 0.25));
  BOOST_TEST(b.num_batches_tracked.to_ids() == std::vector<int64_t>{7});
}

// Strict by default: one error names every missing, unexpected, mis-shaped and unconvertible
// key, and nothing is written (all or nothing). Not strict, the keys both have load and the
// others come back as torch's missing_keys and unexpected_keys; a wrong shape is an error still.
BOOST_AUTO_TEST_CASE(load_state_dict_names_every_problem_and_writes_nothing) {
  Generator gen(3);
  Scaled m(gen);
  const auto before = values_of(m.state_dict());
  const StateDict bad{
      {"scale", Tensor::full({3}, 9.0, DType::f64)},             // fine, but not written
      {"running_mean", Tensor::zeros({4}, DType::f64)},          // mis-shaped
      {"num_batches_tracked", Tensor::scalar(1.0, DType::f64)},  // f64 into i64
      {"head.weight", Tensor::zeros({2, 3}, DType::f64)},        // fine
      {"head.weight_typo", Tensor::zeros({2}, DType::f64)},      // unexpected
      {"extra", Tensor::zeros({1}, DType::f32)},                 // unexpected
  };                                                             // head.bias: missing
  try {
    m.load_state_dict(bad);
    BOOST_FAIL("expected std::invalid_argument");
  } catch (const std::invalid_argument& e) {
    const std::string what = e.what();
    BOOST_TEST_MESSAGE(what);
    for (const char* needle :
         {"nothing was loaded from the state dict",
          "1 missing (in the module, not in the state dict): 'head.bias' (2,) f64",
          "2 unexpected (in the state dict, not in the module): 'head.weight_typo' (2,) f64, "
          "'extra' (1,) f32",
          "2 mismatched: 'running_mean' is (4,) in the state dict but (3,) in the module, "
          "'num_batches_tracked' is f64 in the state dict, which does not convert to the "
          "module's i64"})
      BOOST_TEST(what.find(needle) != std::string::npos, "missing: " << needle);
  }
  BOOST_TEST((values_of(m.state_dict()) == before));  // nothing written
  // Not strict: the mismatches still refuse.
  expect_throw_with<std::invalid_argument>([&] { m.load_state_dict(bad, false); }, "2 mismatched");
  BOOST_TEST((values_of(m.state_dict()) == before));
  // Not strict, with only missing and unexpected keys: loaded, and the keys returned.
  const StateDict partial{{"scale", Tensor::full({3}, 9.0, DType::f64)},
                          {"extra", Tensor::zeros({1}, DType::f32)}};
  expect_throw_with<std::invalid_argument>(
      [&] { m.load_state_dict(partial); },
      "(strict = false loads the keys both have and returns the others)");
  const LoadStateDictResult r = m.load_state_dict(partial, /*strict=*/false);
  BOOST_TEST((r.missing_keys == std::vector<std::string>{"running_mean", "num_batches_tracked",
                                                         "head.weight", "head.bias"}));
  BOOST_TEST((r.unexpected_keys == std::vector<std::string>{"extra"}));
  BOOST_TEST(m.scale.to_vector() == std::vector<double>(3, 9.0));
  BOOST_TEST((values_of(m.state_dict())[3] == before[3]));  // head.weight kept its values
  // A key given twice is refused too.
  expect_throw_with<std::invalid_argument>(
      [&] {
        m.load_state_dict({partial[0], partial[0]}, false);
      },
      "1 given twice: 'scale'");
}

// A weight tied between two modules (a parameter registered under a second name) is one
// parameter: listed once under its first name, counted once, and an optimizer takes the list,
// as torch's named_parameters() / parameters() give it; the state dict keeps both names.
BOOST_AUTO_TEST_CASE(a_tied_weight_is_one_parameter_but_two_state_dict_keys) {
  class Tied : public Module {
   public:
    explicit Tied(Generator& gen) {
      w = register_parameter("w", Tensor::randn({3, 3}, gen, DType::f64));
      fc = register_module("fc", std::make_shared<Linear>(3, 3, true, gen, DType::f64));
    }
    Tensor w;
    std::shared_ptr<Linear> fc;
  };
  class Holder : public Module {
   public:
    explicit Holder(Generator& gen) : inner(register_module("inner", std::make_shared<Tied>(gen))) {
      register_parameter("alias", inner->w);  // the same tensor under a second name
    }
    std::shared_ptr<Tied> inner;
  };
  Generator gen(3);
  Holder m(gen);
  std::vector<std::string> names;
  for (const auto& [name, t] : m.named_parameters()) names.push_back(name);
  BOOST_TEST((names == std::vector<std::string>{"alias", "inner.fc.weight", "inner.fc.bias"}));
  BOOST_TEST(m.num_parameters() == 9 + 9 + 3);  // alias (= inner.w), fc.weight, fc.bias
  BOOST_TEST(m.parameters()[0].is_same(m.inner->w));
  BOOST_CHECK_NO_THROW(AdamW(m.parameters(), AdamWOptions(1e-3)));
  std::vector<std::string> keys;
  for (const auto& [name, t] : m.state_dict()) keys.push_back(name);
  BOOST_TEST(
      (keys == std::vector<std::string>{"alias", "inner.w", "inner.fc.weight", "inner.fc.bias"}));
}

// The same tie inside an open ParameterArena (issue 32): it made a copy, trained apart from the
// weight it was meant to share and listed twice by named_parameters(). Now the parameter the
// arena holds is tied, one tensor laid out once; one it does not hold (built before the arena
// was opened) is refused, since it can be neither tied nor laid out.
BOOST_AUTO_TEST_CASE(a_weight_tied_inside_an_arena_is_one_tensor) {
  class Shares : public Module {
   public:
    Shares(Generator& gen, const Tensor& other) {
      fc = register_module("fc", std::make_shared<Linear>(3, 3, false, gen, DType::f64));
      tied = register_parameter("tied", other.defined() ? other : fc->weight);
    }
    std::shared_ptr<Linear> fc;
    Tensor tied;
  };
  Generator gen(4);
  ParameterArena arena;
  Shares m(gen, Tensor());
  BOOST_TEST(m.tied.is_same(m.fc->weight));
  BOOST_TEST(m.named_parameters().size() == 1u);
  arena.allocate(m);
  BOOST_TEST(arena.params().numel() == 9);  // one (3, 3) weight, laid out once
  BOOST_TEST(m.tied.is_same(m.fc->weight));
  BOOST_TEST(m.state_dict().size() == 2u);  // fc.weight and tied

  Shares outside(gen, Tensor());  // no arena open now: a module of its own
  {
    ParameterArena second;
    expect_throw_with<std::invalid_argument>(
        [&] { Shares again(gen, outside.fc->weight); },
        "register_parameter: 'tied' is a trainable tensor that the open ParameterArena does not "
        "hold");
  }
  // A frozen parameter the arena holds is tied as well, and stays frozen (it was copied, and the
  // copy trained).
  {
    ParameterArena frozen_arena;
    Shares frozen(gen, Tensor());  // fc.weight tied as before; freeze it, then tie it again
    frozen.fc->weight.set_requires_grad(false);
    class Again : public Module {
     public:
      explicit Again(const Tensor& w) { tied = register_parameter("w", w); }
      Tensor tied;
    } again(frozen.fc->weight);
    BOOST_TEST(again.tied.is_same(frozen.fc->weight));
    BOOST_TEST(!again.tied.requires_grad());
    frozen_arena.allocate(frozen);
    BOOST_TEST(frozen_arena.params().numel() == 9);
  }
  // A tensor that is not a parameter is still copied into the arena, as before.
  ParameterArena third;
  Shares copied(gen, Tensor::ones({3, 3}, DType::f64));
  third.allocate(copied);
  BOOST_TEST(!copied.tied.is_same(copied.fc->weight));
  BOOST_TEST(copied.tied.to_vector() == std::vector<double>(9, 1.0));
}

// Two names of one module of which one is the other plus ".…" (a child "h" with a child "0",
// beside a child "h.0") gave two tensors one state dict key: save kept one, load wrote it into
// both (issue 32). Refused when the second is registered; GPT-2's "h.0", "h.1" stay legal.
BOOST_AUTO_TEST_CASE(names_whose_keys_could_coincide_are_refused) {
  class Inner : public Module {
   public:
    explicit Inner(Generator& gen) {
      register_module("0", std::make_shared<Linear>(2, 2, false, gen, DType::f64));
    }
  };
  class Outer : public Module {
   public:
    Outer(Generator& gen, const std::string& second) {
      register_module("h", std::make_shared<Inner>(gen));
      register_module(second, std::make_shared<Linear>(2, 2, false, gen, DType::f64));
    }
  };
  Generator gen(5);
  expect_throw_with<std::invalid_argument>(
      [&] { Outer m(gen, "h.0"); },
      "register_module: 'h.0' and 'h' of this module would give state dict keys that can "
      "coincide");
  Outer fine(gen, "h0");
  BOOST_TEST(fine.state_dict().size() == 2u);
  class Blocks : public Module {
   public:
    explicit Blocks(Generator& gen) {
      for (const char* name : {"h.0", "h.1", "h.10"})
        register_module(name, std::make_shared<Linear>(2, 2, false, gen, DType::f64));
      register_parameter("h", Tensor::ones({1}, DType::f64));
    }
  };
  expect_throw_with<std::invalid_argument>([&] { Blocks b(gen); },
                                           "register_parameter: 'h' and 'h.0' of this module");
}

// replace_module (libtorch's): the tree walks reach the new child, in the old one's place; an
// unknown name lists the children there are; a null module and one that holds the parent are
// refused, and the tree is left as it was.
BOOST_AUTO_TEST_CASE(replace_module_puts_a_child_in_the_old_ones_place) {
  Generator gen(3);
  TwoLayer m(gen);
  auto wider = std::make_shared<Linear>(3, 4, false, gen, DType::f64);
  m.first = m.replace_module("first", wider);
  const auto named = m.named_parameters();
  BOOST_REQUIRE_EQUAL(named.size(), 2u);  // first.weight (no bias now), second.weight
  BOOST_TEST(named[0].first == "first.weight");
  BOOST_TEST(named[0].second.is_same(wider->weight));
  BOOST_TEST(named[1].first == "second.weight");
  BOOST_TEST(m.named_modules()[1].second == wider.get());
  expect_throw_with<std::invalid_argument>(
      [&] { m.replace_module("third", wider); },
      "replace_module: no child module 'third'; its children are first, second");
  expect_throw_with<std::invalid_argument>(
      [&] { m.replace_module("first", std::shared_ptr<Linear>()); },
      "replace_module: module 'first' is null");
  auto seq = std::make_shared<Sequential>();
  auto inner = std::make_shared<Sequential>();
  seq->push_back(inner);
  expect_throw_with<std::invalid_argument>([&] { inner->replace_module("0", seq); },
                                           "no child module '0'; this module has none");
  inner->push_back(std::make_shared<Linear>(2, 2));
  expect_throw_with<std::invalid_argument>([&] { inner->replace_module("0", seq); },
                                           "replace_module: '0' holds this module (as its '0')");
  BOOST_TEST(inner->parameters().size() == 2u);  // the Linear is still there
}
