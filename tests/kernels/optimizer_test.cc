// Tests autograd/kernels/optimizer.cc (AdamW, sum of squares) against optimizer_ref.h under
// every Highway target, for float and double, with tail sizes and misaligned buffers; a step
// by hand; known sums; thread-count independence.
#define BOOST_TEST_MODULE optimizer
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "autograd/kernels/optimizer.h"
#include "autograd/kernels/optimizer_ref.h"
#include "autograd/kernels/thread_pool.h"
#include "tests/kernels/for_each_target.h"
#include "tests/kernels/test_support.h"

namespace k = attograd::kernels;
namespace ref = attograd::kernels::reference;
using namespace attograd::kernels::testing;

namespace {

// Step 3 of a run with nanoGPT's hyper-parameters, gradients scaled by a clipping factor.
k::AdamWStep third_step(double grad_scale) {
  return {.lr = 1e-2,
          .beta1 = 0.9,
          .beta2 = 0.95,
          .eps = 1e-8,
          .weight_decay = 0.1,
          .bias_correction1 = 1 - std::pow(0.9, 3),
          .bias_correction2 = 1 - std::pow(0.95, 3),
          .grad_scale = grad_scale};
}

}  // namespace

BOOST_AUTO_TEST_CASE_TEMPLATE(adamw_matches_reference, T, Types) {
  if (!kernels_are_simd<T>()) return;  // the f64 kernels are their twins in wasm
  std::mt19937_64 rng(61);
  for_each_target([&] {
    for (const int64_t n : kSizes) {
      for (const int64_t offset : kOffsets) {
        for (const int64_t n_decay : {int64_t{0}, n / 2, n}) {
          for (const double scale : {1.0, 0.37}) {
            const auto what =
                describe("n=", n, " offset=", offset, " n_decay=", n_decay, " scale=", scale);
            const Buffer<T> grad = uniform<T>(n, offset, rng);
            Buffer<T> p = uniform<T>(n, offset, rng), m = uniform<T>(n, offset, rng, -0.1, 0.1);
            Buffer<T> v = uniform<T>(n, offset, rng, 0, 0.1);
            Buffer<T> p_ref = p, m_ref = m, v_ref = v;
            k::adamw_step(p.data(), grad.data(), m.data(), v.data(), n, n_decay, third_step(scale));
            ref::adamw_step(p_ref.data(), grad.data(), m_ref.data(), v_ref.data(), n, n_decay,
                            third_step(scale));
            BOOST_TEST(allclose(m, m_ref, kRtol<T> * 1e-3, kRtol<T>), what + " m");
            BOOST_TEST(allclose(v, v_ref, kRtol<T> * 1e-3, kRtol<T>), what + " v");
            BOOST_TEST(allclose(p, p_ref, kRtol<T>, kRtol<T>), what + " param");
          }
        }
      }
    }
  });
}

// p = 1, g = 0.5, m = v = 0, the first step (bias corrections 0.1 and 0.05), lr 0.1, wd 0.1:
//   p = 1 (1 - 0.01) = 0.99;  m = 0.05;  v = 0.05 * 0.25 = 0.0125
//   p = 0.99 - (0.1 / 0.1) * 0.05 / (sqrt(0.0125) / sqrt(0.05) + 1e-8) = 0.99 - 0.1 = 0.89
// and the same parameter past n_decay skips the decay: 1 - 0.1 = 0.9.
BOOST_AUTO_TEST_CASE_TEMPLATE(adamw_first_step_by_hand, T, Types) {
  for_each_target([&] {
    std::vector<T> p = {1, 1}, g = {0.5, 0.5}, m = {0, 0}, v = {0, 0};
    const k::AdamWStep s{.lr = 0.1,
                         .beta1 = 0.9,
                         .beta2 = 0.95,
                         .eps = 1e-8,
                         .weight_decay = 0.1,
                         .bias_correction1 = 0.1,
                         .bias_correction2 = 1 - 0.95,
                         .grad_scale = 1};
    k::adamw_step(p.data(), g.data(), m.data(), v.data(), 2, 1, s);
    BOOST_TEST(allclose(p[0], T(0.89), 0, 1e-6), "decayed p = " << p[0]);
    BOOST_TEST(allclose(p[1], T(0.9), 0, 1e-6), "undecayed p = " << p[1]);
    BOOST_TEST(allclose(m[0], T(0.05), 0, 1e-6));
    BOOST_TEST(allclose(v[0], T(0.0125), 0, 1e-6));
  });
}

// sum of i² for i = 1..n is n (n + 1) (2n + 1) / 6, exact in double for these n.
BOOST_AUTO_TEST_CASE_TEMPLATE(sum_squares_known_and_reference, T, Types) {
  std::mt19937_64 rng(62);
  for_each_target([&] {
    for (const int64_t n : {int64_t{1}, int64_t{15}, int64_t{17}, int64_t{769}, int64_t{100003}}) {
      std::vector<T> x(static_cast<size_t>(n));
      for (int64_t i = 0; i < n; ++i) x[i] = static_cast<T>(i % 1000 + 1);
      double want = 0;
      for (int64_t i = 0; i < n; ++i) want += static_cast<double>(x[i]) * static_cast<double>(x[i]);
      BOOST_TEST(k::sum_squares_double(x.data(), n) == want, "n = " << n);  // integers: exact
      const Buffer<T> r = uniform<T>(n, 1, rng);
      BOOST_TEST(allclose(k::sum_squares_double(r.data(), n), ref::sum_squares_double(r.data(), n),
                          0, 1e-12));
    }
  });
}

// Both kernels split large n over threads in fixed chunks or slices: bit-identical with 1 and 2.
BOOST_AUTO_TEST_CASE_TEMPLATE(optimizer_is_thread_count_independent, T, Types) {
  if (!build_has_threads()) return;
  std::mt19937_64 rng(63);
  const int64_t n = 300007;
  const Buffer<T> grad = uniform<T>(n, 1, rng);
  const Buffer<T> p0 = uniform<T>(n, 1, rng);
  const int threads = k::num_threads();
  std::vector<T> p[2];
  double norm[2];
  for (const int nthreads : {1, 2}) {
    k::set_num_threads(nthreads);
    Buffer<T> pb = p0, m(n, 1), v(n, 1);
    k::adamw_step(pb.data(), grad.data(), m.data(), v.data(), n, n / 3, third_step(0.5));
    p[nthreads - 1] = pb.vector();
    norm[nthreads - 1] = k::sum_squares_double(grad.data(), n);
  }
  k::set_num_threads(threads);
  check_equal(p[1].data(), p[0].data(), n, "adamw_step 2 threads vs 1");
  BOOST_TEST(norm[1] == norm[0]);
}
