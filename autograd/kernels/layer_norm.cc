// Layer normalisation over the last axis of x (rows, C) (layer_norm.h), SIMD through Highway with
// runtime dispatch. The scalar specification is layer_norm_ref.h (in the shape of llm.c's
// layernorm_forward/backward); see elementwise.cc for how the per-target compilation works.
//
//   mean = (1/C) sum x,  var = (1/C) sum (x - mean)^2,  rstd = 1/sqrt(var + eps)
//   xhat = (x - mean) rstd,  y = gamma xhat + beta
//   dbeta += dy;  dgamma += dy xhat;  g = dy gamma;  dx += rstd (g - mean(g) - xhat mean(g xhat))
//
// Threads: the forward and dx are per row (one thread per row). dgamma and dbeta sum over rows,
// so they are split by COLUMN instead: each column is summed over all rows, in row order, by one
// thread. No float sum ever crosses threads, so results do not depend on the thread count.
#include "autograd/kernels/layer_norm.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>

#include "autograd/kernels/dispatch.h"

// Highway's per-target includes, in the order its skeleton.cc gives (foreach_target.h
// re-includes this file once per target): never sorted.
// clang-format off
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "autograd/kernels/layer_norm.cc"
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

// xhat = (x - mean) * rstd: computed in the forward, recomputed rather than saved in the backward
// (one sub and one mul per element).
template <class D, typename T = hn::TFromD<D>>
HWY_INLINE hn::Vec<D> xhat_at(D d, const T* xr, int64_t c, T m, T s) {
  return hn::Mul(hn::Sub(hn::LoadU(d, xr + c), hn::Set(d, m)), hn::Set(d, s));
}

// ---- forward ---------------------------------------------------------------------------------

// ---- rows narrower than a vector: rows in the lanes --------------------------------------------
// With C below a vector (the lecture's femto and pico have C = 2 and 6) a row is a fraction of a
// vector, and each of its means is a sum across lanes. Here a block of V rows is first copied
// column by column into a (C, V) buffer, so that a vector holds one column of V rows and every
// mean, variance and normalisation is plain vector arithmetic over C columns. Rows past the last
// whole block take the row-at-a-time code.
struct NarrowRows {};

// cols[c * V + l] = x[(r0 + l) * C + c] for l < V: V rows of x turned into C columns.
template <typename T>
HWY_INLINE void rows_to_columns(T* cols, const T* x, int64_t r0, int64_t C, int64_t V) {
  for (int64_t l = 0; l < V; ++l)
    for (int64_t c = 0; c < C; ++c) cols[c * V + l] = x[(r0 + l) * C + c];
}

// The inverse: x[(r0 + l) * C + c] = cols[c * V + l].
template <typename T>
HWY_INLINE void columns_to_rows(T* x, const T* cols, int64_t r0, int64_t C, int64_t V) {
  for (int64_t l = 0; l < V; ++l)
    for (int64_t c = 0; c < C; ++c) x[(r0 + l) * C + c] = cols[c * V + l];
}

// True when the rows are narrow enough for the rows-in-lanes code (not on the scalar target,
// whose one lane makes it the row code anyway).
template <typename T>
bool narrow_rows(int64_t C) {
  return HWY_TARGET != HWY_SCALAR && C < static_cast<int64_t>(hn::Lanes(hn::ScalableTag<T>()));
}

