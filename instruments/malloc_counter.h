// Counts every heap allocation of the process, for tests/gpt/train/allocations_test.cc and
// bench/train_bench.cc (one copy for both, in instruments/, which neither tests/ nor bench/ owns):
// malloc and its siblings are interposed (operator new calls malloc), and each call is counted
// while counting_mallocs() is on. Include in exactly one source file of a program. Under
// AddressSanitizer, which owns malloc, nothing is interposed and kCountsMallocs is false: the
// count stays 0 (see allocations_test).
#pragma once

#include <atomic>
#include <cerrno>
#include <cstddef>
#include <cstdint>

#include "instruments/sanitizers.h"

namespace attograd::instruments {

/// False under AddressSanitizer, where malloc is not interposed and nothing is counted.
inline constexpr bool kCountsMallocs = !kUnderAddressSanitizer;

/// Turns counting on or off, and the number counted since the last reset.
inline std::atomic<bool>& counting_mallocs() {
  static std::atomic<bool> on{false};
  return on;
}
inline std::atomic<int64_t>& malloc_count() {
  static std::atomic<int64_t> n{0};
  return n;
}
inline void count_malloc() {
  if (counting_mallocs().load(std::memory_order_relaxed))
    malloc_count().fetch_add(1, std::memory_order_relaxed);
}

}  // namespace attograd::instruments

#if !defined(ATTOGRAD_UNDER_ASAN)
extern "C" {
void* __libc_malloc(size_t);
void* __libc_calloc(size_t, size_t);
void* __libc_realloc(void*, size_t);
void* __libc_memalign(size_t, size_t);

void* malloc(size_t n) {
  attograd::instruments::count_malloc();
  return __libc_malloc(n);
}
void* calloc(size_t n, size_t size) {
  attograd::instruments::count_malloc();
  return __libc_calloc(n, size);
}
void* realloc(void* p, size_t n) {
  attograd::instruments::count_malloc();
  return __libc_realloc(p, n);
}
void* aligned_alloc(size_t alignment, size_t n) {
  attograd::instruments::count_malloc();
  return __libc_memalign(alignment, n);
}
int posix_memalign(void** out, size_t alignment, size_t n) {
  attograd::instruments::count_malloc();
  *out = __libc_memalign(alignment, n);
  return *out == nullptr && n != 0 ? ENOMEM : 0;
}
}
#endif  // !ATTOGRAD_UNDER_ASAN
