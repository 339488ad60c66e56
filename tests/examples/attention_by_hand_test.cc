// The lecture's worked attention examples: the numbers the course companion quotes.
#define BOOST_TEST_MODULE attention_by_hand
#include <boost/test/unit_test.hpp>
#include <cmath>
#include <limits>

#include "autograd/ops.h"
#include "examples/lecture/attention_by_hand.h"
#include "tests/test_util.h"

using namespace attograd;
using attograd::testing::expect_close;
using attograd::testing::expect_tensor;

BOOST_AUTO_TEST_CASE(averaging_context_vectors) {
  const Tensor x = Tensor::from_vector({1, 10, 2, 20, 3, 30}, {3, 2}, DType::f64);
  expect_tensor(lecture::causal_average(x), {3, 2}, {1, 10, 1.5, 15, 2, 20}, 1e-15);
}

BOOST_AUTO_TEST_CASE(d_k_1_two_tokens) {
  for (DType dt : {DType::f32, DType::f64}) {
    const double tol = dt == DType::f32 ? 1e-6 : 1e-7;
    const auto s = lecture::causal_attention_steps(Tensor::from_vector({1, 2}, {2, 1}, dt),
                                                   Tensor::from_vector({1, 3}, {2, 1}, dt),
                                                   Tensor::from_vector({10, 20}, {2, 1}, dt));
    expect_tensor(s.scores, {2, 2}, {1, 3, 2, 6}, 0);
    BOOST_TEST(s.masked.at({0, 1}) == -std::numeric_limits<double>::infinity());
    expect_tensor(s.weights, {2, 2}, {1, 0, 0.0179862, 0.9820138}, tol);
    BOOST_TEST(s.weights.at({0, 1}) == 0.0);  // exactly: query 0 cannot see key 1
    expect_tensor(s.out, {2, 1}, {10, 19.820138}, dt == DType::f32 ? 2e-5 : 1e-6);
  }
}

BOOST_AUTO_TEST_CASE(t3_dk2_rows_sum_to_one_and_column_softmax_breaks_it) {
  const Tensor Q = Tensor::from_vector({1, 0, 0, 1, 1, 1}, {3, 2}, DType::f64);
  const Tensor V = Tensor::from_vector({1, 2, 3, 4, 5, 6}, {3, 2}, DType::f64);
  const auto s = lecture::causal_attention_steps(Q, Q, V);
  const double r = 1 / std::sqrt(2.0);
  expect_tensor(s.scores, {3, 3}, {r, 0, r, 0, r, r, r, r, 2 * r}, 1e-15);
  BOOST_TEST((s.weights.shape() == Shape{3, 3}));
  BOOST_TEST((s.out.shape() == Shape{3, 2}));
  expect_close(sum(s.weights, {-1}).to_vector(), {1, 1, 1}, 1e-15);
  // Row 1 sees keys 0 and 1 with equal scores (0 and 1/sqrt2): weights 1/(1+e^r), e^r/(1+e^r).
  const double w11 = std::exp(r) / (1 + std::exp(r));
  expect_close(slice(s.weights, 0, 1, 2).to_vector(), {1 - w11, w11, 0}, 1e-15);
  expect_close(slice(s.out, 0, 1, 2).to_vector(), {(1 - w11) * 1 + w11 * 3, (1 - w11) * 2 + w11 * 4}, 1e-14);
  // Softmax over the wrong axis: columns sum to one, rows do not.
  const Tensor wrong = lecture::column_softmax(s.masked);
  expect_close(sum(wrong, {0}).to_vector(), {1, 1, 1}, 1e-15);
  const std::vector<double> rows = sum(wrong, {1}).to_vector();
  BOOST_TEST(std::abs(rows[0] - 1) > 0.1);
  BOOST_TEST(std::abs(rows[2] - 1) > 0.1);
  // The figures docs/03-attention.md quotes.
  expect_close(rows, {0.4011121, 0.6977758, 1.9011121}, 1e-7);
  expect_close(slice(s.weights, 0, 2, 3).to_vector(), {0.2482551, 0.2482551, 0.5034898}, 1e-7);
  expect_close(slice(s.out, 0, 2, 3).to_vector(), {3.5104695, 4.5104695}, 1e-7);
}
