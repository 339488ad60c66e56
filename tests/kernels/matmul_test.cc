// Tests autograd/kernels/matmul.cc against matmul_ref.h for all four transpose layouts, under
// every Highway target, for float and double, with odd shapes and misaligned buffers, with and
// without the fused bias; a small hand-computed example per layout; accumulation; K = 0;
// thread-count independence.
#define BOOST_TEST_MODULE matmul
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "autograd/kernels/matmul.h"
#include "autograd/kernels/matmul_ref.h"
#include "autograd/kernels/thread_pool.h"
#include "tests/kernels/for_each_target.h"
#include "tests/kernels/test_support.h"

namespace k = attograd::kernels;
namespace ref = attograd::kernels::reference;
using namespace attograd::kernels::testing;

namespace {

struct Shape {
  int64_t M, K, N;
};

// Every size once as each of M, K and N (the others small), a few squares, and shapes with
// remainders everywhere: 769 crosses the K blocks (256), the A blocks (504 rows on AVX3) and the
// B panels (512 columns of f32); 70 x 45 leaves edge tiles of every register tile (14 or 6 rows,
// 2 vectors); M <= 4 takes the few-row path, which streams B unpacked, and N < NR the thin path.
std::vector<Shape> shapes() {
  std::vector<Shape> result;
  for (const int64_t s : kSizes) {
    result.push_back({s, 5, 3});
    result.push_back({3, s, 5});
    result.push_back({5, 3, s});
    if (s <= 37) result.push_back({s, s, s});
  }
  result.push_back({70, 37, 45});
  result.push_back({33, 64, 50});
  // The few-row path (M <= 4, no packing), large enough to be split over threads.
  result.push_back({1, 769, 300});
  result.push_back({2, 300, 769});
  result.push_back({4, 64, 1000});
  result.push_back({6, 1024, 24});  // up to 8 rows with B stored (K, N)
  result.push_back({8, 37, 45});
  // The thin path (N below the register tile's width, vectors along M), split over threads too.
  result.push_back({100, 40, 7});
  result.push_back({1024, 65, 6});
  result.push_back({65, 1024, 6});
  // Packed columns, then the last N % NR (here 1) on the thin path.
  result.push_back({70, 33, 65});
  // Threaded products whose shared operand is packed once for all pieces (pack_all): pieces
  // of columns sharing A over two A blocks and two K blocks, then pieces of rows sharing B
  // over two B panels, with a thin tail.
  result.push_back({600, 300, 700});
  result.push_back({1100, 300, 601});
  return result;
}

template <typename T>
std::vector<T> absolute(const Buffer<T>& x) {
  std::vector<T> result = x.vector();
  for (T& v : result) v = std::abs(v);
  return result;
}

struct Layout {
  bool a_trans, b_trans;
};
const Layout kLayouts[] = {{false, false}, {false, true}, {true, false}, {true, true}};

}  // namespace

