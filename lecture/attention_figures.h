// The numbers behind chapter 3's step-by-step figures (`attograd figure attention-steps` and
// `figure heads`), computed by the engine's own ops and layers, so that a figure draws what
// attograd computes rather than a re-derivation of it. tests/cli/figures_script_test.cc checks
// each figure's data and cells against these functions, and these against the formulas.
//
// Shapes: T positions, C = n_embd channels, n_head heads of head_dim = C / n_head.
#pragma once

#include <cstdint>
#include <vector>

#include "autograd/tensor.h"

namespace attograd::lecture {

/// Q (T, d_k), K (T, d_k) and V (T, d_v) of one small causal attention.
struct AttentionInputs {
  Tensor Q, K, V;
};

/// Chapter 3's worked example 1, the 2-token case (T = 2, d_k = d_v = 1), f64:
/// Q = [1, 2]ᵀ, K = [1, 3]ᵀ, V = [10, 20]ᵀ. Q ≠ K, so S = Q Kᵀ = [[1, 3], [2, 6]] is not
/// symmetric and a transposed K Qᵀ would show.
AttentionInputs two_token_example();

/// One multi-head causal self-attention layer taken apart: split → attend → concat.
struct MultiHeadSplit {
  int64_t n_head = 0, head_dim = 0;
  Tensor x;                      // (T, C): the layer's input
  Tensor q, k, v;                // (T, C) each: the three blocks of c_attn(x)
  std::vector<Tensor> weights;   // per head (T, T): the attention weights the layer recorded
  std::vector<Tensor> head_out;  // per head (T, head_dim): weights[h] times v's channels
                                 // h·head_dim .. (h+1)·head_dim - 1
  Tensor concat;                 // (T, C): the heads' outputs side by side
  Tensor out;                    // (T, C): c_proj(concat)
  Tensor layer_out;              // (T, C): the layer's own forward of x (the fused op)
};

/// pico's attention size by default: n_embd 6, 3 heads of head_dim 2, T = 4, from
/// Generator(seed). c_attn's and c_proj's weights are redrawn N(0, 0.5²), because GPT-2's
/// N(0, 0.02²) makes every score near 0 and every head the same causal average; x ~ N(0, 1).
struct MultiHeadExample {
  int64_t n_embd = 6, n_head = 3, T = 4;
  uint64_t seed = 7;
  /// Builds nn::CausalSelfAttention (f64, no dropout, learned positions) and takes it apart:
  /// the weights come from the layer (recorded by its unfused path), each head's output is
  /// matmul(weights, v_h), the concat is concat(head_out), the output c_proj(concat). Throws
  /// std::invalid_argument (from the layer) unless n_head divides n_embd.
  MultiHeadSplit compute() const;
};

}  // namespace attograd::lecture
