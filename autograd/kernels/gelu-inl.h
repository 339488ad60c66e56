// GELU's tanh form on one vector, the maths two kernel files share: gelu.cc's passes over memory
// and matmul.cc's fused epilogue (matmul_gelu: c_fc's product with its GELU applied as each tile
// is stored). One definition, so that the fused and the unfused graph compute the same formula.
// The scalar specification is gelu_ref.h:
//
//   u = s (x + 0.044715 x^3),  s = sqrt(2/pi),  t = tanh(u)
//   gelu(x)  = 0.5 x (1 + t)
//   gelu'(x) = 0.5 (1 + t) + 0.5 x (1 - t^2) s (1 + 3 * 0.044715 x^2)
//
// Compiled once per Highway target like the kernels; a kernel file includes it after highway.h
// and hwy/contrib/math/math-inl.h. Per-target include guard: Highway's toggle idiom (see
// simd-inl.h).
#if defined(ATTOGRAD_KERNELS_GELU_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef ATTOGRAD_KERNELS_GELU_INL_H_
#undef ATTOGRAD_KERNELS_GELU_INL_H_
#else
#define ATTOGRAD_KERNELS_GELU_INL_H_
#endif

#include "autograd/kernels/gelu_ref.h"
#include "hwy/contrib/math/math-inl.h"
#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace attograd::kernels::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// t = tanh(s (x + 0.044715 x^3)), the one transcendental gelu and gelu' need.
// (Highway's Tanh: 4 ulp, valid for every finite x; it saturates to +-1 beyond |u| ~ 18.7.)
template <class D, class V>
HWY_INLINE V gelu_tanh(D d, V x) {
  using T = hn::TFromD<D>;
  const V x3 = hn::Mul(hn::Mul(x, x), x);
  const V u = hn::Mul(hn::Set(d, reference::kGeluScale<T>),
                      hn::MulAdd(hn::Set(d, reference::kGeluCubic<T>), x3, x));
  return hn::Tanh(d, u);
}

// gelu(x) = 0.5 x (1 + t), as 0.5x + 0.5x t, from t = gelu_tanh(d, x).
template <class D, class V>
HWY_INLINE V gelu_value(D d, V x, V t) {
  const V half_x = hn::Mul(hn::Set(d, hn::TFromD<D>(0.5)), x);
  return hn::MulAdd(half_x, t, half_x);
}

// gelu'(x) = 0.5 (1 + t) + 0.5 x (1 - t^2) s (1 + 3 * 0.044715 x^2), from t = gelu_tanh(d, x).
template <class D, class V>
HWY_INLINE V gelu_slope(D d, V x, V t) {
  using T = hn::TFromD<D>;
  const V one = hn::Set(d, T(1));
  const V half = hn::Set(d, T(0.5));
  // du/dx = s (1 + 3 * 0.044715 x^2)
  const V du_dx =
      hn::Mul(hn::Set(d, reference::kGeluScale<T>),
              hn::MulAdd(hn::Set(d, T(3) * reference::kGeluCubic<T>), hn::Mul(x, x), one));
  const V sech2 = hn::NegMulAdd(t, t, one);       // 1 - t^2
  const V left = hn::Mul(half, hn::Add(one, t));  // 0.5 (1 + t)
  const V right = hn::Mul(hn::Mul(hn::Mul(half, x), sech2), du_dx);
  return hn::Add(left, right);
}

}  // namespace attograd::kernels::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // per-target include guard
