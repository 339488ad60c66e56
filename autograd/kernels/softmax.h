// Softmax and log-softmax over the last axis of rows x (rows, n), max-subtracted.
//
//   y_j = exp(x_j - m) / sum_k exp(x_k - m),  m = max_k x_k     (shift invariance: no overflow)
//   VJP:  dx = y * (dy - sum(dy * y))
//   log_softmax: y_j = x_j - m - log(sum_k exp(x_k - m));  VJP: dx = dy - exp(y) * sum(dy)
//
// The causal variant is the fused "masked softmax" of attention: row r is query position
// t = r % causal_tq of a (.., Tq, Tk) score block, and it sees keys j <= t + (n - Tq)
// (n = Tk; with Tq = Tk this is j <= t, the lower triangle). Masked entries get probability
// exactly 0, and since dx = y * (...) they also get gradient exactly 0.
// Entries equal to -inf (a mask applied beforehand) also get exactly 0.
// Scalar reference twins: softmax_ref.h.
#pragma once

#include <cstdint>

namespace attograd::kernels {

/// y (rows, n) = softmax of each row of x (rows, n). causal_tq = 0 means no mask; otherwise
/// the causal mask described above with Tq = causal_tq (rows must be a multiple of it).
/// y may alias x. A row that is entirely -inf gives NaN, as in PyTorch.
template <typename T>
void softmax_forward(T* y, const T* x, int64_t rows, int64_t n, int64_t causal_tq);

/// dx (rows, n) += y * (dy - sum(dy * y)) per row, from the saved output y.
template <typename T>
void softmax_backward(T* dx, const T* y, const T* dy, int64_t rows, int64_t n);

/// y (rows, n) = log_softmax of each row of x. y may alias x.
template <typename T>
void log_softmax_forward(T* y, const T* x, int64_t rows, int64_t n);

/// dx (rows, n) += dy - exp(y) * sum(dy) per row, from the saved output y.
template <typename T>
void log_softmax_backward(T* dx, const T* y, const T* dy, int64_t rows, int64_t n);

}  // namespace attograd::kernels
