// The lecture's single-head causal attention, one step at a time, so each intermediate can be
// printed (examples/attention_by_hand.cc) and asserted (tests/examples/attention_by_hand_test.cc).
//
//   qk      = Q Kᵀ                                  (T, T)
//   scores  = qk / sqrt(d_k)                        (T, T)    scaled dot-product (Vaswani et al.
//                                                             2017, eq. 1)
//   masked  = scores, -inf where key j > query t    (T, T)    causal: no looking ahead
//   weights = softmax over each ROW of masked       (T, T)    each query's weights sum to 1
//   out     = weights V                             (T, d_v)
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "autograd/tensor.h"

namespace attograd::lecture {

/// The lecture's starting point, before any Q, K or V: each position's output is the plain
/// average of the vectors up to it, y_t = (1/(t+1)) sum_{j<=t} x_j. Written as attention with
/// all scores equal: softmax(causal_mask(0)) has rows [1, 0, ..], [1/2, 1/2, 0, ..], ...
/// x (T, C) -> (T, C).
Tensor causal_average(const Tensor& x);

/// Every intermediate of single-head causal attention.
struct AttentionSteps {
  Tensor qk;       // (T, T) = Q Kᵀ, before the scaling
  Tensor scores;   // (T, T) = Q Kᵀ / sqrt(d_k)
  Tensor masked;   // (T, T), -inf above the diagonal
  Tensor weights;  // (T, T), rows sum to 1, exactly 0 above the diagonal
  Tensor out;      // (T, d_v)
  // The classic mistake, for the walk-through to show beside the right answer:
  Tensor column_weights;  // (T, T) = column_softmax(masked): columns sum to 1, rows do not
  Tensor column_out;      // (T, d_v) = column_weights V, no longer averages of V's rows
};

/// Q, K: (T, d_k); V: (T, d_v); any floating dtype. Throws std::invalid_argument on shape
/// mismatch (from the ops), and when Q Kᵀ, the output or the column-softmax mistake's output
/// overflows to a non-finite number (its rows of weights can sum to T, so finite values of V
/// near the largest double overflow there first).
AttentionSteps causal_attention_steps(const Tensor& Q, const Tensor& K, const Tensor& V);

/// Q, K, V and every step of causal_attention_steps(Q, K, V) as one JSON object, for programs
/// (the NumPy exercise's examples/student/compare_attention.py reads it):
///   {"d_k": 2, "Q": [[1, 0], ...], "K": ..., "V": ..., "S": Q Kᵀ, "S_scaled": S / √d_k,
///    "masked": S_scaled with null where the mask puts -inf (JSON has no infinity),
///    "A": the row softmax, "Z": A V, "column_A": the column-softmax mistake, "column_Z": its Z}
/// one matrix a list of rows, each number with the fewest digits (15 to 17) that read back to
/// the same double. Q (T, d_k), K (T, d_k), V (T, d_v), any floating dtype; throws as
/// causal_attention_steps.
std::string attention_steps_json(const Tensor& Q, const Tensor& K, const Tensor& V);

/// The common mistake: softmax over each COLUMN of the masked scores (over queries instead of
/// keys). Columns then sum to 1 and rows do not, so outputs are no longer weighted averages.
Tensor column_softmax(const Tensor& masked);

/// Single-head attention with q = k = v = x (no learned projections), scaled by 1/sqrt(C):
/// softmax(x xᵀ / sqrt(C)) x, with the causal mask when `causal`. x (T, C) -> (T, C). The
/// lecture's order argument needs nothing more: projections act on each row alone.
Tensor self_attention(const Tensor& x, bool causal);

/// The toy vocabulary of the order example, one 2-d embedding per word (the rows of
/// tests/nn/layers_test.cc's without_positions_the_mean_is_invariant_and_attention_equivariant).
/// words: e.g. {"dog", "bites", "man"} -> (T, 2) f64. Throws std::invalid_argument for a word
/// outside {dog, bites, man}.
Tensor embed_words(const std::vector<std::string>& words);

/// One row of the sqrt(d_k) experiment, measured over random unit-variance q and k.
struct ScalingRow {
  int64_t d_k = 0;
  double score_variance = 0;     // variance of q·k over all draws and keys; theory: d_k
  double mean_max_unscaled = 0;  // mean over draws of the largest weight of softmax(q·k_j)
  double mean_max_scaled = 0;    // the same for softmax(q·k_j / sqrt(d_k))
};

/// For each d_k: `draws` queries q ~ N(0, I_{d_k}), each against T keys k_j ~ N(0, I_{d_k}),
/// all from Generator(seed) in that order (so the table is the same on every machine). Throws
/// std::invalid_argument for d_k, T or draws < 1 (T = 1 would make every weight 1).
std::vector<ScalingRow> measure_scaling(const std::vector<int64_t>& d_ks, int64_t T, int64_t draws,
                                        uint64_t seed);

/// The chapter's sqrt(d_k) experiment (docs/03-attention.md, "Why divide by √d_k"), written once
/// for the program, `attograd figure scaling` and the tests: d_k = 2, 4, ... 512, 2,000 queries
/// against T = 8 keys each, from Generator(1234).
struct ScalingExperiment {
  std::vector<int64_t> d_ks{2, 4, 8, 16, 32, 64, 128, 256, 512};
  int64_t T = 8;
  int64_t draws = 2000;
  uint64_t seed = 1234;
  /// measure_scaling(d_ks, T, draws, seed): one ScalingRow per d_k.
  std::vector<ScalingRow> measure() const { return measure_scaling(d_ks, T, draws, seed); }
};

/// How much one key matters to one query, measured four ways. The "loss" is L = Σ_c out_c, the
/// sum of the query's output channels (any fixed linear read-out would do).
struct KeyAttribution {
  double weight = 0;             // A_j, the attention weight
  double grad_x_input = 0;       // Σ_c (∂L/∂V_jc) · V_jc, by backward through the attention
  double zero_value_change = 0;  // L with v_j set to 0, minus L
  double remove_key_change = 0;  // L with key j left out of the softmax, minus L
};

/// One query q (1, d_k) against keys K (Tk, d_k) and values V (Tk, d_v), f64, unmasked (one
/// query sees every key). Returns one KeyAttribution per key. Throws std::invalid_argument
/// for mismatched shapes or Tk < 2 (removing the only key leaves nothing to attend to).
std::vector<KeyAttribution> attribute_keys(const Tensor& q, const Tensor& K, const Tensor& V);

/// What the T×T part of one attention head costs for a context of T tokens.
struct AttentionCost {
  int64_t T = 0;
  int64_t bytes = 0;  // scores and weights, each (T, T): 2·T²·bytes_per_element
  int64_t flops =
      0;  // Q Kᵀ and A V, each 2·T²·head_dim (a multiply and an add per term): 4·T²·head_dim
};

/// The cost above, exact in integers. The scale, mask and softmax add a few T² more operations,
/// not counted; a fused kernel (chapter 2) never stores the scores, but still does the FLOPs.
/// Throws std::invalid_argument for T, head_dim or bytes_per_element < 1, std::overflow_error
/// when a count does not fit in int64.
AttentionCost attention_cost(int64_t T, int64_t head_dim, int64_t bytes_per_element);

/// The most rows (T) and numbers a row (d_k, d_v) parse_matrix reads: the walk-through prints
/// T x T tables, and the page draws them (its workbench states the same limit, from info).
inline constexpr size_t kMaxMatrixSide = 64;

/// Reads the reader's matrix text: rows separated by ';' or line breaks, numbers by ',', spaces
/// allowed around both ("1,0; 0,1; 1,1" is (3, 2), and so is "1,0" "0,1" "1,1" on three lines;
/// a break right after a ';', or a blank line, starts no extra row; a ';' after the last row and a
/// ',' after a row's last number are read as no more than its end). `name` (e.g. "--Q") starts
/// every error message. Returns an f64 (rows, cols) tensor. Throws std::invalid_argument for an
/// empty matrix or row, a field that is not a finite decimal number (gpt::parse_decimal: no hex,
/// inf, nan or blanks inside, no value beyond a double), rows of different lengths, or more than
/// kMaxMatrixSide rows or numbers a row.
Tensor parse_matrix(const std::string& text, const std::string& name);

/// Checks that Q (T, d_k), K (T, d_k) and V (T, d_v) fit together for causal self-attention;
/// throws std::invalid_argument naming the mismatched sizes and the fix.
void check_attention_shapes(const Tensor& Q, const Tensor& K, const Tensor& V);

}  // namespace attograd::lecture
