// Small assertions shared by the tests: element-wise closeness with an absolute tolerance,
// reported with the index and both values on failure.
#pragma once

#include <boost/test/unit_test.hpp>
#include <cmath>
#include <algorithm>
#include <string>
#include <vector>

#include "autograd/tensor.h"

namespace attograd::testing {

/// Checks |actual[i] - expected[i]| <= atol for every i (and equal sizes).
inline void expect_close(const std::vector<double>& actual, const std::vector<double>& expected,
                         double atol) {
  BOOST_REQUIRE_EQUAL(actual.size(), expected.size());
  for (size_t i = 0; i < actual.size(); ++i) {
    BOOST_TEST_INFO("index " << i << ": actual " << actual[i] << ", expected " << expected[i]);
    BOOST_TEST(std::abs(actual[i] - expected[i]) <= atol);
  }
}

/// Checks a tensor's shape and values.
inline void expect_tensor(const Tensor& t, const Shape& shape, const std::vector<double>& expected,
                          double atol) {
  BOOST_TEST_INFO("shape " << shape_str(t.shape()) << " vs expected " << shape_str(shape));
  BOOST_TEST((t.shape() == shape));
  expect_close(t.to_vector(), expected, atol);
}

/// Overwrites each parameter with N(0, std²) draws from gen (element by element, in order, in
/// the parameter's dtype). Tests use weights far larger than GPT-2's init (std 0.5 against
/// 0.02) so that attention is far from uniform and every path carries a real gradient.
inline void randomize_parameters(const std::vector<Tensor>& parameters, Generator& gen, double std) {
  for (const Tensor& p : parameters) {
    const Tensor r = Tensor::randn(p.shape(), gen, p.dtype(), std);
    dispatch_floating(p.dtype(), "randomize_parameters",
                      [&]<typename T>() { std::copy(r.data<T>(), r.data<T>() + r.numel(), p.data<T>()); });
  }
}

/// Runs f and checks it throws E with a message containing `needle`.
template <typename E, typename F>
void expect_throw_with(F&& f, const std::string& needle) {
  try {
    f();
  } catch (const E& e) {
    BOOST_TEST_INFO("message: " << e.what());
    BOOST_TEST(std::string(e.what()).find(needle) != std::string::npos);
    return;
  }
  BOOST_FAIL("expected an exception whose message contains '" + needle + "'");
}

}  // namespace attograd::testing
