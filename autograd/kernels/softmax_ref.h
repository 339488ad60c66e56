// Scalar reference twins of softmax.h: softmax, its causal (masked) variant and log-softmax
// over the last axis of x (rows, n), as plain loops. The oracle for tests/kernels/softmax_test.cc.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

namespace attograd::kernels::reference {

/// How many leading entries of row r a causal softmax sees: row r is query t = r % Tq and sees
/// keys j <= t + (n - Tq), i.e. t + n - Tq + 1 of them, clipped to [0, n]. Without a mask
/// (causal_tq = 0) every entry is visible. A row that sees no key (only possible when Tq > n)
/// comes out all zeros.
inline int64_t softmax_visible(int64_t r, int64_t n, int64_t causal_tq) {
  if (causal_tq == 0) return n;
  return std::clamp<int64_t>(r % causal_tq + n - causal_tq + 1, 0, n);
}

template <typename T>
void softmax_forward(T* y, const T* x, int64_t rows, int64_t n, int64_t causal_tq) {
  for (int64_t r = 0; r < rows; ++r) {
    const T* xr = x + r * n;
    T* yr = y + r * n;
    const int64_t visible = softmax_visible(r, n, causal_tq);
    // m = max of the visible entries; exp(x - m) <= 1 cannot overflow and the largest is 1.
    T m = -std::numeric_limits<T>::infinity();
    for (int64_t j = 0; j < visible; ++j) m = std::max(m, xr[j]);
    T sum = 0;
    for (int64_t j = 0; j < visible; ++j) {
      yr[j] = std::exp(xr[j] - m);
      sum += yr[j];
    }
    const T inv_sum = T(1) / sum;
    for (int64_t j = 0; j < visible; ++j) yr[j] *= inv_sum;
    for (int64_t j = visible; j < n; ++j) yr[j] = 0;  // masked: probability exactly 0
  }
}

/// dx += y * (dy - sum_k dy_k y_k)
template <typename T>
void softmax_backward(T* dx, const T* y, const T* dy, int64_t rows, int64_t n) {
  for (int64_t r = 0; r < rows; ++r) {
    const T* yr = y + r * n;
    const T* dyr = dy + r * n;
    T dot = 0;
    for (int64_t j = 0; j < n; ++j) dot += dyr[j] * yr[j];
    for (int64_t j = 0; j < n; ++j) dx[r * n + j] += yr[j] * (dyr[j] - dot);
  }
}

/// y = (x - m) - log(sum_k exp(x_k - m))
template <typename T>
void log_softmax_forward(T* y, const T* x, int64_t rows, int64_t n) {
  for (int64_t r = 0; r < rows; ++r) {
    const T* xr = x + r * n;
    T m = -std::numeric_limits<T>::infinity();
    for (int64_t j = 0; j < n; ++j) m = std::max(m, xr[j]);
    T sum = 0;
    for (int64_t j = 0; j < n; ++j) sum += std::exp(xr[j] - m);
    const T log_sum = std::log(sum);
    for (int64_t j = 0; j < n; ++j) y[r * n + j] = (xr[j] - m) - log_sum;
  }
}

/// dx += dy - exp(y) * sum_k dy_k
template <typename T>
void log_softmax_backward(T* dx, const T* y, const T* dy, int64_t rows, int64_t n) {
  for (int64_t r = 0; r < rows; ++r) {
    const T* dyr = dy + r * n;
    T sum = 0;
    for (int64_t j = 0; j < n; ++j) sum += dyr[j];
    for (int64_t j = 0; j < n; ++j) dx[r * n + j] += dyr[j] - std::exp(y[r * n + j]) * sum;
  }
}

}  // namespace attograd::kernels::reference
