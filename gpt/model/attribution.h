// "Attention is not explanation" (Jain & Wallace, 2019), measured on a GPT: for each query t of a
// prompt, the key a head attends to most against the key whose term, dropped from that head's
// output, changes the loss of predicting token t+1 most. Dropping key j's term A[t,j] v_j from
// head h's output at t (the other weights left as they are, not renormalised: docs/03-attention.md
// names this apart from leaving a key out of the softmax) changes L_t by -A[t,j] dL_t/dA[t,j] to
// first order (gradient x input on the weights: dL_t/dA[t,j] = dL_t/dz_t . v_j), which one
// backward pass per query gives for every head and key at once. `attograd attention
// --attribution` prints it; the page's attention part shows it.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "gpt/model/gpt2.h"

namespace attograd::gpt {

/// One (layer, head, query) of attention_attribution().
struct AttributionRow {
  int64_t layer = 0, head = 0, query = 0;
  int64_t most_attended = 0;   // argmax_j A[t, j] (the first on a tie)
  double weight = 0;           // A[t, most_attended]
  int64_t largest_change = 0;  // argmax_j |-A[t,j] dL_t/dA[t,j]| (the first on a tie)
  double change = 0;           // -A[t, largest_change] dL_t/dA[t, largest_change], in nats
  bool differ() const { return most_attended != largest_change; }
};

/// The attribution rows of `model` on the prompt `ids` (token ids, T = ids.size()), for the
/// queries t = 1 .. T-2 (query 0 has one key; the last has no next token), each chosen layer and
/// head, in the order (query, layer, head). The model is put in eval mode (no dropout); its
/// parameters' gradients are left as they were. Throws std::invalid_argument when T < 3 or
/// T > block_size, or a layer or head is out of range, naming it.
std::vector<AttributionRow> attention_attribution(GPT& model, std::span<const int64_t> ids,
                                                  const std::vector<int64_t>& layers,
                                                  const std::vector<int64_t>& heads);

}  // namespace attograd::gpt
