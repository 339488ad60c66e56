// Optimizers: AdamW and SGD by hand and against torch.optim with parameter groups on plain
// tensors; arena groups fused into ranges (bit-identical to the tensor-by-tensor path); the
// errors for tensors an optimizer cannot update; the learning-rate schedule.
#define BOOST_TEST_MODULE optim
#include <boost/test/unit_test.hpp>
#include <cmath>
#include <limits>
#include <stdexcept>

#include "autograd/ops.h"
#include "nn/module.h"
#include "nn/optim.h"
#include "tests/test_util.h"

using namespace attograd;
using namespace attograd::nn;
using attograd::testing::allclose;
using attograd::testing::expect_throw_with;

namespace {
class WeightAndBias : public Module {
 public:
  WeightAndBias() {
    W = register_parameter("W", Tensor::from_vector({1, -2}, {1, 2}, DType::f64));
    b = register_parameter("b", Tensor::from_vector({0.5}, {1}, DType::f64));
  }
  Tensor W, b;
};
void set_grads(const WeightAndBias& m) {
  m.W.grad().data<double>()[0] = 0.1;
  m.W.grad().data<double>()[1] = 0.1;
  m.b.grad().data<double>()[0] = 0.1;
}
// nanoGPT's two groups: decay on the weight, none on the bias.
std::vector<ParamGroup> decay_weight_only(const WeightAndBias& m, double weight_decay) {
  return {ParamGroup{.params = {m.W}, .weight_decay = weight_decay},
          ParamGroup{.params = {m.b}, .weight_decay = 0.0}};
}
}  // namespace

BOOST_AUTO_TEST_CASE(adamw_one_step_by_hand) {
  // m̂ = g, v̂ = g² after one step, so each update is lr * g / |g| = 0.1; the 2-D weight also
  // decays by lr * wd * W = 0.01 W; the bias does not decay.
  ParameterArena arena;
  WeightAndBias m;
  arena.allocate(m);
  set_grads(m);
  AdamW opt(decay_weight_only(m, 0.1), AdamWOptions().betas({0.9, 0.95}).eps(1e-8));
  BOOST_TEST(opt.num_ranges() == 2u);  // one per group: W and b are neighbours in the arena
  opt.step(0.1);
  // (eps = 1e-8 shifts each update by lr * eps / |g| = 1e-8.)
  BOOST_TEST(allclose(m.W.to_vector(), {0.89, -2.08}, 2e-8, 0));
  BOOST_TEST(allclose(m.b.to_vector(), {0.4}, 2e-8, 0));
  BOOST_TEST(opt.steps() == 1);
}

BOOST_AUTO_TEST_CASE(adamw_equal_gradients_move_by_lr_each_step) {
  ParameterArena arena;
  WeightAndBias m;
  arena.allocate(m);
  AdamW opt(decay_weight_only(m, 0.1));
  for (int i = 0; i < 3; ++i) {
    set_grads(m);
    opt.step(0.01);
  }
  // Three equal gradients: every bias-corrected update is exactly lr (m̂ = g, v̂ = g²).
  BOOST_TEST(allclose(m.b.to_vector(), {0.5 - 0.03}, 1e-8, 0));
}

// Clipping folded into the update (the trainer's path: AdamW::step(lr, clip_scale(norm, max)))
// equals torch's two passes, clip_grad_norm_ then step, bit for bit: both multiply each
// gradient by the same factor once.
BOOST_AUTO_TEST_CASE(adamw_grad_scale_equals_clip_then_step) {
  ParameterArena arena_a;
  WeightAndBias a;
  arena_a.allocate(a);
  ParameterArena arena_b;
  WeightAndBias b;
  arena_b.allocate(b);
  AdamW opt_a(decay_weight_only(a, 0.1)), opt_b(decay_weight_only(b, 0.1));
  for (int i = 0; i < 3; ++i) {
    set_grads(a);
    set_grads(b);
    const double max_norm = 0.05;  // below the norm sqrt(3) * 0.1: clips
    const double norm = arena_a.clip_grad_norm(max_norm);
    opt_a.step(0.01);
    BOOST_TEST(arena_b.grad_norm() == norm);
    opt_b.step(0.01, clip_scale(norm, max_norm));
  }
  BOOST_TEST(a.W.to_vector() == b.W.to_vector(), boost::test_tools::per_element());
  BOOST_TEST(a.b.to_vector() == b.b.to_vector(), boost::test_tools::per_element());
  BOOST_TEST(clip_scale(2.0, 1.0) == 1.0 / (2.0 + 1e-6));
  BOOST_TEST(clip_scale(0.5, 1.0) == 1.0);
  BOOST_TEST(clip_scale(5.0, 0.0) == 1.0);  // max_norm 0: no clipping
}

