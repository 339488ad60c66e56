// Tests autograd/kernels/reduce.cc against reduce_ref.h under every Highway target, for float
// and double, over (outer, n, inner) shapes that reduce the last axis (inner = 1) and a middle
// axis (inner > 1), with tail sizes and misaligned buffers.
#define BOOST_TEST_MODULE reduce
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "autograd/kernels/reduce.h"
#include "autograd/kernels/reduce_ref.h"
#include "autograd/kernels/thread_pool.h"
#include "tests/kernels/for_each_target.h"
#include "tests/kernels/test_support.h"

namespace k = attograd::kernels;
namespace ref = attograd::kernels::reference;
using namespace attograd::kernels::testing;

namespace {

struct Shape {
  int64_t outer, n, inner;
};

// Every size as the reduced axis and as the kept inner axis, with one and several outer slices.
std::vector<Shape> shapes() {
  std::vector<Shape> result;
  for (const int64_t s : kSizes) {
    for (const int64_t outer : {1, 3}) {
      result.push_back({outer, s, 1});   // last axis
      result.push_back({outer, s, 17});  // middle axis, narrow
      result.push_back({outer, 5, s});   // middle axis, every inner width
    }
  }
  result.push_back({2, 3, 600});  // more than one 256-column block
  return result;
}

}  // namespace

BOOST_AUTO_TEST_CASE_TEMPLATE(sum_axis_matches_reference, T, Types) {
  if (!kernels_are_simd<T>()) return;  // the f64 kernels are their twins in wasm
  std::mt19937_64 rng(11);
  for_each_target([&] {
    for (const Shape& s : shapes()) {
      for (const int64_t offset : kOffsets) {
        for (const bool accumulate : {false, true}) {
          const auto what = describe("sum_axis (", s.outer, ", ", s.n, ", ", s.inner,
                                     ") offset=", offset, " accumulate=", accumulate);
          const Buffer<T> x = uniform<T>(s.outer * s.n * s.inner, offset, rng);
          Buffer<T> out = uniform<T>(s.outer * s.inner, offset, rng);
          Buffer<T> want = out;
          k::sum_axis(out.data(), x.data(), s.outer, s.n, s.inner, accumulate);
          ref::sum_axis(want.data(), x.data(), s.outer, s.n, s.inner, accumulate);
          // A sum's rounding error scales with the sum of |terms| (at most 2 * n + 2 here).
          BOOST_TEST(allclose(out, want, kRtol<T> * (2.0 * static_cast<double>(s.n) + 2), kRtol<T>),
                     what);
        }
      }
    }
  });
}

BOOST_AUTO_TEST_CASE_TEMPLATE(sum_axis_of_empty_axis_is_zero, T, Types) {
  for_each_target([&] {
    for (const int64_t inner : {1, 5}) {
      std::vector<T> out(static_cast<size_t>(2 * inner), T(7));
      k::sum_axis(out.data(), static_cast<const T*>(nullptr), 2, 0, inner, true);
      for (const T v : out) BOOST_TEST(v == T(7));
      k::sum_axis(out.data(), static_cast<const T*>(nullptr), 2, 0, inner, false);
      for (const T v : out) BOOST_TEST(v == T(0));
    }
  });
}

BOOST_AUTO_TEST_CASE_TEMPLATE(max_axis_matches_reference, T, Types) {
  if (!kernels_are_simd<T>()) return;  // the f64 kernels are their twins in wasm
  std::mt19937_64 rng(12);
  std::uniform_int_distribution<int> small(-3, 3);  // many ties: the FIRST maximum must win
  for_each_target([&] {
    for (const Shape& s : shapes()) {
      for (const int64_t offset : kOffsets) {
        const auto what =
            describe("max_axis (", s.outer, ", ", s.n, ", ", s.inner, ") offset=", offset);
        Buffer<T> x(s.outer * s.n * s.inner, offset);
        for (int64_t i = 0; i < x.size(); ++i) x[i] = static_cast<T>(small(rng));
        Buffer<T> out(s.outer * s.inner, offset), want(s.outer * s.inner, offset);
        std::vector<int64_t> arg(static_cast<size_t>(s.outer * s.inner)), arg_want(arg.size());
        k::max_axis(out.data(), arg.data(), x.data(), s.outer, s.n, s.inner);
        ref::max_axis(want.data(), arg_want.data(), x.data(), s.outer, s.n, s.inner);
        check_equal(out.data(), want.data(), out.size(), what + " max");
        check_equal(arg.data(), arg_want.data(), static_cast<int64_t>(arg.size()),
                    what + " argmax");
      }
    }
  });
}