// The forward of rows [0, rows - rows % V), V rows at a time.
template <typename T>
int64_t layer_norm_forward_lanes(T* y, T* mean, T* rstd, const T* x, const T* gamma, const T* beta,
                                 int64_t rows, int64_t C, T eps) {
  const hn::ScalableTag<T> d;
  const int64_t V = static_cast<int64_t>(hn::Lanes(d)), blocks = rows / V;
  T* cols = thread_scratch<T, NarrowRows>(static_cast<size_t>(C * V));
  const auto inv_c = hn::Set(d, T(1) / static_cast<T>(C));
  for (int64_t b = 0; b < blocks; ++b) {
    const int64_t r0 = b * V;
    rows_to_columns(cols, x, r0, C, V);
    auto sum = hn::Zero(d);
    for (int64_t c = 0; c < C; ++c) sum = hn::Add(sum, hn::Load(d, cols + c * V));
    const auto m = hn::Mul(sum, inv_c);
    auto sum_sq = hn::Zero(d);
    for (int64_t c = 0; c < C; ++c) {
      const auto centred = hn::Sub(hn::Load(d, cols + c * V), m);
      sum_sq = hn::MulAdd(centred, centred, sum_sq);
    }
    const auto s =
        hn::Div(hn::Set(d, T(1)), hn::Sqrt(hn::Add(hn::Mul(sum_sq, inv_c), hn::Set(d, eps))));
    for (int64_t c = 0; c < C; ++c) {
      const auto xhat = hn::Mul(hn::Sub(hn::Load(d, cols + c * V), m), s);
      hn::Store(hn::MulAdd(xhat, hn::Set(d, gamma[c]), hn::Set(d, beta[c])), d, cols + c * V);
    }
    columns_to_rows(y, cols, r0, C, V);
    hn::StoreU(m, d, mean + r0);
    hn::StoreU(s, d, rstd + r0);
  }
  return blocks * V;
}

template <typename T>
void layer_norm_forward_impl(T* y, T* mean, T* rstd, const T* x, const T* gamma, const T* beta,
                             int64_t rows, int64_t C, T eps) {
  const int64_t done =
      narrow_rows<T>(C) ? layer_norm_forward_lanes(y, mean, rstd, x, gamma, beta, rows, C, eps) : 0;
  for_range(rows - done, (rows - done) * C >= kRowParallelMin, [&, done](int64_t i) HWY_ATTR {
    const int64_t r = done + i;
    const T* xr = x + r * C;
    T* yr = y + r * C;

    // pass 1: mean
    const T sum = sum_of<T>(C, [&](auto d, int64_t c) HWY_ATTR { return hn::LoadU(d, xr + c); });
    const T m = sum / static_cast<T>(C);

    // pass 2: biased variance of the centred values (never E[x^2] - E[x]^2, which cancels
    // catastrophically when |mean| >> std, e.g. x = 70000 + [0, 1, 2, 3] in float)
    const T sum_sq = sum_of<T>(C, [&](auto d, int64_t c) HWY_ATTR {
      const auto centred = hn::Sub(hn::LoadU(d, xr + c), hn::Set(d, m));
      return hn::Mul(centred, centred);
    });
    const T var = sum_sq / static_cast<T>(C);
    const T s = T(1) / std::sqrt(var + eps);

    // pass 3: y = (x - mean) * rstd * gamma + beta
    for_each_vector<T>(0, C, [&](auto d, int64_t c) HWY_ATTR {
      const auto xhat = xhat_at(d, xr, c, m, s);
      hn::StoreU(hn::MulAdd(xhat, hn::LoadU(d, gamma + c), hn::LoadU(d, beta + c)), d, yr + c);
    });
    mean[r] = m;
    rstd[r] = s;
  });
}

// ---- backward --------------------------------------------------------------------------------

