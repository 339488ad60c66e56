// Fused causal attention, forward and backward (attention.h), SIMD through Highway with runtime
// dispatch. The scalar specification is attention_ref.h; see elementwise.cc for how the
// per-target compilation works.
//
// One (batch, head) pair is one unit of work, done whole by one thread: it copies its keys and
// values transposed, kᵀ and vᵀ (HS, Tk), into a per-thread scratch, so that a query's scores
// against all the keys it can see are vectors along the key axis j:
//
//   s_j = scale * sum_d q_d kᵀ[d, j]            (HS multiply-adds per vector of keys)
//
// whatever HS is (2 in the lecture's pico model, 64 in GPT-2). The sums over keys that make a
// vector of HS outputs (y_t = sum_j p_j v_j, dq_t = sum_j ds_j k_j) run along d, over rows of v
// or k, when HS fills a vector; for a smaller HS they are HS dot products along j instead.
// Gradients of k and v build up transposed in the scratch (dkᵀ, dvᵀ), again along j, and are
// added into dk and dv once per head.
#include "autograd/kernels/attention.h"

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <tuple>
#include <utility>

#include "autograd/kernels/dispatch.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "autograd/kernels/attention.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "autograd/kernels/simd-inl.h"

HWY_BEFORE_NAMESPACE();
namespace attograd::kernels::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// This file's own helpers and kernel bodies get internal linkage (the shared ones come from
// simd-inl.h); only the exported names at the end are visible outside.
namespace {

// A second thread pays from about 32k multiply-adds of scores (B NH Tq Tk HS) on.
constexpr int64_t kParallelMinWork = 32768;

// The per-thread scratch of one head (thread_scratch tag): kᵀ, vᵀ, and in the backward dkᵀ,
// dvᵀ, plus a row or two of weights.
struct HeadScratch {};

// The operand rows of one head: row t of (b, h) starts at base + t * time.
template <typename T>
struct Rows {
  T* base;
  int64_t time;
  T* operator[](int64_t t) const { return base + t * time; }
};

template <typename T>
Rows<T> head_rows(T* data, HeadStrides s, int64_t b, int64_t h) {
  return {data + b * s.batch + h * s.head, s.time};
}

// ---- Register tiles ------------------------------------------------------------------------------
// A GPT's heads are small (HS 2 to 128, T up to 1024), so attention is many small products, each
// a register tile (simd-inl.h) of kR query rows by up to kTileVectors vectors, like the matmul
// micro-kernel: every load of kᵀ, vᵀ, v or k is shared by the kR rows.

// Query rows per block.
constexpr int64_t kR = 4;

// out[r, j] = scale * sum_c a_r[c] xt[c, j] for r < kR and j < n rounded up to whole vectors:
// the scores of a block of queries (a = q rows, xt = kᵀ) or their dp (a = dy rows, xt = vᵀ).
// xt's rows (stride ld) and out's (stride ld) are padded to whole vectors.
template <typename T>
void rows_by_columns(T* out, const T* const* a, const T* xt, int64_t ld, int64_t n, int64_t HS, T scale) {
  for_each_tile<T>(n, false, [&]<int NV>(auto d, int64_t j) HWY_ATTR {
    const int64_t N = static_cast<int64_t>(hn::Lanes(d));
    outer_product_tile<kR, NV>(
        d, HS, [&](int64_t r, int64_t c) { return a[r][c]; }, [&](int64_t c) { return xt + c * ld + j; },
        [&](int64_t r, int v, auto acc) HWY_ATTR {
          hn::StoreU(hn::Mul(acc, hn::Set(d, scale)), d, out + r * ld + j + v * N);
        });
  });
}

// out_r[c] (+)= scale * sum_{j < n} w[r, j] x_j[c] for r < rows, c < HS: y = p v, or dq += ds k.
// When HS fills a vector, tiles run along c over the rows x_j; for a smaller HS, each out_r[c]
// is a dot product along j with the transposed copy xt (HS, ld).
template <typename T>
void mix_rows(T* const* out, int64_t rows, const T* w, int64_t ld, int64_t n, Rows<const T> x, const T* xt,
              int64_t HS, T scale, bool accumulate) {
  const hn::ScalableTag<T> full;
  if (HS < static_cast<int64_t>(hn::Lanes(full))) {
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < HS; ++c) {
        const T s = scale * sum_of<T>(n, [&](auto d, int64_t j) HWY_ATTR {
          return hn::Mul(hn::LoadU(d, w + r * ld + j), hn::LoadU(d, xt + c * ld + j));
        });
        out[r][c] = accumulate ? out[r][c] + s : s;
      }
    return;
  }
  for_each_tile<T>(HS, true, [&]<int NV>(auto d, int64_t c) HWY_ATTR {
    const int64_t N = static_cast<int64_t>(hn::Lanes(d));
    outer_product_tile<kR, NV>(
        d, n, [&](int64_t r, int64_t j) { return w[r * ld + j]; }, [&](int64_t j) { return x[j] + c; },
        [&](int64_t r, int v, auto acc) HWY_ATTR {
          if (r >= rows) return;
          T* o = out[r] + c + v * N;
          const auto scaled = hn::Mul(acc, hn::Set(d, scale));
          hn::StoreU(accumulate ? hn::Add(hn::LoadU(d, o), scaled) : scaled, d, o);
        });
  });
}

