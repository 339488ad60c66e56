// Scalar reference twin of matmul.h: the triple loop, with op(A) and op(B) read through their
// transposes when asked. The specification, and the oracle for tests/kernels/matmul_test.cc.
#pragma once

#include <cstdint>
#include <vector>

#include "autograd/kernels/bf16.h"

namespace attograd::kernels::reference {

/// C (M, N) (+)= op(A) (M, K) @ op(B) (K, N) + bias (bias (N,) or null)
template <typename T>
void matmul(T* c, const T* a, const T* b, int64_t M, int64_t K, int64_t N, bool a_trans,
            bool b_trans, bool accumulate, const T* bias = nullptr) {
  for (int64_t i = 0; i < M; ++i) {
    for (int64_t j = 0; j < N; ++j) {
      T s = 0;
      for (int64_t k = 0; k < K; ++k) {
        const T a_ik = a_trans ? a[k * M + i] : a[i * K + k];  // A stored (K, M) or (M, K)
        const T b_kj = b_trans ? b[j * K + k] : b[k * N + j];  // B stored (N, K) or (K, N)
        s += a_ik * b_kj;
      }
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

}  // namespace attograd::kernels::reference