// The moments live in the parameters' dtype (f32 for a training model, as PyTorch keeps them);
// load_state restores them, converting f64 moments from older checkpoints.
BOOST_AUTO_TEST_CASE(adamw_moments_dtype_and_load_state) {
  class F32Layer : public Module {
   public:
    F32Layer() { w = register_parameter("w", Tensor::from_vector({1, 2, 3}, {3}, DType::f32)); }
    Tensor w;
  };
  ParameterArena arena;
  F32Layer layer;
  arena.allocate(layer);
  AdamW opt(layer.parameters());
  BOOST_TEST((opt.m().dtype() == DType::f32));
  BOOST_TEST(shape_str(opt.v().shape()) == "(3,)");
  opt.load_state(Tensor::from_vector({0.1, 0.2, 0.3}, {3}, DType::f64),
                 Tensor::from_vector({1, 2, 3}, {3}, DType::f64), 7);
  BOOST_TEST(opt.steps() == 7);
  BOOST_TEST(allclose(opt.m().to_vector(), {0.1f, 0.2f, 0.3f}, 0, 0));
  expect_throw_with<std::invalid_argument>(
      [&] { opt.load_state(Tensor::zeros({4}), Tensor::zeros({3}), 1); },
      "the saved optimizer state has 4 moments but the model has 3 parameters");
}

BOOST_AUTO_TEST_CASE(sgd_with_momentum) {
  ParameterArena arena;
  WeightAndBias m;
  arena.allocate(m);
  SGD opt(m.parameters(), SGDOptions().momentum(0.9));
  set_grads(m);
  opt.step(1.0);  // v = 0.1
  set_grads(m);
  opt.step(1.0);  // v = 0.19
  BOOST_TEST(allclose(m.b.to_vector(), {0.5 - 0.1 - 0.19}, 1e-12, 0));
}

// torch.optim on plain tensors (no Module, no arena) with two parameter groups, from
// /usr/bin/python3 with torch 1.13, float64:
//   W = [[0.5, -0.3], [0.8, 0.1]], b = [0.1, -0.2], unused = [1, 2, 3] (never in the loss);
//   loss = ((F.linear(x, W, b) - tgt)**2).mean(), x = [[1, 2], [3, -1]], tgt = [[1, 0], [0, 1]]
//   groups [{'params': [W, unused], 'lr': 0.1, 'weight_decay': 0.1}, {'params': [b]}]
//   AdamW(groups, lr=0.05, betas=(0.9, 0.95), eps=1e-8, weight_decay=0.0)
//   SGD(groups, lr=0.05, momentum=0.9)            (weight_decay: L2 on the gradient)
// 3 steps of zero_grad, backward, step. `unused` gets no gradient, so neither optimizer moves it,
// not even by weight decay.
namespace {
struct TorchProblem {
  Tensor W = Tensor::from_vector({0.5, -0.3, 0.8, 0.1}, {2, 2}, DType::f64).set_requires_grad();
  Tensor b = Tensor::from_vector({0.1, -0.2}, {2}, DType::f64).set_requires_grad();
  Tensor unused = Tensor::from_vector({1, 2, 3}, {3}, DType::f64).set_requires_grad();
  std::vector<ParamGroup> groups() const {
    return {ParamGroup{.params = {W, unused}, .lr = 0.1, .weight_decay = 0.1},
            ParamGroup{.params = {b}}};
  }
  Tensor loss() const {
    const Tensor x = Tensor::from_vector({1, 2, 3, -1}, {2, 2}, DType::f64);
    const Tensor target = Tensor::from_vector({1, 0, 0, 1}, {2, 2}, DType::f64);
    return mean(pow(sub(linear(x, W, b), target), 2));
  }
  template <class Opt>
  std::vector<double> train(Opt& opt) const {
    std::vector<double> losses;
    for (int i = 0; i < 3; ++i) {
      opt.zero_grad();
      const Tensor l = loss();
      losses.push_back(l.item());
      l.backward();
      opt.step();
    }
    return losses;
  }
};
}  // namespace

