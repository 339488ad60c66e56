// Layer normalisation over the last axis (Ba, Kiros, Hinton 2016; GPT-2 uses it pre-block).
//
//   mean = (1/C) sum x,  var = (1/C) sum (x - mean)^2  (biased, two passes: never E[x²]-E[x]²,
//   which cancels catastrophically at a large mean),  rstd = 1/sqrt(var + eps)
//   xhat = (x - mean) * rstd,  y = gamma * xhat + beta
// VJP (as in llm.c's layernorm_backward), per row:
//   dbeta += dy;  dgamma += dy * xhat;  g = dy * gamma
//   dx += rstd * (g - mean(g) - xhat * mean(g * xhat))
// Scalar reference twins: layer_norm_ref.h.
#pragma once

#include <cstdint>

namespace attograd::kernels {

/// x, y: (rows, C); gamma, beta: (C); writes the per-row mean and rstd (rows), which the
/// backward reuses. y must not alias x.
template <typename T>
void layer_norm_forward(T* y, T* mean, T* rstd, const T* x, const T* gamma, const T* beta,
                        int64_t rows, int64_t C, T eps);

/// Accumulates dx (rows, C), dgamma (C), dbeta (C); any of the three may be null when that
/// gradient is not needed.
template <typename T>
void layer_norm_backward(T* dx, T* dgamma, T* dbeta, const T* dy, const T* x, const T* mean,
                         const T* rstd, const T* gamma, int64_t rows, int64_t C);

}  // namespace attograd::kernels
