// Tests autograd/kernels/elementwise.cc: every kernel against its scalar twin in
// elementwise_ref.h, under every Highway target, for float and double, tail sizes and
// misaligned buffers; plus IEEE special values, aliasing, accumulation and threading.
#define BOOST_TEST_MODULE elementwise
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "autograd/kernels/elementwise.h"
#include "autograd/kernels/elementwise_ref.h"
#include "autograd/kernels/thread_pool.h"
#include "tests/kernels/for_each_target.h"
#include "tests/kernels/test_support.h"

namespace k = attograd::kernels;
namespace ref = attograd::kernels::reference;
using namespace attograd::kernels::testing;

namespace {

const k::BinaryOp kBinaryOps[] = {k::BinaryOp::add, k::BinaryOp::sub, k::BinaryOp::mul,
                                  k::BinaryOp::div};
const k::UnaryOp kUnaryOps[] = {
    k::UnaryOp::neg,  k::UnaryOp::exp,     k::UnaryOp::log, k::UnaryOp::tanh, k::UnaryOp::sqrt,
    k::UnaryOp::relu, k::UnaryOp::sigmoid, k::UnaryOp::abs, k::UnaryOp::sin,  k::UnaryOp::cos};

const char* name(k::BinaryOp op) {
  switch (op) {
    case k::BinaryOp::add:
      return "add";
    case k::BinaryOp::sub:
      return "sub";
    case k::BinaryOp::mul:
      return "mul";
    case k::BinaryOp::div:
      return "div";
  }
  return "?";
}

const char* name(k::UnaryOp op) {
  switch (op) {
    case k::UnaryOp::neg:
      return "neg";
    case k::UnaryOp::exp:
      return "exp";
    case k::UnaryOp::log:
      return "log";
    case k::UnaryOp::tanh:
      return "tanh";
    case k::UnaryOp::sqrt:
      return "sqrt";
    case k::UnaryOp::relu:
      return "relu";
    case k::UnaryOp::sigmoid:
      return "sigmoid";
    case k::UnaryOp::abs:
      return "abs";
    case k::UnaryOp::sin:
      return "sin";
    case k::UnaryOp::cos:
      return "cos";
  }
  return "?";
}

// Inputs in each function's domain: positive for log and sqrt, a wide range for exp and sigmoid
// (its saturated ends too); relu and abs get exact zeros too (their derivative is 0 there).
template <typename T>
Buffer<T> unary_input(k::UnaryOp op, int64_t n, int64_t offset, std::mt19937_64& rng) {
  switch (op) {
    case k::UnaryOp::log:
    case k::UnaryOp::sqrt:
      return uniform<T>(n, offset, rng, 0.01, 10);
    case k::UnaryOp::exp:
      return uniform<T>(n, offset, rng, -20, 20);
    case k::UnaryOp::tanh:
      return uniform<T>(n, offset, rng, -6, 6);
    case k::UnaryOp::sigmoid:
      return uniform<T>(n, offset, rng, -40, 40);
    case k::UnaryOp::relu:
    case k::UnaryOp::abs: {
      Buffer<T> x = uniform<T>(n, offset, rng);
      for (int64_t i = 0; i < n; i += 5) x[i] = 0;
      return x;
    }
    // The comparison is relative: no zero of the function inside the range but sin's at 0,
    // where sin x ~ x keeps its relative error small (cos stays >= cos 1.5 = 0.07).
    case k::UnaryOp::sin:
      return uniform<T>(n, offset, rng, -3, 3);
    case k::UnaryOp::cos:
      return uniform<T>(n, offset, rng, -1.5, 1.5);
    case k::UnaryOp::neg:
      break;
  }
  return uniform<T>(n, offset, rng);
}

// Divisors away from 0: |b| in [0.5, 2] with a random sign.
template <typename T>
Buffer<T> divisor(int64_t n, int64_t offset, std::mt19937_64& rng) {
  Buffer<T> b = uniform<T>(n, offset, rng, 0.5, 2);
  for (int64_t i = 0; i < n; i += 2) b[i] = -b[i];
  return b;
}

}  // namespace