BOOST_AUTO_TEST_CASE(adamw_param_groups_on_plain_tensors_match_torch) {
  const TorchProblem p;
  AdamW opt(p.groups(), AdamWOptions(0.05).betas({0.9, 0.95}).eps(1e-8).weight_decay(0.0));
  BOOST_TEST(opt.param_groups().at(0).lr == 0.1);
  BOOST_TEST(opt.param_groups().at(1).lr == 0.05);  // the default
  BOOST_TEST(opt.num_ranges() == 3u);               // separate tensors: one range each
  BOOST_TEST(allclose(p.train(opt), {1.615, 0.9571885029861671, 0.5161319482373475}, 1e-14, 0));
  BOOST_TEST(allclose(
      p.W.to_vector(),
      {0.19631669990605632, 0.0038377801645459175, 0.4875443396061995, -0.09669185217480465}, 1e-14,
      0));
  BOOST_TEST(allclose(p.b.to_vector(), {-0.03705503209491463, -0.34441301383875167}, 1e-14, 0));
  BOOST_TEST(allclose(p.unused.to_vector(), {1, 2, 3}, 0, 0));
}

BOOST_AUTO_TEST_CASE(sgd_param_groups_on_plain_tensors_match_torch) {
  const TorchProblem p;
  SGD opt(p.groups(), SGDOptions(0.05).momentum(0.9));
  BOOST_TEST(opt.param_groups().at(0).weight_decay == 0.1);
  BOOST_TEST(allclose(p.train(opt), {1.615, 0.5255697499999998, 0.16070624066250006}, 1e-14, 0));
  BOOST_TEST(allclose(p.W.to_vector(),
                      {-0.26668075, 0.5335195500000001, 0.10132994999999997, -0.048112850000000026},
                      1e-14, 0));
  BOOST_TEST(allclose(p.b.to_vector(), {0.057485124999999984, -0.362576375}, 1e-14, 0));
  BOOST_TEST(allclose(p.unused.to_vector(), {1, 2, 3}, 0, 0));
}

// A group whose tensors are neighbours in an arena is one range (one kernel call); the same
// tensors in another order are updated one by one. Both paths give the same bits.
BOOST_AUTO_TEST_CASE(arena_groups_fuse_and_match_the_tensor_path_bit_for_bit) {
  class Three : public Module {
   public:
    explicit Three(Generator& gen) {
      for (const char* name : {"a", "b", "c"})
        ps.push_back(register_parameter(name, Tensor::randn({37}, gen, DType::f32)));
    }
    std::vector<Tensor> ps;
  };
  Generator gen_x(1), gen_y(1);
  ParameterArena arena_x;
  Three x(gen_x);
  arena_x.allocate(x);
  ParameterArena arena_y;
  Three y(gen_y);
  arena_y.allocate(y);
  AdamW fused({ParamGroup{.params = {x.ps[0], x.ps[1]}, .weight_decay = 0.1},
               ParamGroup{.params = {x.ps[2]}, .weight_decay = 0.0}});
  AdamW split({ParamGroup{.params = {y.ps[1], y.ps[0]}, .weight_decay = 0.1},
               ParamGroup{.params = {y.ps[2]}, .weight_decay = 0.0}});
  BOOST_TEST(fused.num_ranges() == 2u);
  BOOST_TEST(split.num_ranges() == 3u);  // b then a: not one run of memory
  Generator grads(2);
  for (int step = 0; step < 3; ++step) {
    const Tensor g = Tensor::randn({3 * 37}, grads, DType::f32);
    for (const ParameterArena* a : {&arena_x, &arena_y})
      std::copy(g.data<float>(), g.data<float>() + g.numel(), a->grads().data<float>());
    fused.step(0.01, 0.5);
    split.step(0.01, 0.5);
  }
  BOOST_TEST(arena_x.params().to_vector() == arena_y.params().to_vector(),
             boost::test_tools::per_element());
  // zero_grad through the optimizer clears the arena's gradients.
  fused.zero_grad();
  BOOST_TEST(arena_x.grad_norm() == 0.0);
}

