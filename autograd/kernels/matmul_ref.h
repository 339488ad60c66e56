// Scalar reference twin of matmul.h: the triple loop, with op(A) and op(B) read through their
// transposes when asked. The specification, and the oracle for tests/kernels/matmul_test.cc.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "autograd/kernels/bf16.h"
#include "autograd/kernels/gelu_ref.h"

namespace attograd::kernels::reference {

/// C (M, N) (+)= op(A) (M, K) @ op(B) (K, N) + bias (bias (N,) or null)
///
/// Each C(i, j) is summed k by k from 0 in T, then the bias added, then C's old value: the order
/// the kernels' portable paths keep. The loops run i, k, j over row-major copies of op(A) and
/// op(B) so that the innermost one walks a row of B and of the sums, contiguous (the compiler
/// may vectorise it across j, which leaves every element's order as it is): the i, j, k order
/// strides down B's columns, and at 1100 x 300 x 601 that made this oracle the matmul tests'
/// cost, and in the WebAssembly build, where it is the f64 kernel, the gradient checks'.
template <typename T>
void matmul(T* c, const T* a, const T* b, int64_t M, int64_t K, int64_t N, bool a_trans,
            bool b_trans, bool accumulate, const T* bias = nullptr) {
  std::vector<T> a_rows(static_cast<size_t>(M * K)), b_rows(static_cast<size_t>(K * N));
  for (int64_t i = 0; i < M; ++i)
    for (int64_t k = 0; k < K; ++k)
      a_rows[i * K + k] = a_trans ? a[k * M + i] : a[i * K + k];  // A stored (K, M) or (M, K)
  for (int64_t k = 0; k < K; ++k)
    for (int64_t j = 0; j < N; ++j)
      b_rows[k * N + j] = b_trans ? b[j * K + k] : b[k * N + j];  // B stored (N, K) or (K, N)
  std::vector<T> sums(static_cast<size_t>(N));
  for (int64_t i = 0; i < M; ++i) {
    std::fill(sums.begin(), sums.end(), T(0));
    for (int64_t k = 0; k < K; ++k) {
      const T a_ik = a_rows[i * K + k];
      const T* b_k = b_rows.data() + k * N;
      for (int64_t j = 0; j < N; ++j) sums[j] += a_ik * b_k[j];
    }
    for (int64_t j = 0; j < N; ++j) {
      T s = sums[j];
      if (bias != nullptr) s += bias[j];
      c[i * N + j] = accumulate ? c[i * N + j] + s : s;
    }
  }
}

/// matmul.h's matmul_bf16: every element of A and B rounded to the nearest bf16 (bf16.h), then
/// the f32 triple loop above: exact products, summed in f32 k by k; bias and C stay f32.
inline void matmul_bf16(float* c, const float* a, const float* b, int64_t M, int64_t K, int64_t N,
                        bool a_trans, bool b_trans, bool accumulate, const float* bias = nullptr) {
  std::vector<float> a_bf16(static_cast<size_t>(M * K)), b_bf16(static_cast<size_t>(K * N));
  for (size_t i = 0; i < a_bf16.size(); ++i) a_bf16[i] = round_to_bf16(a[i]);
  for (size_t i = 0; i < b_bf16.size(); ++i) b_bf16[i] = round_to_bf16(b[i]);
  matmul<float>(c, a_bf16.data(), b_bf16.data(), M, K, N, a_trans, b_trans, accumulate, bias);
}

/// y (n) = gelu(h) in place of h, and slope (n) = gelu'(h) when slope is not null: the epilogue
/// of matmul_gelu and matmul_bf16_gelu below.
template <typename T>
void gelu_epilogue(T* y, T* slope, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    if (slope != nullptr) slope[i] = gelu_slope(y[i]);
    gelu_forward(y + i, y + i, 1);
  }
}

/// matmul.h's matmul_gelu: the product above (with the bias), then y = gelu(h) and, when slope is
/// not null, slope = gelu'(h) (gelu_ref.h) on each element h.
template <typename T>
void matmul_gelu(T* y, T* slope, const T* a, const T* b, int64_t M, int64_t K, int64_t N,
                 bool a_trans, bool b_trans, const T* bias = nullptr) {
  matmul<T>(y, a, b, M, K, N, a_trans, b_trans, false, bias);
  gelu_epilogue(y, slope, M * N);
}

/// matmul.h's matmul_bf16_gelu: matmul_bf16 above, then GELU and its slope as matmul_gelu.
inline void matmul_bf16_gelu(float* y, float* slope, const float* a, const float* b, int64_t M,
                             int64_t K, int64_t N, bool a_trans, bool b_trans,
                             const float* bias = nullptr) {
  matmul_bf16(y, a, b, M, K, N, a_trans, b_trans, false, bias);
  gelu_epilogue(y, slope, M * N);
}

}  // namespace attograd::kernels::reference
