// The engine's thread pool (thread_pool.h says what and why). The protocol of one job:
//
//   caller (thread 0)                             worker i (spinning, or asleep on epoch_)
//   lock job_mutex_ (busy: run inline)
//   write the job (body, count, chunks)
//   unfinished_ = chunks
//   share j = (generation, first, end) of         sees chunks left in some share
//     thread j's n-th of the chunks, for all j
//   epoch_ += 1, wake sleepers                    claims one: CAS its own share's first up by
//   claims chunks like a worker                     one, or when that is empty another share's
//                                                   end down by one; reads the job, runs it
//   waits until unfinished_ == 0          <----   unfinished_ -= 1 (the last one wakes the caller)
//
// A thread reads the job only after its CAS claimed a chunk of it, and the caller rewrites the
// job only after every claimed chunk reported done, so the job's plain fields need no atomics:
// the stores of the shares publish them, the acquire CAS receives them, and unfinished_'s
// decrements hand each chunk's writes back to the caller. The generation in each share's high
// half makes a worker that slept through a whole job unable to claim a chunk of the next one
// with a value it read before. Nobody ever waits for a thread that took no chunk, so a worker
// that the scheduler keeps off its core costs the job nothing: the others take its share.
//
// Why shares: thread j's first chunks of every job are the same j-th part of its index range,
// so a loop over the rows that the loop before wrote finds thread j's rows in thread j's core's
// cache (an elementwise op after a product split by rows, layer norm after the residual add).
// With one counter for all, a thread took whichever chunk came next, and about half of every
// loop's rows came from the other core's cache (nano's 2-thread step, Zen 5: the memory-bound
// kernels took twice their 1-thread CPU time). It is what OpenMP's static schedule gives, with
// the steals kept for a thread that another process holds up.
//
// Sleeping and waking pair a flag with a re-check (sequentially consistent on both sides, as in
// Dekker's algorithm), so that a wake-up is either seen by the re-check or sent by the other
// side: a worker counts itself in sleepers_ and then re-checks the shares, the caller publishes
// the shares and then reads sleepers_; the caller sets caller_sleeping_ and then re-checks
// unfinished_, the last worker decrements unfinished_ and then reads caller_sleeping_. The
// futex calls (notify) are made only when someone sleeps, so a spinning pool makes none.
#include "autograd/kernels/thread_pool.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <exception>
#include <mutex>
#include <stdexcept>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#if defined(__linux__)
#include <sched.h>
#endif