// xt[c, j] += scale * sum_{r < rows} a_r[c] w[r, j] for c < HS and j < n rounded up to whole
// vectors: a block's contribution to dkᵀ (a = q rows, w = ds) or dvᵀ (a = dy rows, w = p).
template <typename T>
void add_outer(T* xt, int64_t ld, const T* const* a, int64_t rows, T scale, const T* w, int64_t n, int64_t HS) {
  const hn::ScalableTag<T> d;
  const int64_t N = static_cast<int64_t>(hn::Lanes(d));
  for (int64_t c = 0; c < HS; ++c) {
    T coef[kR] = {};
    for (int64_t r = 0; r < rows; ++r) coef[r] = scale * a[r][c];
    T* row = xt + c * ld;
    for (int64_t j = 0; j < n; j += N) {
      auto acc = hn::LoadU(d, row + j);
      for (int64_t r = 0; r < kR; ++r) acc = hn::MulAdd(hn::Set(d, coef[r]), hn::LoadU(d, w + r * ld + j), acc);
      hn::StoreU(acc, d, row + j);
    }
  }
}

// ---- Heads -------------------------------------------------------------------------------------

// The transposed copies of one head's keys and values: xᵀ (HS, ld), ld = Tk rounded up to whole
// vectors, the padding columns zero (so that tiles may run past Tk and read zeros).
template <typename T>
void transpose_rows(T* xt, int64_t ld, Rows<const T> x, int64_t Tk, int64_t HS) {
  for (int64_t j = 0; j < Tk; ++j) {
    const T* row = x[j];
    for (int64_t c = 0; c < HS; ++c) xt[c * ld + j] = row[c];
  }
  for (int64_t c = 0; c < HS; ++c) std::fill(xt + c * ld + Tk, xt + (c + 1) * ld, T(0));
}

// A block of up to kR queries t0 .. t0 + rows - 1: the row pointers of an operand (the missing
// rows of a short last block repeat the last real one; their results are dropped), and how many
// keys the block's last query sees.
template <typename T>
struct QueryBlock {
  int64_t t0, rows, keys;
  QueryBlock(int64_t t, const AttentionDims& n) : t0(t), rows(std::min(kR, n.Tq - t)), keys(t + rows + n.Tk - n.Tq) {}
  int64_t visible(int64_t r) const { return keys - (rows - 1 - r); }  // keys j <= t0 + r + Tk - Tq
  template <typename U>
  void pointers(const U** out, Rows<const U> x) const {
    for (int64_t r = 0; r < kR; ++r) out[r] = x[t0 + std::min(r, rows - 1)];
  }
};

