// One finite-difference case per op in ops.h: the catalogue behind `attograd gradcheck` and
// the gradcheck tests. tests/autograd/gradcheck_test.cc (every_op_in_ops_h_has_a_case) fails if an
// op in ops.h has none.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "autograd/gradcheck.h"
#include "autograd/random.h"
#include "autograd/tensor.h"

namespace attograd {

/// The sizes the cases are built from: an attention-shaped (B, T, C) problem.
struct GradcheckSizes {
  int64_t B = 2;  // batch
  int64_t T = 3;  // time (sequence length)
  int64_t C = 4;  // channels
};

/// One check: the op under test, a label for its shapes, inputs and the function.
struct GradcheckCase {
  std::string op;     // the op's name in ops.h
  std::string label;  // e.g. "(2, 3) + (3,) broadcast"
  /// Fresh inputs (the differentiable ones marked requires_grad) of the given dtype.
  std::function<std::vector<Tensor>(Generator& gen, DType dtype, const GradcheckSizes& sizes)> make_inputs;
  GradcheckFn fn;
};

/// Every case, grouped by op in ops.h order.
const std::vector<GradcheckCase>& gradcheck_cases();

}  // namespace attograd
