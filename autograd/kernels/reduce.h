// Reductions over one axis of a contiguous buffer viewed as (outer, n, inner).
//
// Reducing the last axis is inner = 1 (a horizontal SIMD sum per row); reducing any other axis
// is inner > 1 (vertical SIMD adds of whole rows), so both read memory contiguously.
// Scalar reference twins: reduce_ref.h.
#pragma once

#include <cstdint>

namespace attograd::kernels {

/// out (outer, inner) = sum over the middle axis of x (outer, n, inner); with accumulate,
/// out += instead of out =. n may be 0 (the sum is then 0).
template <typename T>
void sum_axis(T* out, const T* x, int64_t outer, int64_t n, int64_t inner, bool accumulate);

/// out (outer, inner) = max over the middle axis of x (outer, n, inner), and argmax (outer,
/// inner) the index in [0, n) of the FIRST maximum (the one the VJP routes the gradient to).
/// Requires n >= 1. NaN propagates: a row holding NaN has max NaN.
template <typename T>
void max_axis(T* out, int64_t* argmax, const T* x, int64_t outer, int64_t n, int64_t inner);

/// The VJP of sum_axis: dx (outer, n, inner) += dy (outer, inner) broadcast over the middle
/// axis, times alpha (alpha = 1/n gives the VJP of mean).
template <typename T>
void broadcast_axis_acc(T* dx, const T* dy, T alpha, int64_t outer, int64_t n, int64_t inner);

/// sum of x[0..n) accumulated in double whatever T is (loss reductions must not lose bits).
template <typename T>
double sum_all_double(const T* x, int64_t n);

}  // namespace attograd::kernels