// dx += rstd * (g - mean(g) - xhat * mean(g * xhat)), g = dy * gamma; one row per thread.
// dx of rows [0, rows - rows % V), V rows at a time (see layer_norm_forward_lanes).
template <typename T>
int64_t layer_norm_dx_lanes(T* dx, const T* dy, const T* x, const T* mean, const T* rstd,
                            const T* gamma, int64_t rows, int64_t C) {
  const hn::ScalableTag<T> d;
  const int64_t V = static_cast<int64_t>(hn::Lanes(d)), blocks = rows / V;
  T* xcols = thread_scratch<T, NarrowRows>(static_cast<size_t>(3 * C * V));
  T* gcols = xcols + C * V;  // g = dy * gamma
  T* dxcols = gcols + C * V;
  const auto inv_c = hn::Set(d, T(1) / static_cast<T>(C));
  for (int64_t b = 0; b < blocks; ++b) {
    const int64_t r0 = b * V;
    rows_to_columns(xcols, x, r0, C, V);
    rows_to_columns(gcols, dy, r0, C, V);
    rows_to_columns(dxcols, dx, r0, C, V);
    const auto m = hn::LoadU(d, mean + r0), s = hn::LoadU(d, rstd + r0);
    // the two row means, mean(g) and mean(g * xhat)
    auto g_sum = hn::Zero(d), g_xhat_sum = hn::Zero(d);
    for (int64_t c = 0; c < C; ++c) {
      const auto g = hn::Mul(hn::Load(d, gcols + c * V), hn::Set(d, gamma[c]));
      hn::Store(g, d, gcols + c * V);
      g_sum = hn::Add(g_sum, g);
      g_xhat_sum = hn::MulAdd(g, hn::Mul(hn::Sub(hn::Load(d, xcols + c * V), m), s), g_xhat_sum);
    }
    const auto g_mean = hn::Mul(g_sum, inv_c), g_xhat_mean = hn::Mul(g_xhat_sum, inv_c);
    // dx += rstd * (g - g_mean - xhat * g_xhat_mean)
    for (int64_t c = 0; c < C; ++c) {
      const auto xhat = hn::Mul(hn::Sub(hn::Load(d, xcols + c * V), m), s);
      const auto inner =
          hn::NegMulAdd(xhat, g_xhat_mean, hn::Sub(hn::Load(d, gcols + c * V), g_mean));
      hn::Store(hn::MulAdd(s, inner, hn::Load(d, dxcols + c * V)), d, dxcols + c * V);
    }
    columns_to_rows(dx, dxcols, r0, C, V);
  }
  return blocks * V;
}

template <typename T>
void layer_norm_dx(T* dx, const T* dy, const T* x, const T* mean, const T* rstd, const T* gamma,
                   int64_t rows, int64_t C) {
  const int64_t done =
      narrow_rows<T>(C) ? layer_norm_dx_lanes(dx, dy, x, mean, rstd, gamma, rows, C) : 0;
  for_range(rows - done, (rows - done) * C >= kRowParallelMin, [&, done](int64_t i) HWY_ATTR {
    const int64_t r = done + i;
    const T* xr = x + r * C;
    const T* dyr = dy + r * C;
    T* dxr = dx + r * C;
    const T m = mean[r], s = rstd[r];

    // pass 1: the two row means, mean(g) and mean(g * xhat)
    const T g_sum = sum_of<T>(C, [&](auto d, int64_t c) HWY_ATTR {
      return hn::Mul(hn::LoadU(d, dyr + c), hn::LoadU(d, gamma + c));
    });
    const T g_xhat_sum = sum_of<T>(C, [&](auto d, int64_t c) HWY_ATTR {
      const auto g = hn::Mul(hn::LoadU(d, dyr + c), hn::LoadU(d, gamma + c));
      return hn::Mul(g, xhat_at(d, xr, c, m, s));
    });
    const T g_mean = g_sum / static_cast<T>(C);
    const T g_xhat_mean = g_xhat_sum / static_cast<T>(C);

    // pass 2: dx += rstd * (g - g_mean - xhat * g_xhat_mean)
    for_each_vector<T>(0, C, [&](auto d, int64_t c) HWY_ATTR {
      const auto g = hn::Mul(hn::LoadU(d, dyr + c), hn::LoadU(d, gamma + c));
      const auto xhat = xhat_at(d, xr, c, m, s);
      const auto inner =
          hn::NegMulAdd(xhat, hn::Set(d, g_xhat_mean), hn::Sub(g, hn::Set(d, g_mean)));
      hn::StoreU(hn::MulAdd(hn::Set(d, s), inner, hn::LoadU(d, dxr + c)), d, dxr + c);
    });
  });
}

