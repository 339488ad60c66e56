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