// The comparisons on every target against the scalar twin, with ties, infinities and NaN mixed
// in (one in five pairs equal, one in seven with a NaN): AVX-512's Ne is ordered, false for NaN,
// where C++'s != is true, so ne must not be built on it.
BOOST_AUTO_TEST_CASE_TEMPLATE(compare_matches_reference, T, Types) {
  const k::CompareOp ops[] = {k::CompareOp::gt, k::CompareOp::lt, k::CompareOp::ge,
                              k::CompareOp::le, k::CompareOp::eq, k::CompareOp::ne};
  std::mt19937_64 rng(7);
  for_each_target([&] {
    for (const auto op : ops) {
      for (const int64_t n : kSizes) {
        for (const int64_t offset : kOffsets) {
          Buffer<T> a = uniform<T>(n, offset, rng), b = uniform<T>(n, offset, rng);
          for (int64_t i = 0; i < n; i += 5) b[i] = a[i];
          for (int64_t i = 3; i < n; i += 7)
            (i % 2 ? a : b)[i] = std::numeric_limits<T>::quiet_NaN();
          for (int64_t i = 4; i < n; i += 11) a[i] = std::numeric_limits<T>::infinity();
          Buffer<T> got(n, offset), want(n, offset);
          k::compare(op, got.data(), a.data(), b.data(), n);
          ref::compare(op, want.data(), a.data(), b.data(), n);
          BOOST_TEST(allclose(got, want, 0, 0),
                     describe("compare ", static_cast<int>(op), " n=", n, " offset=", offset));
        }
      }
    }
  });
}

BOOST_AUTO_TEST_CASE_TEMPLATE(binary_matches_reference, T, Types) {
  if (!kernels_are_simd<T>()) return;  // the f64 kernels are their twins in wasm
  std::mt19937_64 rng(1);
  for_each_target([&] {
    for (const auto op : kBinaryOps) {
      for (const int64_t n : kSizes) {
        for (const int64_t offset : kOffsets) {
          const auto what = describe(name(op), " n=", n, " offset=", offset);
          const Buffer<T> a = uniform<T>(n, offset, rng);
          const Buffer<T> b = divisor<T>(n, offset, rng);
          const T s = T(-1.25);
          Buffer<T> got(n, offset), want(n, offset);

          k::binary_forward(op, got.data(), a.data(), b.data(), n);
          ref::binary_forward(op, want.data(), a.data(), b.data(), n);
          BOOST_TEST(allclose(got, want, 0, kRtol<T>), what + " binary_forward");

          k::binary_scalar_right(op, got.data(), a.data(), s, n);
          ref::binary_scalar_right(op, want.data(), a.data(), s, n);
          BOOST_TEST(allclose(got, want, 0, kRtol<T>), what + " binary_scalar_right");

          k::binary_scalar_left(op, got.data(), s, b.data(), n);
          ref::binary_scalar_left(op, want.data(), s, b.data(), n);
          BOOST_TEST(allclose(got, want, 0, kRtol<T>), what + " binary_scalar_left");

          // out aliasing an input
          Buffer<T> inout = a;
          k::binary_forward(op, inout.data(), inout.data(), b.data(), n);
          ref::binary_forward(op, want.data(), a.data(), b.data(), n);
          BOOST_TEST(allclose(inout, want, 0, kRtol<T>), what + " binary_forward in place");
        }
      }
    }
  });
}

BOOST_AUTO_TEST_CASE_TEMPLATE(unary_matches_reference, T, Types) {
  if (!kernels_are_simd<T>()) return;  // the f64 kernels are their twins in wasm
  std::mt19937_64 rng(2);
  for_each_target([&] {
    for (const auto op : kUnaryOps) {
      for (const int64_t n : kSizes) {
        for (const int64_t offset : kOffsets) {
          const auto what = describe(name(op), " n=", n, " offset=", offset);
          const Buffer<T> x = unary_input<T>(op, n, offset, rng);
          Buffer<T> y(n, offset), y_ref(n, offset);
          k::unary_forward(op, y.data(), x.data(), n);
          ref::unary_forward(op, y_ref.data(), x.data(), n);
          BOOST_TEST(allclose(y, y_ref, 0, kRtol<T>), what + " unary_forward");

          // The backward reads the saved output y: give both sides the same one.
          const Buffer<T> dy = uniform<T>(n, offset, rng);
          Buffer<T> dx = uniform<T>(n, offset, rng);
          Buffer<T> dx_ref = dx;
          k::unary_backward(op, dx.data(), x.data(), y_ref.data(), dy.data(), n);
          ref::unary_backward(op, dx_ref.data(), x.data(), y_ref.data(), dy.data(), n);
          // floor 1: dx starts O(1), so its rounding is absolute at that scale.
          BOOST_TEST(allclose(dx, dx_ref, kRtol<T>, kRtol<T>), what + " unary_backward");

          // y aliasing x
          Buffer<T> inout = x;
          k::unary_forward(op, inout.data(), inout.data(), n);
          BOOST_TEST(allclose(inout, y_ref, 0, kRtol<T>), what + " unary_forward in place");
        }
      }
    }
  });
}

