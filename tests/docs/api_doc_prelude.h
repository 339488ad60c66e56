// What every snippet of docs/api.md sees besides the attograd headers the document names at its
// top (doc_snippets includes those after this file): the std headers, the attograd namespace,
// expect() to assert a value, and tests/test_util.h's helpers (testing::fresh_temp_dir, ...).
#pragma once

#include <algorithm>
#include <boost/test/unit_test.hpp>
#include <cmath>
#include <fstream>
#include <iostream>
#include <memory>
#include <span>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "tests/test_util.h"

using namespace attograd;

/// expect(actual, expected): allclose with atol = rtol = 1e-6, PyTorch's values as the document
/// prints them; reported with the line of docs/api.md (the generated source carries #line
/// directives). Variadic so that a braced list {1, 2, 3} passes whole.
#define expect(actual, ...)                                                     \
  BOOST_TEST_CONTEXT(__FILE__ << ":" << __LINE__) {                             \
    BOOST_TEST(::attograd::testing::allclose(actual, __VA_ARGS__, 1e-6, 1e-6)); \
  }
