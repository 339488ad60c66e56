// Scalar reference twins of reduce.h: the specification of the axis reductions as plain loops
// over the (outer, n, inner) view, and the oracle for tests/kernels/reduce_test.cc.
#pragma once

#include <cmath>
#include <cstdint>

namespace attograd::kernels::reference {

/// out[o, j] (+)= sum_k x[o, k, j]
template <typename T>
void sum_axis(T* out, const T* x, int64_t outer, int64_t n, int64_t inner, bool accumulate) {
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t j = 0; j < inner; ++j) {
      T s = 0;
      for (int64_t k = 0; k < n; ++k) s += x[(o * n + k) * inner + j];
      out[o * inner + j] = accumulate ? out[o * inner + j] + s : s;
    }
  }
}

/// out[o, j] = max_k x[o, k, j]; argmax[o, j] = the first k attaining it. A NaN beats every
/// number, so a slice holding NaN has max NaN and argmax the index of its first NaN.
template <typename T>
void max_axis(T* out, int64_t* argmax, const T* x, int64_t outer, int64_t n, int64_t inner) {
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t j = 0; j < inner; ++j) {
      const T* xs = x + o * n * inner + j;  // xs[k * inner] = x[o, k, j]
      T best = xs[0];
      int64_t best_k = 0;
      for (int64_t k = 1; k < n && !std::isnan(best); ++k) {
        const T v = xs[k * inner];
        if (v > best || std::isnan(v)) {  // strictly greater: ties keep the first index
          best = v;
          best_k = k;
        }
      }
      out[o * inner + j] = best;
      argmax[o * inner + j] = best_k;
    }
  }
}

/// dx[o, k, j] += alpha * dy[o, j]
template <typename T>
void broadcast_axis_acc(T* dx, const T* dy, T alpha, int64_t outer, int64_t n, int64_t inner) {
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t k = 0; k < n; ++k)
      for (int64_t j = 0; j < inner; ++j) dx[(o * n + k) * inner + j] += alpha * dy[o * inner + j];
}

/// sum_i x[i], every term and partial sum in double.
template <typename T>
double sum_all_double(const T* x, int64_t n) {
  double s = 0;
  for (int64_t i = 0; i < n; ++i) s += static_cast<double>(x[i]);
  return s;
}

}  // namespace attograd::kernels::reference