// The edges Highway's Exp and Log leave out (NaN, infinities, zero, negative, overflow,
// subnormal) must follow std::exp and std::log exactly.
BOOST_AUTO_TEST_CASE_TEMPLATE(exp_log_special_values, T, Types) {
  if (!kernels_are_simd<T>()) return;  // the f64 kernels are their twins in wasm
  const T inf = std::numeric_limits<T>::infinity();
  const T nan = std::numeric_limits<T>::quiet_NaN();
  const std::vector<T> x = {-inf,
                            inf,
                            nan,
                            T(0),
                            T(-0.0),
                            T(-1),
                            T(1),
                            T(88.7),
                            T(89),
                            T(200),
                            T(706),
                            T(710),
                            T(1e30),
                            T(-1e30),
                            T(-104),
                            T(-750),
                            std::numeric_limits<T>::denorm_min(),
                            std::numeric_limits<T>::min(),
                            std::numeric_limits<T>::max()};
  const int64_t n = static_cast<int64_t>(x.size());
  for_each_target([&] {
    for (const auto op : {k::UnaryOp::exp, k::UnaryOp::log}) {
      std::vector<T> got(x.size()), want(x.size());
      k::unary_forward(op, got.data(), x.data(), n);
      ref::unary_forward(op, want.data(), x.data(), n);
      // NaN and infinities must match exactly; finite results within rtol, judged absolutely
      // below the smallest normal number (a subnormal has fewer significant bits).
      BOOST_TEST(allclose(got, want, kRtol<T> * std::numeric_limits<T>::min(), kRtol<T>),
                 describe(name(op), " special values"));
    }
  });
}

BOOST_AUTO_TEST_CASE_TEMPLATE(pow_matches_reference, T, Types) {
  if (!kernels_are_simd<T>()) return;  // the f64 kernels are their twins in wasm
  std::mt19937_64 rng(3);
  // Small integers take the SIMD repeated-squaring path, the rest go through std::pow.
  const T exponents[] = {0, 1, 2, 3, -1, -2, 16, 17, T(0.5), T(-0.5), T(1.7), T(-2.25)};
  for_each_target([&] {
    for (const T p : exponents) {
      for (const int64_t n : kSizes) {
        for (const int64_t offset : kOffsets) {
          const auto what = describe("pow p=", p, " n=", n, " offset=", offset);
          // Negative bases only for integer powers (std::pow gives NaN otherwise, which the
          // check would accept, but it would test nothing).
          const bool integer = p == std::trunc(p);
          const Buffer<T> x =
              integer ? uniform<T>(n, offset, rng, -2, 2) : uniform<T>(n, offset, rng, 0.05, 3);
          Buffer<T> y(n, offset), y_ref(n, offset);
          k::pow_forward(y.data(), x.data(), p, n);
          ref::pow_forward(y_ref.data(), x.data(), p, n);
          BOOST_TEST(allclose(y, y_ref, 0, kRtol<T>), what + " pow_forward");

          const Buffer<T> dy = uniform<T>(n, offset, rng);
          Buffer<T> dx = uniform<T>(n, offset, rng);
          Buffer<T> dx_ref = dx;
          k::pow_backward(dx.data(), x.data(), p, dy.data(), n);
          ref::pow_backward(dx_ref.data(), x.data(), p, dy.data(), n);
          BOOST_TEST(allclose(dx, dx_ref, kRtol<T>, kRtol<T>), what + " pow_backward");
        }
      }
    }
  });
}

BOOST_AUTO_TEST_CASE_TEMPLATE(pow_edges, T, Types) {
  const T inf = std::numeric_limits<T>::infinity();
  const std::vector<T> x = {0, T(-0.0), inf, -inf, T(-2), T(1e-20), T(1e20)};
  const int64_t n = static_cast<int64_t>(x.size());
  for_each_target([&] {
    for (const T p : {T(0), T(-1), T(-2), T(2), T(3), T(0.5)}) {
      std::vector<T> got(x.size()), want(x.size());
      k::pow_forward(got.data(), x.data(), p, n);
      ref::pow_forward(want.data(), x.data(), p, n);
      BOOST_TEST(allclose(got, want, kRtol<T> * std::numeric_limits<T>::min(), kRtol<T>),
                 describe("pow edges p=", p));
    }
    // p = 0: the gradient is 0 everywhere, also at x = 0 where p * x^(p-1) would be NaN.
    std::vector<T> dx(x.size(), T(0)), dy(x.size(), T(1));
    k::pow_backward(dx.data(), x.data(), T(0), dy.data(), n);
    for (const T g : dx) BOOST_TEST(g == T(0));
  });
}

