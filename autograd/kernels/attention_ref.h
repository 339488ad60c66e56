// Scalar reference twin of attention.h: the formulas written out with the (Tq, Tk) weights of
// each head in a plain matrix. The specification, and the oracle for
// tests/kernels/attention_test.cc.
#pragma once

#include <cmath>
#include <cstdint>
#include <vector>

#include "autograd/kernels/attention.h"

namespace attograd::kernels::reference {

/// Element (b, h, t, d) of a strided (B, NH, T, HS) operand.
inline int64_t head_index(const HeadStrides& s, int64_t b, int64_t h, int64_t t, int64_t d) {
  return b * s.batch + h * s.head + t * s.time + d;
}

/// p (Tq, Tk) of head (b, h): softmax over the visible keys of the scaled scores, 0 where masked;
/// lse_t of each row when lse is not null.
template <typename T>
std::vector<T> attention_weights(const T* q, HeadStrides qs, const T* k, HeadStrides ks,
                                 const AttentionDims& n, int64_t b, int64_t h, T* lse = nullptr) {
  const T scale = T(1) / std::sqrt(static_cast<T>(n.HS));
  std::vector<T> p(static_cast<size_t>(n.Tq * n.Tk), T(0));
  for (int64_t t = 0; t < n.Tq; ++t) {
    const int64_t visible = t + n.Tk - n.Tq + 1;
    T m = -INFINITY;
    for (int64_t j = 0; j < visible; ++j) {
      T s = 0;
      for (int64_t d = 0; d < n.HS; ++d)
        s += q[head_index(qs, b, h, t, d)] * k[head_index(ks, b, h, j, d)];
      p[t * n.Tk + j] = s * scale;
      m = std::max(m, p[t * n.Tk + j]);
    }
    T sum = 0;
    for (int64_t j = 0; j < visible; ++j) sum += p[t * n.Tk + j] = std::exp(p[t * n.Tk + j] - m);
    for (int64_t j = 0; j < visible; ++j) p[t * n.Tk + j] /= sum;
    if (lse != nullptr) lse[(b * n.NH + h) * n.Tq + t] = m + std::log(sum);
  }
  return p;
}

/// y = p v per head (attention.h), lse of every row.
template <typename T>
void attention_forward(T* y, HeadStrides ys, T* lse, const T* q, HeadStrides qs, const T* k,
                       HeadStrides ks, const T* v, HeadStrides vs, const AttentionDims& n) {
  for (int64_t b = 0; b < n.B; ++b)
    for (int64_t h = 0; h < n.NH; ++h) {
      const std::vector<T> p = attention_weights(q, qs, k, ks, n, b, h, lse);
      for (int64_t t = 0; t < n.Tq; ++t)
        for (int64_t d = 0; d < n.HS; ++d) {
          T acc = 0;
          for (int64_t j = 0; j < n.Tk; ++j) acc += p[t * n.Tk + j] * v[head_index(vs, b, h, j, d)];
          y[head_index(ys, b, h, t, d)] = acc;
        }
    }
}

/// The VJP (attention.h) with p recomputed as a matrix: dv += pᵀ dy; dp = dy vᵀ;
/// ds = p (dp - rowsum(dp p)); dq += ds k / sqrt(HS); dk += dsᵀ q / sqrt(HS), each gradient read
/// or written through its strides in g. (rowsum(dp p) = dy_t . y_t, the D of attention.h.)
template <typename T>
void attention_backward(T* dq, T* dk, T* dv, const T* dy, const AttentionGradStrides& g,
                        const T* /* y */, HeadStrides /* ys */, const T* /* lse */, const T* q,
                        HeadStrides qs, const T* k, HeadStrides ks, const T* v, HeadStrides vs,
                        const AttentionDims& n, bool accumulate = true) {
  const T scale = T(1) / std::sqrt(static_cast<T>(n.HS));
  for (int64_t b = 0; b < n.B; ++b)
    for (int64_t h = 0; h < n.NH; ++h) {
      if (!accumulate)  // written: the head's rows start from zero
        for (int64_t d = 0; d < n.HS; ++d) {
          for (int64_t t = 0; t < n.Tq && dq != nullptr; ++t) dq[head_index(g.dq, b, h, t, d)] = 0;
          for (int64_t j = 0; j < n.Tk; ++j) {
            if (dk != nullptr) dk[head_index(g.dk, b, h, j, d)] = 0;
            if (dv != nullptr) dv[head_index(g.dv, b, h, j, d)] = 0;
          }
        }
      const std::vector<T> p = attention_weights(q, qs, k, ks, n, b, h);
      for (int64_t t = 0; t < n.Tq; ++t) {
        std::vector<T> dp(static_cast<size_t>(n.Tk), T(0));
        T dot = 0;  // sum_j dp_tj p_tj
        for (int64_t j = 0; j < n.Tk; ++j) {
          for (int64_t d = 0; d < n.HS; ++d)
            dp[j] += dy[head_index(g.dy, b, h, t, d)] * v[head_index(vs, b, h, j, d)];
          dot += dp[j] * p[t * n.Tk + j];
        }
        for (int64_t j = 0; j < n.Tk; ++j) {
          const T pj = p[t * n.Tk + j], ds = pj * (dp[j] - dot);
          for (int64_t d = 0; d < n.HS; ++d) {
            if (dv != nullptr)
              dv[head_index(g.dv, b, h, j, d)] += pj * dy[head_index(g.dy, b, h, t, d)];
            if (dq != nullptr)
              dq[head_index(g.dq, b, h, t, d)] += ds * k[head_index(ks, b, h, j, d)] * scale;
            if (dk != nullptr)
              dk[head_index(g.dk, b, h, j, d)] += ds * q[head_index(qs, b, h, t, d)] * scale;
          }
        }
      }
    }
}

}  // namespace attograd::kernels::reference
