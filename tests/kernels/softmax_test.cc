// Tests autograd/kernels/softmax.cc against softmax_ref.h under every Highway target, for float
// and double, with tail sizes, misaligned buffers and causal masks; plus known values that do
// not rely on the reference (huge and tiny logits, masks, -inf entries) and threading.
#define BOOST_TEST_MODULE softmax
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "autograd/kernels/softmax.h"
#include "autograd/kernels/softmax_ref.h"
#include "autograd/kernels/thread_pool.h"
#include "tests/kernels/for_each_target.h"
#include "tests/kernels/test_support.h"

namespace k = attograd::kernels;
namespace ref = attograd::kernels::reference;
using namespace attograd::kernels::testing;

namespace {

// (rows, n, causal_tq) cases for every size: no mask; square causal blocks (Tq = Tk = n); and
// queries at the end of a longer key sequence (Tq < Tk = n, as with a KV cache).
struct Case {
  int64_t rows, n, causal_tq;
};

std::vector<Case> cases() {
  std::vector<Case> result;
  for (const int64_t n : kSizes) {
    for (const int64_t rows : {1, 3, 8}) result.push_back({rows, n, 0});
    if (n <= 37) result.push_back({2 * n, n, n});  // two (n, n) causal blocks
    result.push_back({6, n, 3});  // Tq = 3 (more than n when n = 1: a row that sees nothing)
  }
  result.push_back({64, 769, 32});  // the last 32 queries of 769 keys, two heads
  return result;
}

}  // namespace

BOOST_AUTO_TEST_CASE_TEMPLATE(softmax_matches_reference, T, Types) {
  if (!kernels_are_simd<T>()) return;  // the f64 kernels are their twins in wasm
  std::mt19937_64 rng(31);
  for_each_target([&] {
    for (const Case& c : cases()) {
      for (const int64_t offset : kOffsets) {
        const auto what =
            describe("rows=", c.rows, " n=", c.n, " causal_tq=", c.causal_tq, " offset=", offset);
        const int64_t size = c.rows * c.n;
        const Buffer<T> x = uniform<T>(size, offset, rng, -8, 8);
        Buffer<T> y(size, offset), y_ref(size, offset);
        k::softmax_forward(y.data(), x.data(), c.rows, c.n, c.causal_tq);
        ref::softmax_forward(y_ref.data(), x.data(), c.rows, c.n, c.causal_tq);
        BOOST_TEST(allclose(y, y_ref, 0, kRtol<T>), what + " softmax_forward");

        // in place (y aliasing x)
        Buffer<T> inout = x;
        k::softmax_forward(inout.data(), inout.data(), c.rows, c.n, c.causal_tq);
        BOOST_TEST(allclose(inout, y_ref, 0, kRtol<T>), what + " softmax_forward in place");

        // backward from the same saved y; dx starts O(1) and the row sum cancels: floor 1
        const Buffer<T> dy = uniform<T>(size, offset, rng);
        Buffer<T> dx = uniform<T>(size, offset, rng);
        Buffer<T> dx_ref = dx;
        k::softmax_backward(dx.data(), y_ref.data(), dy.data(), c.rows, c.n);
        ref::softmax_backward(dx_ref.data(), y_ref.data(), dy.data(), c.rows, c.n);
        BOOST_TEST(allclose(dx, dx_ref, kRtol<T>, kRtol<T>), what + " softmax_backward");

        if (c.causal_tq != 0) continue;  // log_softmax has no mask
        Buffer<T> ly(size, offset), ly_ref(size, offset);
        k::log_softmax_forward(ly.data(), x.data(), c.rows, c.n);
        ref::log_softmax_forward(ly_ref.data(), x.data(), c.rows, c.n);
        BOOST_TEST(allclose(ly, ly_ref, kRtol<T>, kRtol<T>), what + " log_softmax_forward");

        Buffer<T> linout = x;
        k::log_softmax_forward(linout.data(), linout.data(), c.rows, c.n);
        BOOST_TEST(allclose(linout, ly_ref, kRtol<T>, kRtol<T>),
                   what + " log_softmax_forward in place");

        Buffer<T> ldx = uniform<T>(size, offset, rng);
        Buffer<T> ldx_ref = ldx;
        k::log_softmax_backward(ldx.data(), ly_ref.data(), dy.data(), c.rows, c.n);
        ref::log_softmax_backward(ldx_ref.data(), ly_ref.data(), dy.data(), c.rows, c.n);
        // the row sum of dy is up to n in size, and exp(y) * sum carries its rounding
        BOOST_TEST(allclose(ldx, ldx_ref, kRtol<T> * static_cast<double>(c.n), kRtol<T>),
                   what + " log_softmax_backward");
      }
    }
  });
}

