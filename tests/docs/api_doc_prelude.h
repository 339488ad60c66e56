// What every snippet of docs/api.md sees (the document says so at its top): the whole API, the
// attograd namespace, and expect() to assert a value.
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

#include "autograd/autocast.h"
#include "autograd/engine.h"
#include "autograd/gradcheck.h"
#include "autograd/ops.h"
#include "gpt/model/gpt2.h"
#include "gpt/model/hf_export.h"
#include "gpt/model/sampler.h"
#include "gpt/train/run.h"
#include "gpt/train/trainer.h"
#include "nn/containers.h"
#include "nn/layers.h"
#include "nn/optim.h"
#include "nn/serialize.h"
#include "tests/test_util.h"

using namespace attograd;

/// expect(actual, expected): allclose with atol = rtol = 1e-6, PyTorch's values as the document
/// prints them; reported with the line of docs/api.md (the generated source carries #line
/// directives). Variadic so that a braced list {1, 2, 3} passes whole.
#define expect(actual, ...)                                                     \
  BOOST_TEST_CONTEXT(__FILE__ << ":" << __LINE__) {                             \
    BOOST_TEST(::attograd::testing::allclose(actual, __VA_ARGS__, 1e-6, 1e-6)); \
  }
