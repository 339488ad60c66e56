// The storage cache: freed blocks are reused by size class.
#define BOOST_TEST_MODULE allocator
#include <boost/test/unit_test.hpp>
#include <cstdint>

#include "autograd/allocator.h"
#include "autograd/ops.h"

using namespace attograd;

BOOST_AUTO_TEST_CASE(freed_blocks_are_reused_by_size_class) {
  empty_storage_cache();
  void* a = allocate_storage(1000);
  BOOST_TEST(reinterpret_cast<uintptr_t>(a) % 64 == 0);
  release_storage(a, 1000);
  const AllocatorStats before = allocator_stats();
  BOOST_TEST(before.cached_blocks == 1u);
  BOOST_TEST(before.cached_bytes == 1024u);  // 1000 rounded up to 64-byte granules
  void* b = allocate_storage(1010);          // same class
  BOOST_TEST(b == a);
  BOOST_TEST(allocator_stats().hits == before.hits + 1);
  void* c = allocate_storage(2000);  // another class: fresh memory
  BOOST_TEST(c != a);
  release_storage(b, 1010);
  release_storage(c, 2000);
  empty_storage_cache();
  BOOST_TEST(allocator_stats().cached_bytes == 0u);
  BOOST_TEST(cache_limit_bytes() > 0u);
}

BOOST_AUTO_TEST_CASE(a_repeated_forward_backward_allocates_nothing_new) {
  // After one warm-up pass, the same computation is served entirely from the cache.
  Generator gen(1);
  const Tensor w = Tensor::randn({64, 32}, gen).set_requires_grad();
  const Tensor x = Tensor::randn({16, 64}, gen);
  auto step = [&] {
    w.zero_grad();
    sum(softmax(matmul(x, w))).backward();
  };
  step();
  const size_t misses = allocator_stats().misses;
  for (int i = 0; i < 5; ++i) step();
  BOOST_TEST(allocator_stats().misses == misses);
}
