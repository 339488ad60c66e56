// The accepted range of every size and count attograd takes from a user or a file: one table,
// read by GPTConfig::validate, TrainOptions::validate and the CLI, whose option checks and
// --help print the same ranges.
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

namespace attograd::gpt {

/// A closed range [min, max] of an integer setting.
struct IntRange {
  int64_t min;
  int64_t max;
  bool contains(int64_t v) const { return v >= min && v <= max; }
};

/// "[1, 1024]"
std::string range_str(IntRange r);

/// Throws std::invalid_argument "<owner>: <field> must be in [min, max], got <v>" (owner may be
/// empty) when v is outside r.
void check_range(const std::string& owner, const char* field, int64_t v, IntRange r);

namespace limits {

inline constexpr int64_t kInt64Max = std::numeric_limits<int64_t>::max();

// ---- GPTConfig ------------------------------------------------------------------------------
inline constexpr IntRange vocab_size{1, 1 << 20};  // 1,048,576 token ids
inline constexpr IntRange block_size{1, 1 << 17};  // 131,072 positions
inline constexpr IntRange n_layer{1, 1024};
inline constexpr IntRange n_head{1, 1024};
inline constexpr IntRange n_embd{1, 1 << 16};  // 65,536 channels
/// The most parameters a config may have (GPTConfig::num_parameters), 20 billion: 80 GB in
/// f32 before gradients and optimizer moments.
inline constexpr int64_t max_parameters = 20'000'000'000;

// ---- TrainOptions ---------------------------------------------------------------------------
inline constexpr IntRange batch_size{1, 1 << 16};  // B, sequences per micro-batch
inline constexpr IntRange grad_accum{1, 1 << 16};  // micro-batches per optimizer step
// Step counts, intervals and token counts cost time, not memory: any value of their type.
inline constexpr IntRange steps{1, kInt64Max};
inline constexpr IntRange count{0, kInt64Max};  // warmup, decay steps, intervals, top_k (0 = off)
inline constexpr IntRange positive_count{1, kInt64Max};  // eval_iters, log_interval

}  // namespace limits

/// The most threads a run may ask for: 4 x the cores this machine reports (more only queue for
/// the same cores), at most the pool's kMaxThreads.
int max_threads();

}  // namespace attograd::gpt
