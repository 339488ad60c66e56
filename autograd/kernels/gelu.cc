// GELU, tanh approximation, as GPT-2 uses it (gelu.h), SIMD through Highway with runtime
// dispatch. The scalar specification is gelu_ref.h; see elementwise.cc for how the per-target
// compilation works.
//
//   u = s (x + 0.044715 x^3),  s = sqrt(2/pi),  t = tanh(u)
//   gelu(x)  = 0.5 x (1 + t)
//   gelu'(x) = 0.5 (1 + t) + 0.5 x (1 - t^2) s (1 + 3 * 0.044715 x^2)
#include "autograd/kernels/gelu.h"

#include <cstddef>
#include <cstdint>

#include "autograd/kernels/dispatch.h"
#include "autograd/kernels/gelu_ref.h"

// Highway's per-target includes, in the order its skeleton.cc gives (foreach_target.h
// re-includes this file once per target): never sorted.
// clang-format off
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "autograd/kernels/gelu.cc"
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

// tanh makes GELU compute-bound enough for threads to pay from about 32k elements (half of what a
// memory-bound elementwise pass needs), in chunks of 8k.
constexpr ElementwiseSplit kSplit{.chunk = 8192, .parallel_min = 32768};

// s = sqrt(2/pi) and the cubic coefficient, defined once with the specification (gelu_ref.h).
using reference::kGeluCubic;
using reference::kGeluScale;

// t = tanh(s (x + 0.044715 x^3)), the one transcendental both directions need.
// (Highway's Tanh: 4 ulp, valid for every finite x; it saturates to +-1 beyond |u| ~ 18.7.)
template <class D, class V>
HWY_INLINE V gelu_tanh(D d, V x) {
  using T = hn::TFromD<D>;
  const V x3 = hn::Mul(hn::Mul(x, x), x);
  const V u = hn::Mul(hn::Set(d, kGeluScale<T>), hn::MulAdd(hn::Set(d, kGeluCubic<T>), x3, x));
  return hn::Tanh(d, u);
}

// y = 0.5 x (1 + t). y may alias x.
template <typename T>
void gelu_forward_impl(T* y, const T* x, int64_t n) {
  elementwise<T>(n, kSplit, [&](auto d, int64_t i) HWY_ATTR {
    const auto xi = hn::LoadU(d, x + i);
    const auto t = gelu_tanh(d, xi);
    const auto half_x = hn::Mul(hn::Set(d, T(0.5)), xi);
    hn::StoreU(hn::MulAdd(half_x, t, half_x), d, y + i);  // 0.5x + 0.5x t
  });
}

// dx (+)= dy * (0.5 (1 + t) + 0.5 x (1 - t^2) s (1 + 3 * 0.044715 x^2))
template <typename T>
void gelu_backward_impl(T* dx, const T* x, const T* dy, int64_t n, bool accumulate) {
  elementwise<T>(n, kSplit, [&](auto d, int64_t i) HWY_ATTR {
    const auto one = hn::Set(d, T(1));
    const auto half = hn::Set(d, T(0.5));
    const auto xi = hn::LoadU(d, x + i);
    const auto t = gelu_tanh(d, xi);
    // du/dx = s (1 + 3 * 0.044715 x^2)
    const auto du_dx = hn::Mul(hn::Set(d, kGeluScale<T>),
                               hn::MulAdd(hn::Set(d, T(3) * kGeluCubic<T>), hn::Mul(xi, xi), one));
    const auto sech2 = hn::NegMulAdd(t, t, one);       // 1 - t^2
    const auto left = hn::Mul(half, hn::Add(one, t));  // 0.5 (1 + t)
    const auto right = hn::Mul(hn::Mul(hn::Mul(half, xi), sech2), du_dx);
    const auto grad = hn::Mul(hn::LoadU(d, dy + i), hn::Add(left, right));
    hn::StoreU(accumulate ? hn::Add(hn::LoadU(d, dx + i), grad) : grad, d, dx + i);
  });
}

}  // namespace

// ---- Exports: the names HWY_EXPORT takes, <name>_impl_f32 and _f64 (dispatch.h) ---------------

ATTOGRAD_KERNEL_TARGET(gelu_forward);
ATTOGRAD_KERNEL_TARGET(gelu_backward);

}  // namespace attograd::kernels::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace attograd::kernels {

// The public kernels: each forwards to the f32 or f64 export for the best target of this CPU and
// is instantiated for float and double (ATTOGRAD_KERNEL, dispatch.h).

ATTOGRAD_KERNEL(void, gelu_forward, (T * y, const T* x, int64_t n), (y, x, n));

ATTOGRAD_KERNEL(void, gelu_backward, (T * dx, const T* x, const T* dy, int64_t n, bool accumulate),
                (dx, x, dy, n, accumulate));

}  // namespace attograd::kernels
#endif  // HWY_ONCE