BOOST_AUTO_TEST_CASE_TEMPLATE(matmul_matches_reference, T, Types) {
  if (!kernels_are_simd<T>()) return;  // the f64 kernels are their twins in wasm
  std::mt19937_64 rng(21);
  for_each_target([&] {
    for (const Shape& s : shapes()) {
      for (const Layout& layout : kLayouts) {
        for (const int64_t offset : kOffsets) {
          for (const int mode : {0, 1, 2, 3}) {
            const bool accumulate = (mode & 1) != 0, with_bias = (mode & 2) != 0;
            // The large shapes test a path and its thread split: one offset and two modes do.
            const bool large = s.M * s.K * s.N > 100000;
            if (large && (offset != 0 || mode == 1 || mode == 2)) continue;
            const auto what =
                describe("matmul M=", s.M, " K=", s.K, " N=", s.N, " a_trans=", layout.a_trans,
                         " b_trans=", layout.b_trans, " offset=", offset,
                         " accumulate=", accumulate, " bias=", with_bias);
            const Buffer<T> a = uniform<T>(s.M * s.K, offset, rng);
            const Buffer<T> b = uniform<T>(s.K * s.N, offset, rng);
            const Buffer<T> bias_buf = uniform<T>(s.N, offset, rng);
            const T* bias = with_bias ? bias_buf.data() : nullptr;
            Buffer<T> c = uniform<T>(s.M * s.N, offset, rng);
            Buffer<T> want = c;
            k::matmul(c.data(), a.data(), b.data(), s.M, s.K, s.N, layout.a_trans, layout.b_trans,
                      accumulate, bias);
            ref::matmul(want.data(), a.data(), b.data(), s.M, s.K, s.N, layout.a_trans,
                        layout.b_trans, accumulate, bias);
            // Per-element scale 1 + sum_k |A(i,k) B(k,j)|: the size of the terms whose rounding
            // errors add up (the reference run on absolute values), times rtol, is the atol.
            std::vector<T> scale(static_cast<size_t>(s.M * s.N), T(1));
            ref::matmul(scale.data(), absolute(a).data(), absolute(b).data(), s.M, s.K, s.N,
                        layout.a_trans, layout.b_trans, true);
            std::vector<double> atol(scale.size());
            for (size_t i = 0; i < scale.size(); ++i)
              atol[i] = kRtol<T> * static_cast<double>(scale[i]);
            BOOST_TEST(allclose(c, want, atol, kRtol<T>), what);
          }
        }
      }
    }
  });
}

// A = [[1, 4], [2, 5], [3, 6]] (3 x 2), B = [[1, 0], [0, 1], [1, 1]] (3 x 2):
// Aᵀ B = [[1+3, 2+3], [4+6, 5+6]] = [[4, 5], [10, 11]], whatever layout the operands come in.
BOOST_AUTO_TEST_CASE_TEMPLATE(matmul_hand_computed_layouts, T, Types) {
  const std::vector<T> a_stored = {1, 4, 2, 5, 3, 6};   // A (3, 2): Aᵀ stored transposed
  const std::vector<T> at_stored = {1, 2, 3, 4, 5, 6};  // Aᵀ (2, 3) stored as is
  const std::vector<T> b_stored = {1, 0, 0, 1, 1, 1};   // B (3, 2) stored as is
  const std::vector<T> bt_stored = {1, 0, 1, 0, 1, 1};  // Bᵀ (2, 3): B stored transposed
  const std::vector<T> expected = {4, 5, 10, 11};
  for_each_target([&] {
    for (const Layout& layout : kLayouts) {
      std::vector<T> c(4, T(-99));  // overwritten, not added to
      k::matmul(c.data(), (layout.a_trans ? a_stored : at_stored).data(),
                (layout.b_trans ? bt_stored : b_stored).data(), 2, 3, 2, layout.a_trans,
                layout.b_trans, false);
      BOOST_TEST(c == expected, boost::test_tools::per_element());
      // accumulate adds the same product again
      k::matmul(c.data(), (layout.a_trans ? a_stored : at_stored).data(),
                (layout.b_trans ? bt_stored : b_stored).data(), 2, 3, 2, layout.a_trans,
                layout.b_trans, true);
      const std::vector<T> doubled = {8, 10, 20, 22};
      BOOST_TEST(c == doubled, boost::test_tools::per_element());
    }
  });
}

