// S4's answer (examples/student/heads.cc). Channels of one token are contiguous, so
// (B, T, C) -> (B, T, NH, HS) only regroups each token's channels into heads; the transpose then
// puts the heads before the tokens. Reshaping straight to (B, NH, T, HS) would instead cut the
// flat (T·C) block of each sequence into NH pieces of T·HS numbers: tokens, not heads.
#include <stdexcept>
#include <string>

#include "autograd/ops.h"
#include "examples/student/exercises.h"

namespace attograd::student {

Tensor split_heads(const Tensor& x, int64_t n_head) {
  const int64_t B = x.size(0), T = x.size(1), C = x.size(2);
  if (n_head < 1 || C % n_head != 0)
    throw std::invalid_argument("split_heads: n_head " + std::to_string(n_head) +
                                " does not divide C = " + std::to_string(C));
  return transpose(reshape(x, {B, T, n_head, C / n_head}), 1, 2);  // (B, NH, T, HS)
}

Tensor merge_heads(const Tensor& y) {
  const int64_t B = y.size(0), NH = y.size(1), T = y.size(2), HS = y.size(3);
  return reshape(transpose(y, 1, 2), {B, T, NH * HS});  // reshape copies the transposed view
}

}  // namespace attograd::student
