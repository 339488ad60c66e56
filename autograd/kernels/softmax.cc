// Softmax, causal (masked) softmax and log-softmax over the last axis of x (rows, n)
// (softmax.h), SIMD through Highway with runtime dispatch. The scalar specification is
// softmax_ref.h; see elementwise.cc for how the per-target compilation works.
//
//   softmax:      y_j = exp(x_j - m) / sum_k exp(x_k - m),  m = max_k x_k
//                 dx  = y * (dy - sum(dy * y))
//   log_softmax:  y_j = (x_j - m) - log(sum_k exp(x_k - m))
//                 dx  = dy - exp(y) * sum(dy)
//
// Every row is done whole by one thread, so results do not depend on the thread count.
#include "autograd/kernels/softmax.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "autograd/kernels/dispatch.h"

// Highway's per-target includes, in the order its skeleton.cc gives (foreach_target.h
// re-includes this file once per target): never sorted.
// clang-format off
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "autograd/kernels/softmax.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "autograd/kernels/simd-inl.h"
// clang-format on

HWY_BEFORE_NAMESPACE();
namespace attograd::kernels::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// This file's own helpers and kernel bodies get internal linkage (the shared ones come from
// simd-inl.h); only the exported names at the end are visible outside.
namespace {

// ---- softmax ---------------------------------------------------------------------------------

// Entries of row r a causal softmax sees: row r is query t = r % Tq and sees keys
// j <= t + (n - Tq), clipped to [0, n]. Without a mask (causal_tq = 0) it sees all n. A row
// that sees no key at all (only possible when Tq > n) comes out all zeros.
inline int64_t visible_keys(int64_t r, int64_t n, int64_t causal_tq) {
  if (causal_tq == 0) return n;
  return std::clamp<int64_t>(r % causal_tq + n - causal_tq + 1, 0, n);
}

// y may alias x: pass 2 reads x_j before writing y_j, and pass 3 reads only y.
template <typename T>
void softmax_forward_impl(T* y, const T* x, int64_t rows, int64_t n, int64_t causal_tq) {
  for_range(rows, rows * n >= kRowParallelMin, [&](int64_t r) HWY_ATTR {
    const T* xr = x + r * n;
    T* yr = y + r * n;
    const int64_t visible = visible_keys(r, n, causal_tq);

    // passes 1 and 2 (simd-inl.h): row max m over the visible entries, so that every exp
    // argument is <= 0; then y_j = exp(x_j - m) and their sum
    const T sum = row_log_sum_exp(xr, visible, yr).sum;

    // pass 3: normalise; masked entries get probability exactly 0
    const T inv_sum = T(1) / sum;
    for_each_vector<T>(0, visible, [&](auto d, int64_t j) HWY_ATTR {
      hn::StoreU(hn::Mul(hn::LoadU(d, yr + j), hn::Set(d, inv_sum)), d, yr + j);
    });
    std::fill(yr + visible, yr + n, T(0));
  });
}

// dx += y * (dy - sum(dy * y)). Where y is exactly 0 (masked), the gradient is exactly 0.
template <typename T>
void softmax_backward_impl(T* dx, const T* y, const T* dy, int64_t rows, int64_t n) {
  for_range(rows, rows * n >= kRowParallelMin, [&](int64_t r) HWY_ATTR {
    const T* yr = y + r * n;
    const T* dyr = dy + r * n;
    T* dxr = dx + r * n;

    // pass 1: dot = sum(dy * y)
    const T dot = sum_of<T>(n, [&](auto d, int64_t j) HWY_ATTR {
      return hn::Mul(hn::LoadU(d, dyr + j), hn::LoadU(d, yr + j));
    });

    // pass 2: dx += y * (dy - dot)
    for_each_vector<T>(0, n, [&](auto d, int64_t j) HWY_ATTR {
      const auto g = hn::Mul(hn::LoadU(d, yr + j), hn::Sub(hn::LoadU(d, dyr + j), hn::Set(d, dot)));
      hn::StoreU(hn::Add(hn::LoadU(d, dxr + j), g), d, dxr + j);
    });
  });
}

// ---- log_softmax -----------------------------------------------------------------------------

// y may alias x: pass 3 reads x_j just before writing y_j.
template <typename T>
void log_softmax_forward_impl(T* y, const T* x, int64_t rows, int64_t n) {
  for_range(rows, rows * n >= kRowParallelMin, [&](int64_t r) HWY_ATTR {
    const T* xr = x + r * n;
    T* yr = y + r * n;

    // passes 1 and 2 (simd-inl.h): row max m, and the sum of exp(x - m); at least 1 (the max
    // itself), so its log is >= 0 and finite
    const LogSumExp<T> row = row_log_sum_exp(xr, n);
    const T m = row.max, log_sum = row.log_sum();

    // pass 3: y = (x - m) - log_sum, shifted in that order so that the largest entry gets
    // exactly -log_sum (x - m = 0) even when |m| is huge.
    for_each_vector<T>(0, n, [&](auto d, int64_t j) HWY_ATTR {
      const auto shifted = hn::Sub(hn::LoadU(d, xr + j), hn::Set(d, m));
      hn::StoreU(hn::Sub(shifted, hn::Set(d, log_sum)), d, yr + j);
    });
  });
}

// dx += dy - exp(y) * sum(dy)
template <typename T>
void log_softmax_backward_impl(T* dx, const T* y, const T* dy, int64_t rows, int64_t n) {
  for_range(rows, rows * n >= kRowParallelMin, [&](int64_t r) HWY_ATTR {
    const T* yr = y + r * n;
    const T* dyr = dy + r * n;
    T* dxr = dx + r * n;

    // pass 1: sum of the upstream gradient
    const T sum = sum_of<T>(n, [&](auto d, int64_t j) HWY_ATTR { return hn::LoadU(d, dyr + j); });

    // pass 2: dx += dy - exp(y) * sum   (y <= 0, so exp stays in range)
    for_each_vector<T>(0, n, [&](auto d, int64_t j) HWY_ATTR {
      const auto p = exp_nonpositive(d, hn::LoadU(d, yr + j));
      const auto g = hn::Sub(hn::LoadU(d, dyr + j), hn::Mul(p, hn::Set(d, sum)));
      hn::StoreU(hn::Add(hn::LoadU(d, dxr + j), g), d, dxr + j);
    });
  });
}

}  // namespace