// Accumulating adds one contribution: from zero, two calls give exactly twice one (the VJPs
// dA += dC Bᵀ and dB += Aᵀ dC rely on it for tensors used twice).
BOOST_AUTO_TEST_CASE_TEMPLATE(matmul_accumulates, T, Types) {
  std::mt19937_64 rng(23);
  const int64_t M = 37, K = 17, N = 45;
  const Buffer<T> a = uniform<T>(M * K, 1, rng);
  const Buffer<T> b = uniform<T>(K * N, 1, rng);
  for_each_target([&] {
    for (const Layout& layout : kLayouts) {
      Buffer<T> once(M * N, 1), twice(M * N, 1);
      k::matmul(once.data(), a.data(), b.data(), M, K, N, layout.a_trans, layout.b_trans, true);
      for (int call = 0; call < 2; ++call) {
        k::matmul(twice.data(), a.data(), b.data(), M, K, N, layout.a_trans, layout.b_trans, true);
      }
      for (int64_t i = 0; i < M * N; ++i) once[i] *= 2;
      check_equal(twice.data(), once.data(), M * N,
                  describe("matmul twice a_trans=", layout.a_trans, " b_trans=", layout.b_trans));
    }
  });
}

// K = 0: C = 0, or unchanged when accumulating; the operands are never read. With a bias,
// C = bias, or C += bias.
BOOST_AUTO_TEST_CASE_TEMPLATE(matmul_with_empty_inner_dimension, T, Types) {
  for_each_target([&] {
    for (const Layout& layout : kLayouts) {
      std::vector<T> c(3 * 37, T(5));
      k::matmul(c.data(), static_cast<const T*>(nullptr), static_cast<const T*>(nullptr), 3, 0, 37,
                layout.a_trans, layout.b_trans, true);
      for (const T v : c) BOOST_TEST(v == T(5));
      k::matmul(c.data(), static_cast<const T*>(nullptr), static_cast<const T*>(nullptr), 3, 0, 37,
                layout.a_trans, layout.b_trans, false);
      for (const T v : c) BOOST_TEST(v == T(0));
      std::vector<T> bias(37);
      for (int64_t j = 0; j < 37; ++j) bias[j] = T(j);
      k::matmul(c.data(), static_cast<const T*>(nullptr), static_cast<const T*>(nullptr), 3, 0, 37,
                layout.a_trans, layout.b_trans, false, bias.data());
      k::matmul(c.data(), static_cast<const T*>(nullptr), static_cast<const T*>(nullptr), 3, 0, 37,
                layout.a_trans, layout.b_trans, true, bias.data());
      for (int64_t i = 0; i < 3 * 37; ++i) BOOST_TEST(c[i] == T(2 * (i % 37)));
    }
  });
}

// Above ~1e6 multiply-adds C is cut into pieces for the threads, and every C[i, j] is computed
// the same way whoever computes it: bit-identical with 1 and 2 threads. 300 crosses
// the 256-long K blocks, so the blocked sum is covered too; the other two shapes have their
// shared operand packed once for all pieces, A (pieces of columns) and B (pieces of rows).
BOOST_AUTO_TEST_CASE_TEMPLATE(matmul_is_thread_count_independent, T, Types) {
  if (!build_has_threads()) return;
  std::mt19937_64 rng(22);
  const int threads = k::num_threads();
  for (const Shape& s : {Shape{300, 300, 300}, Shape{600, 300, 700}, Shape{1100, 300, 601}}) {
    const Buffer<T> a = uniform<T>(s.M * s.K, 1, rng);
    const Buffer<T> b = uniform<T>(s.K * s.N, 1, rng);
    for (const Layout& layout : kLayouts) {
      std::vector<T> results[2];
      for (const int nthreads : {1, 2}) {
        k::set_num_threads(nthreads);
        std::vector<T>& c = results[nthreads - 1];
        c.assign(static_cast<size_t>(s.M * s.N), T(0));
        k::matmul(c.data(), a.data(), b.data(), s.M, s.K, s.N, layout.a_trans, layout.b_trans,
                  false);
      }
      check_equal(results[1].data(), results[0].data(), s.M * s.N,
                  describe("matmul M=", s.M, " K=", s.K, " N=", s.N, " a_trans=", layout.a_trans,
                           " b_trans=", layout.b_trans, ", 2 threads vs 1"));
    }
  }
  k::set_num_threads(threads);
}