namespace attograd::kernels {
namespace {

// Chunks per job: min(count, kMaxChunks). Enough for a thread held up by another process to
// leave its share to the others (2 threads take 32 each on a quiet machine), few enough that
// claiming costs nothing next to a chunk (one CAS each). Fixed, so that the same count is always
// cut the same way, whatever the number of threads.
constexpr int64_t kMaxChunks = 64;
constexpr int kMaxSpinMicroseconds = 1000000;

// A share of a job's chunks, [first, end), in one atomic word: generation << 32 | first << 16 |
// end (chunks <= kMaxChunks < 2^16). Its owner claims from the front (first + 1), the others
// from the back (end - 1), so the owner runs its chunks in index order and a thief takes those
// the owner would reach last.
struct alignas(64) Share {
  std::atomic<uint64_t> word{0};
};
constexpr uint64_t share_word(uint32_t generation, int64_t first, int64_t end) {
  return uint64_t{generation} << 32 | static_cast<uint64_t>(first) << 16 |
         static_cast<uint64_t>(end);
}
constexpr uint32_t share_generation(uint64_t w) { return static_cast<uint32_t>(w >> 32); }
constexpr int64_t share_first(uint64_t w) { return static_cast<int64_t>(w >> 16 & 0xffff); }
constexpr int64_t share_end(uint64_t w) { return static_cast<int64_t>(w & 0xffff); }
static_assert(kMaxChunks < (int64_t{1} << 16));

// True on pool workers always, and on a caller while it runs chunks: a parallel_for called
// there runs inline (the pool serves one job at a time).
thread_local bool t_in_pool = false;

// A hint to the CPU that this is a spin-wait loop (fewer pipeline flushes, and the other
// hyperthread of the core gets the execution units).
inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

// Polls done() for at most `microseconds` (the clock read every 64 polls); true once it holds.
template <class Done>
bool spin_until(int microseconds, const Done& done) {
  if (done()) return true;
  if (microseconds <= 0) return false;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::microseconds(microseconds);
  for (int i = 1;; ++i) {
    cpu_relax();
    if (done()) return true;
    if (i % 64 == 0 && std::chrono::steady_clock::now() >= deadline) return false;
  }
}

// A loop run on the caller alone (one thread, a nested loop, another caller's job under way, or
// no worker could start, as in the WebAssembly build) is still a parallel_for: its body is inside
// one, so set_num_threads refuses there as in a body the pool runs (restored after, also when
// the body throws).
void run_inline(int64_t count, void (*chunk)(const void*, int64_t, int64_t), const void* context) {
  struct Restore {
    bool outer = t_in_pool;
    ~Restore() { t_in_pool = outer; }
  } restore;
  t_in_pool = true;
  chunk(context, 0, count);
}

class Pool {
 public:
  Pool() : threads_(available_cpus()) {}
  Pool(const Pool&) = delete;
  Pool& operator=(const Pool&) = delete;
  // At exit (a function-local static): workers are stopped and joined, so none outlives the
  // objects it uses and no thread-local scratch is left to a leak checker. If a job still holds
  // the pool (exit() called on another thread mid-loop, or a test framework that turned a crash
  // inside a chunk into a jump to exit), waiting for it would hang the exit forever: the workers
  // are left to the process's end instead.
  ~Pool() {
    if (job_running_.load(std::memory_order_seq_cst)) {
      for (std::thread& w : workers_) w.detach();
      return;
    }
    std::lock_guard<std::mutex> lock(job_mutex_);
    stop_workers();
  }

  int threads() const { return threads_.load(std::memory_order_relaxed); }

  void resize(int n) {
    std::lock_guard<std::mutex> lock(job_mutex_);  // after a running job
    threads_.store(n, std::memory_order_relaxed);
    if (static_cast<int>(workers_.size()) != n - 1) stop_workers();  // started again on demand
  }

  int spin() const { return spin_.load(std::memory_order_relaxed); }
  void set_spin(int microseconds) { spin_.store(microseconds, std::memory_order_relaxed); }

  void run(int64_t count, void (*chunk)(const void*, int64_t, int64_t), const void* context) {
    if (count < 2 || t_in_pool || threads() == 1) return run_inline(count, chunk, context);
    std::unique_lock<std::mutex> lock(job_mutex_, std::try_to_lock);
    if (!lock.owns_lock()) return run_inline(count, chunk, context);  // another thread's job
    if (static_cast<int>(workers_.size()) != threads() - 1) start_workers(threads() - 1);
    if (workers_.empty()) return run_inline(count, chunk, context);  // no thread could start
    job_running_.store(true, std::memory_order_seq_cst);
    struct JobEnd {
      std::atomic<bool>& running;
      ~JobEnd() { running.store(false, std::memory_order_seq_cst); }
    } job_end{job_running_};

    // The job, then the shares that publish it (the generation last, for claim_and_run).
    count_ = count;
    chunks_ = std::min(count, kMaxChunks);
    chunk_ = chunk;
    context_ = context;
    error_ = nullptr;
    failed_.store(false, std::memory_order_relaxed);
    unfinished_.store(static_cast<int32_t>(chunks_), std::memory_order_relaxed);
    ++generation_;
    const int64_t n = shares_count_;  // a worker that failed to start leaves its share to steals
    for (int64_t j = 0; j < n; ++j)
      shares_[j].word.store(share_word(generation_, chunks_ * j / n, chunks_ * (j + 1) / n),
                            std::memory_order_seq_cst);
    generation_seen_.store(generation_, std::memory_order_seq_cst);
    epoch_.fetch_add(1, std::memory_order_seq_cst);
    if (sleepers_.load(std::memory_order_seq_cst) > 0) epoch_.notify_all();

    t_in_pool = true;
    while (claim_and_run(0)) {
    }
    t_in_pool = false;

    // The chunks other threads still run: spin, then sleep until the last one wakes us.
    if (!spin_until(spin(), [&] { return unfinished_.load(std::memory_order_acquire) == 0; })) {
      caller_sleeping_.store(true, std::memory_order_seq_cst);
      for (int32_t left; (left = unfinished_.load(std::memory_order_seq_cst)) != 0;)
        unfinished_.wait(left, std::memory_order_seq_cst);
      caller_sleeping_.store(false, std::memory_order_relaxed);
    }
    if (failed_.load(std::memory_order_relaxed)) std::rethrow_exception(error_);
  }

