// Scalar reference twins of layer_norm.h, written in the shape of llm.c's layernorm_forward /
// layernorm_backward: the specification, and the oracle for tests/kernels/layer_norm_test.cc.
#pragma once

#include <cmath>
#include <cstdint>
#include <vector>

namespace attograd::kernels::reference {

/// x, y: (rows, C); gamma, beta: (C); mean, rstd: (rows), saved for the backward.
template <typename T>
void layer_norm_forward(T* y, T* mean, T* rstd, const T* x, const T* gamma, const T* beta,
                        int64_t rows, int64_t C, T eps) {
  for (int64_t r = 0; r < rows; ++r) {
    const T* xr = x + r * C;
    T m = 0;
    for (int64_t c = 0; c < C; ++c) m += xr[c];
    m /= static_cast<T>(C);
    // Two passes: the variance of the centred values, never E[x^2] - E[x]^2.
    T v = 0;
    for (int64_t c = 0; c < C; ++c) v += (xr[c] - m) * (xr[c] - m);
    v /= static_cast<T>(C);
    const T s = T(1) / std::sqrt(v + eps);
    for (int64_t c = 0; c < C; ++c) y[r * C + c] = (xr[c] - m) * s * gamma[c] + beta[c];
    mean[r] = m;
    rstd[r] = s;
  }
}

/// dbeta += dy;  dgamma += dy * xhat;  g = dy * gamma;
/// dx += rstd * (g - mean(g) - xhat * mean(g * xhat)).  Any of dx, dgamma, dbeta may be null.
/// dgamma and dbeta get their sums over the rows added once, as the kernel adds them: from zero,
/// two calls then give exactly twice one (the accumulation tests/kernels/layer_norm_test.cc
/// checks), also where this twin is the double kernel itself (the WebAssembly build,
/// ATTOGRAD_KERNELS_F64_REFERENCE). Adding row by row into a gradient that already holds one
/// call's sum rounds differently.
template <typename T>
void layer_norm_backward(T* dx, T* dgamma, T* dbeta, const T* dy, const T* x, const T* mean,
                         const T* rstd, const T* gamma, int64_t rows, int64_t C) {
  std::vector<T> dgamma_sum(dgamma ? static_cast<size_t>(C) : 0);
  std::vector<T> dbeta_sum(dbeta ? static_cast<size_t>(C) : 0);
  for (int64_t r = 0; r < rows; ++r) {
    const T* xr = x + r * C;
    const T* dyr = dy + r * C;
    // the two row means the dx formula needs
    T g_mean = 0, g_xhat_mean = 0;
    for (int64_t c = 0; c < C; ++c) {
      const T xhat = (xr[c] - mean[r]) * rstd[r];
      const T g = dyr[c] * gamma[c];
      g_mean += g;
      g_xhat_mean += g * xhat;
    }
    g_mean /= static_cast<T>(C);
    g_xhat_mean /= static_cast<T>(C);
    for (int64_t c = 0; c < C; ++c) {
      const T xhat = (xr[c] - mean[r]) * rstd[r];
      const T g = dyr[c] * gamma[c];
      if (dbeta) dbeta_sum[c] += dyr[c];
      if (dgamma) dgamma_sum[c] += dyr[c] * xhat;
      if (dx) dx[r * C + c] += rstd[r] * (g - g_mean - xhat * g_xhat_mean);
    }
  }
  for (int64_t c = 0; c < C; ++c) {
    if (dbeta) dbeta[c] += dbeta_sum[c];
    if (dgamma) dgamma[c] += dgamma_sum[c];
  }
}

}  // namespace attograd::kernels::reference