// dgamma += sum_r dy * xhat,  dbeta += sum_r dy  (either may be null). Split into blocks of
// kColumnBlock columns; each block walks all rows in order, summing into a small local buffer
// (in L1) that starts at zero and is added to dgamma/dbeta once at the end. So a call adds one
// contribution that does not depend on what the gradients already hold: from zero, two calls
// give exactly twice one.
constexpr int64_t kColumnBlock = 256;  // a multiple of every vector length

template <typename T>
void layer_norm_dparams(T* dgamma, T* dbeta, const T* dy, const T* x, const T* mean, const T* rstd,
                        int64_t rows, int64_t C) {
  const int64_t blocks = (C + kColumnBlock - 1) / kColumnBlock;
  for_range(blocks, rows * C >= kRowParallelMin, [&](int64_t b) HWY_ATTR {
    const int64_t c0 = b * kColumnBlock;
    const int64_t width = std::min(kColumnBlock, C - c0);
    HWY_ALIGN T sum_dy[kColumnBlock] = {};
    HWY_ALIGN T sum_dy_xhat[kColumnBlock] = {};
    // pass 1: the block's column sums over all rows, in row order
    for (int64_t r = 0; r < rows; ++r) {
      const T* xr = x + r * C + c0;
      const T* dyr = dy + r * C + c0;
      const T m = mean[r], s = rstd[r];
      for_each_vector<T>(0, width, [&](auto d, int64_t c) HWY_ATTR {
        const auto dyc = hn::LoadU(d, dyr + c);
        hn::StoreU(hn::Add(hn::LoadU(d, sum_dy + c), dyc), d, sum_dy + c);
        const auto g = hn::MulAdd(dyc, xhat_at(d, xr, c, m, s), hn::LoadU(d, sum_dy_xhat + c));
        hn::StoreU(g, d, sum_dy_xhat + c);
      });
    }
    // pass 2: add them to the gradients
    for_each_vector<T>(0, width, [&](auto d, int64_t c) HWY_ATTR {
      if (dbeta) {
        hn::StoreU(hn::Add(hn::LoadU(d, dbeta + c0 + c), hn::LoadU(d, sum_dy + c)), d,
                   dbeta + c0 + c);
      }
      if (dgamma) {
        hn::StoreU(hn::Add(hn::LoadU(d, dgamma + c0 + c), hn::LoadU(d, sum_dy_xhat + c)), d,
                   dgamma + c0 + c);
      }
    });
  });
}

template <typename T>
void layer_norm_backward_impl(T* dx, T* dgamma, T* dbeta, const T* dy, const T* x, const T* mean,
                              const T* rstd, const T* gamma, int64_t rows, int64_t C) {
  if (dx) layer_norm_dx(dx, dy, x, mean, rstd, gamma, rows, C);
  if (dgamma || dbeta) layer_norm_dparams(dgamma, dbeta, dy, x, mean, rstd, rows, C);
}

}  // namespace

// ---- Exports: the names HWY_EXPORT takes, <name>_impl_f32 and _f64 (dispatch.h) ---------------

ATTOGRAD_KERNEL_TARGET(layer_norm_forward);
ATTOGRAD_KERNEL_TARGET(layer_norm_backward);

}  // namespace attograd::kernels::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace attograd::kernels {

// The public kernels: each forwards to the f32 or f64 export for the best target of this CPU and
// is instantiated for float and double (ATTOGRAD_KERNEL, dispatch.h).

ATTOGRAD_KERNEL(void, layer_norm_forward,
                (T * y, T* mean, T* rstd, const T* x, const T* gamma, const T* beta, int64_t rows,
                 int64_t C, T eps),
                (y, mean, rstd, x, gamma, beta, rows, C, eps));

ATTOGRAD_KERNEL(void, layer_norm_backward,
                (T * dx, T* dgamma, T* dbeta, const T* dy, const T* x, const T* mean, const T* rstd,
                 const T* gamma, int64_t rows, int64_t C),
                (dx, dgamma, dbeta, dy, x, mean, rstd, gamma, rows, C));

}  // namespace attograd::kernels
#endif  // HWY_ONCE
