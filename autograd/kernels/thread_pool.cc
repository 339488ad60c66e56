// The engine's thread pool (thread_pool.h says what and why). The protocol of one job:
//
//   caller                                        worker (spinning, or asleep on epoch_)
//   lock job_mutex_ (busy: run inline)
//   write the job (body, count, chunks)
//   unfinished_ = chunks
//   ticket_ = generation << 32 | chunks   ---->   sees chunks left in ticket_
//   epoch_ += 1, wake sleepers                    claims one: CAS ticket_ to one fewer left
//   claims chunks like a worker                   reads the job, runs the chunk
//   waits until unfinished_ == 0          <----   unfinished_ -= 1 (the last one wakes the caller)
//
// A thread reads the job only after its CAS claimed a chunk of it, and the caller rewrites the
// job only after every claimed chunk reported done, so the job's plain fields need no atomics:
// the release store of ticket_ publishes them, the acquire CAS receives them, and unfinished_'s
// decrements hand each chunk's writes back to the caller. The generation in ticket_'s high half
// makes a worker that slept through a whole job unable to claim a chunk of the next one with a
// value it read before. Nobody ever waits for a thread that took no chunk, so a worker that the
// scheduler keeps off its core costs the job nothing.
//
// Sleeping and waking pair a flag with a re-check (sequentially consistent on both sides, as in
// Dekker's algorithm), so that a wake-up is either seen by the re-check or sent by the other
// side: a worker counts itself in sleepers_ and then re-checks ticket_, the caller publishes
// ticket_ and then reads sleepers_; the caller sets caller_sleeping_ and then re-checks
// unfinished_, the last worker decrements unfinished_ and then reads caller_sleeping_. The
// futex calls (notify) are made only when someone sleeps, so a spinning pool makes none.
#include "autograd/kernels/thread_pool.h"

#include <algorithm>
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
constexpr uint64_t kLeftMask = 0xffffffffu;  // ticket_'s low half: chunks left to claim

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

    // The job, then the ticket that publishes it.
    count_ = count;
    chunks_ = std::min(count, kMaxChunks);
    chunk_ = chunk;
    context_ = context;
    error_ = nullptr;
    failed_.store(false, std::memory_order_relaxed);
    unfinished_.store(static_cast<int32_t>(chunks_), std::memory_order_relaxed);
    ++generation_;
    ticket_.store(uint64_t{generation_} << 32 | static_cast<uint64_t>(chunks_),
                  std::memory_order_seq_cst);
    epoch_.fetch_add(1, std::memory_order_seq_cst);
    if (sleepers_.load(std::memory_order_seq_cst) > 0) epoch_.notify_all();

    t_in_pool = true;
    while (claim_and_run()) {
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
  // Claims one chunk of the current job and runs it; false when none is left to claim.
  bool claim_and_run() {
    uint64_t t = ticket_.load(std::memory_order_acquire);
    while ((t & kLeftMask) != 0) {
      if (!ticket_.compare_exchange_weak(t, t - 1, std::memory_order_acq_rel,
                                         std::memory_order_acquire))
        continue;  // t now holds the current ticket
      // Chunk c of chunks_: count_ / chunks_ indices, the first count_ % chunks_ chunks one more.
      const int64_t c = chunks_ - static_cast<int64_t>(t & kLeftMask);
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
    return false;
  }

  bool work_waiting() const {
    return (ticket_.load(std::memory_order_seq_cst) & kLeftMask) != 0 ||
           stop_.load(std::memory_order_seq_cst);
  }

  void worker() {
    t_in_pool = true;
    for (;;) {
      if (claim_and_run()) continue;
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
      for (int i = 0; i < n; ++i) workers_.emplace_back([this] { worker(); });
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

  // The job: written by the caller before it publishes ticket_, read after claiming a chunk.
  int64_t count_ = 0;
  int64_t chunks_ = 0;
  void (*chunk_)(const void*, int64_t, int64_t) = nullptr;
  const void* context_ = nullptr;
  uint32_t generation_ = 0;
  std::mutex error_mutex_;
  std::exception_ptr error_;
  std::atomic<bool> failed_{false};

  // Each on its own cache line: ticket_ is claimed by all, unfinished_ counted down by all,
  // epoch_ and sleepers_ touched only around sleeping.
  alignas(64) std::atomic<uint64_t> ticket_{0};
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