// Runs body(b, h) for every head, spread over threads when the problem is large enough.
template <class Body>
void for_each_head(const AttentionDims& n, const Body& body) {
  const int64_t heads = n.B * n.NH;
  for_range(heads, heads * n.Tq * n.Tk * n.HS >= kParallelMinWork, [&](int64_t i) HWY_ATTR {
    body(i / n.NH, i % n.NH);
  });
}

// Keys rounded up to whole vectors: the row stride of the scratch matrices.
template <typename T>
int64_t padded_keys(int64_t Tk) {
  const int64_t N = static_cast<int64_t>(hn::Lanes(hn::ScalableTag<T>()));
  return (Tk + N - 1) / N * N;
}

// ---- Heads narrower than a vector: queries in the lanes ------------------------------------------
// With HS below a vector (the lecture's femto and pico heads have 2 channels) every query row of
// the blocked forward is a few lanes of work wrapped in horizontal reductions: a max, a sum and
// a dot per channel. Here a vector holds V queries instead and the loop runs over keys: a key
// costs HS multiply-adds for the V scores, a max, an exp and HS multiply-adds for the outputs,
// and nothing is summed across lanes. (The backward keeps the blocked form: its gradients of
// k and v are sums over queries, which lanes of queries would turn back into reductions.)
struct LaneScratch {};

// One head's y and lse, queries t0 .. t0 + V - 1 at a time.
template <typename T>
void forward_query_lanes(Rows<T> yr, T* lse_h, Rows<const T> qr, Rows<const T> kr, Rows<const T> vr,
                         const AttentionDims& n, T scale) {
  const hn::ScalableTag<T> d;
  const int64_t V = static_cast<int64_t>(hn::Lanes(d)), HS = n.HS, offset = n.Tk - n.Tq;
  T* qt = thread_scratch<T, LaneScratch>(static_cast<size_t>((2 * HS + n.Tk) * V));  // qᵀ (HS, V)
  T* acc = qt + HS * V;                                                              // (HS, V)
  T* scores = acc + HS * V;                                                          // (Tk, V)
  const auto lane = hn::Iota(d, T(0));
  HWY_ALIGN T out[hn::MaxLanes(decltype(d)())];
  for (int64_t t0 = 0; t0 < n.Tq; t0 += V) {
    const int64_t rows = std::min(V, n.Tq - t0), keys = std::min(n.Tk, t0 + rows + offset);
    for (int64_t c = 0; c < HS; ++c)
      for (int64_t l = 0; l < V; ++l) qt[c * V + l] = l < rows ? qr[t0 + l][c] : T(0);
    // pass 1: the scaled scores of each key for the V queries, -inf where a query may not see
    // it (lane l sees key j <= t0 + l + offset), and their running max
    auto m = hn::Set(d, -std::numeric_limits<T>::infinity());
    for (int64_t j = 0; j < keys; ++j) {
      auto s = hn::Zero(d);
      for (int64_t c = 0; c < HS; ++c) s = hn::MulAdd(hn::Load(d, qt + c * V), hn::Set(d, kr[j][c]), s);
      s = hn::IfThenElse(hn::Ge(lane, hn::Set(d, static_cast<T>(j - t0 - offset))), hn::Mul(s, hn::Set(d, scale)),
                         hn::Set(d, -std::numeric_limits<T>::infinity()));
      hn::Store(s, d, scores + j * V);
      m = hn::Max(m, s);
    }
    // pass 2: e_j = exp(s_j - m), their sum, and sum_j e_j v_j
    auto sum = hn::Zero(d);
    std::fill(acc, acc + HS * V, T(0));
    for (int64_t j = 0; j < keys; ++j) {
      const auto e = exp_nonpositive(d, hn::Sub(hn::Load(d, scores + j * V), m));
      sum = hn::Add(sum, e);
      for (int64_t c = 0; c < HS; ++c)
        hn::Store(hn::MulAdd(e, hn::Set(d, vr[j][c]), hn::Load(d, acc + c * V)), d, acc + c * V);
    }
    // y_t = that sum / sum e;  lse_t = m + log(sum e)
    hn::Store(hn::Add(m, hn::Log(d, sum)), d, out);
    for (int64_t l = 0; l < rows; ++l) lse_h[t0 + l] = out[l];
    const auto inv = hn::Div(hn::Set(d, T(1)), sum);
    for (int64_t c = 0; c < HS; ++c) {
      hn::Store(hn::Mul(hn::Load(d, acc + c * V), inv), d, out);
      for (int64_t l = 0; l < rows; ++l) yr[t0 + l][c] = out[l];
    }
  }
}

