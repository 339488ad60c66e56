// Tensor storage comes from a cache of freed blocks: a training step allocates the same shapes
// every time, and on a VM handing big buffers back to the kernel and faulting them in again
// costs more than the maths (measured: one GPT-2-small step at T = 256 spent 25 s in the
// kernel against 16 s computing). Blocks are reused by size class; nothing is ever zeroed.
#pragma once

#include <cstddef>
#include <new>

namespace attograd {

/// A 64-byte aligned block of at least `bytes` bytes: a cached block of the same size class if
/// there is one, else fresh memory. Throws std::bad_alloc when memory runs out (after emptying
/// the cache and retrying once), and at once for more than half the address space.
void* allocate_storage(size_t bytes);

/// Returns a block from allocate_storage(bytes) to the cache, or to the system when the cache
/// already holds `cache_limit_bytes()` (or has no memory left to note it). Never throws: it
/// runs in destructors, also while an out-of-memory error unwinds.
void release_storage(void* block, size_t bytes) noexcept;

/// Counters for tests and `attograd info`.
struct AllocatorStats {
  size_t cached_bytes = 0;  // held in the cache, ready for reuse
  size_t cached_blocks = 0;
  size_t hits = 0;    // allocations served from the cache
  size_t misses = 0;  // allocations that went to the system
};
AllocatorStats allocator_stats();

/// Frees every cached block.
void empty_storage_cache();

/// The most the cache holds: $ATTOGRAD_STORAGE_CACHE_MB megabytes if set, else 4096 MB.
size_t cache_limit_bytes();

/// This machine's physical memory in bytes (sysconf), or 0 when the system does not say: for
/// refusing, before building it, a model that cannot fit.
size_t physical_memory_bytes();

// ---- Small objects -----------------------------------------------------------------------------
// A training step makes the same few hundred small objects every time: a TensorImpl and a Storage
// per tensor, a graph node (with its saved values) per op. They come from per-thread free lists
// by size class (multiples of 32 bytes up to 1 KiB), so after warm-up a step calls malloc for
// none of them. Larger requests go to operator new. A block may be freed by another thread than
// the one that took it: it then joins that thread's list.

/// A block of at least `bytes` bytes, aligned for any object (16 bytes). Throws std::bad_alloc.
void* allocate_small(size_t bytes);

/// Returns a block from allocate_small(bytes) (the same `bytes`).
void release_small(void* block, size_t bytes) noexcept;

/// A standard allocator over allocate_small, for std::allocate_shared: the object and its
/// shared_ptr control block in one pooled block.
template <typename T>
struct PoolAllocator {
  using value_type = T;
  PoolAllocator() = default;
  template <typename U>
  PoolAllocator(const PoolAllocator<U>&) {}  // NOLINT: rebinding, as the standard requires
  T* allocate(size_t n) { return static_cast<T*>(allocate_small(n * sizeof(T))); }
  void deallocate(T* p, size_t n) noexcept { release_small(p, n * sizeof(T)); }
  template <typename U>
  bool operator==(const PoolAllocator<U>&) const {
    return true;
  }
};

}  // namespace attograd
