// Elementwise kernels (elementwise.h): one pass over n contiguous elements each, SIMD through
// Highway with runtime dispatch. The scalar specification is elementwise_ref.h.
//
// How this file is built: Highway's foreach_target.h re-includes it once per SIMD target
// (AVX3, AVX2, SSE4, SSSE3, SCALAR on x86 with gcc 12). Everything between
// HWY_BEFORE_NAMESPACE() and HWY_AFTER_NAMESPACE() is compiled once per target, into its own
// namespace attograd::kernels::N_AVX2 etc.; so is simd-inl.h, the loops and math helpers that
// every kernel file shares. The `#if HWY_ONCE` part at the end is compiled once and forwards
// each public template to the best target this CPU supports. Two macros from dispatch.h join the
// parts: ATTOGRAD_KERNEL_TARGET(name), in each target's namespace, names the float and double
// instances of name_impl for HWY_EXPORT; ATTOGRAD_KERNEL(ret, name, params, args), in the
// HWY_ONCE part, exports them, defines the public template `name` that dispatches to them and
// instantiates it for float and double.
#include "autograd/kernels/elementwise.h"

#include <cmath>
#include <cstddef>
#include <cstdint>

#include "autograd/kernels/dispatch.h"

// Highway's per-target includes, in the order its skeleton.cc gives (foreach_target.h
// re-includes this file once per target): never sorted.
// clang-format off
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "autograd/kernels/elementwise.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "hwy/contrib/math/math-inl.h"
#include "autograd/kernels/simd-inl.h"
// clang-format on

