// Tests autograd/kernels/gelu.cc against gelu_ref.h under every Highway target, for float and
// double, with tail sizes and misaligned buffers; known values; the derivative against a
// central difference; accumulation; thread-count independence.
#define BOOST_TEST_MODULE gelu
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "autograd/kernels/gelu.h"
#include "autograd/kernels/gelu_ref.h"
#include "autograd/kernels/thread_pool.h"
#include "tests/kernels/for_each_target.h"
#include "tests/kernels/test_support.h"

namespace k = attograd::kernels;
namespace ref = attograd::kernels::reference;
using namespace attograd::kernels::testing;

BOOST_AUTO_TEST_CASE_TEMPLATE(gelu_matches_reference, T, Types) {
  if (!kernels_are_simd<T>()) return;  // the f64 kernels are their twins in wasm
  std::mt19937_64 rng(51);
  for_each_target([&] {
    for (const int64_t n : kSizes) {
      for (const int64_t offset : kOffsets) {
        const auto what = describe("n=", n, " offset=", offset);
        const Buffer<T> x = uniform<T>(n, offset, rng, -8, 8);
        Buffer<T> y(n, offset), y_ref(n, offset);
        k::gelu_forward(y.data(), x.data(), n);
        ref::gelu_forward(y_ref.data(), x.data(), n);
        // floor 1: for x << 0, gelu = 0.5 x (1 + t) with t -> -1 cancels, in both versions,
        // so only the absolute error (~ |x| ulp(1)) is meaningful there.
        BOOST_TEST(allclose(y, y_ref, kRtol<T>, kRtol<T>), what + " gelu_forward");

        Buffer<T> inout = x;
        k::gelu_forward(inout.data(), inout.data(), n);
        BOOST_TEST(allclose(inout, y_ref, kRtol<T>, kRtol<T>), what + " gelu_forward in place");

        const Buffer<T> dy = uniform<T>(n, offset, rng);
        Buffer<T> dx = uniform<T>(n, offset, rng);
        Buffer<T> dx_ref = dx;
        k::gelu_backward(dx.data(), x.data(), dy.data(), n);
        ref::gelu_backward(dx_ref.data(), x.data(), dy.data(), n);
        BOOST_TEST(allclose(dx, dx_ref, kRtol<T>, kRtol<T>), what + " gelu_backward");
      }
    }
  });
}

// gelu(0) = 0; gelu(1) = 0.5 (1 + tanh(sqrt(2/pi) 1.044715)) = 0.8411920 (the tanh
// approximation; exact GELU gives 0.8413447); large |x| gives x and 0.
BOOST_AUTO_TEST_CASE_TEMPLATE(gelu_known_values, T, Types) {
  for_each_target([&] {
    const std::vector<T> x = {0, 1, -1, 10, -10};
    std::vector<T> y(x.size());
    k::gelu_forward(y.data(), x.data(), static_cast<int64_t>(x.size()));
    BOOST_TEST(y[0] == T(0));
    BOOST_TEST(allclose(y[1], T(0.8411920), 0, 1e-6), "gelu(1) = " << y[1]);
    BOOST_TEST(allclose(y[2], T(-0.1588080), 0, 1e-5), "gelu(-1) = " << y[2]);
    BOOST_TEST(allclose(y[3], T(10), 0, kRtol<T>), "gelu(10) = " << y[3]);
    BOOST_TEST(std::abs(y[4]) < T(1e-20), "gelu(-10) = " << y[4]);
  });
}

