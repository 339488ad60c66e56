// Checked size arithmetic (autograd/size_math.h) and the places every tensor allocation goes
// through: shape_numel, contiguous_strides, the byte count, the storage allocator.
#define BOOST_TEST_MODULE size_math
#include <boost/test/unit_test.hpp>
#include <cstdint>
#include <limits>
#include <new>

#include "autograd/allocator.h"
#include "autograd/ops.h"
#include "autograd/size_math.h"
#include "tests/test_util.h"

using namespace attograd;
using attograd::testing::expect_throw_with;

namespace {
constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
}  // namespace

BOOST_AUTO_TEST_CASE(products_and_sums_that_fit_are_exact) {
  BOOST_TEST(checked_mul<int64_t>(3074457345618258602, 3, "x") == 9223372036854775806);
  BOOST_TEST(checked_mul<int64_t>(-4, 5, "x") == -20);
  BOOST_TEST(checked_mul<int64_t>(0, kMax, "x") == 0);
  BOOST_TEST(checked_mul<size_t>(size_t{1} << 32, (size_t{1} << 32) - 1, "x") ==
             (size_t{1} << 32) * ((size_t{1} << 32) - 1));
  BOOST_TEST(checked_add<int64_t>(kMax - 1, 1, "x") == kMax);
  // The description is only built on overflow.
  bool described = false;
  BOOST_TEST(checked_mul<int64_t>(6, 7, [&] {
               described = true;
               return std::string("x");
             }) == 42);
  BOOST_TEST(!described);
}

BOOST_AUTO_TEST_CASE(an_overflow_names_what_and_both_operands) {
  // The sinusoidal table: T = 3074457345618258603, C = 6 wraps to 2 mod 2^64.
  expect_throw_with<std::overflow_error>(
      [] { checked_mul<int64_t>(3074457345618258603, 6, "sinusoidal_table: T * C"); },
      "sinusoidal_table: T * C: 3074457345618258603 * 6 exceeds 9223372036854775807");
  expect_throw_with<std::overflow_error>([] { checked_mul<int64_t>(-3074457345618258603, 6, "x"); },
                                         "x: -3074457345618258603 * 6");
  if constexpr (sizeof(size_t) == 8) {  // 32 bits in the WebAssembly build
    expect_throw_with<std::overflow_error>(
        [] { checked_mul<size_t>(size_t{1} << 32, size_t{1} << 32, "bytes"); },
        "bytes: 4294967296 * 4294967296 exceeds 18446744073709551615");
  }
  expect_throw_with<std::overflow_error>([] { checked_add<int64_t>(kMax, 1, "tokens"); },
                                         "tokens: 9223372036854775807 + 1 exceeds");
}

BOOST_AUTO_TEST_CASE(shapes_whose_size_overflows_are_refused_before_allocating) {
  // The messages below name 64-bit limits; the WebAssembly build's size_t has 32.
  if (!attograd::testing::build_has(sizeof(size_t) == 8, "a 64-bit size_t")) return;
  // Elements: the product of the dimensions.
  expect_throw_with<std::overflow_error>(
      [] {
        shape_numel({3074457345618258603, 6});
      },
      "elements of shape (3074457345618258603, 6)");
  expect_throw_with<std::overflow_error>(
      [] {
        Tensor::empty({2305843009213693952, 8}, DType::i64);
      },
      "elements of shape (2305843009213693952, 8)");
  // Bytes: 2^62 elements fit int64, their 2^64 bytes of f32 do not.
  expect_throw_with<std::overflow_error>([] { Tensor::empty({int64_t{1} << 62}, DType::f32); },
                                         "bytes of a f32 tensor of shape (4611686018427387904,)");
  // Strides: a zero dimension makes numel 0, but the other strides still overflow.
  expect_throw_with<std::overflow_error>(
      [] {
        Tensor::empty({0, int64_t{1} << 40, int64_t{1} << 40}, DType::f32);
      },
      "strides of shape (0, 1099511627776, 1099511627776)");
  const Tensor x = Tensor::zeros({4, 2});
  expect_throw_with<std::overflow_error>(
      [&] {
        reshape(x, {-1, int64_t{1} << 62, 4});
      },
      "reshape to (-1, 4611686018427387904, 4)");
}

BOOST_AUTO_TEST_CASE(the_allocator_refuses_impossible_sizes_and_never_throws_when_freeing) {
  // Rounding SIZE_MAX up to its size class would wrap to a tiny block.
  BOOST_CHECK_THROW(allocate_storage(std::numeric_limits<size_t>::max()), std::bad_alloc);
  BOOST_CHECK_THROW(allocate_storage(std::numeric_limits<size_t>::max() / 2 + 1), std::bad_alloc);
  // release_storage runs in destructors, also while an out-of-memory error unwinds.
  static_assert(noexcept(release_storage(nullptr, 0)));
  BOOST_TEST(physical_memory_bytes() > 0u);
}
