// Tests autograd/kernels/layer_norm.cc against layer_norm_ref.h under every Highway target, for
// float and double, with tail sizes and misaligned buffers; known values at a large mean;
// null gradient outputs; accumulation; thread-count independence of the column-split dgamma.
#define BOOST_TEST_MODULE layer_norm
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "autograd/kernels/layer_norm.h"
#include "autograd/kernels/layer_norm_ref.h"
#include "autograd/kernels/thread_pool.h"
#include "tests/kernels/for_each_target.h"
#include "tests/kernels/test_support.h"

namespace k = attograd::kernels;
namespace ref = attograd::kernels::reference;
using namespace attograd::kernels::testing;

BOOST_AUTO_TEST_CASE_TEMPLATE(layer_norm_matches_reference, T, Types) {
  if (!kernels_are_simd<T>()) return;  // the f64 kernels are their twins in wasm
  std::mt19937_64 rng(41);
  const T eps = T(1e-5);
  for_each_target([&] {
    for (const int64_t C : kSizes) {
      for (const int64_t rows : {1, 3, 8, 37}) {  // 37: whole blocks of V rows, and a rest
        for (const int64_t offset : kOffsets) {
          const auto what = describe("rows=", rows, " C=", C, " offset=", offset);
          // rows with a mean of 3 and a spread of 2: centring matters, nothing cancels badly
          const Buffer<T> x = uniform<T>(rows * C, offset, rng, 1, 5);
          const Buffer<T> gamma = uniform<T>(C, offset, rng, 0.5, 1.5);
          const Buffer<T> beta = uniform<T>(C, offset, rng, -0.5, 0.5);
          Buffer<T> y(rows * C, offset), mean(rows, offset), rstd(rows, offset);
          Buffer<T> y_ref(rows * C, offset), mean_ref(rows, offset), rstd_ref(rows, offset);
          k::layer_norm_forward(y.data(), mean.data(), rstd.data(), x.data(), gamma.data(),
                                beta.data(), rows, C, eps);
          ref::layer_norm_forward(y_ref.data(), mean_ref.data(), rstd_ref.data(), x.data(),
                                  gamma.data(), beta.data(), rows, C, eps);
          BOOST_TEST(allclose(mean, mean_ref, kRtol<T>, kRtol<T>), what + " mean");
          // C = 1: var = 0 and rstd = 1/sqrt(eps) ~ 316, where float rounding of the centred
          // x (exactly 0 here) cannot differ; otherwise rstd is O(1).
          BOOST_TEST(allclose(rstd, rstd_ref, kRtol<T>, kRtol<T>), what + " rstd");
          BOOST_TEST(allclose(y, y_ref, kRtol<T>, kRtol<T>), what + " y");

          // Backward from the reference's saved statistics, into non-zero gradients.
          const Buffer<T> dy = uniform<T>(rows * C, offset, rng);
          Buffer<T> dx = uniform<T>(rows * C, offset, rng);
          Buffer<T> dgamma = uniform<T>(C, offset, rng), dbeta = uniform<T>(C, offset, rng);
          Buffer<T> dx_ref = dx, dgamma_ref = dgamma, dbeta_ref = dbeta;
          k::layer_norm_backward(dx.data(), dgamma.data(), dbeta.data(), dy.data(), x.data(),
                                 mean_ref.data(), rstd_ref.data(), gamma.data(), rows, C);
          ref::layer_norm_backward(dx_ref.data(), dgamma_ref.data(), dbeta_ref.data(), dy.data(),
                                   x.data(), mean_ref.data(), rstd_ref.data(), gamma.data(), rows,
                                   C);
          // dx is rstd times a difference of O(1) terms; dgamma/dbeta sum `rows` O(1) terms.
          const double dx_scale = static_cast<double>(rstd_ref[0]) * 4;
          BOOST_TEST(allclose(dx, dx_ref, kRtol<T> * dx_scale, kRtol<T>), what + " dx");
          BOOST_TEST(allclose(dgamma, dgamma_ref, kRtol<T> * (2.0 * static_cast<double>(rows) + 1),
                              kRtol<T>),
                     what + " dgamma");
          BOOST_TEST(allclose(dbeta, dbeta_ref, kRtol<T> * (2.0 * static_cast<double>(rows) + 1),
                              kRtol<T>),
                     what + " dbeta");

          // Each gradient alone (the other two null) gives the same values.
          Buffer<T> dx_only = uniform<T>(rows * C, offset, rng);
          Buffer<T> dx_only_ref = dx_only;
          k::layer_norm_backward(dx_only.data(), static_cast<T*>(nullptr), static_cast<T*>(nullptr),
                                 dy.data(), x.data(), mean_ref.data(), rstd_ref.data(),
                                 gamma.data(), rows, C);
          ref::layer_norm_backward(dx_only_ref.data(), static_cast<T*>(nullptr),
                                   static_cast<T*>(nullptr), dy.data(), x.data(), mean_ref.data(),
                                   rstd_ref.data(), gamma.data(), rows, C);
          BOOST_TEST(allclose(dx_only, dx_only_ref, kRtol<T> * dx_scale, kRtol<T>),
                     what + " dx alone");
          Buffer<T> dgamma_only(C, offset), dbeta_only(C, offset);
          Buffer<T> dgamma_only_ref(C, offset), dbeta_only_ref(C, offset);
          k::layer_norm_backward(static_cast<T*>(nullptr), dgamma_only.data(),
                                 static_cast<T*>(nullptr), dy.data(), x.data(), mean_ref.data(),
                                 rstd_ref.data(), gamma.data(), rows, C);
          k::layer_norm_backward(static_cast<T*>(nullptr), static_cast<T*>(nullptr),
                                 dbeta_only.data(), dy.data(), x.data(), mean_ref.data(),
                                 rstd_ref.data(), gamma.data(), rows, C);
          ref::layer_norm_backward(static_cast<T*>(nullptr), dgamma_only_ref.data(),
                                   dbeta_only_ref.data(), dy.data(), x.data(), mean_ref.data(),
                                   rstd_ref.data(), gamma.data(), rows, C);
          BOOST_TEST(allclose(dgamma_only, dgamma_only_ref,
                              kRtol<T> * (2.0 * static_cast<double>(rows)), kRtol<T>),
                     what + " dgamma alone");
          BOOST_TEST(allclose(dbeta_only, dbeta_only_ref,
                              kRtol<T> * (2.0 * static_cast<double>(rows)), kRtol<T>),
                     what + " dbeta alone");
        }
      }
    }
  });
}