BOOST_AUTO_TEST_CASE(tensors_an_optimizer_cannot_update_are_named) {
  const Tensor w = Tensor::ones({2}, DType::f64).set_requires_grad();
  expect_throw_with<std::invalid_argument>([&] { AdamW opt(std::vector<Tensor>{}); },
                                           "AdamW: no parameters to optimize");
  expect_throw_with<std::invalid_argument>(
      [&] {
        AdamW opt({w, mul_scalar(w, 2)});
      },
      "AdamW: parameter 1 of group 0 is not a leaf (the output of 'mul_scalar')");
  expect_throw_with<std::invalid_argument>([&] { SGD opt({Tensor::ones({2})}); },
                                           "SGD: parameter 0 of group 0 does not require grad");
  expect_throw_with<std::invalid_argument>(
      [&] {
        AdamW opt({ParamGroup{.params = {w}}, ParamGroup{.params = {w}}});
      },
      "parameter 0 of group 1 shares memory with parameter 0 of group 0");
  expect_throw_with<std::invalid_argument>(
      [&] {
        AdamW opt({w, Tensor::ones({2}, DType::f32).set_requires_grad()});
      },
      "parameter 1 of group 0 is f32 but the first is f64");
  const Tensor m = Tensor::ones({2, 3}, DType::f64).set_requires_grad();
  expect_throw_with<std::invalid_argument>(
      [&] { AdamW opt({transpose(m.detach(), 0, 1).set_requires_grad()}); },
      "non-contiguous view (3, 2)");
}

BOOST_AUTO_TEST_CASE(cosine_schedule_values) {
  const double max_lr = 1e-3, min_lr = 1e-4;
  const std::pair<int, double> expected[] = {{0, 2e-4},   {3, 8e-4},  {4, 1e-3},
                                             {8, 5.5e-4}, {12, 1e-4}, {100, 1e-4}};
  for (auto [it, lr] : expected) {
    BOOST_TEST_INFO("step " << it);
    BOOST_TEST(std::abs(cosine_lr(it, 4, 12, max_lr, min_lr) - lr) < 1e-15);
  }
  // warmup == decay_steps: no division by zero, warmup then the floor.
  BOOST_TEST(std::abs(cosine_lr(3, 4, 4, max_lr, min_lr) - 8e-4) < 1e-15);
  BOOST_TEST(cosine_lr(4, 4, 4, max_lr, min_lr) == min_lr);
  BOOST_TEST(std::isfinite(cosine_lr(5, 4, 4, max_lr, min_lr)));
  BOOST_TEST(std::abs(cosine_lr(0, 0, 10, max_lr, min_lr) - max_lr) < 1e-15);  // no warmup
}

// Optimizer steps change parameters in place, legitimately between backward() and the next
// forward: L = (w - 3)² by SGD with lr 0.1 for 50 steps is w_k = 3 + 0.8^k (w_0 - 3), from
// w_0 = 0, with no complaint from the version check. Gradient accumulation (two forward and
// backward passes per step, half the loss each) gives the same iterates.
BOOST_AUTO_TEST_CASE(optimizer_steps_between_backward_and_forward_are_legitimate) {
  for (const int micro_batches : {1, 2}) {
    Tensor w = Tensor::scalar(0, DType::f64).set_requires_grad();
    SGD opt({w}, SGDOptions(0.1));
    for (int step = 0; step < 50; ++step) {
      opt.zero_grad();
      for (int micro = 0; micro < micro_batches; ++micro) {
        const Tensor d = sub_scalar(w, 3);
        mul_scalar(mul(d, d), 1.0 / micro_batches).backward();
      }
      opt.step();
    }
    BOOST_TEST(allclose(w.item(), 3 - 3 * std::pow(0.8, 50), 1e-12, 1e-12));
  }
}