HWY_BEFORE_NAMESPACE();
namespace attograd::kernels::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// This file's own helpers and kernel bodies get internal linkage (the shared ones come from
// simd-inl.h); only the exported names at the end are visible outside.
namespace {

// ---- Loops -----------------------------------------------------------------------------------

// Elementwise passes are memory-bound: a second thread only pays from ~64k elements on, in
// chunks of 16k (see ElementwiseSplit).
constexpr ElementwiseSplit kSplit{.chunk = 16384, .parallel_min = 65536};

// out[i] += g(d, i) for every vector; g loads only the inputs it needs (a VJP may be handed a
// null pointer for an input its derivative does not read).
template <typename T, class G>
void add_into(T* out, int64_t n, const G& g) {
  elementwise<T>(n, kSplit, [&](auto d, int64_t i) HWY_ATTR {
    hn::StoreU(hn::Add(hn::LoadU(d, out + i), g(d, i)), d, out + i);
  });
}

// ---- x^p in SIMD ---------------------------------------------------------------------------

// x^k for an integer k >= 0 by repeated squaring: about log2(k) + popcount(k) products, each
// rounded once, so a few ulp from std::pow (which is correctly rounded or nearly so).
template <class D, class V>
HWY_INLINE V pow_uint(D d, V x, uint32_t k) {
  V result = hn::Set(d, hn::TFromD<D>(1));
  V base = x;
  while (k != 0) {
    if (k & 1) result = hn::Mul(result, base);
    k >>= 1;
    if (k != 0) base = hn::Mul(base, base);
  }
  return result;
}

// Exponents that pow_vec raises in SIMD: the integers up to 16 in magnitude (squares, cubes,
// reciprocals: what a model built from primitives actually uses).
template <typename T>
bool is_small_int(T p) {
  return p == std::trunc(p) && std::abs(p) <= T(16);
}

// x^p with std::pow semantics. Small integer p: repeated squaring, with x^-k = (1/x)^k. Any
// other p goes lane by lane through std::pow: Highway 1.0.3 has no Pow, and exp(p log x) would
// lose about |p log x| ulp and get negative bases wrong.
template <class D, class V, typename T>
HWY_INLINE V pow_vec(D d, V x, T p) {
  if (is_small_int(p)) {
    if (p >= 0) return pow_uint(d, x, static_cast<uint32_t>(p));
    return pow_uint(d, hn::Div(hn::Set(d, T(1)), x), static_cast<uint32_t>(-p));
  }
  HWY_ALIGN T lanes[hn::MaxLanes(D())];
  hn::Store(x, d, lanes);
  for (size_t i = 0; i < hn::Lanes(d); ++i) lanes[i] = std::pow(lanes[i], p);
  return hn::Load(d, lanes);
}

// ---- Binary operators ----------------------------------------------------------------------

// Calls k(f) with f the vector function of `op`, so that each operator gets its own inlined
// loop (the switch runs once per call, not once per element).
template <class K>
HWY_INLINE void with_binary_op(BinaryOp op, const K& k) {
  switch (op) {
    case BinaryOp::add:
      return k([](auto a, auto b) HWY_ATTR { return hn::Add(a, b); });
    case BinaryOp::sub:
      return k([](auto a, auto b) HWY_ATTR { return hn::Sub(a, b); });
    case BinaryOp::mul:
      return k([](auto a, auto b) HWY_ATTR { return hn::Mul(a, b); });
    case BinaryOp::div:
      return k([](auto a, auto b) HWY_ATTR { return hn::Div(a, b); });
  }
}

// out may alias a or b: every vector is loaded before the store to the same place.
template <typename T>
void binary_forward_impl(BinaryOp op, T* out, const T* a, const T* b, int64_t n) {
  with_binary_op(op, [&](auto f) HWY_ATTR {
    elementwise<T>(n, kSplit, [&](auto d, int64_t i) HWY_ATTR {
      hn::StoreU(f(hn::LoadU(d, a + i), hn::LoadU(d, b + i)), d, out + i);
    });
  });
}

template <typename T>
void binary_scalar_right_impl(BinaryOp op, T* out, const T* a, T s, int64_t n) {
  with_binary_op(op, [&](auto f) HWY_ATTR {
    elementwise<T>(n, kSplit, [&](auto d, int64_t i) HWY_ATTR {
      hn::StoreU(f(hn::LoadU(d, a + i), hn::Set(d, s)), d, out + i);
    });
  });
}

template <typename T>
void binary_scalar_left_impl(BinaryOp op, T* out, T s, const T* b, int64_t n) {
  with_binary_op(op, [&](auto f) HWY_ATTR {
    elementwise<T>(n, kSplit, [&](auto d, int64_t i) HWY_ATTR {
      hn::StoreU(f(hn::Set(d, s), hn::LoadU(d, b + i)), d, out + i);
    });
  });
}

// ---- Unary functions -----------------------------------------------------------------------

// relu(x) = x < 0 ? 0 : x, which keeps NaN (Max's result for NaN is unspecified).
template <class D, class V>
HWY_INLINE V relu(D d, V x) {
  return hn::IfThenZeroElse(hn::Lt(x, hn::Zero(d)), x);
}

// sigmoid(x) = 1 / (1 + exp(-x)): for x << 0, exp(-x) = inf and the quotient is exactly 0; for
// x >> 0, exp(-x) = 0 and it is 1. exp_ieee keeps those ends (Highway's Exp alone does not).
template <class D, class V>
HWY_INLINE V sigmoid(D d, V x) {
  const V one = hn::Set(d, hn::TFromD<D>(1));
  return hn::Div(one, hn::Add(one, exp_ieee(d, hn::Neg(x))));
}

// sin x (or cos x): Highway's Sin and Cos (3 ulp) in their valid range |x| <= 39000; a lane
// beyond it, or NaN, from std::sin / std::cos, so that no input gets a wrong value.
template <class D, class V>
HWY_INLINE V sin_or_cos(D d, V x, bool cosine) {
  using T = hn::TFromD<D>;
  constexpr T kValid = 39000;
  V y = cosine ? hn::Cos(d, x) : hn::Sin(d, x);
  const auto far = hn::Not(hn::Le(hn::Abs(x), hn::Set(d, kValid)));
  if (HWY_UNLIKELY(!hn::AllFalse(d, far))) {
    HWY_ALIGN T xs[HWY_MAX_BYTES / sizeof(T)];
    HWY_ALIGN T ys[HWY_MAX_BYTES / sizeof(T)];
    hn::Store(x, d, xs);
    hn::Store(y, d, ys);
    for (size_t i = 0; i < hn::Lanes(d); ++i)
      if (!(std::abs(xs[i]) <= kValid)) ys[i] = cosine ? std::cos(xs[i]) : std::sin(xs[i]);
    y = hn::Load(d, ys);
  }
  return y;
}

// Calls k(f) with f(d, x) the vector function of `op`.
template <class K>
HWY_INLINE void with_unary_op(UnaryOp op, const K& k) {
  switch (op) {
    case UnaryOp::neg:
      return k([](auto, auto x) HWY_ATTR { return hn::Neg(x); });
    case UnaryOp::exp:
      return k([](auto d, auto x) HWY_ATTR { return exp_ieee(d, x); });
    case UnaryOp::log:
      return k([](auto d, auto x) HWY_ATTR { return log_ieee(d, x); });
    case UnaryOp::tanh:
      return k([](auto d, auto x) HWY_ATTR { return hn::Tanh(d, x); });
    case UnaryOp::sqrt:
      return k([](auto, auto x) HWY_ATTR { return hn::Sqrt(x); });
    case UnaryOp::relu:
      return k([](auto d, auto x) HWY_ATTR { return relu(d, x); });
    case UnaryOp::sigmoid:
      return k([](auto d, auto x) HWY_ATTR { return sigmoid(d, x); });
    case UnaryOp::abs:
      return k([](auto, auto x) HWY_ATTR { return hn::Abs(x); });
    case UnaryOp::sin:
      return k([](auto d, auto x) HWY_ATTR { return sin_or_cos(d, x, false); });
    case UnaryOp::cos:
      return k([](auto d, auto x) HWY_ATTR { return sin_or_cos(d, x, true); });
  }
}

template <typename T>
void unary_forward_impl(UnaryOp op, T* y, const T* x, int64_t n) {
  with_unary_op(op, [&](auto f) HWY_ATTR {
    elementwise<T>(n, kSplit, [&](auto d, int64_t i) HWY_ATTR {
      const auto xi = hn::LoadU(d, x + i);
      hn::StoreU(f(d, xi), d, y + i);
    });
  });
}

// dx += dy * f'(x), each derivative from whichever of x and y = f(x) is cheaper.
template <typename T>
void unary_backward_impl(UnaryOp op, T* dx, const T* x, const T* y, const T* dy, int64_t n) {
  switch (op) {
    case UnaryOp::neg:  // d(-x) = -1
      return add_into(dx, n, [&](auto d, int64_t i) HWY_ATTR {
        const auto dyi = hn::LoadU(d, dy + i);
        return hn::Neg(dyi);
      });
    case UnaryOp::exp:  // exp' = exp = y
      return add_into(dx, n, [&](auto d, int64_t i) HWY_ATTR {
        return hn::Mul(hn::LoadU(d, dy + i), hn::LoadU(d, y + i));
      });
    case UnaryOp::log:  // log' = 1/x
      return add_into(dx, n, [&](auto d, int64_t i) HWY_ATTR {
        return hn::Div(hn::LoadU(d, dy + i), hn::LoadU(d, x + i));
      });
    case UnaryOp::tanh:  // tanh' = 1 - y^2
      return add_into(dx, n, [&](auto d, int64_t i) HWY_ATTR {
        const auto yi = hn::LoadU(d, y + i);
        return hn::Mul(hn::LoadU(d, dy + i), hn::Sub(hn::Set(d, T(1)), hn::Mul(yi, yi)));
      });
    case UnaryOp::sqrt:  // sqrt' = 1 / (2 sqrt(x)) = 1 / (2y)
      return add_into(dx, n, [&](auto d, int64_t i) HWY_ATTR {
        const auto yi = hn::LoadU(d, y + i);
        return hn::Div(hn::LoadU(d, dy + i), hn::Add(yi, yi));
      });
    case UnaryOp::relu:  // relu' = [x > 0], so relu'(0) = 0
      return add_into(dx, n, [&](auto d, int64_t i) HWY_ATTR {
        return hn::IfThenElseZero(hn::Gt(hn::LoadU(d, x + i), hn::Zero(d)), hn::LoadU(d, dy + i));
      });
    case UnaryOp::sigmoid:  // sigmoid' = y (1 - y)
      return add_into(dx, n, [&](auto d, int64_t i) HWY_ATTR {
        const auto yi = hn::LoadU(d, y + i);
        return hn::Mul(hn::Mul(hn::LoadU(d, dy + i), yi), hn::Sub(hn::Set(d, T(1)), yi));
      });
    case UnaryOp::abs:  // abs' = sign(x): dy where x > 0, -dy where x < 0, 0 at 0 and NaN
      return add_into(dx, n, [&](auto d, int64_t i) HWY_ATTR {
        const auto xi = hn::LoadU(d, x + i), dyi = hn::LoadU(d, dy + i);
        const auto pos = hn::IfThenElseZero(hn::Gt(xi, hn::Zero(d)), dyi);
        return hn::IfThenElse(hn::Lt(xi, hn::Zero(d)), hn::Neg(dyi), pos);
      });
    case UnaryOp::sin:  // sin' = cos x
      return add_into(dx, n, [&](auto d, int64_t i) HWY_ATTR {
        return hn::Mul(hn::LoadU(d, dy + i), sin_or_cos(d, hn::LoadU(d, x + i), true));
      });
    case UnaryOp::cos:  // cos' = -sin x
      return add_into(dx, n, [&](auto d, int64_t i) HWY_ATTR {
        return hn::Neg(hn::Mul(hn::LoadU(d, dy + i), sin_or_cos(d, hn::LoadU(d, x + i), false)));
      });
  }
}

// ---- Comparisons ---------------------------------------------------------------------------

template <typename T>
void compare_impl(CompareOp op, T* out, const T* a, const T* b, int64_t n) {
  const auto run = [&](auto holds) HWY_ATTR {
    elementwise<T>(n, kSplit, [&](auto d, int64_t i) HWY_ATTR {
      const auto mask = holds(hn::LoadU(d, a + i), hn::LoadU(d, b + i));
      hn::StoreU(hn::IfThenElseZero(mask, hn::Set(d, T(1))), d, out + i);
    });
  };
  switch (op) {
    case CompareOp::gt:
      return run([](auto x, auto y) HWY_ATTR { return hn::Gt(x, y); });
    case CompareOp::lt:
      return run([](auto x, auto y) HWY_ATTR { return hn::Lt(x, y); });
    case CompareOp::ge:
      return run([](auto x, auto y) HWY_ATTR { return hn::Ge(x, y); });
    case CompareOp::le:
      return run([](auto x, auto y) HWY_ATTR { return hn::Le(x, y); });
    case CompareOp::eq:
      return run([](auto x, auto y) HWY_ATTR { return hn::Eq(x, y); });
    case CompareOp::ne:  // not Ne: on AVX-512 it is _CMP_NEQ_OQ, false for NaN (C++'s != is true)
      return run([](auto x, auto y) HWY_ATTR { return hn::Not(hn::Eq(x, y)); });
  }
}

// ---- Clamp ---------------------------------------------------------------------------------

// torch.clamp: lo where x < lo, then hi where that is > hi, so lo > hi gives hi everywhere. Two
// selects rather than Max/Min, whose result for NaN Highway leaves unspecified: NaN fails both
// comparisons and stays NaN.
template <typename T>
void clamp_forward_impl(T* y, const T* x, T lo, T hi, int64_t n) {
  elementwise<T>(n, kSplit, [&](auto d, int64_t i) HWY_ATTR {
    const auto vlo = hn::Set(d, lo), vhi = hn::Set(d, hi);
    const auto xi = hn::LoadU(d, x + i);
    const auto v = hn::IfThenElse(hn::Lt(xi, vlo), vlo, xi);
    hn::StoreU(hn::IfThenElse(hn::Gt(v, vhi), vhi, v), d, y + i);
  });
}

// dx += dy where lo <= x <= hi: the bounds pass the gradient (PyTorch's clamp_backward).
template <typename T>
void clamp_backward_impl(T* dx, const T* x, T lo, T hi, const T* dy, int64_t n) {
  add_into(dx, n, [&](auto d, int64_t i) HWY_ATTR {
    const auto xi = hn::LoadU(d, x + i);
    const auto inside = hn::And(hn::Ge(xi, hn::Set(d, lo)), hn::Le(xi, hn::Set(d, hi)));
    return hn::IfThenElseZero(inside, hn::LoadU(d, dy + i));
  });
}

// ---- Power, accumulations, fill ------------------------------------------------------------

template <typename T>
void pow_forward_impl(T* y, const T* x, T p, int64_t n) {
  elementwise<T>(n, kSplit, [&](auto d, int64_t i) HWY_ATTR {
    const auto xi = hn::LoadU(d, x + i);
    hn::StoreU(pow_vec(d, xi, p), d, y + i);
  });
}

// dx += dy * p * x^(p-1); for p = 0 the gradient is 0 (PyTorch), not 0 * x^-1 = NaN at x = 0.
template <typename T>
void pow_backward_impl(T* dx, const T* x, T p, const T* dy, int64_t n) {
  if (p == T(0)) return;
  add_into(dx, n, [&](auto d, int64_t i) HWY_ATTR {
    const auto dy_p = hn::Mul(hn::LoadU(d, dy + i), hn::Set(d, p));
    return hn::Mul(dy_p, pow_vec(d, hn::LoadU(d, x + i), T(p - T(1))));
  });
}

template <typename T>
void axpy_impl(T* out, T alpha, const T* x, int64_t n) {
  add_into(out, n, [&](auto d, int64_t i) HWY_ATTR {
    return hn::Mul(hn::Set(d, alpha), hn::LoadU(d, x + i));
  });
}

template <typename T>
void mul_acc_impl(T* out, const T* x, const T* y, int64_t n) {
  add_into(out, n, [&](auto d, int64_t i) HWY_ATTR {
    return hn::Mul(hn::LoadU(d, x + i), hn::LoadU(d, y + i));
  });
}

// c = a / b:  da += dc / b;  db -= dc * c / b  (dc/db = -a/b^2 = -c/b).
template <typename T>
void div_backward_impl(T* da, T* db, const T* b, const T* c, const T* dc, int64_t n) {
  if (da) {
    add_into(da, n, [&](auto d, int64_t i) HWY_ATTR {
      return hn::Div(hn::LoadU(d, dc + i), hn::LoadU(d, b + i));
    });
  }
  if (db) {
    add_into(db, n, [&](auto d, int64_t i) HWY_ATTR {
      const auto dc_c = hn::Mul(hn::LoadU(d, dc + i), hn::LoadU(d, c + i));
      return hn::Neg(hn::Div(dc_c, hn::LoadU(d, b + i)));
    });
  }
}

template <typename T>
void fill_impl(T* out, T value, int64_t n) {
  elementwise<T>(n, kSplit,
                 [&](auto d, int64_t i) HWY_ATTR { hn::StoreU(hn::Set(d, value), d, out + i); });
}

}  // namespace

