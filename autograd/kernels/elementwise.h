// Elementwise kernels on contiguous buffers of n elements (SIMD, Highway runtime dispatch).
//
// Every kernel is a template over T = float or double, explicitly instantiated for both.
// Forward kernels write their output; backward kernels ACCUMULATE (+=) into gradient buffers,
// so a tensor used twice needs no special case (see docs/01-engine.md).
// The scalar reference twins live in elementwise_ref.h.
#pragma once

#include <cstdint>

namespace attograd::kernels {

/// The four broadcasting arithmetic operators.
enum class BinaryOp { add, sub, mul, div };

/// The pointwise functions with a closed-form derivative.
/// relu'(0) is taken as 0, as in PyTorch; so is abs'(0) (and abs'(NaN)): abs' = sign(x).
enum class UnaryOp { neg, exp, log, tanh, sqrt, relu, sigmoid, abs, sin, cos };

/// The comparisons of torch.gt, lt, ge, le, eq, ne.
enum class CompareOp { gt, lt, ge, le, eq, ne };

/// out[i] = 1 where a[i] op b[i] holds, else 0, for i < n: IEEE comparisons, so a NaN on
/// either side makes every comparison false but ne. out may alias a or b.
template <typename T>
void compare(CompareOp op, T* out, const T* a, const T* b, int64_t n);

/// out[i] = a[i] op b[i] for i < n. out may alias a or b.
template <typename T>
void binary_forward(BinaryOp op, T* out, const T* a, const T* b, int64_t n);

/// out[i] = a[i] op s (scalar on the right), n elements. out may alias a.
template <typename T>
void binary_scalar_right(BinaryOp op, T* out, const T* a, T s, int64_t n);

/// out[i] = s op b[i] (scalar on the left), n elements. out may alias b.
template <typename T>
void binary_scalar_left(BinaryOp op, T* out, T s, const T* b, int64_t n);

/// y[i] = f(x[i]). y may alias x.
template <typename T>
void unary_forward(UnaryOp op, T* y, const T* x, int64_t n);

/// dx[i] += dy[i] * f'(x[i]), written with whichever of x (input) and y = f(x) (output) is
/// cheaper: exp' = y, log' = 1/x, tanh' = 1 - y^2, sqrt' = 1/(2y), relu' = [x > 0], neg' = -1,
/// sigmoid' = y (1 - y), abs' = [x > 0] - [x < 0], sin' = cos x, cos' = -sin x.
template <typename T>
void unary_backward(UnaryOp op, T* dx, const T* x, const T* y, const T* dy, int64_t n);

/// y[i] = x[i]^p for a scalar exponent p (std::pow semantics).
template <typename T>
void pow_forward(T* y, const T* x, T p, int64_t n);

/// dx[i] += dy[i] * p * x[i]^(p-1).
template <typename T>
void pow_backward(T* dx, const T* x, T p, const T* dy, int64_t n);

/// y[i] = x[i] clamped to [lo, hi] as torch.clamp: lo where x < lo, then hi where that is > hi
/// (so lo > hi gives hi everywhere); NaN stays NaN. A missing bound is -inf or +inf.
template <typename T>
void clamp_forward(T* y, const T* x, T lo, T hi, int64_t n);

/// dx[i] += dy[i] where lo <= x[i] <= hi (a bound itself passes the gradient, as in PyTorch;
/// NaN does not).
template <typename T>
void clamp_backward(T* dx, const T* x, T lo, T hi, const T* dy, int64_t n);

/// out[i] += alpha * x[i]  (BLAS axpy). The accumulate step of nearly every VJP.
template <typename T>
void axpy(T* out, T alpha, const T* x, int64_t n);

/// out[i] += x[i] * y[i]  (the VJP of mul: da += dy * b).
template <typename T>
void mul_acc(T* out, const T* x, const T* y, int64_t n);

/// The VJP of c = a / b, accumulated:  da[i] += dc[i] / b[i];  db[i] -= dc[i] * c[i] / b[i].
/// Either of da, db may be null when that gradient is not needed.
template <typename T>
void div_backward(T* da, T* db, const T* b, const T* c, const T* dc, int64_t n);

/// out[i] = value.
template <typename T>
void fill(T* out, T value, int64_t n);

}  // namespace attograd::kernels