 private:
  // Claims a chunk of the current job for thread `self` (0: the caller, i: worker i) and runs
  // it: its own share's first, else another share's last. False when every share is empty.
  bool claim_and_run(int64_t self) {
    const uint32_t generation = generation_seen_.load(std::memory_order_acquire);
    const int64_t n = shares_count_;
    int64_t c = claim_first(shares_[self].word, generation);
    for (int64_t j = 1; c < 0 && j < n; ++j)
      c = claim_last(shares_[(self + j) % n].word, generation);
    if (c < 0) return false;
    const int64_t size = count_ / chunks_, extra = count_ % chunks_;
    const int64_t begin = c * size + std::min(c, extra), end = begin + size + (c < extra);
    if (!failed_.load(std::memory_order_relaxed)) {  // after a throw, the rest are skipped
      try {
        chunk_(context_, begin, end);
      } catch (...) {
        std::lock_guard<std::mutex> lock(error_mutex_);
        if (!failed_.load(std::memory_order_relaxed)) error_ = std::current_exception();
        failed_.store(true, std::memory_order_relaxed);
      }
    }
    if (unfinished_.fetch_sub(1, std::memory_order_seq_cst) == 1 &&
        caller_sleeping_.load(std::memory_order_seq_cst))
      unfinished_.notify_one();
    return true;
  }

  // The chunk claimed from the front (claim_first) or the back (claim_last) of a share of job
  // `generation`, or -1 when it is empty or of another job.
  static int64_t claim_first(std::atomic<uint64_t>& share, uint32_t generation) {
    uint64_t w = share.load(std::memory_order_acquire);
    while (share_generation(w) == generation && share_first(w) < share_end(w)) {
      if (share.compare_exchange_weak(w, w + (uint64_t{1} << 16), std::memory_order_acq_rel,
                                      std::memory_order_acquire))
        return share_first(w);
    }
    return -1;
  }
  static int64_t claim_last(std::atomic<uint64_t>& share, uint32_t generation) {
    uint64_t w = share.load(std::memory_order_acquire);
    while (share_generation(w) == generation && share_first(w) < share_end(w)) {
      if (share.compare_exchange_weak(w, w - 1, std::memory_order_acq_rel,
                                      std::memory_order_acquire))
        return share_end(w) - 1;
    }
    return -1;
  }

  bool work_waiting() const {
    for (int64_t j = 0; j < shares_count_; ++j) {
      const uint64_t w = shares_[j].word.load(std::memory_order_seq_cst);
      if (share_first(w) < share_end(w)) return true;
    }
    return stop_.load(std::memory_order_seq_cst);
  }

  void worker(int64_t self) {
    t_in_pool = true;
    for (;;) {
      if (claim_and_run(self)) continue;
      if (!spin_until(spin(), [&] { return work_waiting(); })) {
        const uint32_t epoch = epoch_.load(std::memory_order_seq_cst);
        sleepers_.fetch_add(1, std::memory_order_seq_cst);
        if (!work_waiting()) epoch_.wait(epoch, std::memory_order_seq_cst);
        sleepers_.fetch_sub(1, std::memory_order_seq_cst);
      }
      if (stop_.load(std::memory_order_acquire)) return;
    }
  }