// The same with AdamW over a parameter arena (the trainer's layout: one storage, one version
// counter for all parameters): 20 steps on L = sum(W x + b) run clean and move every parameter
// by lr each step (equal-sign gradients, AdamW's normalised update), as
// adamw_equal_gradients_move_by_lr_each_step.
BOOST_AUTO_TEST_CASE(adamw_steps_over_an_arena_are_legitimate) {
  ParameterArena arena;
  WeightAndBias m;
  arena.allocate(m);
  AdamW opt(m.parameters(), AdamWOptions(0.01).weight_decay(0.0));
  const Tensor x = Tensor::from_vector({1, 1}, {2, 1}, DType::f64);
  for (int step = 0; step < 20; ++step) {
    arena.zero_grad();
    sum(add(matmul(m.W, x), m.b)).backward();
    opt.step();
  }
  BOOST_TEST(allclose(m.W.to_vector(), {1 - 0.2, -2 - 0.2}, 1e-7, 0));
  BOOST_TEST(allclose(m.b.to_vector(), {0.5 - 0.2}, 1e-7, 0));
}

// A step between the forward and its backward changes the saved weights: the gradient would be
// that of the new weights at the old activations. backward() refuses, naming the op (a GAN-style
// bug; torch raises the same).
BOOST_AUTO_TEST_CASE(a_step_between_forward_and_backward_is_refused) {
  ParameterArena arena;
  WeightAndBias m;
  arena.allocate(m);
  AdamW opt(m.parameters(), AdamWOptions(0.01));
  const Tensor x = Tensor::from_vector({1, 2}, {2, 1}, DType::f64).set_requires_grad();
  sum(matmul(m.W, x)).backward();
  const Tensor loss = sum(matmul(m.W, x));  // saves W, for dx
  opt.step();
  expect_throw_with<std::logic_error>([&] { loss.backward(); },
                                      "backward: 'matmul' saved its tensor 'a' (1, 2) f64");
}

// The options read as libtorch writes them: setters in any order, each returning the options,
// getters of the same names; the defaults are torch.optim.AdamW's (issue 32: they were
// nanoGPT's, so the line a PyTorch user writes built another optimizer), nanoGPT's spelled out.
BOOST_AUTO_TEST_CASE(options_read_as_libtorch_writes_them) {
  const AdamWOptions defaults;
  BOOST_TEST(defaults.lr() == 1e-3);
  BOOST_TEST((defaults.betas() == std::pair<double, double>{0.9, 0.999}));
  BOOST_TEST(defaults.eps() == 1e-8);
  BOOST_TEST(defaults.weight_decay() == 0.01);
  const AdamWOptions nanogpt = AdamWOptions(6e-4).weight_decay(0.1).betas({0.9, 0.95});
  BOOST_TEST((nanogpt.betas() == std::pair<double, double>{0.9, 0.95}));
  BOOST_TEST(nanogpt.weight_decay() == 0.1);
  BOOST_TEST(nanogpt.lr() == 6e-4);
  const SGDOptions sgd = SGDOptions().momentum(0.9).lr(0.05);
  BOOST_TEST(sgd.lr() == 0.05);
  BOOST_TEST(sgd.momentum() == 0.9);
  BOOST_TEST(sgd.weight_decay() == 0.0);
  // The optimizer takes them: one AdamW step with torch's betas moves w = 1 (g = 2) by
  // lr·(1 + wd) = 0.1·1.01 (the decay first, then a bias-corrected step of lr·sign(g)).
  Tensor w = Tensor::from_vector({1.0}, {1}, DType::f64).requires_grad_();
  AdamW opt({w}, AdamWOptions(0.1).betas({0.9, 0.999}).weight_decay(0.1));
  mean(mul_scalar(w, 2.0)).backward();  // dL/dw = 2
  opt.step();
  BOOST_TEST(w.item() == 1.0 - 0.1 * 0.1 - 0.1, boost::test_tools::tolerance(1e-9));
}

