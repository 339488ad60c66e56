// Matrix multiply C (M, N) = op(A) (M, K) @ op(B) (K, N), where op is identity or transpose.
//
// One kernel serves the forward and both backward products, because the VJP of C = A B is
// dA = dC Bᵀ and dB = Aᵀ dC: the same product with the transpose flags flipped. The flags let
// a transposed VIEW (a Tensor whose last two strides are swapped) go straight in, no copy.
// Scalar reference twin: matmul_ref.h.
#pragma once

#include <cstdint>

namespace attograd::kernels {

/// C (M, N) = op(A) @ op(B) + bias, or C += op(A) @ op(B) + bias when accumulate is true.
///   a: row-major (M, K) when !a_trans, or row-major (K, M) when a_trans (A is its transpose).
///   b: row-major (K, N) when !b_trans, or row-major (N, K) when b_trans (the nn.Linear weight
///      layout: y = x Wᵀ reads W's rows contiguously).
///   c: row-major (M, N); must not alias a or b. K may be 0 (C = bias or 0, or C += bias).
///   bias: (N,) added to every row of the product, or null (the fused bias of nn.Linear).
/// Packed and cache-blocked (GotoBLAS/BLIS); C is split over the engine's threads
/// (thread_pool.h) when M * N * K is large enough to pay for one. Each C[i, j] is summed in blocks
/// of 256 k's in order, so the result is the same for any number of threads (but a K > 256 sum is
/// not the plain left-to-right sum of the reference twin: compare with a tolerance).
template <typename T>
void matmul(T* c, const T* a, const T* b, int64_t M, int64_t K, int64_t N, bool a_trans,
            bool b_trans, bool accumulate, const T* bias = nullptr);

}  // namespace attograd::kernels
