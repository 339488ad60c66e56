// Tests autograd/kernels/matmul.cc against matmul_ref.h for all four transpose layouts, under
// every Highway target, for float and double, with odd shapes and misaligned buffers, with and
// without the fused bias; a small hand-computed example per layout; accumulation; K = 0;
// thread-count independence. The same for matmul_bf16 on both of its paths (vdpbf16ps where the
// CPU has it, and the portable widening), plus its rounding of special values and a PyTorch value.
#define BOOST_TEST_MODULE matmul
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <limits>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "autograd/kernels/gelu.h"
#include "autograd/kernels/matmul.h"
#include "autograd/kernels/matmul_ref.h"
#include "autograd/kernels/thread_pool.h"
#include "instruments/sanitizers.h"
#include "tests/kernels/for_each_target.h"
#include "tests/kernels/test_support.h"

#if defined(__x86_64__) && defined(__linux__)
#include <cpuid.h>
#endif
#if __has_include(<unistd.h>)
#include <unistd.h>  // sysconf
#endif

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
  // A last row tile of at most 4 rows takes the short kernel (micro_kernel_fma_top): GPT-2's
  // B*T = 256 = 18 x 14 + 4 (42 x 6 + 4 on AVX2), and 43 leaves 1 row on both.
  result.push_back({256, 40, 70});
  result.push_back({43, 30, 64});
  // The few-row path (M <= 4, no packing; its split over threads: thread-count case below).
  result.push_back({1, 769, 300});
  result.push_back({2, 300, 769});
  result.push_back({4, 64, 1000});
  result.push_back({6, 1024, 24});  // up to 8 rows with B stored (K, N)
  result.push_back({8, 37, 45});
  // The thin path (N below the register tile's width, vectors along M).
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

// One product of a *_matches_reference case: random operands, C's starting values and bias,
// stored in `layout`. The four layouts of one draw hold the same matrices op(A), op(B), C and
// bias (first_layout marks the first of them), so one oracle answer serves all four.
template <typename T>
struct Product {
  Shape s;
  Layout layout;
  bool first_layout;
  bool accumulate;
  const Buffer<T>&a, &b, &bias_buf, &c;  // owned by for_each_product, shared by the layouts
  std::string what;
  const T* bias() const { return bias_buf.size() > 0 ? bias_buf.data() : nullptr; }
};

// The (rows, cols) row-major matrix m stored transposed, (cols, rows), at m's offset.
template <typename T>
Buffer<T> transposed(const Buffer<T>& m, int64_t rows, int64_t cols, int64_t offset) {
  Buffer<T> t(rows * cols, offset);
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) t[j * rows + i] = m[i * cols + j];
  return t;
}

// Calls f(product) for every shape x offset x (accumulate, bias) x layout of the reference tests
// (the large shapes test a path and its thread split: one offset and two modes do, one mode
// under AddressSanitizer).
template <typename T, class F>
void for_each_product(std::mt19937_64& rng, const char* name, const F& f) {
  for (const Shape& s : shapes()) {
    for (const int64_t offset : kOffsets) {
      for (const int mode : {0, 1, 2, 3}) {
        const bool accumulate = (mode & 1) != 0, with_bias = (mode & 2) != 0;
        const bool large = s.M * s.K * s.N > 100000;
        if (large && (offset != 0 || mode == 1 || mode == 2)) continue;
        // Under ASan, where they took most of the sanitizer suite's 10 minutes, the large
        // shapes check the memory safety of their paths in the plain product only: accumulate
        // and bias touch C and the bias as on every other shape. Release checks both modes.
        if (large && attograd::instruments::kUnderAddressSanitizer && mode != 0) continue;
        const Buffer<T> a = uniform<T>(s.M * s.K, offset, rng);  // op(A), (M, K)
        const Buffer<T> b = uniform<T>(s.K * s.N, offset, rng);  // op(B), (K, N)
        const Buffer<T> bias = with_bias ? uniform<T>(s.N, offset, rng) : Buffer<T>(0, 0);
        const Buffer<T> c = uniform<T>(s.M * s.N, offset, rng);
        const Buffer<T> a_t = transposed(a, s.M, s.K, offset);  // A stored (K, M)
        const Buffer<T> b_t = transposed(b, s.K, s.N, offset);  // B stored (N, K)
        for (const Layout& layout : kLayouts) {
          f(Product<T>{s, layout, &layout == &kLayouts[0], accumulate, layout.a_trans ? a_t : a,
                       layout.b_trans ? b_t : b, bias, c,
                       describe(name, " M=", s.M, " K=", s.K, " N=", s.N, " a_trans=",
                                layout.a_trans, " b_trans=", layout.b_trans, " offset=", offset,
                                " accumulate=", accumulate, " bias=", with_bias)});
        }
      }
    }
  }
}