// clamp with both bounds, one bound (the other infinite) and lo > hi (torch gives hi), on inputs
// that hold the bounds themselves (their gradient passes) and NaN (it stays NaN, no gradient).
BOOST_AUTO_TEST_CASE_TEMPLATE(clamp_matches_reference, T, Types) {
  if (!kernels_are_simd<T>()) return;  // the f64 kernels are their twins in wasm
  std::mt19937_64 rng(7);
  const T inf = std::numeric_limits<T>::infinity();
  const T bounds[][2] = {{T(-0.5), T(1)}, {-inf, T(0.25)}, {T(-1), inf}, {T(1), T(-1)}};
  for_each_target([&] {
    for (const auto& b : bounds) {
      for (const int64_t n : kSizes) {
        for (const int64_t offset : kOffsets) {
          const auto what = describe("clamp [", b[0], ", ", b[1], "] n=", n, " offset=", offset);
          Buffer<T> x = uniform<T>(n, offset, rng);
          for (int64_t i = 0; i < n; i += 7) x[i] = b[0];
          for (int64_t i = 3; i < n; i += 7) x[i] = b[1];
          for (int64_t i = 5; i < n; i += 7) x[i] = std::numeric_limits<T>::quiet_NaN();
          Buffer<T> y(n, offset), y_ref(n, offset);
          k::clamp_forward(y.data(), x.data(), b[0], b[1], n);
          ref::clamp_forward(y_ref.data(), x.data(), b[0], b[1], n);
          // exactly: a select never rounds (a NaN matches only a NaN)
          BOOST_TEST(allclose(y, y_ref, 0, 0), what + " clamp_forward");

          const Buffer<T> dy = uniform<T>(n, offset, rng);
          Buffer<T> dx = uniform<T>(n, offset, rng);
          Buffer<T> dx_ref = dx;
          k::clamp_backward(dx.data(), x.data(), b[0], b[1], dy.data(), n);
          ref::clamp_backward(dx_ref.data(), x.data(), b[0], b[1], dy.data(), n);
          check_equal(dx.data(), dx_ref.data(), n, what + " clamp_backward");
        }
      }
    }
  });
}

// sin and cos against torch's values (1.13, float64) inside Highway's valid range (|x| <= 39000)
// and beyond it, where each lane is std::sin's (a fallback inside the vector loop; without it
// Highway's polynomial gives wrong values there); inf and NaN give NaN, as in torch.
BOOST_AUTO_TEST_CASE_TEMPLATE(sin_cos_known_values_inside_and_beyond_the_fast_range, T, Types) {
  const T inf = std::numeric_limits<T>::infinity(), nan = std::numeric_limits<T>::quiet_NaN();
  const std::vector<T> x = {T(0.5), T(-2), T(1e5), T(-3e9), inf, nan, T(0.25), T(7)};
  const std::vector<double> sin_torch = {0.479425538604203, -0.9092974268256817,
                                         0.03574879797201651, -0.9870048864743554};
  const std::vector<double> cos_torch = {0.8775825618903728, -0.4161468365471424,
                                         -0.9993608074382124, -0.16069024262768705};
  const int64_t n = static_cast<int64_t>(x.size());
  for_each_target([&] {
    std::vector<T> s(x.size()), c(x.size());
    k::unary_forward(k::UnaryOp::sin, s.data(), x.data(), n);
    k::unary_forward(k::UnaryOp::cos, c.data(), x.data(), n);
    for (size_t i = 0; i < sin_torch.size(); ++i) {
      // f32 holds 1e5 and -3e9 exactly, so torch's f64 values are theirs too; the f32 results
      // are within its rounding (the result's ulp, absolute, beside the argument's reduction).
      const double tol = std::is_same_v<T, float> ? 1e-6 : 1e-14;
      BOOST_TEST(std::abs(s[i] - sin_torch[i]) <= tol, "sin " << x[i] << " = " << s[i]);
      BOOST_TEST(std::abs(c[i] - cos_torch[i]) <= tol, "cos " << x[i] << " = " << c[i]);
    }
    BOOST_TEST(s[3] == std::sin(x[3]));  // beyond 39000: std::sin's value exactly
    BOOST_TEST(c[3] == std::cos(x[3]));
    for (size_t i : {size_t{4}, size_t{5}}) BOOST_TEST((std::isnan(s[i]) && std::isnan(c[i])));
  });
}

