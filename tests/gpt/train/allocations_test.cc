// After warm-up a training step calls malloc zero times (issue 7): tensors, views, graph nodes
// and their saved values, the engine's work lists and the kernels' scratch all come from pools
// and caches that the first steps fill. Every heap allocation of the process goes through malloc
// (operator new included), so this test counts them by interposing malloc and its siblings.
// Under AddressSanitizer, which owns malloc, the test reports itself skipped. The engine's thread
// pool allocates nothing per parallel loop (its workers are made in the warm-up), so the count is
// attograd's alone with any compiler.
#define BOOST_TEST_MODULE allocations
#include <boost/test/unit_test.hpp>

#include <string>
#include <tuple>
#include <vector>

#include "autograd/kernels/thread_pool.h"
#include "gpt/model/config.h"
#include "gpt/model/gpt2.h"
#include "gpt/text/char_tokenizer.h"
#include "gpt/text/dataset.h"
#include "gpt/train/trainer.h"
#include "instruments/malloc_counter.h"

using namespace attograd;
using namespace attograd::gpt;

namespace {

// Text the char tokenizer turns into a corpus of a few thousand tokens.
std::vector<int64_t> tokens(int64_t& vocab_size) {
  std::string text;
  for (int i = 0; i < 400; ++i)
    text += (i % 2 == 0) ? "the cat sat on the mat. " : "a dog ran to the sea! ";
  const CharTokenizer tok = CharTokenizer::from_text(text);
  vocab_size = tok.vocab_size();
  return tok.encode(text);
}

// Heap allocations per training step of a model of this shape, after 3 warm-up steps: the
// fewest of 4 windows of 3 steps. The pool hands chunks out dynamically, so a thread may first
// meet some kernel's scratch (and make it) only after the warm-up, when another process kept it
// off its core; an allocation made every step shows in every window.
long allocations_per_step(GPTConfig c, int64_t batch, MatmulPrecision precision) {
  const std::vector<int64_t> t = tokens(c.vocab_size);
  const Dataset data(t, c.block_size);
  GPT model(c, 3);
  TrainOptions o;
  o.max_steps = 100;
  o.batch_size = batch;
  o.warmup_steps = 2;
  o.mixed_precision = precision;
  Trainer trainer(model, data, o, "char", "", "");
  for (int i = 0; i < 3; ++i) trainer.train_step();
  long fewest = -1;
  for (int window = 0; window < 4; ++window) {
    instruments::malloc_count() = 0;
    instruments::counting_mallocs() = true;
    for (int i = 0; i < 3; ++i) trainer.train_step();
    instruments::counting_mallocs() = false;
    const long n = static_cast<long>(instruments::malloc_count().load() / 3);
    if (fewest < 0 || n < fewest) fewest = n;
  }
  return fewest;
}

}  // namespace

BOOST_AUTO_TEST_CASE(a_training_step_after_warm_up_calls_malloc_zero_times) {
  if (!instruments::kCountsMallocs) {
    BOOST_TEST_MESSAGE("skipped: AddressSanitizer owns malloc, so it cannot be counted here");
    return;
  }
  // Two threads whatever the machine, so that the workers' scratch is part of the count.
  kernels::set_num_threads(2);
  // femto and pico as the lecture trains them, and a wider model whose products and attention
  // take the threaded, packed paths (their per-thread scratch is part of the warm-up).
  // Dropout (its mask) and RoPE (its cos and sin tables) make fresh tensors each step: from the
  // storage cache too.
  GPTConfig femto = preset("femto"), pico = preset("pico"), wide = preset("pico");
  wide.n_embd = 96;
  wide.n_head = 4;
  wide.block_size = 32;
  constexpr int wide_batch = 16;
  // The grains follow measurements (thread_pool.h); if they grow, this model must grow with them,
  // or its products run on one thread and their threaded scratch is not counted.
  const int64_t wide_tokens = int64_t{wide_batch} * wide.block_size;
  BOOST_TEST_REQUIRE(wide_tokens * wide.n_embd * 4 * wide.n_embd >= kernels::kMatmulParallelMin);
  BOOST_TEST_REQUIRE(wide_tokens * wide.block_size * wide.n_embd >= kernels::kAttentionParallelMin);
  GPTConfig dropout = pico, rope = pico;
  dropout.dropout = 0.1;
  rope.pos_encoding = PosEncoding::rope;
  // bf16 mixed precision (--mixed-precision bf16): matmul_bf16's packed operands come from the
  // same scratch as matmul's.
  constexpr MatmulPrecision f32 = MatmulPrecision::f32, bf16 = MatmulPrecision::bf16;
  for (const auto& [name, config, batch, precision] :
       {std::tuple{"femto", femto, 32, f32}, std::tuple{"pico", pico, 32, f32},
        std::tuple{"pico at n_embd 96, T 32", wide, wide_batch, f32},
        std::tuple{"pico with dropout 0.1", dropout, 32, f32},
        std::tuple{"pico with RoPE", rope, 32, f32},
        std::tuple{"pico at n_embd 96, T 32, bf16", wide, wide_batch, bf16}}) {
    BOOST_TEST_CONTEXT(name) { BOOST_TEST(allocations_per_step(config, batch, precision) == 0); }
  }
}
