// Fused causal scaled dot-product attention (Vaswani et al. 2017, eq. 1, with GPT's causal mask),
// forward and backward, one (batch, head) pair at a time. Shapes: B batch, NH heads, Tq queries,
// Tk keys (Tq <= Tk: query t sees keys j <= t + Tk - Tq, which lines the queries up with the last
// Tq keys, as when a KV cache holds the first Tk - Tq), HS = head_dim = d_k.
//
//   s_tj = q_t . k_j / sqrt(HS)                         (j <= t + Tk - Tq; masked otherwise)
//   p_tj = exp(s_tj - lse_t),  lse_t = log sum_j exp(s_tj)
//   y_t  = sum_j p_tj v_j
//
// The (Tq, Tk) weights p are never stored: the forward keeps only lse (B, NH, Tq), one number per
// query, and the backward recomputes each row of p from it (the recomputation of FlashAttention,
// Dao et al. 2022). Rows are computed one query at a time against the keys it can see, so the
// masked half of the square is never computed.
//
// Operands are read through strides (HeadStrides): the head-split q, k, v of a GPT are views of
// the (B, T, 3 C) output of c_attn, and the output y is written in (B, T, NH, HS) order, so that
// merging the heads back into (B, T, C) is a view too. The last axis (HS) is always contiguous.
// Scalar reference twin: attention_ref.h.
#pragma once

#include <cstdint>

namespace attograd::kernels {

/// Strides, in elements, of a (B, NH, T, HS) operand whose HS axis is contiguous.
struct HeadStrides {
  int64_t batch, head, time;
};

/// The strides of a contiguous (B, NH, T, HS) buffer.
inline HeadStrides contiguous_heads(int64_t NH, int64_t T, int64_t HS) {
  return {NH * T * HS, T * HS, HS};
}

/// Sizes of one attention call.
struct AttentionDims {
  int64_t B, NH, Tq, Tk, HS;
};

/// Where attention_backward reads dy (B, NH, Tq, HS) and adds dq (B, NH, Tq, HS), dk and dv
/// (B, NH, Tk, HS): contiguous buffers (contiguous_heads), or the head-split views of one
/// (B, T, 3 C) gradient, so that a packed q, k, v gets its gradient in place.
struct AttentionGradStrides {
  HeadStrides dy, dq, dk, dv;
};

/// y (B, NH, Tq, HS) = causal attention of q (B, NH, Tq, HS) over k, v (B, NH, Tk, HS); lse
/// (B, NH, Tq), contiguous, receives each query's log-sum-exp of its scaled scores (what the
/// backward needs). Requires 1 <= Tq <= Tk and HS >= 1. y must not alias q, k or v.
template <typename T>
void attention_forward(T* y, HeadStrides y_strides, T* lse, const T* q, HeadStrides q_strides,
                       const T* k, HeadStrides k_strides, const T* v, HeadStrides v_strides,
                       const AttentionDims& dims);

/// The VJP of attention_forward, ACCUMULATED into dq (B, NH, Tq, HS), dk, dv (B, NH, Tk, HS) (any
/// of them may be null when that gradient is not needed; dq, dk, dv must not overlap each other),
/// or written when !accumulate (their old contents not read: the first gradient of a GPT's qkv,
/// GradBuffers::first_write in engine.h),
/// from dy (B, NH, Tq, HS), each with its strides in grad_strides, and the forward's inputs,
/// output y and lse:
///   D_t = dy_t . y_t;  ds_tj = p_tj (dy_t . v_j - D_t)
///   dq_t += sum_j ds_tj k_j / sqrt(HS);  dk_j += sum_t ds_tj q_t / sqrt(HS);
///   dv_j += sum_t p_tj dy_t
template <typename T>
void attention_backward(T* dq, T* dk, T* dv, const T* dy, const AttentionGradStrides& grad_strides,
                        const T* y, HeadStrides y_strides, const T* lse, const T* q,
                        HeadStrides q_strides, const T* k, HeadStrides k_strides, const T* v,
                        HeadStrides v_strides, const AttentionDims& dims, bool accumulate = true);

}  // namespace attograd::kernels