// Known values, independent of the twin: torch.clamp(x, -0.5, 2) and its gradient (values from
// torch 1.13), torch.sigmoid at its saturated ends (exactly 0 and 1), and abs' at 0 and NaN
// (torch: 0).
BOOST_AUTO_TEST_CASE_TEMPLATE(clamp_sigmoid_abs_known_values, T, Types) {
  const T nan = std::numeric_limits<T>::quiet_NaN();
  const std::vector<T> x = {T(-3), T(-0.5), T(0), T(0.25), T(2), T(40), nan};
  const std::vector<T> dy = {1, 2, 3, 4, 5, 6, 7};
  const int64_t n = static_cast<int64_t>(x.size());
  for_each_target([&] {
    std::vector<T> y(x.size()), dx(x.size(), T(0));
    k::clamp_forward(y.data(), x.data(), T(-0.5), T(2), n);
    const std::vector<T> want = {T(-0.5), T(-0.5), T(0), T(0.25), T(2), T(2)};
    for (size_t i = 0; i < want.size(); ++i) BOOST_TEST(y[i] == want[i]);
    BOOST_TEST(std::isnan(y[6]));
    k::clamp_backward(dx.data(), x.data(), T(-0.5), T(2), dy.data(), n);
    BOOST_TEST(allclose(dx, std::vector<T>{0, 2, 3, 4, 5, 0, 0}, 0, 0));

    const std::vector<T> s = {T(-800), T(0), T(800)};  // exp(800) overflows in f64 too
    std::vector<T> sy(3);
    k::unary_forward(k::UnaryOp::sigmoid, sy.data(), s.data(), 3);
    BOOST_TEST(allclose(sy, std::vector<T>{0, T(0.5), 1}, 0, 0));

    std::vector<T> ax = {T(0), T(-0.0), nan, T(-2)}, adx(4, T(0)), ay(4);
    k::unary_forward(k::UnaryOp::abs, ay.data(), ax.data(), 4);
    BOOST_TEST(ay[1] == T(0));
    BOOST_TEST(!std::signbit(ay[1]));
    BOOST_TEST(std::isnan(ay[2]));
    BOOST_TEST(ay[3] == T(2));
    k::unary_backward(k::UnaryOp::abs, adx.data(), ax.data(), ay.data(),
                      std::vector<T>(4, T(1)).data(), 4);
    BOOST_TEST(allclose(adx, std::vector<T>{0, 0, 0, -1}, 0, 0));
  });
}

BOOST_AUTO_TEST_CASE_TEMPLATE(accumulations_match_reference, T, Types) {
  std::mt19937_64 rng(4);
  for_each_target([&] {
    for (const int64_t n : kSizes) {
      for (const int64_t offset : kOffsets) {
        const auto what = describe("n=", n, " offset=", offset);
        const Buffer<T> x = uniform<T>(n, offset, rng);
        const Buffer<T> y = uniform<T>(n, offset, rng);
        const Buffer<T> b = divisor<T>(n, offset, rng);
        const Buffer<T> start = uniform<T>(n, offset, rng);

        Buffer<T> got = start, want = start;
        k::axpy(got.data(), T(0.75), x.data(), n);
        ref::axpy(want.data(), T(0.75), x.data(), n);
        BOOST_TEST(allclose(got, want, kRtol<T>, kRtol<T>), what + " axpy");

        got = start, want = start;
        k::mul_acc(got.data(), x.data(), y.data(), n);
        ref::mul_acc(want.data(), x.data(), y.data(), n);
        BOOST_TEST(allclose(got, want, kRtol<T>, kRtol<T>), what + " mul_acc");

        // c = x / b; then both gradients, and each alone (the other null).
        Buffer<T> c(n, offset);
        ref::binary_forward(k::BinaryOp::div, c.data(), x.data(), b.data(), n);
        Buffer<T> da = start, db = start, da_ref = start, db_ref = start;
        k::div_backward(da.data(), db.data(), b.data(), c.data(), y.data(), n);
        ref::div_backward(da_ref.data(), db_ref.data(), b.data(), c.data(), y.data(), n);
        BOOST_TEST(allclose(da, da_ref, kRtol<T>, kRtol<T>), what + " div_backward da");
        BOOST_TEST(allclose(db, db_ref, kRtol<T>, kRtol<T>), what + " div_backward db");
        Buffer<T> da_only = start, db_only = start;
        k::div_backward(da_only.data(), static_cast<T*>(nullptr), b.data(), c.data(), y.data(), n);
        k::div_backward(static_cast<T*>(nullptr), db_only.data(), b.data(), c.data(), y.data(), n);
        BOOST_TEST(allclose(da_only, da_ref, kRtol<T>, kRtol<T>), what + " div_backward da alone");
        BOOST_TEST(allclose(db_only, db_ref, kRtol<T>, kRtol<T>), what + " div_backward db alone");

        Buffer<T> filled = start;
        k::fill(filled.data(), T(3.5), n);
        for (int64_t i = 0; i < n; ++i) BOOST_TEST(filled[i] == T(3.5));
      }
    }
  });
}