// The backward of a head narrower than a vector. The first pass runs over keys with the queries
// in the lanes, as the forward: it recomputes each key's weights p and their gradient ds for V
// queries at once and adds ds_tj k_j into dq_t, all without a reduction. dk and dv are sums over
// queries, so the weights are then turned around (a small transpose) into rows along the keys,
// and dkᵀ += qᵀ ds and dvᵀ += dyᵀ p run along j with add_outer, as in the blocked backward.
template <typename T>
void backward_query_lanes(Rows<T> dqr, T* dkt, T* dvt, int64_t ld, Rows<const T> dyr, Rows<const T> yr,
                          const T* lse_h, Rows<const T> qr, Rows<const T> kr, Rows<const T> vr, const AttentionDims& n,
                          T scale, bool want_dq) {
  const hn::ScalableTag<T> d;
  const int64_t V = static_cast<int64_t>(hn::Lanes(d)), HS = n.HS, offset = n.Tk - n.Tq;
  const int64_t V_rows = (V + kR - 1) / kR * kR;  // rows of the turned-around weights: whole groups of kR
  T* qt = thread_scratch<T, LaneScratch>(static_cast<size_t>(3 * HS * V + 2 * n.Tk * V + 2 * V_rows * ld));
  T* dyt = qt + HS * V;      // dyᵀ (HS, V)
  T* dqt = dyt + HS * V;     // dqᵀ (HS, V)
  T* pt = dqt + HS * V;      // pᵀ (Tk, V): key j's weights for the V queries
  T* dst = pt + n.Tk * V;    // dsᵀ (Tk, V)
  T* p_rows = dst + n.Tk * V;  // p and ds (V_rows, ld): one row per query, along the keys
  T* ds_rows = p_rows + V_rows * ld;
  const auto lane = hn::Iota(d, T(0));
  HWY_ALIGN T tmp[hn::MaxLanes(decltype(d)())];
  for (int64_t t0 = 0; t0 < n.Tq; t0 += V) {
    const int64_t rows = std::min(V, n.Tq - t0), keys = std::min(n.Tk, t0 + rows + offset);
    for (int64_t c = 0; c < HS; ++c)
      for (int64_t l = 0; l < V; ++l) {
        qt[c * V + l] = l < rows ? qr[t0 + l][c] : T(0);
        dyt[c * V + l] = l < rows ? dyr[t0 + l][c] : T(0);
      }
    // D_t = dy_t . y_t;  lse_t (0 past the last query, whose lanes are masked anyway)
    for (int64_t l = 0; l < V; ++l) {
      T dot = 0;
      if (l < rows)
        for (int64_t c = 0; c < HS; ++c) dot += dyr[t0 + l][c] * yr[t0 + l][c];
      tmp[l] = dot;
    }
    const auto D = hn::Load(d, tmp);
    for (int64_t l = 0; l < V; ++l) tmp[l] = l < rows ? lse_h[t0 + l] : T(0);
    const auto lse_t = hn::Load(d, tmp);
    std::fill(dqt, dqt + HS * V, T(0));
    const auto real = hn::Lt(lane, hn::Set(d, static_cast<T>(rows)));
    for (int64_t j = 0; j < keys; ++j) {
      auto s = hn::Zero(d), dp = hn::Zero(d);
      for (int64_t c = 0; c < HS; ++c) {
        s = hn::MulAdd(hn::Load(d, qt + c * V), hn::Set(d, kr[j][c]), s);
        dp = hn::MulAdd(hn::Load(d, dyt + c * V), hn::Set(d, vr[j][c]), dp);
      }
      // p = exp(s - lse) where lane l sees key j (j <= t0 + l + offset) and is a real query
      const auto seen = hn::And(real, hn::Ge(lane, hn::Set(d, static_cast<T>(j - t0 - offset))));
      const auto p = hn::IfThenElseZero(seen, exp_nonpositive(d, hn::Sub(hn::Mul(s, hn::Set(d, scale)), lse_t)));
      const auto ds = hn::Mul(p, hn::Sub(dp, D));
      hn::Store(p, d, pt + j * V);
      hn::Store(ds, d, dst + j * V);
      for (int64_t c = 0; c < HS; ++c)
        hn::Store(hn::MulAdd(ds, hn::Set(d, scale * kr[j][c]), hn::Load(d, dqt + c * V)), d, dqt + c * V);
    }
    if (want_dq)
      for (int64_t c = 0; c < HS; ++c)
        for (int64_t l = 0; l < rows; ++l) dqr[t0 + l][c] += dqt[c * V + l];
    // p and ds turned around into rows along the keys (zero past `keys` and past the last query)
    std::fill(p_rows, p_rows + 2 * V_rows * ld, T(0));
    for (int64_t j = 0; j < keys; ++j)
      for (int64_t l = 0; l < rows; ++l) {
        p_rows[l * ld + j] = pt[j * V + l];
        ds_rows[l * ld + j] = dst[j * V + l];
      }
    // dkᵀ += scale qᵀ ds;  dvᵀ += dyᵀ p, kR queries at a time
    for (int64_t r0 = 0; r0 < rows; r0 += kR) {
      const int64_t r_rows = std::min(kR, rows - r0);
      const T *q_rows[kR], *dy_rows[kR];
      for (int64_t r = 0; r < kR; ++r) {
        q_rows[r] = qr[t0 + r0 + std::min(r, r_rows - 1)];
        dy_rows[r] = dyr[t0 + r0 + std::min(r, r_rows - 1)];
      }
      if (dkt != nullptr) add_outer(dkt, ld, q_rows, r_rows, scale, ds_rows + r0 * ld, keys, HS);
      if (dvt != nullptr) add_outer(dvt, ld, dy_rows, r_rows, T(1), p_rows + r0 * ld, keys, HS);
    }
  }
}

