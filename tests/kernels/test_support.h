// Shared helpers of the kernel tests: sizes, tolerances, misaligned buffers, random data and an
// exact comparison; closeness is tests/allclose.h.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <iomanip>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

#include <boost/test/unit_test.hpp>

#include "tests/allclose.h"
#include "tests/skip.h"

namespace attograd::kernels::testing {

using attograd::testing::allclose;

/// The element types every kernel is instantiated for.
using Types = std::tuple<float, double>;

/// Sizes that hit every tail: 1, lanes - 1, lanes, lanes + 1 for 16 floats (AVX3), odd sizes,
/// and one longer than a row of GPT-2 small (768).
inline const std::vector<int64_t> kSizes = {1, 3, 15, 16, 17, 37, 769};

/// Start offsets into an allocation: 0 (aligned as std::vector aligns) and 1 element, which
/// misaligns the data for every SIMD width.
inline const std::vector<int64_t> kOffsets = {0, 1};

/// Relative tolerance against the scalar reference: a few hundred ulp for float (Highway's
/// Exp/Log/Tanh are 1-4 ulp, SIMD sums add in a different order) and ~5000 ulp for double. Where
/// the error scales with a size other than the result (the sum of |terms| of a sum), the tests
/// pass atol = kRtol<T> * that size.
template <typename T>
constexpr double kRtol = std::is_same_v<T, float> ? 1e-5 : 1e-12;

/// n elements starting `offset` elements into an allocation that ends right after them, so that
/// a read or write past the end is caught by AddressSanitizer.
template <typename T>
class Buffer {
 public:
  Buffer(int64_t n, int64_t offset, T value = T(0))
      : storage_(static_cast<size_t>(n + offset), value), offset_(offset), n_(n) {}
  T* data() { return storage_.data() + offset_; }
  const T* data() const { return storage_.data() + offset_; }
  int64_t size() const { return n_; }
  T& operator[](int64_t i) { return data()[i]; }
  const T& operator[](int64_t i) const { return data()[i]; }
  std::vector<T> vector() const { return std::vector<T>(data(), data() + n_); }

 private:
  std::vector<T> storage_;
  int64_t offset_, n_;
};

/// Fills buf with values uniform in [lo, hi).
template <typename T, class Buf>
void fill_uniform(Buf& buf, std::mt19937_64& rng, double lo, double hi) {
  std::uniform_real_distribution<double> dist(lo, hi);
  for (int64_t i = 0; i < static_cast<int64_t>(buf.size()); ++i) buf[i] = static_cast<T>(dist(rng));
}

/// A buffer of n values uniform in [lo, hi) at the given offset.
template <typename T>
Buffer<T> uniform(int64_t n, int64_t offset, std::mt19937_64& rng, double lo = -2, double hi = 2) {
  Buffer<T> buf(n, offset);
  fill_uniform<T>(buf, rng, lo, hi);
  return buf;
}

/// Bit-for-bit equality (as values: -0 == +0 would pass, NaN would not).
template <typename T>
void check_equal(const T* got, const T* want, int64_t n, const std::string& what) {
  int64_t bad = 0;
  for (int64_t i = 0; i < n; ++i) {
    if (got[i] == want[i]) continue;
    if (++bad <= 3) {
      BOOST_ERROR(std::setprecision(17) << what << "[" << i << "] = " << got[i] << ", expected "
                                        << want[i] << " exactly");
    }
  }
  if (bad > 3) BOOST_ERROR(what << ": " << bad << " of " << n << " elements differ");
  if (bad == 0) BOOST_TEST(true);
}

/// A description of the case under test, for failure messages.
template <typename... Args>
std::string describe(const Args&... args) {
  std::ostringstream s;
  ((s << args), ...);
  return s.str();
}

/// Whether the kernels for T are Highway code in this build, so that a case comparing them with
/// their scalar twins can fail: `if (!kernels_are_simd<T>()) return;` opens such a case. In the
/// WebAssembly build the double kernels are the twins themselves (Highway 1.0.3's WASM target
/// has no f64 vectors; autograd/kernels/dispatch.h, ATTOGRAD_KERNELS_F64_REFERENCE), and the
/// comparison would hold by construction: the case is skipped (attograd::testing::skip_case;
/// tests/wasm/CMakeLists.txt runs it as its own CTest test, shown as skipped there).
template <typename T>
bool kernels_are_simd() {
#if defined(ATTOGRAD_KERNELS_F64_REFERENCE)
  if constexpr (std::is_same_v<T, double>) {
    attograd::testing::skip_case(
        "this build's double kernels are their scalar twins (ATTOGRAD_KERNELS_F64_REFERENCE): "
        "comparing them could not fail");
    return false;
  }
#endif
  return true;
}

/// Whether parallel loops can run on more than one thread in this build, so that a case
/// comparing runs on 1 and n threads can fail: `if (!build_has_threads()) return;`. The
/// WebAssembly build has no threads (no -pthread): every run is on the calling thread, and the
/// case is skipped as above.
inline bool build_has_threads() {
  if (attograd::testing::kBuildHasThreads) return true;
  attograd::testing::skip_case(
      "this build runs every parallel loop on the calling thread (WebAssembly without "
      "threads): runs on 1 and n threads could not differ");
  return false;
}

}  // namespace attograd::kernels::testing
