// Which parameter elements are the attention's key biases, for the distributed tests: their
// gradient is zero in exact arithmetic (softmax ignores q·b added to every score of a query),
// so mpi_train_worker measures it and distributed_test holds them to their own bound.
#pragma once

#include <cstdint>
#include <string>

namespace attograd::testing {

/// Whether element i of the parameter tensor `name` is a key bias: the middle third of c_attn's
/// bias (q, k, v), which holds 3 * n_embd values.
inline bool is_key_bias(const std::string& name, int64_t i, int64_t n_embd) {
  return name.ends_with("attn.c_attn.bias") && i >= n_embd && i < 2 * n_embd;
}

}  // namespace attograd::testing