// Issue 32: with a NaN gradient, clip_grad_norm returned NaN and clipped nothing (std::min(1.0,
// NaN) is 1), so a 1e6 gradient beside it reached the optimizer unscaled. Now torch's result:
// torch.nn.utils.clip_grad_norm_([a, b], 1.0) with grads [1e6] and [nan] returns nan and leaves
// both nan; with an inf gradient the factor is 0 (the finite gradient becomes 0, inf * 0 nan);
// with error_if_nonfinite it throws and changes nothing.
BOOST_AUTO_TEST_CASE(clip_grad_norm_of_a_non_finite_norm_as_torch) {
  const auto grads = [](double big, double bad) {
    Tensor a = Tensor::from_vector({1.0}, {1}, DType::f64).requires_grad_();
    Tensor b = Tensor::from_vector({1.0}, {1}, DType::f64).requires_grad_();
    a.set_grad(Tensor::from_vector({big}, {1}, DType::f64));
    b.set_grad(Tensor::from_vector({bad}, {1}, DType::f64));
    return std::vector<Tensor>{a, b};
  };
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<Tensor> p = grads(1e6, nan);
  BOOST_TEST(std::isnan(clip_grad_norm(p, 1.0)));
  BOOST_TEST(std::isnan(p[0].grad().item()));  // scaled by nan, never by 1
  BOOST_TEST(std::isnan(p[1].grad().item()));
  p = grads(1e6, inf);
  BOOST_TEST(std::isinf(clip_grad_norm(p, 1.0)));
  BOOST_TEST(p[0].grad().item() == 0.0);
  BOOST_TEST(std::isnan(p[1].grad().item()));
  BOOST_TEST(std::isnan(clip_scale(nan, 1.0)));
  BOOST_TEST(clip_scale(inf, 1.0) == 0.0);
  BOOST_TEST(clip_scale(nan, 0.0) == 1.0);  // no clipping asked for
  p = grads(1e6, nan);
  expect_throw_with<std::runtime_error>([&] { clip_grad_norm(p, 1.0, true); },
                                        "clip_grad_norm: the total norm of the gradients is nan");
  BOOST_TEST(p[0].grad().item() == 1e6);  // untouched
}

// clip_grad_norm on a list of tensors, as torch.nn.utils.clip_grad_norm_: gradients 3 and 4 (two
// tensors, one f32 and one f64) have norm 5; clipped to 1 they become 3 and 4 times 1 / (5 +
// 1e-6) (torch's 1e-6 keeps a zero norm finite); a tensor without a gradient yet is skipped; a
// norm below max_norm leaves them alone; a tensor that cannot have a gradient is named.
BOOST_AUTO_TEST_CASE(clip_grad_norm_of_a_list_of_tensors_as_torch) {
  Tensor a = Tensor::from_vector({1.0}, {1}, DType::f32).requires_grad_();
  Tensor b = Tensor::from_vector({1.0}, {1}, DType::f64).requires_grad_();
  Tensor unused = Tensor::from_vector({1.0, 2.0}, {2}, DType::f64).requires_grad_();
  mean(mul_scalar(a, 3.0)).backward();
  mean(mul_scalar(b, 4.0)).backward();
  BOOST_TEST(clip_grad_norm({a, b, unused}, 1.0) == 5.0, boost::test_tools::tolerance(1e-12));
  const double scale = 1.0 / (5.0 + 1e-6);
  BOOST_TEST(a.grad().item() == 3.0 * scale, boost::test_tools::tolerance(1e-7));
  BOOST_TEST(b.grad().item() == 4.0 * scale, boost::test_tools::tolerance(1e-12));
  BOOST_TEST(clip_grad_norm({a, b}, 10.0) == 1.0, boost::test_tools::tolerance(1e-6));
  BOOST_TEST(b.grad().item() == 4.0 * scale, boost::test_tools::tolerance(1e-12));  // untouched
  expect_throw_with<std::invalid_argument>(
      [&] {
        clip_grad_norm({a, Tensor::from_vector({1.0}, {1}, DType::f64)}, 1.0);
      },
      "clip_grad_norm: tensor 1 of the list does not require grad");
}