// ---- Exports: the names HWY_EXPORT takes, <name>_impl_f32 and _f64 (dispatch.h) ---------------

ATTOGRAD_KERNEL_TARGET(compare);
ATTOGRAD_KERNEL_TARGET(binary_forward);
ATTOGRAD_KERNEL_TARGET(binary_scalar_right);
ATTOGRAD_KERNEL_TARGET(binary_scalar_left);
ATTOGRAD_KERNEL_TARGET(unary_forward);
ATTOGRAD_KERNEL_TARGET(unary_backward);
ATTOGRAD_KERNEL_TARGET(pow_forward);
ATTOGRAD_KERNEL_TARGET(pow_backward);
ATTOGRAD_KERNEL_TARGET(clamp_forward);
ATTOGRAD_KERNEL_TARGET(clamp_backward);
ATTOGRAD_KERNEL_TARGET(axpy);
ATTOGRAD_KERNEL_TARGET(mul_acc);
ATTOGRAD_KERNEL_TARGET(div_backward);
ATTOGRAD_KERNEL_TARGET(fill);

}  // namespace attograd::kernels::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace attograd::kernels {

// The public kernels: each forwards to the f32 or f64 export for the best target of this CPU and
// is instantiated for float and double (ATTOGRAD_KERNEL, dispatch.h).