// ---- Exports: the names HWY_EXPORT takes, <name>_impl_f32 and _f64 (dispatch.h) ---------------

ATTOGRAD_KERNEL_TARGET(softmax_forward);
ATTOGRAD_KERNEL_TARGET(softmax_backward);
ATTOGRAD_KERNEL_TARGET(log_softmax_forward);
ATTOGRAD_KERNEL_TARGET(log_softmax_backward);

}  // namespace attograd::kernels::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace attograd::kernels {

// The public kernels: each forwards to the f32 or f64 export for the best target of this CPU and
// is instantiated for float and double (ATTOGRAD_KERNEL, dispatch.h).

ATTOGRAD_KERNEL(void, softmax_forward,
                (T * y, const T* x, int64_t rows, int64_t n, int64_t causal_tq),
                (y, x, rows, n, causal_tq));

ATTOGRAD_KERNEL(void, softmax_backward, (T * dx, const T* y, const T* dy, int64_t rows, int64_t n),
                (dx, y, dy, rows, n));

ATTOGRAD_KERNEL(void, log_softmax_forward, (T * y, const T* x, int64_t rows, int64_t n),
                (y, x, rows, n));

ATTOGRAD_KERNEL(void, log_softmax_backward,
                (T * dx, const T* y, const T* dy, int64_t rows, int64_t n), (dx, y, dy, rows, n));

}  // namespace attograd::kernels
#endif  // HWY_ONCE