// C of p through `product` (a kernel or its twin: matmul's parameters), from p's starting C.
template <typename T, class F>
Buffer<T> product_of(const Product<T>& p, F* product) {
  Buffer<T> c = p.c;
  product(c.data(), p.a.data(), p.b.data(), p.s.M, p.s.K, p.s.N, p.layout.a_trans, p.layout.b_trans,
          p.accumulate, p.bias());
  return c;
}

// `product` (matmul's parameters) of random matrices in every layout, on 1 and 2 threads:
// bit-identical, for four shapes (see matmul_is_thread_count_independent).
template <typename T, class F>
void check_thread_count_independence(F* product, const char* name, uint64_t seed) {
  std::mt19937_64 rng(seed);
  const int threads = k::num_threads();
  for (const Shape& s :
       {Shape{300, 300, 300}, Shape{600, 300, 700}, Shape{1100, 300, 601}, Shape{4, 2048, 2049}}) {
    // Each shape is cut into pieces for the threads, or the case would compare one path twice.
    BOOST_TEST_REQUIRE(s.M * s.K * s.N >= k::kMatmulParallelMin);
    const Buffer<T> a = uniform<T>(s.M * s.K, 1, rng);
    const Buffer<T> b = uniform<T>(s.K * s.N, 1, rng);
    for (const Layout& layout : kLayouts) {
      std::vector<T> results[2];
      for (const int nthreads : {1, 2}) {
        k::set_num_threads(nthreads);
        std::vector<T>& c = results[nthreads - 1];
        c.assign(static_cast<size_t>(s.M * s.N), T(0));
        product(c.data(), a.data(), b.data(), s.M, s.K, s.N, layout.a_trans, layout.b_trans, false,
                nullptr);
      }
      check_equal(results[1].data(), results[0].data(), s.M * s.N,
                  describe(name, " M=", s.M, " K=", s.K, " N=", s.N, " a_trans=", layout.a_trans,
                           " b_trans=", layout.b_trans, ", 2 threads vs 1"));
    }
  }
  k::set_num_threads(threads);
}

// Per-element atol for a sum in another order: rtol times 1 + sum_k |A(i,k) B(k,j)|, the size of
// the terms whose rounding errors add up (the reference run on absolute values).
template <typename T>
std::vector<double> order_atol(const Product<T>& p) {
  std::vector<T> scale(static_cast<size_t>(p.s.M * p.s.N), T(1));
  ref::matmul(scale.data(), absolute(p.a).data(), absolute(p.b).data(), p.s.M, p.s.K, p.s.N,
              p.layout.a_trans, p.layout.b_trans, true);
  std::vector<double> atol(scale.size());
  for (size_t i = 0; i < scale.size(); ++i) atol[i] = kRtol<T> * static_cast<double>(scale[i]);
  return atol;
}

}  // namespace