// Every backward kernel adds into its gradient: from zero, two calls give exactly twice one.
BOOST_AUTO_TEST_CASE_TEMPLATE(backward_kernels_accumulate, T, Types) {
  std::mt19937_64 rng(5);
  const int64_t n = 37;
  const Buffer<T> x = uniform<T>(n, 1, rng, 0.1, 2);
  const Buffer<T> dy = uniform<T>(n, 1, rng);
  auto twice_is_double = [&](const auto& backward, const std::string& what) {
    Buffer<T> once(n, 1), twice(n, 1);
    backward(once.data());
    backward(twice.data());
    backward(twice.data());
    for (int64_t i = 0; i < n; ++i) once[i] *= 2;
    check_equal(twice.data(), once.data(), n, what);
  };
  for_each_target([&] {
    for (const auto op : kUnaryOps) {
      Buffer<T> y(n, 1);
      ref::unary_forward(op, y.data(), x.data(), n);
      twice_is_double([&](T* dx) { k::unary_backward(op, dx, x.data(), y.data(), dy.data(), n); },
                      describe("unary_backward ", name(op)));
    }
    twice_is_double([&](T* dx) { k::pow_backward(dx, x.data(), T(3), dy.data(), n); },
                    "pow_backward");
    twice_is_double([&](T* dx) { k::clamp_backward(dx, x.data(), T(0.5), T(1.5), dy.data(), n); },
                    "clamp_backward");
    twice_is_double([&](T* dx) { k::axpy(dx, T(0.5), x.data(), n); }, "axpy");
    twice_is_double([&](T* dx) { k::mul_acc(dx, x.data(), dy.data(), n); }, "mul_acc");
    T* const no_db = nullptr;
    twice_is_double([&](T* da) { k::div_backward(da, no_db, x.data(), dy.data(), dy.data(), n); },
                    "div_backward");
  });
}

// Above 64k elements the work is split over threads in fixed chunks: same results as the
// reference, and bit-identical with 1 and 2 threads.
BOOST_AUTO_TEST_CASE_TEMPLATE(large_sizes_use_threads_deterministically, T, Types) {
  if (!kernels_are_simd<T>()) return;  // float still checks the reference in wasm
  std::mt19937_64 rng(6);
  const int64_t n = 200003;
  const Buffer<T> x = uniform<T>(n, 1, rng, -5, 5);
  const Buffer<T> dy = uniform<T>(n, 1, rng);
  const int threads = k::num_threads();
  auto run = [&](int nthreads) {
    k::set_num_threads(nthreads);
    Buffer<T> y(n, 1), dx(n, 1);
    k::unary_forward(k::UnaryOp::tanh, y.data(), x.data(), n);
    k::unary_backward(k::UnaryOp::tanh, dx.data(), x.data(), y.data(), dy.data(), n);
    return std::vector<std::vector<T>>{y.vector(), dx.vector()};
  };
  const auto one = run(1);
  const auto two = run(2);
  k::set_num_threads(threads);
  check_equal(two[0].data(), one[0].data(), n, "tanh forward, 2 threads vs 1");
  check_equal(two[1].data(), one[1].data(), n, "tanh backward, 2 threads vs 1");
  Buffer<T> y_ref(n, 0);
  ref::unary_forward(k::UnaryOp::tanh, y_ref.data(), x.data(), n);
  BOOST_TEST(allclose(one[0], y_ref, 0, kRtol<T>), "tanh forward vs reference");
}