// NaN propagates: a slice holding NaN has max NaN, and its argmax is the first NaN's index.
BOOST_AUTO_TEST_CASE_TEMPLATE(max_axis_propagates_nan, T, Types) {
  const T nan = std::numeric_limits<T>::quiet_NaN();
  const T inf = std::numeric_limits<T>::infinity();
  for_each_target([&] {
    for (const int64_t n : kSizes) {
      for (int64_t where = 0; where < n; where += std::max<int64_t>(1, n / 5)) {
        // last axis: one row of n with a NaN at `where` (and a later one), +inf elsewhere
        std::vector<T> row(static_cast<size_t>(n), T(1));
        row[0] = inf;
        row[where] = nan;
        if (where + 2 < n) row[where + 2] = nan;
        T m = 0;
        int64_t arg = -1;
        k::max_axis(&m, &arg, row.data(), 1, n, 1);
        BOOST_TEST(std::isnan(m), "n=" << n << " NaN at " << where);
        BOOST_TEST(arg == where, "n=" << n << " NaN at " << where);

        // middle axis: the same column in each of 19 lanes, NaN only in lane 7
        const int64_t inner = 19;
        std::vector<T> x(static_cast<size_t>(n * inner), T(1));
        x[where * inner + 7] = nan;
        std::vector<T> out(inner);
        std::vector<int64_t> args(inner);
        k::max_axis(out.data(), args.data(), x.data(), 1, n, inner);
        for (int64_t j = 0; j < inner; ++j) {
          BOOST_TEST(std::isnan(out[j]) == (j == 7), "lane " << j);
          BOOST_TEST(args[j] == (j == 7 ? where : 0), "lane " << j);
        }
      }
    }
  });
}

BOOST_AUTO_TEST_CASE_TEMPLATE(broadcast_axis_acc_matches_reference, T, Types) {
  if (!kernels_are_simd<T>()) return;  // the f64 kernels are their twins in wasm
  std::mt19937_64 rng(13);
  for_each_target([&] {
    for (const Shape& s : shapes()) {
      for (const int64_t offset : kOffsets) {
        const auto what = describe("broadcast_axis_acc (", s.outer, ", ", s.n, ", ", s.inner,
                                   ") offset=", offset);
        const Buffer<T> dy = uniform<T>(s.outer * s.inner, offset, rng);
        Buffer<T> dx = uniform<T>(s.outer * s.n * s.inner, offset, rng);
        Buffer<T> want = dx;
        const T alpha = T(1) / static_cast<T>(s.n);  // the VJP of a mean
        k::broadcast_axis_acc(dx.data(), dy.data(), alpha, s.outer, s.n, s.inner);
        ref::broadcast_axis_acc(want.data(), dy.data(), alpha, s.outer, s.n, s.inner);
        BOOST_TEST(allclose(dx, want, kRtol<T>, kRtol<T>), what);
      }
    }
  });
}

// A backward kernel adds: from zero, two calls give exactly twice one.
BOOST_AUTO_TEST_CASE_TEMPLATE(broadcast_axis_acc_accumulates, T, Types) {
  std::mt19937_64 rng(14);
  const Buffer<T> dy = uniform<T>(2 * 17, 1, rng);
  for_each_target([&] {
    Buffer<T> once(2 * 37 * 17, 1), twice(2 * 37 * 17, 1);
    k::broadcast_axis_acc(once.data(), dy.data(), T(0.5), 2, 37, 17);
    k::broadcast_axis_acc(twice.data(), dy.data(), T(0.5), 2, 37, 17);
    k::broadcast_axis_acc(twice.data(), dy.data(), T(0.5), 2, 37, 17);
    for (int64_t i = 0; i < once.size(); ++i) once[i] *= 2;
    check_equal(twice.data(), once.data(), once.size(), "broadcast_axis_acc twice");
  });
}

BOOST_AUTO_TEST_CASE_TEMPLATE(sum_all_double_matches_reference, T, Types) {
  if (!kernels_are_simd<T>()) return;  // the f64 kernels are their twins in wasm
  std::mt19937_64 rng(15);
  for_each_target([&] {
    for (const int64_t n : kSizes) {
      for (const int64_t offset : kOffsets) {
        const Buffer<T> x = uniform<T>(n, offset, rng);
        const double got = k::sum_all_double(x.data(), n);
        const double want = ref::sum_all_double(x.data(), n);
        // Both sum in double, only the order differs.
        BOOST_TEST(allclose(got, want, 1e-12 * (2.0 * static_cast<double>(n)), 1e-12),
                   "n=" << n << " offset=" << offset << ": " << got << " vs " << want);
      }
    }
  });
}

// The point of summing in double: 2^24 + 1 + 1 + ... is exact in double, while a float sum
// would stay at 2^24 (16777216 + 1 rounds back to 16777216 in float).
BOOST_AUTO_TEST_CASE(sum_all_double_keeps_float_bits) {
  std::vector<float> x(1001, 1.0f);
  x[0] = 16777216.0f;
  for_each_target([&] {
    BOOST_TEST(k::sum_all_double(x.data(), 1001) == 16777216.0 + 1000.0);
    BOOST_TEST(k::sum_all_double(x.data() + 1, 1000) == 1000.0);  // misaligned
  });
}

BOOST_AUTO_TEST_CASE_TEMPLATE(large_sums_are_thread_count_independent, T, Types) {
  if (!build_has_threads()) return;
  std::mt19937_64 rng(16);
  const int64_t outer = 64, n = 769, inner = 40;
  const Buffer<T> x = uniform<T>(outer * n * inner, 1, rng);
  const int threads = k::num_threads();
  auto run = [&](int nthreads) {
    k::set_num_threads(nthreads);
    std::vector<T> last(outer * inner), middle(outer * inner);
    k::sum_axis(last.data(), x.data(), outer * inner, n, 1, false);
    k::sum_axis(middle.data(), x.data(), outer, n, inner, false);
    last.insert(last.end(), middle.begin(), middle.end());
    return last;
  };
  const std::vector<T> one = run(1), two = run(2);
  k::set_num_threads(threads);
  check_equal(two.data(), one.data(), static_cast<int64_t>(one.size()), "sum_axis 2 threads vs 1");
}
