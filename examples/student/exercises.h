// The student track (docs/exercises.md#the-student-track): the functions you write, one file
// each in this folder, checked by `ctest --test-dir build -C student -L student`
// (tests/examples/student/checks.h says what each check asks). The reference answers are in
// examples/student/answers/: open them after trying.
//
// Types. Where the lecture has a matrix, the exercise takes and returns an attograd::Tensor and
// is written with the engine's ops (autograd/ops.h: matmul, transpose, exp, sum, max, div,
// reshape, ...), because that is how the library's own layers are written and what lets
// backward() run through your code: the attention, the heads and the layer norm are checked
// by finite differences (autograd/gradcheck.h) as well as by value. Where the lecture has a
// list of numbers with no gradient (a loss log, token ids), the exercise takes plain C++
// (std::vector, double). The checks run in f64; keep the input's dtype.
//
// Shapes: T tokens, d_k the query/key width, d_v the value width, B batch, C = n_embd channels,
// NH heads of HS = C / NH channels, V the vocabulary.
//
// Until you write a body, it throws std::logic_error("not implemented yet: see
// docs/exercises.md#..."), and its check says so.
#pragma once

#include <cstdint>
#include <vector>

#include "autograd/tensor.h"

namespace attograd::student {

// ----- S1. The causal mask (examples/student/causal_mask.cc; docs/03-attention.md) -----

/// scores (T, T) -> (T, T), same dtype: scores[t][j] where key j <= query t (a token sees
/// itself and the past), -inf where j > t (the future). A new tensor: scores is not changed.
Tensor causal_mask(const Tensor& scores);

// ----- S2. Softmax and its backward (examples/student/softmax.cc; docs/derivatives.md) -----

/// x (..., n) -> y (..., n): the softmax of each row (the last axis), y_i = e^{x_i} / Σ_k e^{x_k},
/// so each row sums to 1. A -inf entry gets exactly 0; rows of large entries (1000) must not
/// overflow (docs/02-kernels.md, "Softmax without overflow").
Tensor softmax(const Tensor& x);

/// The vector-Jacobian product of softmax: y = softmax(x) (..., n), the forward's output, and
/// dy = dL/dy (..., n) -> dx = dL/dx (..., n). Row by row, dx = Jᵀ dy with
/// J = diag(y) − y yᵀ.
Tensor softmax_backward(const Tensor& y, const Tensor& dy);

// ----- S3. Scaled dot-product attention, one head (examples/student/attention.cc) -----

/// Causal attention for one head (docs/03-attention.md): Q (T, d_k), K (T, d_k), V (T, d_v)
/// -> Z = softmax(mask(Q Kᵀ / √d_k)) V (T, d_v), the softmax over each row.
Tensor attention(const Tensor& Q, const Tensor& K, const Tensor& V);

// ----- S4. Splitting and merging heads (examples/student/heads.cc) -----

/// x (B, T, C) -> (B, NH, T, HS) with NH = n_head, HS = C / n_head: head h of token t holds
/// channels h·HS … (h+1)·HS − 1 of x[b, t] (docs/03-attention.md, "Multi-head attention").
/// Throws std::invalid_argument when n_head does not divide C.
Tensor split_heads(const Tensor& x, int64_t n_head);

/// The inverse: y (B, NH, T, HS) -> (B, T, NH·HS), the heads side by side again.
Tensor merge_heads(const Tensor& y);

// ----- S5. Layer norm (examples/student/layer_norm.cc; docs/derivatives.md) -----

/// x (..., C), gamma (C), beta (C) -> (..., C): each row of C channels normalised with its own
/// mean and biased variance, x̂ = (x − μ) / √(σ² + eps), then y = gamma ⊙ x̂ + beta.
Tensor layer_norm(const Tensor& x, const Tensor& gamma, const Tensor& beta, double eps = 1e-5);

// ----- S6. Perplexity from a loss log (examples/student/perplexity.cc) -----

/// One line of an evaluation's loss log: a batch's mean loss per token (nats) and its tokens.
struct BatchLoss {
  double mean_loss = 0;
  int64_t tokens = 0;
};

/// The perplexity of all the tokens of the log (docs/05-training.md, "Loss and perplexity").
/// Throws std::invalid_argument for a log with no tokens.
double perplexity(const std::vector<BatchLoss>& log);

// ----- S7. The counted bigram's cross-entropy (examples/student/bigram.cc) -----

/// Cross-entropy, in nats per token, of `val` under the bigram model counted on `train` with
/// add-one smoothing over vocab_size tokens: P(b | a) = (count(a, b) + 1) / (count(a, ·) + V),
/// where count(a, ·) counts the pairs of train that start with a, and the loss is the mean of
/// −ln P(val[i] | val[i−1]) over the pairs of val (gpt/text/dataset.h). Ids are in [0, V).
/// Throws std::invalid_argument when val has fewer than 2 tokens (no pair).
double bigram_cross_entropy(const std::vector<int64_t>& train, const std::vector<int64_t>& val,
                            int64_t vocab_size);

}  // namespace attograd::student
