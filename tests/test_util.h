// Small assertions shared by the tests: allclose (PyTorch's element-wise closeness rule, reported
// with the first bad index and both values), tensors, exceptions, data and temporary files.
#pragma once

#include <boost/test/unit_test.hpp>
#include <algorithm>
#include <cmath>
#include <concepts>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <limits>
#include <string>
#include <unistd.h>
#include <vector>

#include "autograd/tensor.h"

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
    if (elements_close(static_cast<double>(actual[i]), static_cast<double>(expected[i]), atol_at(i), rtol)) {
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
  return detail::allclose_each(actual, expected, [atol](size_t) { return atol; }, rtol);
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
  return detail::allclose_each(actual, expected, [&atol](size_t i) { return atol[i]; }, rtol);
}

/// allclose for one number.
[[nodiscard]] inline boost::test_tools::assertion_result allclose(double actual, double expected,
                                                                  double atol, double rtol) {
  return allclose(std::vector<double>{actual}, std::vector<double>{expected}, atol, rtol);
}

/// Checks a tensor's shape and values.
inline void expect_tensor(const Tensor& t, const Shape& shape, const std::vector<double>& expected,
                          double atol) {
  BOOST_TEST_INFO("shape " << shape_str(t.shape()) << " vs expected " << shape_str(shape));
  BOOST_TEST((t.shape() == shape));
  BOOST_TEST(allclose(t.to_vector(), expected, atol, 0));
}

/// Overwrites each parameter with N(0, std²) draws from gen (element by element, in order, in
/// the parameter's dtype). Tests use weights far larger than GPT-2's init (std 0.5 against
/// 0.02) so that attention is far from uniform and every path carries a real gradient.
inline void randomize_parameters(const std::vector<Tensor>& parameters, Generator& gen, double std) {
  for (const Tensor& p : parameters) {
    const Tensor r = Tensor::randn(p.shape(), gen, p.dtype(), std);
    dispatch_floating(p.dtype(), "randomize_parameters",
                      [&]<typename T>() { std::copy(r.data<T>(), r.data<T>() + r.numel(), p.data<T>()); });
  }
}

/// Runs f and checks it throws E with a message containing `needle`.
template <typename E, typename F>
void expect_throw_with(F&& f, const std::string& needle) {
  try {
    f();
  } catch (const E& e) {
    BOOST_TEST_INFO("message: " << e.what());
    BOOST_TEST(std::string(e.what()).find(needle) != std::string::npos);
    return;
  }
  BOOST_FAIL("expected an exception whose message contains '" + needle + "'");
}

/// Whether data from outside the checkout (../shared/data, a Debian package's file) is there for
/// a test case that needs it: `if (!data_available(path, "apt-get install bible-kjv")) return;`.
/// CTest runs each such case as its own test (attograd_data_cases in tests/CMakeLists.txt) with
/// ATTOGRAD_SKIP_EXIT_CODE set, and an absent file ends the program with that code, so that CTest
/// shows the case as skipped, never as passed. Run by hand, the case logs why and returns.
inline bool data_available(const std::filesystem::path& path, const std::string& how_to_get_it) {
  if (std::filesystem::exists(path)) return true;
  const std::string why = "skipped: " + path.string() + " is absent (" + how_to_get_it + ")";
  BOOST_TEST_MESSAGE(why);
  if (const char* code = std::getenv("ATTOGRAD_SKIP_EXIT_CODE")) {
    std::cerr << why << std::endl;  // _Exit skips Boost's log; CTest shows stderr with -V
    std::_Exit(std::atoi(code));
  }
  return false;
}

/// An empty directory <tmp>/attograd_<name>_<pid> (emptied first if a killed run left it), for a
/// test's files; the pid keeps two test programs running at once apart.
inline std::filesystem::path fresh_temp_dir(const std::string& name) {
  const auto dir = std::filesystem::temp_directory_path() / ("attograd_" + name + "_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

/// ../shared/data/<name>, the data the team shares beside the checkout (tinyshakespeare.txt).
inline std::filesystem::path shared_data(const std::string& name) {
  return std::filesystem::path(ATTOGRAD_SHARED_DIR) / "data" / name;
}

}  // namespace attograd::testing
