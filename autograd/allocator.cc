#include "autograd/allocator.h"

#include <unistd.h>
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <map>
#include <mutex>
#include <new>
#include <string>
#include <vector>

#include "autograd/size_math.h"

namespace attograd {

namespace {

// The largest block allocate_storage hands out: half the address space, far beyond any machine.
constexpr size_t kMaxStorageBytes = std::numeric_limits<size_t>::max() / 2;

// Size classes: multiples of 64 bytes (a cache line, and the alignment) up to 64 KiB, then of
// 4 KiB pages. Exact enough that a step's repeated shapes land in their own classes.
size_t size_class(size_t bytes) {
  const size_t granule = bytes <= (64u << 10) ? 64 : 4096;
  const size_t rounded = (bytes + granule - 1) / granule * granule;
  return rounded == 0 ? 64 : rounded;
}

struct Cache {
  std::mutex mutex;
  std::map<size_t, std::vector<void*>> free_blocks;  // size class -> blocks
  AllocatorStats stats;

  void empty() {
    for (auto& [size, blocks] : free_blocks)
      for (void* b : blocks) std::free(b);
    free_blocks.clear();
    stats.cached_bytes = 0;
    stats.cached_blocks = 0;
  }
  ~Cache() { empty(); }
};

Cache& cache() {
  static Cache c;
  return c;
}

}  // namespace

size_t cache_limit_bytes() {
  static const size_t limit = [] {
    const char* env = std::getenv("ATTOGRAD_STORAGE_CACHE_MB");
    const long long mb = env != nullptr ? std::atoll(env) : 4096;
    // In 64 bits, then clamped: 4096 MB is 2^32 bytes, which a 32-bit size_t (WebAssembly)
    // wrapped to 0, turning the cache off there.
    const uint64_t bytes = static_cast<uint64_t>(std::clamp<long long>(mb, 0, 1LL << 40)) << 20;
    return static_cast<size_t>(std::min<uint64_t>(bytes, std::numeric_limits<size_t>::max()));
  }();
  return limit;
}

void* allocate_storage(size_t bytes) {
  // No machine has this much memory, and rounding it up to its size class would wrap to a small
  // block that the caller then overruns.
  if (bytes > kMaxStorageBytes) throw std::bad_alloc();
  const size_t cls = size_class(bytes);
  Cache& c = cache();
  {
    std::lock_guard<std::mutex> lock(c.mutex);
    auto it = c.free_blocks.find(cls);
    if (it != c.free_blocks.end() && !it->second.empty()) {
      void* b = it->second.back();
      it->second.pop_back();
      c.stats.cached_bytes -= cls;
      --c.stats.cached_blocks;
      ++c.stats.hits;
      return b;
    }
    ++c.stats.misses;
  }
  void* b = std::aligned_alloc(64, cls);
  if (b == nullptr) {  // give the cache back to the system and try once more
    empty_storage_cache();
    b = std::aligned_alloc(64, cls);
    if (b == nullptr) throw std::bad_alloc();
  }
  return b;
}

void release_storage(void* block, size_t bytes) noexcept {
  if (block == nullptr) return;
  const size_t cls = size_class(bytes);
  Cache& c = cache();
  {
    std::lock_guard<std::mutex> lock(c.mutex);
    if (c.stats.cached_bytes + cls <= cache_limit_bytes()) {
      // Keeping the block needs a list entry, which needs memory: when there is none (the model
      // that ran out of it is being unwound right now) the block goes back to the system instead.
      try {
        c.free_blocks[cls].push_back(block);
        c.stats.cached_bytes += cls;
        ++c.stats.cached_blocks;
        return;
      } catch (const std::bad_alloc&) {
      }
    }
  }
  std::free(block);
}

size_t physical_memory_bytes() {
  const long pages = ::sysconf(_SC_PHYS_PAGES), page_size = ::sysconf(_SC_PAGE_SIZE);
  if (pages <= 0 || page_size <= 0) return 0;
  return checked_mul(static_cast<size_t>(pages), static_cast<size_t>(page_size),
                     "physical memory in bytes");
}

AllocatorStats allocator_stats() {
  Cache& c = cache();
  std::lock_guard<std::mutex> lock(c.mutex);
  return c.stats;
}

void empty_storage_cache() {
  Cache& c = cache();
  std::lock_guard<std::mutex> lock(c.mutex);
  c.empty();
}

namespace {

constexpr size_t kSmallGranule = 32;
constexpr size_t kSmallMax = 1024;
constexpr size_t kSmallClasses = kSmallMax / kSmallGranule;
static_assert(kSmallGranule >= alignof(std::max_align_t) &&
              kSmallGranule % alignof(std::max_align_t) == 0);

// Set when this thread's lists are gone (thread exit): objects destroyed after that, such as
// statics at program exit, go straight to operator delete. (A plain bool: it outlives the lists.)
thread_local bool t_small_lists_gone = false;

// Free blocks of one thread, a singly linked list per size class through each block's first
// word. On thread exit the blocks go back to the system.
struct SmallFreeLists {
  void* heads[kSmallClasses] = {};
  ~SmallFreeLists() {
    t_small_lists_gone = true;
    for (void*& head : heads)
      while (head != nullptr) {
        void* next = *static_cast<void**>(head);
        ::operator delete(head);
        head = next;
      }
  }
};

SmallFreeLists& small_lists() {
  thread_local SmallFreeLists lists;
  return lists;
}

}  // namespace

void* allocate_small(size_t bytes) {
  if (bytes == 0 || bytes > kSmallMax || t_small_lists_gone)
    return ::operator new(bytes == 0 ? 1 : bytes);
  const size_t cls = (bytes - 1) / kSmallGranule;
  void*& head = small_lists().heads[cls];
  if (head != nullptr) {
    void* block = head;
    head = *static_cast<void**>(block);
    return block;
  }
  return ::operator new((cls + 1) * kSmallGranule);
}

void release_small(void* block, size_t bytes) noexcept {
  if (block == nullptr) return;
  if (bytes == 0 || bytes > kSmallMax || t_small_lists_gone) {
    ::operator delete(block);
    return;
  }
  void*& head = small_lists().heads[(bytes - 1) / kSmallGranule];
  *static_cast<void**>(block) = head;
  head = block;
}

}  // namespace attograd
