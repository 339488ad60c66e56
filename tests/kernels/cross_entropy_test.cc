// Tests autograd/kernels/cross_entropy.cc against cross_entropy_ref.h under every Highway
// target, for float and double, with tail sizes, misaligned buffers and ignored rows; known
// values at huge and spread logits that do not rely on the reference; ignored rows' exact
// zeros; accumulation; threads.
#define BOOST_TEST_MODULE cross_entropy
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "autograd/kernels/cross_entropy.h"
#include "autograd/kernels/cross_entropy_ref.h"
#include "autograd/kernels/thread_pool.h"
#include "tests/kernels/for_each_target.h"
#include "tests/kernels/test_support.h"

namespace k = attograd::kernels;
namespace ref = attograd::kernels::reference;
using namespace attograd::kernels::testing;

namespace {

// The losses' default ignore_index; random_targets never produces it.
constexpr int64_t kIgnore = -1;

std::vector<int64_t> random_targets(int64_t N, int64_t V, std::mt19937_64& rng) {
  std::uniform_int_distribution<int64_t> dist(0, V - 1);
  std::vector<int64_t> targets(static_cast<size_t>(N));
  for (int64_t& t : targets) t = dist(rng);
  return targets;
}

}  // namespace

BOOST_AUTO_TEST_CASE_TEMPLATE(cross_entropy_matches_reference, T, Types) {
  if (!kernels_are_simd<T>()) return;  // the f64 kernels are their twins in wasm
  std::mt19937_64 rng(61);
  for_each_target([&] {
    for (const int64_t V : kSizes) {
      for (const int64_t N : {1, 3, 8}) {
        for (const int64_t offset : kOffsets) {
          const auto what = describe("N=", N, " V=", V, " offset=", offset);
          const Buffer<T> logits = uniform<T>(N * V, offset, rng, -10, 10);
          std::vector<int64_t> targets = random_targets(N, V, rng);
          if (N > 1) targets[1] = kIgnore;  // a skipped row between two computed ones
          Buffer<T> losses(N, offset), lse(N, offset), losses_ref(N, offset), lse_ref(N, offset);
          k::cross_entropy_forward(losses.data(), lse.data(), logits.data(), targets.data(), N, V,
                                   kIgnore);
          ref::cross_entropy_forward(losses_ref.data(), lse_ref.data(), logits.data(),
                                     targets.data(), N, V, kIgnore);
          // floor 10: lse and the loss are sums of terms of the size of the logits
          BOOST_TEST(allclose(lse, lse_ref, kRtol<T> * 10, kRtol<T>), what + " lse");
          BOOST_TEST(allclose(losses, losses_ref, kRtol<T> * 10, kRtol<T>), what + " losses");

          const Buffer<T> dloss = uniform<T>(N, offset, rng, 0, 1);
          Buffer<T> dlogits = uniform<T>(N * V, offset, rng);
          Buffer<T> dlogits_ref = dlogits;
          k::cross_entropy_backward(dlogits.data(), logits.data(), lse_ref.data(), targets.data(),
                                    dloss.data(), N, V, kIgnore, true);
          ref::cross_entropy_backward(dlogits_ref.data(), logits.data(), lse_ref.data(),
                                      targets.data(), dloss.data(), N, V, kIgnore, true);
          BOOST_TEST(allclose(dlogits, dlogits_ref, kRtol<T>, kRtol<T>), what + " dlogits");

          // Overwriting, in place: the logits become their own gradient.
          Buffer<T> in_place = logits, in_place_ref = logits;
          k::cross_entropy_backward(in_place.data(), in_place.data(), lse_ref.data(),
                                    targets.data(), dloss.data(), N, V, kIgnore, false);
          ref::cross_entropy_backward(in_place_ref.data(), in_place_ref.data(), lse_ref.data(),
                                      targets.data(), dloss.data(), N, V, kIgnore, false);
          BOOST_TEST(allclose(in_place, in_place_ref, kRtol<T>, kRtol<T>),
                     what + " dlogits in place");
        }
      }
    }
  });
}

