// AdamW by hand and the learning-rate schedule (values from the issue).
#define BOOST_TEST_MODULE optim
#include <boost/test/unit_test.hpp>
#include <cmath>

#include "nn/module.h"
#include "nn/optim.h"
#include "tests/test_util.h"

using namespace attograd;
using namespace attograd::nn;
using attograd::testing::expect_close;

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
}  // namespace

BOOST_AUTO_TEST_CASE(adamw_one_step_by_hand) {
  // m̂ = g, v̂ = g² after one step, so each update is lr * g / |g| = 0.1; the 2-D weight also
  // decays by lr * wd * W = 0.01 W; the bias does not decay.
  WeightAndBias m;
  ParameterArena arena(m);
  set_grads(m);
  AdamW opt(arena, AdamWOptions{0.9, 0.95, 1e-8, 0.1});
  opt.step(0.1);
  // (eps = 1e-8 shifts each update by lr * eps / |g| = 1e-8.)
  expect_close(m.W.to_vector(), {0.89, -2.08}, 2e-8);
  expect_close(m.b.to_vector(), {0.4}, 2e-8);
  BOOST_TEST(opt.steps() == 1);
}

BOOST_AUTO_TEST_CASE(adamw_equal_gradients_move_by_lr_each_step) {
  WeightAndBias m;
  ParameterArena arena(m);
  AdamW opt(arena);
  for (int i = 0; i < 3; ++i) {
    set_grads(m);
    opt.step(0.01);
  }
  // Three equal gradients: every bias-corrected update is exactly lr (m̂ = g, v̂ = g²).
  expect_close(m.b.to_vector(), {0.5 - 0.03}, 1e-8);
}

// Clipping folded into the update (the trainer's path: AdamW::step(lr, clip_scale(norm, max)))
// equals torch's two passes, clip_grad_norm_ then step, bit for bit: both multiply each
// gradient by the same factor once.
BOOST_AUTO_TEST_CASE(adamw_grad_scale_equals_clip_then_step) {
  WeightAndBias a, b;
  ParameterArena arena_a(a), arena_b(b);
  AdamW opt_a(arena_a), opt_b(arena_b);
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
  } layer;
  ParameterArena arena(layer);
  AdamW opt(arena);
  BOOST_TEST((opt.m().dtype() == DType::f32));
  BOOST_TEST(opt.v().shape() == Shape{3});
  opt.load_state(Tensor::from_vector({0.1, 0.2, 0.3}, {3}, DType::f64), Tensor::from_vector({1, 2, 3}, {3}, DType::f64), 7);
  BOOST_TEST(opt.steps() == 7);
  expect_close(opt.m().to_vector(), {0.1f, 0.2f, 0.3f}, 0);
  attograd::testing::expect_throw_with<std::invalid_argument>(
      [&] { opt.load_state(Tensor::zeros({4}), Tensor::zeros({3}), 1); },
      "the saved optimizer state has 4 moments but the model has 3 parameters");
}

BOOST_AUTO_TEST_CASE(sgd_with_momentum) {
  WeightAndBias m;
  ParameterArena arena(m);
  SGD opt(arena, 0.9);
  set_grads(m);
  opt.step(1.0);  // v = 0.1
  set_grads(m);
  opt.step(1.0);  // v = 0.19
  expect_close(m.b.to_vector(), {0.5 - 0.1 - 0.19}, 1e-12);
}

BOOST_AUTO_TEST_CASE(cosine_schedule_values) {
  const double max_lr = 1e-3, min_lr = 1e-4;
  const std::pair<int, double> expected[] = {{0, 2e-4}, {3, 8e-4}, {4, 1e-3}, {8, 5.5e-4}, {12, 1e-4}, {100, 1e-4}};
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
