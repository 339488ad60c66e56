// Small assertions shared by the tests: element-wise closeness with an absolute tolerance,
// reported with the index and both values on failure.
#pragma once

#include <boost/test/unit_test.hpp>
#include <cmath>
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
