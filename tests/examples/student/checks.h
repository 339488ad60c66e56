// The student track's checks (docs/exercises.md#the-student-track): each takes the exercise's
// functions (examples/student/exercises.h) and checks them with what the project trusts: the
// lecture's worked examples (the 2-token example's 19.82, the T = 3, d_k = 2 exercise of
// docs/03-attention.md), shapes, row sums, the library's own op on random f64 inputs, and
// finite differences (autograd/gradcheck.h). The functions are parameters, so that the same
// checks run on the student's files (`student_track`, `ctest -C student -L student`), on the
// reference answers (`student_track_answers`, in every run) and on deliberately wrong answers
// (`student_track_messages`, which asserts the message each mistake gets).
//
// A check stops at the first thing it finds wrong and says it in the lecture's terms, naming
// the mistake when the result matches a known one ("scores are 1.41x the expected: did you
// divide Q Kᵀ by √d_k?"). An exception from the student's function is reported with its
// message (the stubs' "not implemented yet: see docs/exercises.md#...").
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "autograd/tensor.h"
#include "examples/student/exercises.h"

namespace attograd::student::checks {

/// What one check found.
struct Verdict {
  std::vector<std::string> passed;  // each step that held, in order ("the lecture's 2-token ...")
  std::string problem;              // the first thing found wrong; empty when every step held
  bool ok() const { return problem.empty(); }
};

using UnaryFn = std::function<Tensor(const Tensor&)>;
using BinaryFn = std::function<Tensor(const Tensor&, const Tensor&)>;
using AttentionFn = std::function<Tensor(const Tensor&, const Tensor&, const Tensor&)>;
using SplitHeadsFn = std::function<Tensor(const Tensor&, int64_t)>;
using LayerNormFn = std::function<Tensor(const Tensor&, const Tensor&, const Tensor&, double)>;
using PerplexityFn = std::function<double(const std::vector<BatchLoss>&)>;
using BigramFn =
    std::function<double(const std::vector<int64_t>&, const std::vector<int64_t>&, int64_t)>;

/// S1: causal_mask(scores (T, T)) against the library's causal_mask, entry by entry.
Verdict check_causal_mask(const UnaryFn& causal_mask);
/// S2: softmax(x (..., n)): the masked T = 3 example, row sums, rows of ±1000, the library's
/// softmax on 2-D and 3-D inputs.
Verdict check_softmax(const UnaryFn& softmax);
/// S2: softmax_backward(y, dy): a hand example, the library's VJP, and a gradient check of an
/// op whose forward is the library's softmax and whose VJP is the student's.
Verdict check_softmax_backward(const BinaryFn& softmax_backward);
/// S3: attention(Q, K, V): the 2-token example (19.82), the T = 3, d_k = 2 exercise, the
/// library's ops and fused causal_attention, and a gradient check.
Verdict check_attention(const AttentionFn& attention);
/// S4: split_heads and merge_heads: which channels land in which head, the round trip, and
/// causal_attention between them against the library's causal_attention_qkv.
Verdict check_heads(const SplitHeadsFn& split_heads, const UnaryFn& merge_heads);
/// S5: layer_norm(x, gamma, beta, eps): a hand example, row means and variances, the library's
/// layer_norm, and a gradient check.
Verdict check_layer_norm(const LayerNormFn& layer_norm);
/// S6: perplexity(log): docs/05-training.md's two batches (e^1.5), gpt::PerplexityMeter.
Verdict check_perplexity(const PerplexityFn& perplexity);
/// S7: bigram_cross_entropy(train, val, V): a hand example, gpt::bigram_cross_entropy.
Verdict check_bigram(const BigramFn& bigram_cross_entropy);

}  // namespace attograd::student::checks