template <typename T>
void attention_forward_impl(T* y, HeadStrides ys, T* lse, const T* q, HeadStrides qs, const T* k, HeadStrides ks,
                            const T* v, HeadStrides vs, const AttentionDims& n) {
  const T scale = T(1) / std::sqrt(static_cast<T>(n.HS));
  const int64_t HS = n.HS, ld = padded_keys<T>(n.Tk);
  const bool lanes = HS < static_cast<int64_t>(hn::Lanes(hn::ScalableTag<T>())) && HWY_TARGET != HWY_SCALAR;
  for_each_head(n, [&](int64_t b, int64_t h) HWY_ATTR {
    if (lanes) {
      return forward_query_lanes(head_rows(y, ys, b, h), lse + (b * n.NH + h) * n.Tq, head_rows(q, qs, b, h),
                                 head_rows(k, ks, b, h), head_rows(v, vs, b, h), n, scale);
    }
    T* kt = thread_scratch<T, HeadScratch>(static_cast<size_t>((2 * HS + kR) * ld));
    T* vt = kt + HS * ld;  // read only when HS is smaller than a vector
    T* p = vt + HS * ld;   // (kR, ld): a block's weights
    const Rows<const T> qr = head_rows(q, qs, b, h), kr = head_rows(k, ks, b, h), vr = head_rows(v, vs, b, h);
    const Rows<T> yr = head_rows(y, ys, b, h);
    T* lse_h = lse + (b * n.NH + h) * n.Tq;
    transpose_rows(kt, ld, kr, n.Tk, HS);
    transpose_rows(vt, ld, vr, n.Tk, HS);
    for (int64_t t0 = 0; t0 < n.Tq; t0 += kR) {
      const QueryBlock<T> blk(t0, n);
      const T* q_rows[kR];
      blk.pointers(q_rows, qr);
      // pass 1: the block's scaled scores against the keys its last query sees
      rows_by_columns(p, q_rows, kt, ld, blk.keys, HS, scale);
      // pass 2, per query: p_j = exp(s_j - m) / sum over its visible keys (simd-inl.h), 0 beyond
      for (int64_t r = 0; r < kR; ++r) {
        T* pr = p + r * ld;
        const int64_t visible = r < blk.rows ? blk.visible(r) : 0;
        if (visible > 0) {
          const LogSumExp<T> e = row_log_sum_exp(pr, visible, pr);
          lse_h[t0 + r] = e.max + e.log_sum();
          const T inv_sum = T(1) / e.sum;
          for_each_vector<T>(0, visible, [&](auto d, int64_t j) HWY_ATTR {
            hn::StoreU(hn::Mul(hn::LoadU(d, pr + j), hn::Set(d, inv_sum)), d, pr + j);
          });
        }
        std::fill(pr + visible, pr + ld, T(0));
      }
      // pass 3: y_t = sum_j p_tj v_j
      T* y_rows[kR];
      for (int64_t r = 0; r < blk.rows; ++r) y_rows[r] = yr[t0 + r];
      mix_rows(y_rows, blk.rows, p, ld, blk.keys, vr, vt, HS, T(1), false);
    }
  });
}