// The analytic derivative against (gelu(x + h) - gelu(x - h)) / 2h in double: truncation error
// ~ h^2 |gelu'''| / 6 ~ 1e-11 and rounding ~ ulp / h ~ 1e-11 for h = 1e-5.
BOOST_AUTO_TEST_CASE(gelu_backward_matches_central_difference) {
  std::vector<double> x;
  for (double v = -6; v <= 6; v += 0.0625) x.push_back(v + 0.01);
  const int64_t n = static_cast<int64_t>(x.size());
  const double h = 1e-5;
  for_each_target([&] {
    std::vector<double> x_plus(x), x_minus(x), y_plus(x.size()), y_minus(x.size());
    for (int64_t i = 0; i < n; ++i) x_plus[i] += h, x_minus[i] -= h;
    k::gelu_forward(y_plus.data(), x_plus.data(), n);
    k::gelu_forward(y_minus.data(), x_minus.data(), n);
    std::vector<double> dx(x.size(), 0.0), dy(x.size(), 1.0);
    k::gelu_backward(dx.data(), x.data(), dy.data(), n);
    for (int64_t i = 0; i < n; ++i) {
      const double numeric = (y_plus[i] - y_minus[i]) / (2 * h);
      BOOST_TEST(std::abs(dx[i] - numeric) < 1e-8,
                 "x = " << x[i] << ": analytic " << dx[i] << ", numeric " << numeric);
    }
  });
}

// The backward adds: from zero, two calls give exactly twice one.
BOOST_AUTO_TEST_CASE_TEMPLATE(gelu_backward_accumulates, T, Types) {
  std::mt19937_64 rng(52);
  const Buffer<T> x = uniform<T>(37, 1, rng, -4, 4);
  const Buffer<T> dy = uniform<T>(37, 1, rng);
  for_each_target([&] {
    Buffer<T> once(37, 1), twice(37, 1);
    k::gelu_backward(once.data(), x.data(), dy.data(), 37);
    k::gelu_backward(twice.data(), x.data(), dy.data(), 37);
    k::gelu_backward(twice.data(), x.data(), dy.data(), 37);
    for (int64_t i = 0; i < 37; ++i) once[i] *= 2;
    check_equal(twice.data(), once.data(), 37, "gelu_backward twice");
  });
}

// Without accumulate the backward writes: over a dx of NaNs (never read), exactly what adding
// into zeros gives, on every target and the twin.
BOOST_AUTO_TEST_CASE_TEMPLATE(gelu_backward_writes_when_not_accumulating, T, Types) {
  std::mt19937_64 rng(54);
  const Buffer<T> x = uniform<T>(37, 1, rng, -4, 4);
  const Buffer<T> dy = uniform<T>(37, 1, rng);
  const T nan = std::numeric_limits<T>::quiet_NaN();
  for_each_target([&] {
    Buffer<T> added(37, 1), written(37, 1, nan), written_ref(37, 1, nan);
    k::gelu_backward(added.data(), x.data(), dy.data(), 37);
    k::gelu_backward(written.data(), x.data(), dy.data(), 37, false);
    ref::gelu_backward(written_ref.data(), x.data(), dy.data(), 37, false);
    check_equal(written.data(), added.data(), 37, "gelu_backward written vs added into zeros");
    BOOST_TEST(allclose(written_ref, added, kRtol<T>, kRtol<T>), "the twin, written");
  });
}

// Large n is split over threads in fixed chunks: bit-identical with 1 and 2 threads.
BOOST_AUTO_TEST_CASE_TEMPLATE(gelu_is_thread_count_independent, T, Types) {
  if (!build_has_threads()) return;
  std::mt19937_64 rng(53);
  const int64_t n = 100003;
  const Buffer<T> x = uniform<T>(n, 1, rng, -6, 6);
  const Buffer<T> dy = uniform<T>(n, 1, rng);
  const int threads = k::num_threads();
  std::vector<T> y[2], dx[2];
  for (const int nthreads : {1, 2}) {
    k::set_num_threads(nthreads);
    Buffer<T> yb(n, 1), dxb(n, 1);
    k::gelu_forward(yb.data(), x.data(), n);
    k::gelu_backward(dxb.data(), x.data(), dy.data(), n);
    y[nthreads - 1] = yb.vector();
    dx[nthreads - 1] = dxb.vector();
  }
  k::set_num_threads(threads);
  check_equal(y[1].data(), y[0].data(), n, "gelu_forward 2 threads vs 1");
  check_equal(dx[1].data(), dx[0].data(), n, "gelu_backward 2 threads vs 1");
}
