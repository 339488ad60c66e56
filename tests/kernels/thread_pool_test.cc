// Tests autograd/kernels/thread_pool.cc: every index run exactly once for many counts, thread
// counts and spin settings; kernels bit-identical on 1 to 4 threads; nested loops run inline;
// resizing; empty and one-element ranges; an exception reaches the caller and the pool lives on;
// two threads calling at once; a process that exits inside a loop exits; each thread runs its
// own share of the chunks first and steals from the back of the others.
#define BOOST_TEST_MODULE thread_pool
#include <boost/test/unit_test.hpp>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <iostream>
#include <memory>
#include <mutex>
#include <random>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <sys/wait.h>
#include <unistd.h>

#include "autograd/kernels/matmul.h"
#include "autograd/kernels/softmax.h"
#include "autograd/kernels/thread_pool.h"
#include "tests/kernels/test_support.h"

namespace k = attograd::kernels;
using namespace attograd::kernels::testing;

namespace {

// How many times parallel_for ran each index of [0, count).
std::vector<int> runs_per_index(int64_t count) {
  std::unique_ptr<std::atomic<int>[]> hits(new std::atomic<int>[static_cast<size_t>(count + 1)]);
  for (int64_t i = 0; i <= count; ++i) hits[static_cast<size_t>(i)] = 0;
  k::parallel_for(count, [&](int64_t i) {
    hits[static_cast<size_t>(i)].fetch_add(1, std::memory_order_relaxed);
  });
  std::vector<int> out;
  for (int64_t i = 0; i < count; ++i) out.push_back(hits[static_cast<size_t>(i)].load());
  BOOST_TEST(hits[static_cast<size_t>(count)].load() == 0);  // nothing past the end
  return out;
}

// Restores the pool's settings at the end of a test case.
struct KeepSettings {
  int threads = k::num_threads(), spin = k::spin_microseconds();
  ~KeepSettings() {
    k::set_num_threads(threads);
    k::set_spin_microseconds(spin);
  }
};

}  // namespace

// Declared first: the size before any test changed it.
BOOST_AUTO_TEST_CASE(the_default_size_is_the_cpus_this_process_may_run_on) {
  BOOST_TEST(k::num_threads() == k::available_cpus());
  BOOST_TEST(k::available_cpus() >= 1);
  BOOST_TEST(k::spin_microseconds() == k::kDefaultSpinMicroseconds);
}

BOOST_AUTO_TEST_CASE(every_index_runs_exactly_once) {
  KeepSettings keep;
  for (const int spin : {k::kDefaultSpinMicroseconds, 0}) {
    k::set_spin_microseconds(spin);
    for (const int threads : {1, 2, 3, 4, 7}) {
      k::set_num_threads(threads);
      for (const int64_t count : {1, 2, 3, 5, 63, 64, 65, 127, 128, 129, 1000, 4097}) {
        BOOST_TEST_CONTEXT("spin " << spin << " us, " << threads << " threads, count " << count) {
          const std::vector<int> runs = runs_per_index(count);
          BOOST_TEST(runs == std::vector<int>(static_cast<size_t>(count), 1),
                     boost::test_tools::per_element());
        }
      }
    }
  }
}

// Many short jobs back to back, the pattern of a training step, with workers that sleep at once
// (spin 0: every job wakes them through the futex) and with the default spin.
BOOST_AUTO_TEST_CASE(many_short_jobs_each_complete_with_any_spin) {
  KeepSettings keep;
  k::set_num_threads(2);
  for (const int spin : {0, 1, k::kDefaultSpinMicroseconds}) {
    k::set_spin_microseconds(spin);
    int64_t wrong = 0;
    for (int job = 0; job < 2000; ++job) {
      std::atomic<int64_t> sum{0};
      const int64_t count = 1 + job % 97;
      k::parallel_for(count, [&](int64_t i) { sum.fetch_add(i + 1, std::memory_order_relaxed); });
      if (sum.load() != count * (count + 1) / 2) ++wrong;
    }
    BOOST_TEST_CONTEXT("spin " << spin << " us") { BOOST_TEST(wrong == 0); }
  }
}

