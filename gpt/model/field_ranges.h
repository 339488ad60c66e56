// The accepted range of every size, count and rate attograd takes from a user or a file: the
// tables of GPTConfig and TrainOptions (for_each_field) name these, so validation, the JSON of
// checkpoints and the CLI's option checks and --help all apply and print the same ranges. They
// live in namespace `limits`, one constant a field (limits::n_head is n_head's range); the file is
// not named limits.h, which C and the standard library both have.
//
// Why these bounds: they are generous for teaching and for GPT-2-sized models (GPT-2 small:
// 12 layers, 12 heads, n_embd 768, block_size 1024, vocab_size 50257; GPT-2 XL: 48 layers,
// n_embd 1600, 1.56 billion parameters), yet small enough that every product of them (the
// parameter count, B x T x V logits, the T x C position table, byte counts) fits 64 bits with
// room to spare, and that an absurd value (n_layer 1,000,000,000) is refused at once instead of
// being found out by running out of memory. Products are still computed with checked_mul
// (autograd/size_math.h): the bounds make an overflow impossible, the checks make it loud.
#pragma once

#include <cstdint>
#include <limits>
#include <string>

#include "gpt/io/fields.h"

namespace attograd::gpt {

namespace limits {

inline constexpr int64_t kInt64Max = std::numeric_limits<int64_t>::max();

// ---- GPTConfig ------------------------------------------------------------------------------
inline constexpr IntRange vocab_size{1, 1 << 20};  // 1,048,576 token ids
inline constexpr IntRange block_size{1, 1 << 17};  // 131,072 positions
inline constexpr IntRange n_layer{1, 1024};
inline constexpr IntRange n_head{1, 1024};
// 32,768 channels: one block of that width alone has 12 x 32768^2 = 12.9 billion parameters,
// within max_parameters below; a wider one could never be built, so no range may offer it.
inline constexpr IntRange n_embd{1, 1 << 15};
/// The most parameters a config may have (GPTConfig::num_parameters), 20 billion: 80 GB in
/// f32 before gradients and optimizer moments.
inline constexpr int64_t max_parameters = 20'000'000'000;

// ---- TrainOptions ---------------------------------------------------------------------------
inline constexpr IntRange batch_size{1, 1 << 16};  // B, sequences per micro-batch
inline constexpr IntRange grad_accum{1, 1 << 16};  // micro-batches per optimizer step
inline constexpr IntRange ranks{1, 1 << 16};       // processes of a data-parallel run
// Step counts, intervals and token counts cost time, not memory: any value of their type.
inline constexpr IntRange steps{1, kInt64Max};
inline constexpr IntRange count{0, kInt64Max};  // warmup, decay steps, intervals, top_k (0 = off)
inline constexpr IntRange positive_count{1, kInt64Max};  // eval_iters, log_interval

// ---- real numbers ---------------------------------------------------------------------------
inline constexpr double kInf = std::numeric_limits<double>::infinity();
inline constexpr RealRange positive{0, kInf, true, false};       // a learning rate: > 0
inline constexpr RealRange non_negative{0, kInf, false, false};  // decays, clipping: >= 0
/// A probability that may not be 1 ([0, 1)): dropout (1 would drop every activation) and
/// AdamW's betas (1 would never forget).
inline constexpr RealRange below_one{0, 1, false, true};

}  // namespace limits

/// The most threads a run may ask for: 4 x the cores this machine reports (more only queue for
/// the same cores), at most the pool's kMaxThreads.
int max_threads();

}  // namespace attograd::gpt