// Known values, computed by hand rather than by the reference.
BOOST_AUTO_TEST_CASE_TEMPLATE(cross_entropy_known_values, T, Types) {
  for_each_target([&] {
    T loss = 0, lse = 0;
    const T one = 1;

    // Three equal logits at 7e5: loss = log 3 exactly as at 0, even in float, where lse itself
    // (700001.0986) can only be held to 1/16.
    const std::vector<T> equal = {7e5, 7e5, 7e5};
    const int64_t target1 = 1;
    k::cross_entropy_forward(&loss, &lse, equal.data(), &target1, 1, 3, kIgnore);
    BOOST_TEST(allclose(loss, T(std::log(3.0)), 0, kRtol<T>), "loss = " << loss);

    // [3e4, -2e4, 1e4], target 2: loss = 3e4 - 1e4 = 2e4; p = [1, 0, 0], so dx = [1, 0, -1].
    const std::vector<T> wide = {3e4, -2e4, 1e4};
    const int64_t target2 = 2;
    k::cross_entropy_forward(&loss, &lse, wide.data(), &target2, 1, 3, kIgnore);
    BOOST_TEST(loss == T(20000));
    std::vector<T> dx(3, T(0));
    k::cross_entropy_backward(dx.data(), wide.data(), &lse, &target2, &one, 1, 3, kIgnore, true);
    BOOST_TEST(dx == (std::vector<T>{1, 0, -1}), boost::test_tools::per_element());

    // [0, 60, -60], target 2: log_softmax = [-60, 0, -120], loss 120,
    // dx = [e^-60, 1, e^-120 - 1] = [8.756511e-27, 1, -1], all finite.
    const std::vector<T> spread = {0, 60, -60};
    k::cross_entropy_forward(&loss, &lse, spread.data(), &target2, 1, 3, kIgnore);
    BOOST_TEST(loss == T(120));
    BOOST_TEST(lse == T(60));
    dx.assign(3, T(0));
    k::cross_entropy_backward(dx.data(), spread.data(), &lse, &target2, &one, 1, 3, kIgnore, true);
    BOOST_TEST(allclose(dx[0], T(8.756511e-27), 0, 1e-6), "dx[0] = " << dx[0]);
    BOOST_TEST(dx[1] == T(1));
    BOOST_TEST(dx[2] == T(-1));
    for (const T g : dx) BOOST_TEST(std::isfinite(g));
  });
}

// Label smoothing against the reference, every target, eps 0.1 and 1, accumulating and in place:
// loss_i gains eps (x_t - mean_j x_j) and the gradient aims at (1 - eps) onehot + eps / V.
BOOST_AUTO_TEST_CASE_TEMPLATE(cross_entropy_label_smoothing_matches_reference, T, Types) {
  std::mt19937_64 rng(64);
  for_each_target([&] {
    for (const int64_t V : kSizes) {
      for (const T eps : {T(0.1), T(1)}) {
        const int64_t N = 3;
        const auto what = describe("V=", V, " eps=", eps);
        const Buffer<T> logits = uniform<T>(N * V, 1, rng, -10, 10);
        std::vector<int64_t> targets = random_targets(N, V, rng);
        targets[1] = kIgnore;
        Buffer<T> losses(N, 1), lse(N, 1), losses_ref(N, 1), lse_ref(N, 1);
        k::cross_entropy_forward(losses.data(), lse.data(), logits.data(), targets.data(), N, V,
                                 kIgnore, eps);
        ref::cross_entropy_forward(losses_ref.data(), lse_ref.data(), logits.data(), targets.data(),
                                   N, V, kIgnore, eps);
        BOOST_TEST(allclose(losses, losses_ref, kRtol<T> * 10, kRtol<T>), what + " losses");
        BOOST_TEST(losses[1] == T(0));
        const Buffer<T> dloss = uniform<T>(N, 1, rng, 0, 1);
        Buffer<T> dlogits = uniform<T>(N * V, 1, rng);
        Buffer<T> dlogits_ref = dlogits;
        k::cross_entropy_backward(dlogits.data(), logits.data(), lse_ref.data(), targets.data(),
                                  dloss.data(), N, V, kIgnore, true, eps);
        ref::cross_entropy_backward(dlogits_ref.data(), logits.data(), lse_ref.data(),
                                    targets.data(), dloss.data(), N, V, kIgnore, true, eps);
        BOOST_TEST(allclose(dlogits, dlogits_ref, kRtol<T>, kRtol<T>), what + " dlogits");
        Buffer<T> in_place = logits, in_place_ref = logits;
        k::cross_entropy_backward(in_place.data(), in_place.data(), lse_ref.data(), targets.data(),
                                  dloss.data(), N, V, kIgnore, false, eps);
        ref::cross_entropy_backward(in_place_ref.data(), in_place_ref.data(), lse_ref.data(),
                                    targets.data(), dloss.data(), N, V, kIgnore, false, eps);
        BOOST_TEST(allclose(in_place, in_place_ref, kRtol<T>, kRtol<T>), what + " in place");
      }
    }
  });
}

// Known smoothed values by hand: four equal logits, target 0, eps 0.2: p = 1/4 everywhere, so
// the loss is log 4 whatever eps, and the gradient is p - q = 1/4 - (0.8 + 0.05) = -0.6 at the
// target and 1/4 - 0.05 = 0.2 elsewhere; it sums to 0, as p and q both sum to 1.
BOOST_AUTO_TEST_CASE_TEMPLATE(cross_entropy_label_smoothing_known_values, T, Types) {
  for_each_target([&] {
    const std::vector<T> x = {3, 3, 3, 3};
    const int64_t target = 0;
    const T one = 1, eps = T(0.2);
    T loss = 0, lse = 0;
    k::cross_entropy_forward(&loss, &lse, x.data(), &target, 1, 4, kIgnore, eps);
    BOOST_TEST(allclose(loss, T(std::log(4.0)), 0, kRtol<T>), "loss = " << loss);
    std::vector<T> dx(4, T(0));
    k::cross_entropy_backward(dx.data(), x.data(), &lse, &target, &one, 1, 4, kIgnore, true, eps);
    BOOST_TEST(allclose(dx[0], T(-0.6), 0, kRtol<T> * 4), "dx[0] = " << dx[0]);
    for (int j = 1; j < 4; ++j) BOOST_TEST(allclose(dx[j], T(0.2), 0, kRtol<T> * 4));
  });
}

