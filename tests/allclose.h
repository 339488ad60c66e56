// allclose: PyTorch's element-wise closeness rule, reported with the first bad index and both
// values. Apart from the rest of tests/test_util.h because it needs no engine: the kernel tests,
// which link the kernels alone, use it too.
#pragma once

#include <boost/test/unit_test.hpp>
#include <cmath>
#include <concepts>
#include <cstddef>
#include <iomanip>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

namespace attograd::testing {

namespace detail {

/// What allclose compares: a sequence with size() and [i] of numbers (std::vector, std::span, the
/// kernel tests' Buffer).
template <class R>
concept Numbers = requires(const R& r, size_t i) {
  { r.size() } -> std::convertible_to<size_t>;
  static_cast<double>(r[i]);
};

/// allclose's rule for one pair, in double: a NaN matches only a NaN, an infinity only itself.
inline bool elements_close(double actual, double expected, double atol, double rtol) {
  if (std::isnan(actual) || std::isnan(expected)) return std::isnan(actual) && std::isnan(expected);
  if (std::isinf(actual) || std::isinf(expected)) return actual == expected;
  return std::abs(actual - expected) <= atol + rtol * std::abs(expected);
}

/// The loop of both allclose overloads; atol_at(i) is element i's atol.
template <class Actual, class Expected, class AtolAt>
boost::test_tools::assertion_result allclose_each(const Actual& actual, const Expected& expected,
                                                  const AtolAt& atol_at, double rtol) {
  const size_t n = static_cast<size_t>(actual.size());
  if (n != static_cast<size_t>(expected.size())) {
    boost::test_tools::assertion_result result(false);
    result.message() << "sizes differ: actual " << n << " elements, expected " << expected.size();
    return result;
  }
  size_t bad = 0, first = 0;
  for (size_t i = 0; i < n; ++i) {
    if (elements_close(static_cast<double>(actual[i]), static_cast<double>(expected[i]), atol_at(i),
                       rtol)) {
      continue;
    }
    if (bad++ == 0) first = i;
  }
  boost::test_tools::assertion_result result(bad == 0);
  if (bad > 0) {
    const double a = static_cast<double>(actual[first]), e = static_cast<double>(expected[first]);
    auto& out = result.message();
    out << std::setprecision(std::numeric_limits<double>::max_digits10);
    if (n > 1) out << "element " << first << ": ";
    out << "actual " << a << ", expected " << e << ", |diff| " << std::abs(a - e) << " > atol "
        << atol_at(first) << " + rtol " << rtol << " * |expected|";
    if (n > 1) out << "; " << bad << " of " << n << " elements differ";
  }
  return result;
}

}  // namespace detail

/// PyTorch's torch.allclose, element by element: |actual[i] - expected[i]| <= atol + rtol *
/// |expected[i]|, compared in double; a NaN matches only a NaN and an infinity only itself
/// (equal_nan=True), and the sizes must be equal. actual and expected are anything with size()
/// and [i] (std::vector, std::span, a braced list {1, 2.5}). Use it inside BOOST_TEST, which
/// reports the first element off with both values and how many are off:
///   BOOST_TEST(allclose(y.to_vector(), {0.5, 1.5}, 1e-12, 0));
///   BOOST_TEST(allclose(dx, dx_ref, kRtol<T>, kRtol<T>), what + " dx");
template <class Actual = std::vector<double>, class Expected = std::vector<double>>
requires detail::Numbers<Actual> && detail::Numbers<Expected>
[[nodiscard]] boost::test_tools::assertion_result allclose(const Actual& actual,
                                                           const Expected& expected, double atol,
                                                           double rtol) {
  return detail::allclose_each(
      actual, expected, [atol](size_t) { return atol; }, rtol);
}

/// allclose with atol[i] for element i, where the rounding error scales with a per-element size
/// rather than with the result (a matmul's sum of |terms|).
template <class Actual = std::vector<double>, class Expected = std::vector<double>>
requires detail::Numbers<Actual> && detail::Numbers<Expected>
[[nodiscard]] boost::test_tools::assertion_result allclose(const Actual& actual,
                                                           const Expected& expected,
                                                           const std::vector<double>& atol,
                                                           double rtol) {
  if (atol.size() != static_cast<size_t>(expected.size())) {
    boost::test_tools::assertion_result result(false);
    result.message() << "atol has " << atol.size() << " elements, expected " << expected.size();
    return result;
  }
  return detail::allclose_each(
      actual, expected, [&atol](size_t i) { return atol[i]; }, rtol);
}

/// allclose for one number.
[[nodiscard]] inline boost::test_tools::assertion_result allclose(double actual, double expected,
                                                                  double atol, double rtol) {
  return allclose(std::vector<double>{actual}, std::vector<double>{expected}, atol, rtol);
}

}  // namespace attograd::testing
