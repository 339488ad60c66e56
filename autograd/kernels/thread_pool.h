// The engine's own threads: one persistent pool that the kernels' parallel loops run on
// (simd-inl.h's for_range, matmul's pieces of C), in place of OpenMP.
//
// Why not OpenMP: its wait policy (spin or sleep between parallel regions) can be set only
// through environment variables read once when the runtime loads, so the CLI had to re-execute
// itself to set it; its static schedule hands each thread a fixed share, so when another process
// holds a core the whole team waits at the barrier for the descheduled thread (2 threads ran
// slower than 1); and an engine built on it cannot be built without it (WebAssembly).
//
// How it works (the ideas of ggml's threadpool, with its `poll` level, and gemma.cpp's
// `use_spinning`; no code taken from either):
//   - Workers are started once and kept. Between jobs each spins for at most spin_microseconds()
//     (a training step runs hundreds of short parallel loops back to back: a futex wake-up per
//     loop would eat the second core's gain), then sleeps on a futex (std::atomic::wait) until
//     the next job, so an idle pool costs nothing.
//   - parallel_for(count, body) cuts [0, count) into chunks whose number depends on count alone,
//     never on the thread count. Each thread, the calling one too, owns a share of the chunks
//     (thread i of n: the i-th n-th, in order) and claims its own one at a time, so that loop
//     after loop a thread gets the same part of the index range and finds the rows it wrote in
//     its own core's cache; then it takes the chunks left in the other shares, from their ends,
//     so a thread that another process keeps off its core simply takes fewer chunks instead of
//     holding everyone back. The caller returns when every chunk is done.
//   - Each index is run whole by one thread with the same code, so a kernel whose indices do not
//     share sums gives bit-identical results for any thread count (and any chunking).
// The pool serves one job at a time: a parallel_for inside a body (nested), or one called while
// another thread's parallel_for runs, is run inline on its own thread, in index order.
#ifndef ATTOGRAD_KERNELS_THREAD_POOL_H_
#define ATTOGRAD_KERNELS_THREAD_POOL_H_

#include <cstdint>

namespace attograd::kernels {

/// Sets the number of threads parallel loops use, the calling thread included: n - 1 workers
/// are (re)started, at the next parallel_for. n = 1 runs everything on the calling thread.
/// Waits for a running parallel_for to finish first. Throws std::invalid_argument unless
/// 1 <= n <= kMaxThreads, and std::logic_error when called from inside a parallel_for body.
void set_num_threads(int n);
inline constexpr int kMaxThreads = 1024;

/// The number of threads parallel loops use. The default is the number of CPUs this process
/// may run on (its affinity mask, as `taskset` or a launcher sets it).
int num_threads();

/// The CPUs this process may run on (sched_getaffinity; the online CPUs if that fails), >= 1.
int available_cpus();

/// How long an idle worker, and a caller waiting for the last chunks, spin before sleeping, in
/// microseconds: 0 sleeps at once (every job then pays a futex wake-up, some microseconds);
/// longer keeps the next job's start fast while a step's kernels follow each other, at the price
/// of burning that much CPU after the last one. Default kDefaultSpinMicroseconds. Throws
/// std::invalid_argument unless 0 <= microseconds <= 1,000,000.
void set_spin_microseconds(int microseconds);
int spin_microseconds();
inline constexpr int kDefaultSpinMicroseconds = 100;

/// Grains: the work from which a kernel splits a loop over threads; below it the loop runs on the
/// calling thread. Waking the other core and moving the data to its cache cost some microseconds
/// a loop, so a split pays only for loops of ~50 us of work or more. Measured on the 2-vCPU Zen 5
/// (2026-12-05) by building train_bench with all three scaled x1, x4, x16 and x64 and timing
/// 2 threads against 1, interleaved, 9 rounds: at the old grains (x1: 32768, 32768, 1 << 20)
/// femto's 2-thread step took 1.40x its 1-thread step and pico's 1.22x (cross_entropy over
/// B*T x V logits, and pico's attention, were split); at x16 femto 0.95-1.05x, pico 1.00x, and
/// nano kept its gain (0.71x, as at x1; x64 lost it: 0.80x). The kernels' tests size their
/// thread-count cases from these, so each case crosses its grain.
///
/// Elements touched by a row kernel (softmax, layer_norm, cross_entropy, reductions): rows * n.
inline constexpr int64_t kRowParallelMin = int64_t{1} << 19;
/// Work of attention, B * n_head * Tq * Tk * (head_dim + kAttentionScoreWork): the scores'
/// multiply-adds, and per score the softmax's exp and its share of the backward, counted as
/// kAttentionScoreWork multiply-adds. Counting multiply-adds alone left the benchmarks' pico
/// attention (head_dim 2, T = 32: mostly exps) on one thread, where split its 2-thread step
/// measured 0.86x its 1-thread one
/// (`bench/threads.py`, Intel, 2026-12-07: 1.18 against 1.37 ms at 2 threads, 9 rounds); femto's
/// (32 x 1 x 16 x 16 scores) stays on one thread for any weight below 62.
inline constexpr int64_t kAttentionParallelMin = int64_t{1} << 19;
inline constexpr int64_t kAttentionScoreWork = 16;
/// Multiply-adds of a matmul, M * N * K (1.7e7 FLOP: about 85 us of one core at 200 GFLOP/s).
/// Half x16's 2^24 since threads own shares (thread_pool.cc): nano's lm_head products
/// (1024 x 128 x 65, 8.5e6) ran 1.41-1.57x faster on 2 threads split than whole
/// (`bench/kernels_ab.py`, Zen 5, 2026-12-07), and pico's largest (4e5) stay far below it.
inline constexpr int64_t kMatmulParallelMin = int64_t{1} << 23;

namespace detail {
// Runs chunk(context, begin, end) over [0, count), cut as parallel_for says.
void run_parallel(int64_t count, void (*chunk)(const void*, int64_t, int64_t), const void* context);
}  // namespace detail

/// Runs body(i) for every i in [0, count), each exactly once, on the pool's threads and the
/// calling thread, and returns when all are done. Bodies must not depend on which thread runs
/// them or in what order (per-thread scratch keyed by thread_local is fine). If a body throws,
/// the chunks not yet started are skipped and the first exception is rethrown here once every
/// running chunk has finished; the workers survive.
template <class Body>
void parallel_for(int64_t count, const Body& body) {
  if (count <= 0) return;
  detail::run_parallel(
      count,
      [](const void* context, int64_t begin, int64_t end) {
        const Body& b = *static_cast<const Body*>(context);
        for (int64_t i = begin; i < end; ++i) b(i);
      },
      &body);
}

}  // namespace attograd::kernels

#endif  // ATTOGRAD_KERNELS_THREAD_POOL_H_
