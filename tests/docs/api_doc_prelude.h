// What every snippet of docs/api.md sees (the document says so at its top): the whole API, the
// attograd namespace, and expect() to assert a value.
#pragma once

#include <boost/test/unit_test.hpp>
#include <algorithm>
#include <cmath>
#include <memory>
#include <vector>

#include "autograd/engine.h"
#include "autograd/ops.h"
#include "gpt/model.h"
#include "gpt/sampler.h"
#include "gpt/trainer.h"
#include "nn/layers.h"
#include "nn/optim.h"
#include "tests/test_util.h"

using namespace attograd;

namespace attograd::doc {

/// |actual - expected| <= 1e-6 max(1, |expected|): PyTorch's values as the document prints them.
inline void expect_close(double actual, double expected) {
  BOOST_TEST(std::abs(actual - expected) <= 1e-6 * std::max(1.0, std::abs(expected)),
             "got " << actual << ", expected " << expected);
}
inline void expect_close(const std::vector<double>& actual, const std::vector<double>& expected) {
  BOOST_REQUIRE_EQUAL(actual.size(), expected.size());
  for (size_t i = 0; i < actual.size(); ++i) {
    BOOST_TEST_CONTEXT("element " << i) { expect_close(actual[i], expected[i]); }
  }
}

}  // namespace attograd::doc

/// expect(actual, expected): expect_close, reported with the line of docs/api.md (the generated
/// source carries #line directives). Variadic so that a braced list {1, 2, 3} passes whole.
#define expect(actual, ...) \
  BOOST_TEST_CONTEXT(__FILE__ << ":" << __LINE__) { ::attograd::doc::expect_close(actual, __VA_ARGS__); }