// Max-subtraction: logits near 880 would overflow exp in float (e^88.7 is the limit), and
// -900 would underflow to 0/0 without it.
BOOST_AUTO_TEST_CASE_TEMPLATE(softmax_known_values, T, Types) {
  for_each_target([&] {
    const std::vector<T> x = {880, 881, 882};
    std::vector<T> y(3);
    k::softmax_forward(y.data(), x.data(), 1, 3, 0);
    const std::vector<T> expected = {T(0.09003057), T(0.2447285), T(0.6652410)};
    BOOST_TEST(allclose(y, expected, 0, 1e-6), "softmax([880, 881, 882])");

    const std::vector<T> equal = {-900, -900};
    k::softmax_forward(y.data(), equal.data(), 1, 2, 0);
    BOOST_TEST(y[0] == T(0.5));
    BOOST_TEST(y[1] == T(0.5));

    // log_softmax([0, 60, -60]) = [-60, 0, -120]: e^-60 and e^-120 vanish next to 1 in the sum
    const std::vector<T> spread = {0, 60, -60};
    k::log_softmax_forward(y.data(), spread.data(), 1, 3);
    const std::vector<T> log_expected = {-60, 0, -120};
    BOOST_TEST(allclose(y, log_expected, 0, kRtol<T>), "log_softmax([0, 60, -60])");
  });
}

// A causal block (Tq = Tk = 4, and Tq = 2 < Tk = 4): entries above the diagonal get probability
// exactly 0.0 and gradient exactly 0.0, and each visible part is an ordinary softmax.
BOOST_AUTO_TEST_CASE_TEMPLATE(causal_mask_gives_exact_zeros, T, Types) {
  std::mt19937_64 rng(32);
  for_each_target([&] {
    for (const int64_t tq : {4, 2}) {
      const int64_t n = 4, rows = 2 * tq;  // two heads
      const Buffer<T> x = uniform<T>(rows * n, 1, rng, -3, 3);
      Buffer<T> y(rows * n, 1);
      k::softmax_forward(y.data(), x.data(), rows, n, tq);
      const Buffer<T> dy = uniform<T>(rows * n, 1, rng);
      Buffer<T> dx(rows * n, 1);
      k::softmax_backward(dx.data(), y.data(), dy.data(), rows, n);
      for (int64_t r = 0; r < rows; ++r) {
        const int64_t t = r % tq;
        const int64_t visible = t + (n - tq) + 1;  // keys j <= t + (Tk - Tq)
        std::vector<T> row_ref(static_cast<size_t>(visible));
        ref::softmax_forward(row_ref.data(), x.data() + r * n, 1, visible, 0);
        for (int64_t j = 0; j < n; ++j) {
          if (j < visible) {
            BOOST_TEST(allclose(y[r * n + j], row_ref[j], 0, kRtol<T>), "r=" << r << " j=" << j);
          } else {
            BOOST_TEST(y[r * n + j] == T(0), "masked y, r=" << r << " j=" << j);
            BOOST_TEST(dx[r * n + j] == T(0), "masked dx, r=" << r << " j=" << j);
          }
        }
      }
    }
  });
}

// A -inf logit (a mask applied beforehand) gets probability exactly 0, log-probability -inf,
// and the other entries an ordinary softmax; Highway's Exp is not specified at -inf.
BOOST_AUTO_TEST_CASE_TEMPLATE(minus_infinity_entries_give_exact_zeros, T, Types) {
  const T inf = std::numeric_limits<T>::infinity();
  for_each_target([&] {
    for (const int64_t n : kSizes) {
      if (n < 2) continue;
      std::vector<T> x(static_cast<size_t>(n));
      for (int64_t j = 0; j < n; ++j) x[j] = static_cast<T>(j % 7) - T(3);
      for (int64_t j = 1; j < n; j += 3) x[j] = -inf;
      std::vector<T> y(x.size()), y_ref(x.size()), ly(x.size());
      k::softmax_forward(y.data(), x.data(), 1, n, 0);
      ref::softmax_forward(y_ref.data(), x.data(), 1, n, 0);
      k::log_softmax_forward(ly.data(), x.data(), 1, n);
      for (int64_t j = 0; j < n; ++j) {
        if (x[j] == -inf) {
          BOOST_TEST(y[j] == T(0), "n=" << n << " j=" << j);
          BOOST_TEST(ly[j] == -inf, "n=" << n << " j=" << j);
        } else {
          BOOST_TEST(allclose(y[j], y_ref[j], 0, kRtol<T>), "n=" << n << " j=" << j);
        }
      }
      // A row that is entirely -inf gives NaN, as in PyTorch.
      std::vector<T> all_masked(static_cast<size_t>(n), -inf);
      k::softmax_forward(y.data(), all_masked.data(), 1, n, 0);
      BOOST_TEST(std::isnan(y[0]));
    }
  });
}

