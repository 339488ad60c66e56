// GELU, tanh approximation, as GPT-2 uses it (gelu.h), SIMD through Highway with runtime
// dispatch. The scalar specification is gelu_ref.h; see elementwise.cc for how the per-target
// compilation works. The formulas on one vector are gelu-inl.h's, shared with matmul_gelu:
//
//   u = s (x + 0.044715 x^3),  s = sqrt(2/pi),  t = tanh(u)
//   gelu(x)  = 0.5 x (1 + t)
//   gelu'(x) = 0.5 (1 + t) + 0.5 x (1 - t^2) s (1 + 3 * 0.044715 x^2)
#include "autograd/kernels/gelu.h"

#include <cstddef>
#include <cstdint>

#include "autograd/kernels/dispatch.h"

// Highway's per-target includes, in the order its skeleton.cc gives (foreach_target.h
// re-includes this file once per target): never sorted.
// clang-format off
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "autograd/kernels/gelu.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "hwy/contrib/math/math-inl.h"
#include "autograd/kernels/simd-inl.h"
#include "autograd/kernels/gelu-inl.h"
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

// y = gelu(x). y may alias x.
template <typename T>
void gelu_forward_impl(T* y, const T* x, int64_t n) {
  elementwise<T>(n, kSplit, [&](auto d, int64_t i) HWY_ATTR {
    const auto xi = hn::LoadU(d, x + i);
    hn::StoreU(gelu_value(d, xi, gelu_tanh(d, xi)), d, y + i);
  });
}

// dx (+)= dy * gelu'(x)
template <typename T>
void gelu_backward_impl(T* dx, const T* x, const T* dy, int64_t n, bool accumulate) {
  elementwise<T>(n, kSplit, [&](auto d, int64_t i) HWY_ATTR {
    const auto xi = hn::LoadU(d, x + i);
    const auto grad = hn::Mul(hn::LoadU(d, dy + i), gelu_slope(d, xi, gelu_tanh(d, xi)));
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