// Two-pass variance at a large mean: x = 70000 + [0, 1, 2, 3] in float. E[x^2] - E[x]^2 would
// cancel to garbage (x^2 ~ 4.9e9 keeps no fractional bits in float); the centred values
// [-1.5, -0.5, 0.5, 1.5] are exact, var = 1.25 and y = centred / sqrt(1.25 + 1e-5).
BOOST_AUTO_TEST_CASE(layer_norm_large_mean_float) {
  const std::vector<float> x = {70000, 70001, 70002, 70003};
  const std::vector<float> gamma(4, 1.0f), beta(4, 0.0f);
  const std::vector<float> expected = {-1.341635f, -0.4472118f, 0.4472118f, 1.341635f};
  for_each_target([&] {
    std::vector<float> y(4);
    float mean = 0, rstd = 0;
    k::layer_norm_forward(y.data(), &mean, &rstd, x.data(), gamma.data(), beta.data(), 1, 4, 1e-5f);
    BOOST_TEST(mean == 70001.5f);
    for (int i = 0; i < 4; ++i) BOOST_TEST(std::abs(y[i] - expected[i]) < 1e-3f, "i=" << i);
  });
}

// x = [0, 1, 2, 3, 4]: mean 2, biased variance (4 + 1 + 0 + 1 + 4) / 5 = 2.
BOOST_AUTO_TEST_CASE_TEMPLATE(layer_norm_known_variance, T, Types) {
  const std::vector<T> x = {0, 1, 2, 3, 4};
  const std::vector<T> gamma(5, T(1)), beta(5, T(0));
  for_each_target([&] {
    std::vector<T> y(5);
    T mean = 0, rstd = 0;
    k::layer_norm_forward(y.data(), &mean, &rstd, x.data(), gamma.data(), beta.data(), 1, 5,
                          T(1e-5));
    BOOST_TEST(mean == T(2));
    BOOST_TEST(allclose(rstd, T(1 / std::sqrt(2.0 + 1e-5)), 0, kRtol<T>));
    BOOST_TEST(allclose(y[0], T(-1.414210), 0, 1e-6), "y[0] = " << y[0]);
    BOOST_TEST(y[2] == T(0));
  });
}