BOOST_AUTO_TEST_CASE_TEMPLATE(matmul_matches_reference, T, Types) {
  if (!kernels_are_simd<T>()) return;  // the f64 kernels are their twins in wasm
  std::mt19937_64 rng(21);
  // The twin's answer depends neither on the target nor on the layout: computed once per draw,
  // it leaves the kernels as the test's cost (the triple loops at 1100 x 300 x 601 dominated
  // it otherwise).
  Buffer<T> want(0, 0);
  std::vector<double> atol;
  for_each_product<T>(rng, "matmul", [&](const Product<T>& p) {
    if (p.first_layout) {
      want = product_of(p, &ref::matmul<T>);
      atol = order_atol(p);
    }
    for_each_target([&] {
      const Buffer<T> c = product_of(p, &k::matmul<T>);
      BOOST_TEST(allclose(c, want, atol, kRtol<T>), p.what);
    });
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

// From kMatmulParallelMin multiply-adds on C is cut into pieces for the threads, and every
// C[i, j] is computed the same way whoever computes it: bit-identical with 1 and 2 threads. 300
// crosses the 256-long K blocks, so the blocked sum is covered too; the next two shapes have
// their shared operand packed once for all pieces, A (pieces of columns) and B (pieces of rows);
// 4 x 2048 x 2049 is the few-row path cut into pieces of columns (batch-1 sampling's lm_head).
BOOST_AUTO_TEST_CASE_TEMPLATE(matmul_is_thread_count_independent, T, Types) {
  if (!build_has_threads()) return;
  check_thread_count_independence<T>(&k::matmul<T>, "matmul", 22);
}

// ---- Cache blocking

namespace {

// Restores the CPU's own L2 when a case ends, however it ends.
struct L2Restore {
  ~L2Restore() { k::set_matmul_l2_bytes(0); }
};

// `product` (matmul's parameters) blocked for L2 caches of 128 KiB (64 KiB blocks: A blocks of
// 64 rows, B panels of 64 columns), 512 KiB and 64 MiB (blocks of the 4 MiB cap: one of each here)
// gives the bits of the CPU's own blocking, in every layout, with and without accumulation and
// bias: MC and NC change no sum. 200 x 300 x 150 spans several A blocks, K blocks and B panels at
// the smallest size, and packs A once for its B panels (N > NC).
template <typename T, class F>
void check_cache_size_independence(F* product, const char* name, uint64_t seed) {
  L2Restore restore;
  std::mt19937_64 rng(seed);
  const Shape s{200, 300, 150};
  const Buffer<T> a = uniform<T>(s.M * s.K, 1, rng), b = uniform<T>(s.K * s.N, 1, rng);
  const Buffer<T> bias = uniform<T>(s.N, 1, rng), c0 = uniform<T>(s.M * s.N, 1, rng);
  for (const Layout& layout : kLayouts)
    for (const bool accumulate : {false, true}) {
      auto run = [&](size_t l2) {
        k::set_matmul_l2_bytes(l2);
        std::vector<T> c = c0.vector();
        product(c.data(), a.data(), b.data(), s.M, s.K, s.N, layout.a_trans, layout.b_trans,
                accumulate, accumulate ? nullptr : bias.data());
        return c;
      };
      const std::vector<T> own = run(0);
      for (const size_t l2 : {size_t{128} << 10, size_t{512} << 10, size_t{64} << 20})
        check_equal(run(l2).data(), own.data(), s.M * s.N,
                    describe(name, " a_trans=", layout.a_trans, " b_trans=", layout.b_trans,
                             " accumulate=", accumulate, ", L2 ", l2, " bytes vs the CPU's"));
    }
}

}  // namespace

// The blocks follow the L2: half of it each, between 64 KiB and 4 MiB; the CPU's own caches are
// what the OS reports, and KC stays the fixed kMatmulBlockK whatever the cache.
BOOST_AUTO_TEST_CASE(matmul_blocking_follows_the_l2) {
  L2Restore restore;
  const k::MatmulBlocking own = k::matmul_blocking();
  BOOST_TEST(own.kc == 256);
  BOOST_TEST(own.kc == k::kMatmulBlockK);
  BOOST_TEST(own.l1d_bytes > 0u);
  // Linux's per-instance sizes where it has them: glibc's sysconf gave a Zen 4 VM's L3 as 320 MiB
  // (32 MiB in sysfs and lscpu), and the kernels read sysfs first.
  bool sysfs = false;
  for (int i = 0;; ++i) {
    const std::string dir = "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(i) + "/";
    std::ifstream level_file(dir + "level"), type_file(dir + "type"), size_file(dir + "size");
    int level = 0;
    std::string type;
    size_t kib = 0;
    char unit = 0;
    if (!(level_file >> level) || !(type_file >> type) || !(size_file >> kib >> unit)) break;
    BOOST_TEST_REQUIRE(unit == 'K', dir << "size is not in K");  // Linux prints sizes in K
    sysfs = true;
    if (level == 1 && type == "Data") BOOST_TEST(own.l1d_bytes == kib << 10);
    if (level == 2) BOOST_TEST(own.l2_bytes == kib << 10);
    if (level == 3) BOOST_TEST(own.l3_bytes == kib << 10);
  }
#if defined(_SC_LEVEL2_CACHE_SIZE)
  if (!sysfs)
    if (const long l2 = ::sysconf(_SC_LEVEL2_CACHE_SIZE); l2 > 0)
      BOOST_TEST(own.l2_bytes == static_cast<size_t>(l2));
#endif
  const std::pair<size_t, size_t> l2_to_block[] = {
      {1 << 20, 512 << 10},                          // Zen 5
      {2 << 20, 1 << 20},                            // the Intel Xeon of issue 21
      {256 << 10, 128 << 10}, {64 << 10, 64 << 10},  // at least 64 KiB
      {64 << 20, 4 << 20},                           // at most 4 MiB
  };
  for (const auto& [l2, block] : l2_to_block) {
    k::set_matmul_l2_bytes(l2);
    const k::MatmulBlocking b = k::matmul_blocking();
    BOOST_TEST(b.l2_bytes == l2);
    BOOST_TEST(b.block_bytes == block, "L2 " << l2);
    BOOST_TEST(b.kc == 256);
  }
  k::set_matmul_l2_bytes(0);
  BOOST_TEST(k::matmul_blocking().l2_bytes == own.l2_bytes);
}

BOOST_AUTO_TEST_CASE_TEMPLATE(matmul_is_cache_size_independent, T, Types) {
  if (!kernels_are_simd<T>()) return;
  for_each_target([&] { check_cache_size_independence<T>(&k::matmul<T>, "matmul", 23); });
}

// ---- bf16
// ----------------------------------------------------------------------------------------

namespace {

// Runs f() with matmul_bf16 on each of its paths that this CPU has under every target: once as
// dispatched, then with AMX left out where the dispatched target would use it, then with
// vdpbf16ps forbidden too where it would be used, so that the portable widening path is also
// tested at AVX-512's width. f(fused) is told whether the path adds the two products of a pair
// of k's in its own order (AMX, vdpbf16ps) rather than k by k as the twin does.
// With best_target_only, the dispatched target's paths only.
template <class F>
void for_each_bf16_path(const F& f, bool best_target_only = false) {
  struct Restore {
    ~Restore() {
      k::allow_amx(true);
      k::allow_avx512_bf16(true);
    }
  } restore;
  const auto paths = [&] {
    k::allow_amx(true);
    k::allow_avx512_bf16(true);
    if (k::matmul_bf16_uses_amx()) {
      BOOST_TEST_CONTEXT("AMX") { f(true); }
      k::allow_amx(false);
      BOOST_TEST_REQUIRE(!k::matmul_bf16_uses_amx());
    }
    const bool dpbf16 = k::matmul_bf16_uses_avx512_bf16();
    BOOST_TEST_CONTEXT("vdpbf16ps " << dpbf16) { f(dpbf16); }
    if (dpbf16) {
      k::allow_avx512_bf16(false);
      BOOST_TEST_REQUIRE(!k::matmul_bf16_uses_avx512_bf16());
      BOOST_TEST_CONTEXT("vdpbf16ps forbidden") { f(false); }
    }
    k::allow_amx(true);
    k::allow_avx512_bf16(true);
  };
  if (best_target_only)
    paths();
  else
    for_each_target(paths);
}

// Whether got and want are the same floats, NaN matching NaN.
bool same_or_both_nan(float got, float want) {
  return std::isnan(want) ? std::isnan(got) : got == want;
}

}  // namespace

// matmul_bf16 against its twin (the operands rounded to bf16, then the f32 triple loop), with the
// tolerance of a different order of f32 additions only: the rounding of the operands is the same
// on both sides. The portable path adds k by k as the twin does, so within one k block (K <= 256)
// it must give the twin's sums exactly; vdpbf16ps and AMX add two products per step, in their
// own order.
BOOST_AUTO_TEST_CASE(matmul_bf16_matches_reference) {
  std::mt19937_64 rng(24);
  bool tested_fused = false;
  // The twin's answer and the tolerance, once per draw (all four layouts); then every path
  // under every target.
  Buffer<float> want(0, 0);
  std::vector<double> atol;
  for_each_product<float>(rng, "matmul_bf16", [&](const Product<float>& p) {
    if (p.first_layout) {
      want = product_of(p, &ref::matmul_bf16);
      atol = order_atol(p);
    }
    for_each_bf16_path([&](bool fused) {
      tested_fused = tested_fused || fused;
      const Buffer<float> c = product_of(p, &k::matmul_bf16);
      if (!fused && p.s.K <= 256) {
        check_equal(c.data(), want.data(), p.s.M * p.s.N, p.what);
      } else {
        BOOST_TEST(allclose(c, want, atol, kRtol<float>), p.what);
      }
    });
  });
  if (!tested_fused)
    BOOST_TEST_MESSAGE(
        "this CPU has neither AMX nor AVX512-BF16: only the portable bf16 path "
        "was tested");
}

// The SIMD rounding while packing, on every packing path, against bf16.h's scalar rounding: a
// value x at k = 0 of A times 1 at k = 0 of B (the other k's 0) gives C = bf16(x) exactly, and
// the same with the roles of A and B swapped. The values: ties to even, NaN and infinities,
// overflow, the largest bf16 (no subnormals: vdpbf16ps flushes them to zero), 37 of them so that
// the 16-lane vectors, the 4 x 4 transposes and their scalar edges all see some.
BOOST_AUTO_TEST_CASE(matmul_bf16_rounds_operands_like_bf16_from_f32) {
  auto from_bits = [](uint32_t bits) {
    float x;
    std::memcpy(&x, &bits, sizeof x);
    return x;
  };
  std::vector<float> values = {from_bits(0x3F808000),  // 1 + 2^-8 -> 1
                               from_bits(0x3F80C000),  // 1 + 3 2^-9 -> 1 + 2^-7
                               from_bits(0x3F818000),  // 1 + 2^-7 + 2^-8 -> 1 + 2^-6
                               from_bits(0xBF80C000),  // -(1 + 3 2^-9)
                               std::numeric_limits<float>::quiet_NaN(),
                               from_bits(0xFF800001),  // a negative signalling NaN
                               std::numeric_limits<float>::infinity(),
                               -std::numeric_limits<float>::infinity(),
                               std::numeric_limits<float>::max(),  // -> inf
                               from_bits(0x7F7F0000),              // the largest bf16
                               0.1f,
                               1e-30f};
  std::mt19937_64 rng(25);
  std::uniform_real_distribution<float> dist(-100, 100);
  while (values.size() < 37) values.push_back(dist(rng));
  const int64_t n = static_cast<int64_t>(values.size()), K = 4, rows = 17;
  std::vector<float> want(values.size());
  for (int64_t i = 0; i < n; ++i) want[i] = k::round_to_bf16(values[i]);
  for_each_bf16_path([&](bool) {
    for (const Layout& layout : kLayouts) {
      // A (n, K) = [x_i, 0, 0, 0] rows, B (K, rows) = e_0 rows of ones: C (n, rows), C[i, j] = x_i
      std::vector<float> a(n * K, 0.0f), b(K * rows, 0.0f), c(n * rows);
      for (int64_t i = 0; i < n; ++i) a[layout.a_trans ? i : i * K] = values[i];
      for (int64_t j = 0; j < rows; ++j) b[layout.b_trans ? j * K : j] = 1.0f;
      k::matmul_bf16(c.data(), a.data(), b.data(), n, K, rows, layout.a_trans, layout.b_trans,
                     false);
      // A (rows, K) = e_0 rows of ones, B (K, n) = [x_j, 0, 0, 0] columns: C[i, j] = x_j
      std::vector<float> a2(rows * K, 0.0f), b2(K * n, 0.0f), c2(rows * n);
      for (int64_t i = 0; i < rows; ++i) a2[layout.a_trans ? i : i * K] = 1.0f;
      for (int64_t j = 0; j < n; ++j) b2[layout.b_trans ? j * K : j] = values[j];
      k::matmul_bf16(c2.data(), a2.data(), b2.data(), rows, K, n, layout.a_trans, layout.b_trans,
                     false);
      int64_t bad = 0;
      for (int64_t i = 0; i < n; ++i)
        for (int64_t j = 0; j < rows; ++j) {
          if (same_or_both_nan(c[i * rows + j], want[i]) &&
              same_or_both_nan(c2[j * n + i], want[i]))
            continue;
          if (++bad <= 3)
            BOOST_ERROR("a_trans=" << layout.a_trans << " b_trans=" << layout.b_trans
                                   << ": x = " << values[i] << " gave " << c[i * rows + j]
                                   << " as A, " << c2[j * n + i] << " as B; bf16(x) = " << want[i]);
        }
      BOOST_TEST(bad == 0);
    }
  });
}

// PyTorch: (torch.tensor([.1, .2, .3]).bfloat16().float() @ torch.tensor([.4, .5, .6])
// .bfloat16().float()).item() = 0.32111454010009766, where f32 gives 0.32000002: the operands
// are rounded (0.1 -> 0.10009765625, ...), the products and their sum are exact or f32.
BOOST_AUTO_TEST_CASE(matmul_bf16_known_value) {
  const float x[] = {0.1f, 0.2f, 0.3f}, w[] = {0.4f, 0.5f, 0.6f};
  for_each_bf16_path([&](bool) {
    float y = 0;
    k::matmul_bf16(&y, x, w, 1, 3, 1, false, true, false);
    BOOST_TEST(y == 0.32111454010009766f);
    float y_f32 = 0;
    k::matmul(&y_f32, x, w, 1, 3, 1, false, true, false);
    BOOST_TEST(std::abs(y_f32 - 0.32f) < 1e-7f);
  });
}

// K = 0 writes the bias (or 0), or adds it; M = 0 or N = 0 write nothing; accumulating twice
// from zero gives exactly twice once (the products are the same sums both times).
BOOST_AUTO_TEST_CASE(matmul_bf16_edges) {
  std::mt19937_64 rng(26);
  const int64_t M = 37, K = 17, N = 45;
  const Buffer<float> a = uniform<float>(M * K, 1, rng);
  const Buffer<float> b = uniform<float>(K * N, 1, rng);
  for_each_bf16_path([&](bool) {
    for (const Layout& layout : kLayouts) {
      std::vector<float> c(3 * 37, 5.0f), bias(37);
      for (int64_t j = 0; j < 37; ++j) bias[j] = static_cast<float>(j);
      k::matmul_bf16(c.data(), nullptr, nullptr, 3, 0, 37, layout.a_trans, layout.b_trans, true);
      for (const float v : c) BOOST_TEST(v == 5.0f);
      k::matmul_bf16(c.data(), nullptr, nullptr, 3, 0, 37, layout.a_trans, layout.b_trans, false,
                     bias.data());
      k::matmul_bf16(c.data(), nullptr, nullptr, 3, 0, 37, layout.a_trans, layout.b_trans, true,
                     bias.data());
      for (int64_t i = 0; i < 3 * 37; ++i) BOOST_TEST(c[i] == static_cast<float>(2 * (i % 37)));
      k::matmul_bf16(c.data(), a.data(), b.data(), 0, K, 37, layout.a_trans, layout.b_trans, false);
      k::matmul_bf16(c.data(), a.data(), b.data(), 3, K, 0, layout.a_trans, layout.b_trans, false);
      for (int64_t i = 0; i < 3 * 37; ++i) BOOST_TEST(c[i] == static_cast<float>(2 * (i % 37)));

      Buffer<float> once(M * N, 1), twice(M * N, 1);
      k::matmul_bf16(once.data(), a.data(), b.data(), M, K, N, layout.a_trans, layout.b_trans,
                     true);
      for (int call = 0; call < 2; ++call)
        k::matmul_bf16(twice.data(), a.data(), b.data(), M, K, N, layout.a_trans, layout.b_trans,
                       true);
      for (int64_t i = 0; i < M * N; ++i) once[i] *= 2;
      check_equal(
          twice.data(), once.data(), M * N,
          describe("matmul_bf16 twice a_trans=", layout.a_trans, " b_trans=", layout.b_trans));
    }
  });
}

// Where the CPU has AMX (cpuid leaf 7, EDX bits 24 and 22) on Linux, matmul_bf16 runs on it as
// dispatched: the library asked Linux for the tiles' state when it loaded, before Boost.Test set
// up its alternate signal stack (asked later, Linux would refuse: see request_amx in matmul.cc).
// Elsewhere it does not (and the other paths are the ones tested).
BOOST_AUTO_TEST_CASE(matmul_bf16_runs_on_amx_where_the_cpu_has_it) {
  bool cpu_has_amx = false;
#if defined(__x86_64__) && defined(__linux__)
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (__get_cpuid_max(0, nullptr) >= 7) {
    __cpuid_count(7, 0, eax, ebx, ecx, edx);
    cpu_has_amx = (edx >> 24 & 1) != 0 && (edx >> 22 & 1) != 0;
  }
#endif
  BOOST_TEST(k::matmul_bf16_uses_amx() == cpu_has_amx);
  if (cpu_has_amx) BOOST_TEST(!k::matmul_bf16_uses_avx512_bf16());  // AMX first
  k::allow_amx(false);
  BOOST_TEST(!k::matmul_bf16_uses_amx());
  k::allow_amx(true);
}

// As matmul's: C split over 2 threads is bit-identical to 1 thread, on every path.
BOOST_AUTO_TEST_CASE(matmul_bf16_is_thread_count_independent) {
  if (!build_has_threads()) return;
  // Under ASan (125 s for every target) the dispatched target's paths: the other targets' memory
  // safety at these shapes is matmul_bf16_matches_reference's, their split is the same code.
  for_each_bf16_path(
      [&](bool) { check_thread_count_independence<float>(&k::matmul_bf16, "matmul_bf16", 27); },
      attograd::instruments::kUnderAddressSanitizer);
}

// As matmul's: the same bits whatever the L2, on every path.
BOOST_AUTO_TEST_CASE(matmul_bf16_is_cache_size_independent) {
  for_each_bf16_path(
      [&](bool) { check_cache_size_independence<float>(&k::matmul_bf16, "matmul_bf16", 24); });
}

// ---- matmul_gelu: the product with GELU in its epilogue

namespace {

// `fused` (matmul_gelu's parameters) against `plain` (matmul's) followed by gelu_forward and
// gelu_backward's factor (dy = 1) on the same target: the same bits, for y and for the slope,
// and y alone (slope null) the same again; every shape of the reference tests (each path: packed
// tiles with their edges and several K blocks, few rows, thin columns, threads), every layout,
// with and without the bias. The epilogue runs on each tile after its last k block, so a wrong
// block (a tile activated twice, or before its last k block, or not at all) breaks the equality.
template <typename T, class Fused, class Plain>
void check_gelu_epilogue(Fused* fused, Plain* plain, const char* name, uint64_t seed) {
  std::mt19937_64 rng(seed);
  for (const Shape& s : shapes()) {
    const bool large = s.M * s.K * s.N > 100000;
    for (const bool with_bias : {false, true}) {
      if (large && with_bias && attograd::instruments::kUnderAddressSanitizer) continue;
      const Buffer<T> a = uniform<T>(s.M * s.K, 1, rng), b = uniform<T>(s.K * s.N, 1, rng);
      const Buffer<T> bias = uniform<T>(s.N, 1, rng);
      const T* bias_or_null = with_bias ? bias.data() : nullptr;
      const int64_t n = s.M * s.N;
      for (const Layout& layout : kLayouts) {
        const std::string what =
            describe(name, " M=", s.M, " K=", s.K, " N=", s.N, " a_trans=", layout.a_trans,
                     " b_trans=", layout.b_trans, " bias=", with_bias);
        Buffer<T> h(n, 1), want_y(n, 1), want_slope(n, 1), y(n, 1), slope(n, 1), y_only(n, 1);
        const std::vector<T> ones(static_cast<size_t>(n), T(1));
        plain(h.data(), a.data(), b.data(), s.M, s.K, s.N, layout.a_trans, layout.b_trans, false,
              bias_or_null);
        k::gelu_forward(want_y.data(), h.data(), n);
        k::gelu_backward(want_slope.data(), h.data(), ones.data(), n, false);
        fused(y.data(), slope.data(), a.data(), b.data(), s.M, s.K, s.N, layout.a_trans,
              layout.b_trans, bias_or_null);
        fused(y_only.data(), nullptr, a.data(), b.data(), s.M, s.K, s.N, layout.a_trans,
              layout.b_trans, bias_or_null);
        check_equal(y.data(), want_y.data(), n, what + ": y");
        check_equal(slope.data(), want_slope.data(), n, what + ": slope");
        check_equal(y_only.data(), want_y.data(), n, what + ": y without the slope");
      }
    }
  }
}

}  // namespace

BOOST_AUTO_TEST_CASE_TEMPLATE(matmul_gelu_is_matmul_then_gelu, T, Types) {
  if (!kernels_are_simd<T>()) return;  // the f64 kernels are their twins in wasm
  for_each_target(
      [] { check_gelu_epilogue<T>(&k::matmul_gelu<T>, &k::matmul<T>, "matmul_gelu", 25); });
}

BOOST_AUTO_TEST_CASE(matmul_bf16_gelu_is_matmul_bf16_then_gelu) {
  for_each_bf16_path([](bool) {
    check_gelu_epilogue<float>(&k::matmul_bf16_gelu, &k::matmul_bf16, "matmul_bf16_gelu", 26);
  });
}

// The twins agree with each other the same way, and with hand-computed values: op(A) @ op(B) =
// [[0, 1], [-1, 2]] (A = I, B that matrix), bias [1, 0]: h = [[1, 1], [0, 2]], so y = gelu(h) =
// [[0.841192, 0.841192], [0, 1.954598]] and slope = gelu'(h) = [[1.082964, 1.082964], [0.5,
// 1.086099]] (torch.nn.functional.gelu(h, approximate='tanh') and its autograd, float64, PyTorch
// 1.13.1).
BOOST_AUTO_TEST_CASE_TEMPLATE(matmul_gelu_hand_computed, T, Types) {
  const std::vector<T> a = {1, 0, 0, 1}, b = {0, 1, -1, 2}, bias = {1, 0};
  const std::vector<double> want_y = {0.8411919906082768, 0.8411919906082768, 0, 1.954597694087775};
  const std::vector<double> want_slope = {1.0829640838457826, 1.0829640838457826, 0.5,
                                          1.0860992566236183};
  auto check = [&](const std::vector<T>& y, const std::vector<T>& slope, const char* what) {
    BOOST_TEST_CONTEXT(what) {
      for (size_t i = 0; i < 4; ++i) {
        BOOST_TEST(static_cast<double>(y[i]) == want_y[i], boost::test_tools::tolerance(1e-6));
        BOOST_TEST(static_cast<double>(slope[i]) == want_slope[i],
                   boost::test_tools::tolerance(1e-6));
      }
    }
  };
  std::vector<T> y(4), slope(4);
  ref::matmul_gelu(y.data(), slope.data(), a.data(), b.data(), 2, 2, 2, false, false, bias.data());
  check(y, slope, "reference");
  for_each_target([&] {
    std::fill(y.begin(), y.end(), T(-99));
    k::matmul_gelu(y.data(), slope.data(), a.data(), b.data(), 2, 2, 2, false, false, bias.data());
    check(y, slope, "kernel");
  });
}