// With 2 threads both take part: index 0 waits (yielding, at most a minute) until another
// thread has run an index, which only a worker can do while the caller waits there.
BOOST_AUTO_TEST_CASE(a_worker_takes_part) {
  if (!build_has_threads()) return;
  KeepSettings keep;
  k::set_num_threads(2);
  const std::thread::id caller = std::this_thread::get_id();
  std::atomic<bool> other_ran{false};
  std::mutex m;
  std::set<std::thread::id> ids;
  k::parallel_for(64, [&](int64_t i) {
    {
      std::lock_guard<std::mutex> lock(m);
      ids.insert(std::this_thread::get_id());
    }
    if (std::this_thread::get_id() != caller) other_ran = true;
    if (i == 0) {
      for (int tries = 0; !other_ran && tries < 60000; ++tries)
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  });
  BOOST_TEST(other_ran.load());
  BOOST_TEST(ids.size() == 2u);
}

// Shares: with 2 threads and 64 chunks the caller owns [0, 32) and the worker [32, 64), each
// claims its own from the front and the other's from the back. The caller's index 0 waits until
// the worker has started an index, which must be 32, the first of its share (the caller cannot
// have taken it: it is held in index 0). The worker's index 32 then waits until the caller has
// started an index of the worker's share, which it reaches only after running all of its own
// and then must take from the back: 63. Waits are bounded (a minute), so a broken pool fails.
BOOST_AUTO_TEST_CASE(each_thread_runs_its_own_share_first_then_steals_from_the_back) {
  if (!build_has_threads()) return;
  KeepSettings keep;
  k::set_num_threads(2);
  const std::thread::id caller = std::this_thread::get_id();
  std::atomic<int64_t> worker_first{-1}, caller_first_stolen{-1};
  std::atomic<int> caller_own{0};
  const auto wait_for = [](const std::atomic<int64_t>& v) {
    for (int tries = 0; v.load() < 0 && tries < 60000; ++tries)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
  };
  k::parallel_for(64, [&](int64_t i) {
    if (std::this_thread::get_id() != caller) {
      int64_t none = -1;
      worker_first.compare_exchange_strong(none, i);
    } else if (i >= 32) {
      int64_t none = -1;
      caller_first_stolen.compare_exchange_strong(none, i);
    } else {
      caller_own.fetch_add(1);
    }
    if (i == 0) wait_for(worker_first);
    if (i == 32) wait_for(caller_first_stolen);
  });
  BOOST_TEST(worker_first.load() == 32);
  BOOST_TEST(caller_first_stolen.load() == 63);
  BOOST_TEST(caller_own.load() == 32);
}

// With n threads (2 to 4, more than this machine's CPUs is fine) each thread's first chunk is
// the front of its own share, 64 * j / n for thread j: every thread's first chunk waits until
// all n have started one, so no thread can run out of its own share and steal before the others
// begin (a stolen chunk is another share's last, never its first, anyway).
BOOST_AUTO_TEST_CASE(with_n_threads_each_starts_at_the_front_of_its_own_share) {
  if (!build_has_threads()) return;
  KeepSettings keep;
  for (const int n : {2, 3, 4}) {
    k::set_num_threads(n);
    std::mutex m;
    std::set<std::thread::id> started;
    std::set<int64_t> firsts;
    std::atomic<int> count{0};
    k::parallel_for(64, [&](int64_t i) {
      {
        std::lock_guard<std::mutex> lock(m);
        if (!started.insert(std::this_thread::get_id()).second) return;
        firsts.insert(i);
      }
      count.fetch_add(1);
      for (int tries = 0; count.load() < n && tries < 60000; ++tries)
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    });
    std::set<int64_t> fronts;
    for (int j = 0; j < n; ++j) fronts.insert(64 * j / n);
    BOOST_TEST_CONTEXT(n << " threads") {
      BOOST_TEST(started.size() == static_cast<size_t>(n));
      BOOST_TEST(firsts == fronts, boost::test_tools::per_element());
    }
  }
}

// A matmul large enough to be cut into pieces (300^3 and a tall, thin-edged one: packed and
// thin paths) and a row kernel (softmax over 4096 rows) give the same bits on 1, 2, 3, 4 threads.
BOOST_AUTO_TEST_CASE_TEMPLATE(kernels_are_bit_identical_on_1_to_4_threads, T, Types) {
  if (!build_has_threads()) return;
  KeepSettings keep;
  std::mt19937_64 rng(71);
  struct Shape {
    int64_t M, K, N;
  };
  for (const Shape s : {Shape{300, 300, 300}, Shape{1030, 130, 67}, Shape{3, 700, 2000}}) {
    const Buffer<T> a = uniform<T>(s.M * s.K, 1, rng);
    const Buffer<T> b = uniform<T>(s.K * s.N, 1, rng);
    std::vector<T> want;
    for (const int threads : {1, 2, 3, 4}) {
      k::set_num_threads(threads);
      std::vector<T> c(static_cast<size_t>(s.M * s.N), T(0));
      k::matmul(c.data(), a.data(), b.data(), s.M, s.K, s.N, false, true, false);
      if (threads == 1) {
        want = c;
      } else {
        check_equal(c.data(), want.data(), s.M * s.N,
                    describe("matmul ", s.M, "x", s.K, "x", s.N, ", ", threads, " threads vs 1"));
      }
    }
  }
  const int64_t rows = 4096, n = 97;
  const Buffer<T> x = uniform<T>(rows * n, 1, rng, -8, 8);
  std::vector<T> want;
  for (const int threads : {1, 2, 3, 4}) {
    k::set_num_threads(threads);
    Buffer<T> y(rows * n, 1);
    k::softmax_forward(y.data(), x.data(), rows, n, 0);
    if (threads == 1) {
      want = y.vector();
    } else {
      check_equal(y.data(), want.data(), rows * n,
                  describe("softmax_forward, ", threads, " threads vs 1"));
    }
  }
}

// A parallel_for inside a body runs inline, on the thread of that body, and still runs each of
// its indices once.
BOOST_AUTO_TEST_CASE(a_nested_parallel_for_runs_inline) {
  KeepSettings keep;
  k::set_num_threads(3);
  const int64_t outer = 16, inner = 100;
  std::vector<std::atomic<int>> hits(static_cast<size_t>(outer * inner));
  std::atomic<int> elsewhere{0};
  k::parallel_for(outer, [&](int64_t i) {
    const std::thread::id here = std::this_thread::get_id();
    k::parallel_for(inner, [&](int64_t j) {
      if (std::this_thread::get_id() != here) ++elsewhere;
      ++hits[static_cast<size_t>(i * inner + j)];
    });
  });
  BOOST_TEST(elsewhere.load() == 0);
  int64_t wrong = 0;
  for (const auto& h : hits) wrong += h.load() != 1;
  BOOST_TEST(wrong == 0);
}

BOOST_AUTO_TEST_CASE(the_pool_resizes_between_loops) {
  KeepSettings keep;
  for (const int threads : {3, 1, 4, 2, 2, 1, 5}) {
    k::set_num_threads(threads);
    BOOST_TEST(k::num_threads() == threads);
    BOOST_TEST_CONTEXT(threads << " threads") {
      BOOST_TEST(runs_per_index(500) == std::vector<int>(500, 1), boost::test_tools::per_element());
    }
  }
  BOOST_CHECK_THROW(k::set_num_threads(0), std::invalid_argument);
  BOOST_CHECK_THROW(k::set_num_threads(-1), std::invalid_argument);
  BOOST_CHECK_THROW(k::set_num_threads(k::kMaxThreads + 1), std::invalid_argument);
  BOOST_CHECK_THROW(k::set_spin_microseconds(-1), std::invalid_argument);
  BOOST_CHECK_THROW(k::set_spin_microseconds(1000001), std::invalid_argument);
  // Inside a body the size cannot change: the error names the rule.
  k::set_num_threads(2);
  std::atomic<int> refused{0};
  k::parallel_for(8, [&](int64_t) {
    try {
      k::set_num_threads(3);
    } catch (const std::logic_error& e) {
      if (std::string(e.what()).find("inside a parallel_for body") != std::string::npos) ++refused;
    }
  });
  BOOST_TEST(refused.load() == 8);
  BOOST_TEST(k::num_threads() == 2);
  // The same on one thread, where the body runs on the caller without the pool's workers.
  k::set_num_threads(1);
  refused = 0;
  k::parallel_for(8, [&](int64_t) {
    try {
      k::set_num_threads(3);
    } catch (const std::logic_error& e) {
      if (std::string(e.what()).find("inside a parallel_for body") != std::string::npos) ++refused;
    }
  });
  BOOST_TEST(refused.load() == 8);
  BOOST_TEST(k::num_threads() == 1);
  k::set_num_threads(2);  // and outside a body it works again
  BOOST_TEST(k::num_threads() == 2);
}

BOOST_AUTO_TEST_CASE(empty_and_one_element_ranges) {
  KeepSettings keep;
  k::set_num_threads(2);
  int calls = 0;
  k::parallel_for(0, [&](int64_t) { ++calls; });
  k::parallel_for(-5, [&](int64_t) { ++calls; });
  BOOST_TEST(calls == 0);
  std::thread::id ran_on;
  k::parallel_for(1, [&](int64_t i) {
    ++calls;
    BOOST_TEST(i == 0);
    ran_on = std::this_thread::get_id();
  });
  BOOST_TEST(calls == 1);
  BOOST_TEST((ran_on == std::this_thread::get_id()));  // a single index runs on the caller
}

// A body that throws: parallel_for rethrows the first exception on the calling thread after the
// chunks under way have finished, skips the chunks not yet started, and the pool works after.
BOOST_AUTO_TEST_CASE(an_exception_in_a_body_reaches_the_caller) {
  KeepSettings keep;
  for (const int threads : {1, 2, 4}) {
    k::set_num_threads(threads);
    BOOST_TEST_CONTEXT(threads << " threads") {
      std::atomic<int> ran{0};
      bool caught = false;
      try {
        k::parallel_for(1000, [&](int64_t i) {
          ++ran;
          if (i == 17) throw std::runtime_error("index 17 failed");
        });
      } catch (const std::runtime_error& e) {
        caught = std::string(e.what()) == "index 17 failed";
      }
      BOOST_TEST(caught);
      if (threads == 1) BOOST_TEST(ran.load() == 18);  // in order, up to the throw
      BOOST_TEST(runs_per_index(1000) == std::vector<int>(1000, 1),
                 boost::test_tools::per_element());
    }
  }
}

// Two threads of the program calling parallel_for at once: one job has the pool, the other runs
// inline; both complete, every index once.
BOOST_AUTO_TEST_CASE(two_callers_at_once_both_complete) {
  if (!build_has_threads()) return;
  KeepSettings keep;
  k::set_num_threads(2);
  std::atomic<int64_t> wrong{0};
  auto caller = [&] {
    for (int job = 0; job < 300; ++job) {
      std::atomic<int64_t> sum{0};
      k::parallel_for(200, [&](int64_t i) { sum += i; });
      if (sum.load() != 199 * 200 / 2) ++wrong;
    }
  };
  std::thread other(caller);
  caller();
  other.join();
  BOOST_TEST(wrong.load() == 0);
}

// exit() inside a parallel loop (a body that ends the program, or a test framework that turns a
// crash in a chunk into a jump to exit) used to hang the process: the pool's destructor, run by
// exit, waited for the job that was still running. Now the exit completes with its status.
BOOST_AUTO_TEST_CASE(exiting_inside_a_loop_ends_the_process) {
  if (!build_has_threads()) return;
  const int threads = k::num_threads();
  k::set_num_threads(1);  // no workers in this process, so the child starts its own
  std::cout.flush();      // else the child's exit prints the framework's buffered lines again
  const pid_t child = ::fork();
  BOOST_REQUIRE(child >= 0);
  if (child == 0) {
    k::set_num_threads(2);
    static std::atomic<bool> first{true};
    k::parallel_for(64, [](int64_t) {
      if (first.exchange(false)) std::exit(7);
      for (;;) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    });
    std::_Exit(1);  // not reached
  }
  k::set_num_threads(threads);
  int status = 0;
  pid_t done = 0;
  for (int waited_ms = 0; waited_ms < 30000 && done == 0; waited_ms += 10) {
    done = ::waitpid(child, &status, WNOHANG);
    if (done == 0) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  if (done == 0) {
    ::kill(child, SIGKILL);
    ::waitpid(child, &status, 0);
    BOOST_FAIL("the process that called exit inside a parallel_for still ran after 30 s");
  }
  BOOST_TEST(WIFEXITED(status));
  BOOST_TEST(WEXITSTATUS(status) == 7);
}