// The backward adds into all three gradients: from zero, two calls give exactly twice one.
BOOST_AUTO_TEST_CASE_TEMPLATE(layer_norm_backward_accumulates, T, Types) {
  std::mt19937_64 rng(42);
  const int64_t rows = 3, C = 37;
  const Buffer<T> x = uniform<T>(rows * C, 1, rng);
  const Buffer<T> gamma = uniform<T>(C, 1, rng);
  const Buffer<T> dy = uniform<T>(rows * C, 1, rng);
  std::vector<T> mean(rows), rstd(rows), y(rows * C), beta(C, T(0));
  ref::layer_norm_forward(y.data(), mean.data(), rstd.data(), x.data(), gamma.data(), beta.data(),
                          rows, C, T(1e-5));
  for_each_target([&] {
    std::vector<T> dx1(rows * C), dg1(C), db1(C), dx2(rows * C), dg2(C), db2(C);
    k::layer_norm_backward(dx1.data(), dg1.data(), db1.data(), dy.data(), x.data(), mean.data(),
                           rstd.data(), gamma.data(), rows, C);
    for (int call = 0; call < 2; ++call) {
      k::layer_norm_backward(dx2.data(), dg2.data(), db2.data(), dy.data(), x.data(), mean.data(),
                             rstd.data(), gamma.data(), rows, C);
    }
    for (T& v : dx1) v *= 2;
    for (T& v : dg1) v *= 2;
    for (T& v : db1) v *= 2;
    check_equal(dx2.data(), dx1.data(), rows * C, "dx twice");
    check_equal(dg2.data(), dg1.data(), C, "dgamma twice");
    check_equal(db2.data(), db1.data(), C, "dbeta twice");
  });
}

// dx is split by rows, dgamma/dbeta by columns (each column summed over all rows by one
// thread), from rows * C = kRowParallelMin on: bit-identical with 1 and 2 threads.
BOOST_AUTO_TEST_CASE_TEMPLATE(layer_norm_is_thread_count_independent, T, Types) {
  if (!build_has_threads()) return;
  std::mt19937_64 rng(43);
  const int64_t C = 769, rows = k::kRowParallelMin / C + 1;
  const Buffer<T> x = uniform<T>(rows * C, 1, rng);
  const Buffer<T> gamma = uniform<T>(C, 1, rng);
  const Buffer<T> beta = uniform<T>(C, 1, rng);
  const Buffer<T> dy = uniform<T>(rows * C, 1, rng);
  const int threads = k::num_threads();
  std::vector<T> results[2];
  for (const int nthreads : {1, 2}) {
    k::set_num_threads(nthreads);
    std::vector<T> y(rows * C), mean(rows), rstd(rows), dx(rows * C), dg(C), db(C);
    k::layer_norm_forward(y.data(), mean.data(), rstd.data(), x.data(), gamma.data(), beta.data(),
                          rows, C, T(1e-5));
    k::layer_norm_backward(dx.data(), dg.data(), db.data(), dy.data(), x.data(), mean.data(),
                           rstd.data(), gamma.data(), rows, C);
    for (const auto* part : {&y, &mean, &rstd, &dx, &dg, &db}) {
      results[nthreads - 1].insert(results[nthreads - 1].end(), part->begin(), part->end());
    }
  }
  k::set_num_threads(threads);
  check_equal(results[1].data(), results[0].data(), static_cast<int64_t>(results[0].size()),
              "layer_norm forward + backward, 2 threads vs 1");
}