ATTOGRAD_KERNEL(void, compare, (CompareOp op, T* out, const T* a, const T* b, int64_t n),
                (op, out, a, b, n));

ATTOGRAD_KERNEL(void, binary_forward, (BinaryOp op, T* out, const T* a, const T* b, int64_t n),
                (op, out, a, b, n));

ATTOGRAD_KERNEL(void, binary_scalar_right, (BinaryOp op, T* out, const T* a, T s, int64_t n),
                (op, out, a, s, n));

ATTOGRAD_KERNEL(void, binary_scalar_left, (BinaryOp op, T* out, T s, const T* b, int64_t n),
                (op, out, s, b, n));

ATTOGRAD_KERNEL(void, unary_forward, (UnaryOp op, T* y, const T* x, int64_t n), (op, y, x, n));

ATTOGRAD_KERNEL(void, unary_backward,
                (UnaryOp op, T* dx, const T* x, const T* y, const T* dy, int64_t n),
                (op, dx, x, y, dy, n));

ATTOGRAD_KERNEL(void, pow_forward, (T * y, const T* x, T p, int64_t n), (y, x, p, n));

ATTOGRAD_KERNEL(void, pow_backward, (T * dx, const T* x, T p, const T* dy, int64_t n),
                (dx, x, p, dy, n));

ATTOGRAD_KERNEL(void, clamp_forward, (T * y, const T* x, T lo, T hi, int64_t n), (y, x, lo, hi, n));

ATTOGRAD_KERNEL(void, clamp_backward, (T * dx, const T* x, T lo, T hi, const T* dy, int64_t n),
                (dx, x, lo, hi, dy, n));

ATTOGRAD_KERNEL(void, axpy, (T * out, T alpha, const T* x, int64_t n), (out, alpha, x, n));

ATTOGRAD_KERNEL(void, mul_acc, (T * out, const T* x, const T* y, int64_t n), (out, x, y, n));

ATTOGRAD_KERNEL(void, div_backward, (T * da, T* db, const T* b, const T* c, const T* dc, int64_t n),
                (da, db, b, c, dc, n));

ATTOGRAD_KERNEL(void, fill, (T * out, T value, int64_t n), (out, value, n));

}  // namespace attograd::kernels
#endif  // HWY_ONCE