// An ignored row is never read: loss and lse 0, and its gradient exactly 0 (overwriting) or
// untouched (accumulating), even with infinite and NaN logits. ignore_index may be a real class
// (PyTorch allows it): here 2 is ignored while row 0 keeps its target 1.
BOOST_AUTO_TEST_CASE_TEMPLATE(cross_entropy_ignored_rows_are_skipped, T, Types) {
  const T inf = std::numeric_limits<T>::infinity(), nan = std::numeric_limits<T>::quiet_NaN();
  const int64_t N = 2, V = 3, ignore_index = 2;
  const std::vector<T> logits = {0, 0, 0, inf, nan, -inf};
  const std::vector<int64_t> targets = {1, 2};
  const std::vector<T> dloss = {1, 1};
  for_each_target([&] {
    std::vector<T> losses(N, T(7)), lse(N, T(7));
    k::cross_entropy_forward(losses.data(), lse.data(), logits.data(), targets.data(), N, V,
                             ignore_index);
    BOOST_TEST(allclose(losses[0], T(std::log(3.0)), 0, kRtol<T>), "loss = " << losses[0]);
    BOOST_TEST(losses[1] == T(0));
    BOOST_TEST(lse[1] == T(0));
    std::vector<T> dx(N * V, T(5));
    k::cross_entropy_backward(dx.data(), logits.data(), lse.data(), targets.data(), dloss.data(), N,
                              V, ignore_index, false);
    BOOST_TEST(allclose(dx[1], T(1.0 / 3.0 - 1.0), 0, kRtol<T>), "dx[1] = " << dx[1]);
    for (int64_t j = V; j < N * V; ++j) BOOST_TEST(dx[j] == T(0));  // zeros, not NaN
    std::vector<T> acc(N * V, T(5));
    k::cross_entropy_backward(acc.data(), logits.data(), lse.data(), targets.data(), dloss.data(),
                              N, V, ignore_index, true);
    for (int64_t j = V; j < N * V; ++j) BOOST_TEST(acc[j] == T(5));  // untouched
  });
}

// The backward adds: from zero, two calls give exactly twice one.
BOOST_AUTO_TEST_CASE_TEMPLATE(cross_entropy_backward_accumulates, T, Types) {
  std::mt19937_64 rng(62);
  const int64_t N = 3, V = 37;
  const Buffer<T> logits = uniform<T>(N * V, 1, rng, -5, 5);
  const std::vector<int64_t> targets = random_targets(N, V, rng);
  const std::vector<T> dloss = {T(0.25), T(0.5), T(1)};
  std::vector<T> losses(N), lse(N);
  ref::cross_entropy_forward(losses.data(), lse.data(), logits.data(), targets.data(), N, V,
                             kIgnore);
  for_each_target([&] {
    Buffer<T> once(N * V, 1), twice(N * V, 1);
    k::cross_entropy_backward(once.data(), logits.data(), lse.data(), targets.data(), dloss.data(),
                              N, V, kIgnore, true);
    for (int call = 0; call < 2; ++call) {
      k::cross_entropy_backward(twice.data(), logits.data(), lse.data(), targets.data(),
                                dloss.data(), N, V, kIgnore, true);
    }
    for (int64_t i = 0; i < N * V; ++i) once[i] *= 2;
    check_equal(twice.data(), once.data(), N * V, "cross_entropy_backward twice");
  });
}

// Rows are split over threads (from N * V = kRowParallelMin on): bit-identical with 1 and 2.
BOOST_AUTO_TEST_CASE_TEMPLATE(cross_entropy_is_thread_count_independent, T, Types) {
  if (!build_has_threads()) return;
  std::mt19937_64 rng(63);
  const int64_t V = 769, N = k::kRowParallelMin / V + 1;
  const Buffer<T> logits = uniform<T>(N * V, 1, rng, -10, 10);
  const std::vector<int64_t> targets = random_targets(N, V, rng);
  const std::vector<T> dloss(N, T(1) / T(N));
  const int threads = k::num_threads();
  std::vector<T> results[2];
  for (const int nthreads : {1, 2}) {
    k::set_num_threads(nthreads);
    std::vector<T> losses(N), lse(N), dlogits(N * V);
    k::cross_entropy_forward(losses.data(), lse.data(), logits.data(), targets.data(), N, V,
                             kIgnore);
    k::cross_entropy_backward(dlogits.data(), logits.data(), lse.data(), targets.data(),
                              dloss.data(), N, V, kIgnore, false);
    for (const auto* part : {&losses, &lse, &dlogits}) {
      results[nthreads - 1].insert(results[nthreads - 1].end(), part->begin(), part->end());
    }
  }
  k::set_num_threads(threads);
  check_equal(results[1].data(), results[0].data(), static_cast<int64_t>(results[0].size()),
              "cross_entropy 2 threads vs 1");
}