template <typename T>
void attention_backward_impl(T* dq, T* dk, T* dv, const T* dy, const AttentionGradStrides& g, const T* y,
                             HeadStrides ys, const T* lse, const T* q, HeadStrides qs, const T* k, HeadStrides ks,
                             const T* v, HeadStrides vs, const AttentionDims& n) {
  const T scale = T(1) / std::sqrt(static_cast<T>(n.HS));
  const int64_t HS = n.HS, ld = padded_keys<T>(n.Tk);
  const bool lanes = HS < static_cast<int64_t>(hn::Lanes(hn::ScalableTag<T>())) && HWY_TARGET != HWY_SCALAR;
  for_each_head(n, [&](int64_t b, int64_t h) HWY_ATTR {
    T* kt = thread_scratch<T, HeadScratch>(static_cast<size_t>((4 * HS + 2 * kR) * ld));
    T* vt = kt + HS * ld;
    T* dkt = vt + HS * ld;
    T* dvt = dkt + HS * ld;
    T* p = dvt + HS * ld;  // (kR, ld) each
    T* ds = p + kR * ld;
    const Rows<const T> qr = head_rows(q, qs, b, h), kr = head_rows(k, ks, b, h), vr = head_rows(v, vs, b, h);
    const Rows<const T> yr = head_rows(y, ys, b, h), dyr = head_rows(dy, g.dy, b, h);
    const T* lse_h = lse + (b * n.NH + h) * n.Tq;
    transpose_rows(kt, ld, kr, n.Tk, HS);
    transpose_rows(vt, ld, vr, n.Tk, HS);
    std::fill(dkt, dkt + 2 * HS * ld, T(0));  // dkᵀ and dvᵀ
    if (lanes) {
      backward_query_lanes(head_rows(dq, g.dq, b, h), dk != nullptr ? dkt : nullptr, dv != nullptr ? dvt : nullptr, ld,
                           dyr, yr, lse_h, qr, kr, vr, n, scale, dq != nullptr);
    } else {
      for (int64_t t0 = 0; t0 < n.Tq; t0 += kR) {
        const QueryBlock<T> blk(t0, n);
        const T *q_rows[kR], *dy_rows[kR];
        blk.pointers(q_rows, qr);
        blk.pointers(dy_rows, dyr);
        // p_tj = exp(s_tj - lse_t): the forward's weights, recomputed; 0 beyond the visible keys
        rows_by_columns(p, q_rows, kt, ld, blk.keys, HS, scale);
        rows_by_columns(ds, dy_rows, vt, ld, blk.keys, HS, T(1));  // dp_tj = dy_t . v_j
        for (int64_t r = 0; r < kR; ++r) {
          T* pr = p + r * ld;
          T* dsr = ds + r * ld;
          const int64_t visible = r < blk.rows ? blk.visible(r) : 0;
          if (visible > 0) {
            // ds_tj = p_tj (dp_tj - D_t),  D_t = dy_t . y_t
            const T lse_t = lse_h[t0 + r];
            const T* dy_t = dy_rows[r];
            const T* y_t = yr[t0 + r];
            const T D = sum_of<T>(HS, [&](auto d, int64_t c) HWY_ATTR {
              return hn::Mul(hn::LoadU(d, dy_t + c), hn::LoadU(d, y_t + c));
            });
            for_each_vector<T>(0, visible, [&](auto d, int64_t j) HWY_ATTR {
              const auto pj = exp_nonpositive(d, hn::Sub(hn::LoadU(d, pr + j), hn::Set(d, lse_t)));
              hn::StoreU(pj, d, pr + j);
              hn::StoreU(hn::Mul(pj, hn::Sub(hn::LoadU(d, dsr + j), hn::Set(d, D))), d, dsr + j);
            });
          }
          std::fill(pr + visible, pr + ld, T(0));
          std::fill(dsr + visible, dsr + ld, T(0));
        }
        // dq_t += scale sum_j ds_tj k_j;  dkᵀ += scale qᵀ ds;  dvᵀ += dyᵀ p
        if (dq != nullptr) {
          T* dq_rows[kR];
          for (int64_t r = 0; r < blk.rows; ++r) dq_rows[r] = head_rows(dq, g.dq, b, h)[t0 + r];
          mix_rows(dq_rows, blk.rows, ds, ld, blk.keys, kr, kt, HS, scale, true);
        }
        if (dk != nullptr) add_outer(dkt, ld, q_rows, blk.rows, scale, ds, blk.keys, HS);
        if (dv != nullptr) add_outer(dvt, ld, dy_rows, blk.rows, T(1), p, blk.keys, HS);
      }
    }
    // dk_j += dkᵀ[:, j], dv_j += dvᵀ[:, j]
    for (const auto& [grad, gt, strides] : {std::tuple{dk, dkt, g.dk}, std::tuple{dv, dvt, g.dv}}) {
      if (grad == nullptr) continue;
      const Rows<T> rows = head_rows(grad, strides, b, h);
      for (int64_t j = 0; j < n.Tk; ++j)
        for (int64_t c = 0; c < HS; ++c) rows[j][c] += gt[c * ld + j];
    }
  });
}

}  // namespace

// ---- Exports: the names HWY_EXPORT takes, <name>_impl_f32 and _f64 (dispatch.h) ---------------

ATTOGRAD_KERNEL_TARGET(attention_forward);
ATTOGRAD_KERNEL_TARGET(attention_backward);

}  // namespace attograd::kernels::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace attograd::kernels {

ATTOGRAD_KERNEL(void, attention_forward,
                (T * y, HeadStrides y_strides, T* lse, const T* q, HeadStrides q_strides, const T* k,
                 HeadStrides k_strides, const T* v, HeadStrides v_strides, const AttentionDims& dims),
                (y, y_strides, lse, q, q_strides, k, k_strides, v, v_strides, dims));

ATTOGRAD_KERNEL(void, attention_backward,
                (T * dq, T* dk, T* dv, const T* dy, const AttentionGradStrides& grad_strides, const T* y,
                 HeadStrides y_strides, const T* lse, const T* q, HeadStrides q_strides, const T* k,
                 HeadStrides k_strides, const T* v, HeadStrides v_strides, const AttentionDims& dims),
                (dq, dk, dv, dy, grad_strides, y, y_strides, lse, q, q_strides, k, k_strides, v, v_strides, dims));

}  // namespace attograd::kernels
#endif  // HWY_ONCE
