// S4. Splitting and merging heads, about 20 minutes
// (docs/exercises.md#s4-splitting-and-merging-heads).
//
// split_heads: x (B, T, C) -> (B, NH, T, HS), HS = C / NH, head h of token t holding channels
// h·HS … (h+1)·HS − 1. merge_heads: the inverse, (B, NH, T, HS) -> (B, T, C). Each is a
// reshape and a transpose (autograd/ops.h); mind their order. Throw std::invalid_argument when
// n_head does not divide C. (docs/03-attention.md, "Multi-head attention".)
//
// Check: ctest --test-dir build -C student -L student -R heads --output-on-failure
#include <stdexcept>

#include "autograd/ops.h"
#include "examples/student/exercises.h"

namespace attograd::student {

Tensor split_heads(const Tensor& x, int64_t n_head) {
  (void)x;
  (void)n_head;
  throw std::logic_error(
      "not implemented yet: see docs/exercises.md#s4-splitting-and-merging-heads");
}

Tensor merge_heads(const Tensor& y) {
  (void)y;
  throw std::logic_error(
      "not implemented yet: see docs/exercises.md#s4-splitting-and-merging-heads");
}

}  // namespace attograd::student