  // Both under job_mutex_, with no job running.
  void start_workers(int n) {
    stop_workers();
    try {
      shares_count_ = n + 1;
      for (int i = 0; i < n; ++i) workers_.emplace_back([this, i] { worker(i + 1); });
    } catch (const std::system_error&) {
      // No more threads (a limit, or a platform without them): run with those that started.
    }
  }
  void stop_workers() {
    if (workers_.empty()) return;
    stop_.store(true, std::memory_order_seq_cst);
    epoch_.fetch_add(1, std::memory_order_seq_cst);
    epoch_.notify_all();
    for (std::thread& w : workers_) w.join();
    workers_.clear();
    stop_.store(false, std::memory_order_relaxed);
  }

  std::mutex job_mutex_;                  // held by a caller for its whole job, and by resize
  std::atomic<bool> job_running_{false};  // a caller is inside run(), holding job_mutex_
  std::vector<std::thread> workers_;
  std::atomic<int> threads_;
  std::atomic<int> spin_{kDefaultSpinMicroseconds};

  // The job: written by the caller before it publishes the shares, read after claiming a chunk.
  int64_t count_ = 0;
  int64_t chunks_ = 0;
  void (*chunk_)(const void*, int64_t, int64_t) = nullptr;
  const void* context_ = nullptr;
  uint32_t generation_ = 0;
  std::mutex error_mutex_;
  std::exception_ptr error_;
  std::atomic<bool> failed_{false};

  // One share per thread (the caller's first), each on its own cache line; shares_count_ is set
  // before the workers start and kept while they run. A plain array, not a heap one, because
  // workers detached at exit (~Pool) may still read it after the pool's destructor has run.
  // generation_seen_: the current job's generation.
  std::array<Share, kMaxThreads> shares_;
  int64_t shares_count_ = 0;
  alignas(64) std::atomic<uint32_t> generation_seen_{0};
  // Each on its own cache line: unfinished_ counted down by all, epoch_ and sleepers_ touched
  // only around sleeping.
  alignas(64) std::atomic<int32_t> unfinished_{0};
  alignas(64) std::atomic<uint32_t> epoch_{0};
  std::atomic<int> sleepers_{0};
  std::atomic<bool> caller_sleeping_{false};
  std::atomic<bool> stop_{false};
};

Pool& pool() {
  static Pool p;
  return p;
}

}  // namespace

int available_cpus() {
#if defined(__linux__)
  cpu_set_t set;
  if (::sched_getaffinity(0, sizeof set, &set) == 0) return std::max(1, CPU_COUNT(&set));
#endif
  return std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
}

void set_num_threads(int n) {
  if (n < 1 || n > kMaxThreads)
    throw std::invalid_argument("set_num_threads: expected 1 to " + std::to_string(kMaxThreads) +
                                " threads, got " + std::to_string(n));
  if (t_in_pool)
    throw std::logic_error(
        "set_num_threads: called inside a parallel_for body; set the size between loops");
  pool().resize(n);
}

int num_threads() { return pool().threads(); }

void set_spin_microseconds(int microseconds) {
  if (microseconds < 0 || microseconds > kMaxSpinMicroseconds)
    throw std::invalid_argument("set_spin_microseconds: expected 0 to " +
                                std::to_string(kMaxSpinMicroseconds) + " microseconds, got " +
                                std::to_string(microseconds));
  pool().set_spin(microseconds);
}

int spin_microseconds() { return pool().spin(); }

namespace detail {
void run_parallel(int64_t count, void (*chunk)(const void*, int64_t, int64_t),
                  const void* context) {
  pool().run(count, chunk, context);
}
}  // namespace detail

}  // namespace attograd::kernels