// NaN is never turned into a valid-looking distribution (Highway's Exp returns 0 for NaN).
BOOST_AUTO_TEST_CASE_TEMPLATE(nan_propagates, T, Types) {
  for_each_target([&] {
    std::vector<T> x(37, T(1));
    x[20] = std::numeric_limits<T>::quiet_NaN();
    std::vector<T> y(37);
    k::softmax_forward(y.data(), x.data(), 1, 37, 0);
    for (const T v : y) BOOST_TEST(std::isnan(v));
    k::log_softmax_forward(y.data(), x.data(), 1, 37);
    for (const T v : y) BOOST_TEST(std::isnan(v));
  });
}

// Both backward kernels add: from zero, two calls give exactly twice one.
BOOST_AUTO_TEST_CASE_TEMPLATE(backward_kernels_accumulate, T, Types) {
  std::mt19937_64 rng(33);
  const int64_t rows = 3, n = 37;
  const Buffer<T> x = uniform<T>(rows * n, 1, rng);
  const Buffer<T> dy = uniform<T>(rows * n, 1, rng);
  Buffer<T> y(rows * n, 1), ly(rows * n, 1);
  ref::softmax_forward(y.data(), x.data(), rows, n, 0);
  ref::log_softmax_forward(ly.data(), x.data(), rows, n);
  for_each_target([&] {
    Buffer<T> once(rows * n, 1), twice(rows * n, 1), lonce(rows * n, 1), ltwice(rows * n, 1);
    k::softmax_backward(once.data(), y.data(), dy.data(), rows, n);
    k::softmax_backward(twice.data(), y.data(), dy.data(), rows, n);
    k::softmax_backward(twice.data(), y.data(), dy.data(), rows, n);
    k::log_softmax_backward(lonce.data(), ly.data(), dy.data(), rows, n);
    k::log_softmax_backward(ltwice.data(), ly.data(), dy.data(), rows, n);
    k::log_softmax_backward(ltwice.data(), ly.data(), dy.data(), rows, n);
    for (int64_t i = 0; i < rows * n; ++i) once[i] *= 2, lonce[i] *= 2;
    check_equal(twice.data(), once.data(), rows * n, "softmax_backward twice");
    check_equal(ltwice.data(), lonce.data(), rows * n, "log_softmax_backward twice");
  });
}

// 4096 rows of 769: split over threads by rows, bit-identical with 1 and 2 threads.
BOOST_AUTO_TEST_CASE_TEMPLATE(softmax_is_thread_count_independent, T, Types) {
  if (!build_has_threads()) return;
  std::mt19937_64 rng(34);
  const int64_t rows = 4096, n = 769;
  const Buffer<T> x = uniform<T>(rows * n, 1, rng, -8, 8);
  const Buffer<T> dy = uniform<T>(rows * n, 1, rng);
  const int threads = k::num_threads();
  std::vector<T> y[2], dx[2];
  for (const int nthreads : {1, 2}) {
    k::set_num_threads(nthreads);
    Buffer<T> yb(rows * n, 1), dxb(rows * n, 1);
    k::softmax_forward(yb.data(), x.data(), rows, n, 0);
    k::softmax_backward(dxb.data(), yb.data(), dy.data(), rows, n);
    y[nthreads - 1] = yb.vector();
    dx[nthreads - 1] = dxb.vector();
  }
  k::set_num_threads(threads);
  check_equal(y[1].data(), y[0].data(), rows * n, "softmax_forward 2 threads vs 1");
  check_equal(dx[1].data(), dx[0].data(), rows * n, "softmax_backward 2 threads vs 1");
}
