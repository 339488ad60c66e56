// Fused causal attention, forward and backward (attention.h), SIMD through Highway with runtime
// dispatch. The scalar specification is attention_ref.h; see elementwise.cc for how the
// per-target compilation works.
//
// One (batch, head) pair is one unit of work, done whole by one thread. When the head fills a
// vector (HS 64 in GPT-2) it copies its keys (and in the backward its values) transposed, kᵀ and
// vᵀ (HS, Tk), into a per-thread scratch, so that a query's scores against all the keys it can
// see are vectors along the key axis j:
//
//   s_j = scale * sum_d q_d kᵀ[d, j]            (HS multiply-adds per vector of keys)
//
// The sums over keys that make a vector of HS outputs (y_t = sum_j p_j v_j, dq_t = sum_j ds_j k_j)
// run along d, over rows of v or k. So do the gradients of k and v (dk_j = sum_t ds_tj q_t,
// dv_j = sum_t p_tj dy_t): the backward keeps a chunk of queries' p and ds and then sums over
// the chunk's queries for each key, in registers, straight into dk and dv. Heads narrower than a
// vector (HS 2 in the lecture's pico model) put queries or keys in the lanes instead (below).
#include "autograd/kernels/attention.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <tuple>
#include <utility>

#include "autograd/kernels/dispatch.h"
#include "autograd/kernels/thread_pool.h"

// Highway's per-target includes, in the order its skeleton.cc gives (foreach_target.h
// re-includes this file once per target): never sorted.
// clang-format off
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "autograd/kernels/attention.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "autograd/kernels/simd-inl.h"
#include "autograd/kernels/transpose-inl.h"
// clang-format on

HWY_BEFORE_NAMESPACE();
namespace attograd::kernels::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// This file's own helpers and kernel bodies get internal linkage (the shared ones come from
// simd-inl.h); only the exported names at the end are visible outside.
namespace {

// The per-thread scratch of one head (thread_scratch tag): kᵀ, then in the forward a block's
// weights and the queries' sums of exps, in the backward vᵀ and a chunk's p and ds.
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

// ---- Register tiles ------------------------------------------------------------------------
// A GPT's heads are small (HS 2 to 128, T up to 1024), so attention is many small products, each
// a register tile (simd-inl.h) of kR query rows by up to kTileVectors vectors, like the matmul
// micro-kernel: every load of kᵀ, vᵀ, v or k is shared by the kR rows.

// Query rows per block.
constexpr int64_t kR = 4;

// out[r, j] = scale * sum_c a_r[c] xt[c, j] for r < kR and j < n rounded up to whole vectors:
// the scores of a block of queries (a = q rows, xt = kᵀ) or their dp (a = dy rows, xt = vᵀ).
// xt's rows (stride ld) and out's (stride ld) are padded to whole vectors.
template <typename T>
void rows_by_columns(T* out, const T* const* a, const T* xt, int64_t ld, int64_t n, int64_t HS,
                     T scale) {
  for_each_tile<T>(n, false, [&]<int NV>(auto d, int64_t j) HWY_ATTR {
    const int64_t N = static_cast<int64_t>(hn::Lanes(d));
    outer_product_tile<kR, NV>(
        d, HS, [&](int64_t r, int64_t c) { return a[r][c]; },
        [&](int64_t c) { return xt + c * ld + j; },
        [&](int64_t r, int v, auto acc)
            HWY_ATTR { hn::StoreU(hn::Mul(acc, hn::Set(d, scale)), d, out + r * ld + j + v * N); });
  });
}

// out_r[c] (+)= scale_r * sum_{j < n} w[r, j] x_j[c] for r < rows, c < HS: y = p v (scale_r the
// softmax's 1 / sum of row r, so that the weights are never divided one by one), or dq += ds k.
// Tiles run along c over the rows x_j (heads narrower than a vector take the lane paths below).
template <typename T>
void mix_rows(T* const* out, int64_t rows, const T* w, int64_t ld, int64_t n, Rows<const T> x,
              int64_t HS, const T (&scale)[kR], bool accumulate) {
  for_each_tile<T>(HS, true, [&]<int NV>(auto d, int64_t c) HWY_ATTR {
    const int64_t N = static_cast<int64_t>(hn::Lanes(d));
    outer_product_tile<kR, NV>(
        d, n, [&](int64_t r, int64_t j) { return w[r * ld + j]; },
        [&](int64_t j) { return x[j] + c; },
        [&](int64_t r, int v, auto acc) HWY_ATTR {
          if (r >= rows) return;
          T* o = out[r] + c + v * N;
          const auto scaled = hn::Mul(acc, hn::Set(d, scale[r]));
          hn::StoreU(accumulate ? hn::Add(hn::LoadU(d, o), scaled) : scaled, d, o);
        });
  });
}

// x_j[c] += scale * sum_{s < steps} w[s, j] a_{t0 + s}[c] for keys j < n, c < HS: a chunk of
// queries' contribution to dk (w = ds, a = q) or dv (w = p, a = dy), added to x's rows in place.
// w is (steps, ld), row s the weights of query t0 + s, zero past the keys that query sees, and
// padded by kR values after its last row. Tiles of kR keys by up to kTileVectors vectors of
// channels run over the chunk's queries, from the first that sees the tile's first key (j <=
// t + offset): each accumulator is loaded and stored once per chunk. The loop this replaced
// summed into dkᵀ and dvᵀ a block of kR queries at a time, a load and a store per kR
// multiply-adds, and then gathered them back into rows: a quarter of nano's attention (perf,
// Zen 5, 2026-12-07).
template <typename T>
void add_weighted_rows(Rows<T> x, int64_t n, const T* w, int64_t ld, Rows<const T> a, int64_t t0,
                       int64_t steps, int64_t offset, int64_t HS, T scale) {
  for (int64_t j = 0; j < n; j += kR) {
    const int64_t first = std::clamp<int64_t>(j - offset - t0, 0, steps);
    const T* wj = w + first * ld + j;
    const Rows<const T> aj{a[t0 + first], a.time};
    for_each_tile<T>(HS, true, [&]<int NV>(auto d, int64_t c) HWY_ATTR {
      const int64_t N = static_cast<int64_t>(hn::Lanes(d));
      outer_product_tile<kR, NV>(
          d, steps - first, [&](int64_t r, int64_t s) { return wj[s * ld + r]; },
          [&](int64_t s) { return aj[s] + c; },
          [&](int64_t r, int v, auto acc) HWY_ATTR {
            if (j + r >= n) return;
            T* o = x[j + r] + c + v * N;
            hn::StoreU(hn::MulAdd(acc, hn::Set(d, scale), hn::LoadU(d, o)), d, o);
          });
    });
  }
}

// ---- Heads -------------------------------------------------------------------------------------

// The transposed copies of one head's keys and values: xᵀ (HS, ld), ld = Tk rounded up to whole
// vectors, the padding columns zero (so that tiles may run past Tk and read zeros). The copy is
// transpose-inl.h's, 8 x 8 blocks transposed in registers: it replaced one gather of a vector of
// xᵀ's row from N rows of x, and before that an element-wise copy; the gathers were 14% of nano's
// attention (head_dim 32, T = 64; perf, Zen 5, 2026-12-07).
template <typename T>
void transpose_rows(T* xt, int64_t ld, Rows<const T> x, int64_t Tk, int64_t HS) {
  transpose_copy(xt, ld, x.base, x.time, Tk, HS, Tk);
  for (int64_t c = 0; c < HS; ++c) std::fill(xt + c * ld + Tk, xt + (c + 1) * ld, T(0));
}

// A block of up to kR queries t0 .. t0 + rows - 1: the row pointers of an operand (the missing
// rows of a short last block repeat the last real one; their results are dropped), and how many
// keys the block's last query sees.
template <typename T>
struct QueryBlock {
  int64_t t0, rows, keys;
  QueryBlock(int64_t t, const AttentionDims& n)
      : t0(t), rows(std::min(kR, n.Tq - t)), keys(t + rows + n.Tk - n.Tq) {}
  int64_t visible(int64_t r) const { return keys - (rows - 1 - r); }  // keys j <= t0 + r + Tk - Tq
  // Where row r of the block's weights must be zero, from its visible keys up to this end: the
  // kR - 1 keys after them, as far as any reader goes (mix_rows reads a row up to the block's
  // last visible key; add_weighted_rows up to kR - 1 past the row's own); a row past Tq whole.
  // (Zeroing to the row's end, ld, was a pass as long as the row over the masked keys.)
  int64_t zeroed_end(int64_t r, int64_t ld) const {
    return r < rows ? std::min(ld, visible(r) + kR) : ld;
  }
  template <typename U>
  void pointers(const U** out, Rows<const U> x) const {
    for (int64_t r = 0; r < kR; ++r) out[r] = x[t0 + std::min(r, rows - 1)];
  }
};

// Runs body(b, h) for every head, spread over threads when the problem is large enough.
template <class Body>
void for_each_head(const AttentionDims& n, const Body& body) {
  const int64_t heads = n.B * n.NH;
  // A second thread pays from kAttentionParallelMin of work on (thread_pool.h; at 32768
  // multiply-adds, before the pool's threads owned shares, pico's attention was split, and its
  // 2-thread step was slower).
  for_range(heads, heads * n.Tq * n.Tk * (n.HS + kAttentionScoreWork) >= kAttentionParallelMin,
            [&](int64_t i) HWY_ATTR { body(i / n.NH, i % n.NH); });
}

// Keys rounded up to whole vectors: the row stride of the scratch matrices.
template <typename T>
int64_t padded_keys(int64_t Tk) {
  const int64_t N = static_cast<int64_t>(hn::Lanes(hn::ScalableTag<T>()));
  const int64_t vectors = (Tk + N - 1) / N;
  // An odd number of vectors: with a power-of-two stride (T = 256, 1,024) the rows of kᵀ that
  // one 8 x 8 transpose writes fall in the same L1 set, and the forward ran 3-5% slower than
  // with the gathers it replaced (kernels_ab, Zen 5, 2026-12-07).
  return (vectors | 1) * N;
}

// Queries per chunk of the backward: whole blocks of kR, as many as keep the chunk's p and ds,
// (chunk, ld) each, within kChunkBytes, so that they are still in L2 when add_weighted_rows
// reads them back (a head of T = 256 in three chunks of floats, of T = 1024 in 37).
constexpr int64_t kChunkBytes = int64_t{256} << 10;

template <typename T>
int64_t query_chunk(int64_t Tq, int64_t ld) {
  const int64_t fit = kChunkBytes / (2 * ld * static_cast<int64_t>(sizeof(T))) / kR * kR;
  return std::clamp<int64_t>(fit, kR, (Tq + kR - 1) / kR * kR);
}

// ---- Heads narrower than a vector: queries in the lanes ------------------------------------
// With HS below a vector (the lecture's femto and pico heads have 2 channels) every query row of
// the blocked forward is a few lanes of work wrapped in horizontal reductions: a max, a sum and
// a dot per channel. Here a vector holds V queries instead and the loop runs over keys: a key
// costs HS multiply-adds for the V scores, a max, an exp and HS multiply-adds for the outputs,
// and nothing is summed across lanes.
struct LaneScratch {};
struct DotsScratch {};  // D_t = dy_t . y_t of a head's queries, in the narrow-head backward

// D_t = dy_t . y_t for every query of the head.
template <typename T>
void output_dots(T* D, Rows<const T> dyr, Rows<const T> yr, const AttentionDims& n) {
  for (int64_t t = 0; t < n.Tq; ++t) {
    T dot = 0;
    for (int64_t c = 0; c < n.HS; ++c) dot += dyr[t][c] * yr[t][c];
    D[t] = dot;
  }
}

// Copies rows x[first .. first + count) (HS wide) into xt (HS, V), lanes past count zero.
template <typename T>
void rows_to_lanes(T* xt, Rows<const T> x, int64_t first, int64_t count, int64_t V, int64_t HS) {
  for (int64_t c = 0; c < HS; ++c)
    for (int64_t l = 0; l < V; ++l) xt[c * V + l] = l < count ? x[first + l][c] : T(0);
}

// Adds xt (HS, V), lanes below count, into rows x[first .. first + count).
template <typename T>
void add_lanes_to_rows(Rows<T> x, const T* xt, int64_t first, int64_t count, int64_t V,
                       int64_t HS) {
  for (int64_t l = 0; l < count; ++l)
    for (int64_t c = 0; c < HS; ++c) x[first + l][c] += xt[c * V + l];
}

// Runs body.template operator()<kMaxHS>() with the smallest bound of 2, 4, 8 or 16 channels that
// holds HS (a narrow head has HS < a vector <= 16 lanes): the lane loops below keep one vector
// per channel in registers, unrolled over kMaxHS with the channels past HS skipped, because
// accumulators that go through memory at every key would chain each key's multiply-add to the
// previous key's store.
template <class Body>
void with_channel_bound(int64_t HS, const Body& body) {
  if (HS <= 2) return body.template operator()<2>();
  if (HS <= 4) return body.template operator()<4>();
  if (HS <= 8) return body.template operator()<8>();
  return body.template operator()<16>();
}

// One head's y and lse, queries t0 .. t0 + V - 1 at a time.
template <int kMaxHS, typename T>
void forward_query_lanes(Rows<T> yr, T* lse_h, Rows<const T> qr, Rows<const T> kr, Rows<const T> vr,
                         const AttentionDims& n, T scale) {
  const hn::ScalableTag<T> d;
  using VT = hn::Vec<decltype(d)>;
  const int64_t V = static_cast<int64_t>(hn::Lanes(d)), HS = n.HS, offset = n.Tk - n.Tq;
  T* qt = thread_scratch<T, LaneScratch>(static_cast<size_t>((HS + n.Tk) * V));  // qᵀ (HS, V)
  T* scores = qt + HS * V;                                                       // (Tk, V)
  const auto lane = hn::Iota(d, T(0));
  HWY_ALIGN T out[hn::MaxLanes(decltype(d)())];
  for (int64_t t0 = 0; t0 < n.Tq; t0 += V) {
    const int64_t rows = std::min(V, n.Tq - t0), keys = std::min(n.Tk, t0 + rows + offset);
    rows_to_lanes(qt, qr, t0, rows, V, HS);
    VT q[kMaxHS], acc[kMaxHS];
    for (int c = 0; c < kMaxHS; ++c) {
      q[c] = c < HS ? hn::Load(d, qt + c * V) : hn::Zero(d);
      acc[c] = hn::Zero(d);
    }
    // pass 1: the scaled scores of each key for the V queries, -inf where a query may not see
    // it (lane l sees key j <= t0 + l + offset), and their running max
    auto m = hn::Set(d, -std::numeric_limits<T>::infinity());
    for (int64_t j = 0; j < keys; ++j) {
      auto s = hn::Zero(d);
      for (int c = 0; c < kMaxHS; ++c)
        if (c < HS) s = hn::MulAdd(q[c], hn::Set(d, kr[j][c]), s);
      s = hn::IfThenElse(hn::Ge(lane, hn::Set(d, static_cast<T>(j - t0 - offset))),
                         hn::Mul(s, hn::Set(d, scale)),
                         hn::Set(d, -std::numeric_limits<T>::infinity()));
      hn::Store(s, d, scores + j * V);
      m = hn::Max(m, s);
    }
    // pass 2: e_j = exp(s_j - m), their sum, and sum_j e_j v_j
    auto sum = hn::Zero(d);
    for (int64_t j = 0; j < keys; ++j) {
      const auto e = exp_nonpositive(d, hn::Sub(hn::Load(d, scores + j * V), m));
      sum = hn::Add(sum, e);
      for (int c = 0; c < kMaxHS; ++c)
        if (c < HS) acc[c] = hn::MulAdd(e, hn::Set(d, vr[j][c]), acc[c]);
    }
    // y_t = that sum / sum e;  lse_t = m + log(sum e)
    hn::Store(hn::Add(m, hn::Log(d, sum)), d, out);
    for (int64_t l = 0; l < rows; ++l) lse_h[t0 + l] = out[l];
    const auto inv = hn::Div(hn::Set(d, T(1)), sum);
    for (int c = 0; c < kMaxHS && c < HS; ++c) {
      hn::Store(hn::Mul(acc[c], inv), d, out);
      for (int64_t l = 0; l < rows; ++l) yr[t0 + l][c] = out[l];
    }
  }
}

// The backward of a head narrower than a vector, in two passes that each keep a sum in the lanes.
// dq_t = scale sum_j ds_tj k_j sums over keys, so the first pass runs over keys with V queries in
// the lanes, as the forward. dk_j = scale sum_t ds_tj q_t and dv_j = sum_t p_tj dy_t sum over
// queries, so the second runs over queries with V keys in the lanes. Each pass recomputes the
// weights p = exp(s - lse) and their gradient ds = p (dp - D) for its own pairs: two exps per
// (query, key) pair instead of one, but no transposes and no reductions across lanes.

// dq of one head: V queries t0 .. t0 + V - 1 in the lanes, the loop over the keys they see.
template <int kMaxHS, typename T>
void backward_dq_query_lanes(Rows<T> dqr, const T* D, const T* lse_h, Rows<const T> dyr,
                             Rows<const T> qr, Rows<const T> kr, Rows<const T> vr,
                             const AttentionDims& n, T scale) {
  const hn::ScalableTag<T> d;
  using VT = hn::Vec<decltype(d)>;
  const int64_t V = static_cast<int64_t>(hn::Lanes(d)), HS = n.HS, offset = n.Tk - n.Tq;
  T* qt = thread_scratch<T, LaneScratch>(static_cast<size_t>(2 * HS * V + 2 * V));
  T* dyt = qt + HS * V;  // dyᵀ (HS, V); qt and dqᵀ share the first (HS, V)
  T* D_lanes = dyt + HS * V;
  T* lse_lanes = D_lanes + V;
  const auto lane = hn::Iota(d, T(0));
  for (int64_t t0 = 0; t0 < n.Tq; t0 += V) {
    const int64_t rows = std::min(V, n.Tq - t0), keys = std::min(n.Tk, t0 + rows + offset);
    rows_to_lanes(qt, qr, t0, rows, V, HS);
    rows_to_lanes(dyt, dyr, t0, rows, V, HS);
    for (int64_t l = 0; l < V; ++l) {  // 0 past the last query, whose lanes are masked anyway
      D_lanes[l] = l < rows ? D[t0 + l] : T(0);
      lse_lanes[l] = l < rows ? lse_h[t0 + l] : T(0);
    }
    const auto D_t = hn::Load(d, D_lanes), lse_t = hn::Load(d, lse_lanes);
    VT q[kMaxHS], dy[kMaxHS], dq[kMaxHS];
    for (int c = 0; c < kMaxHS; ++c) {
      q[c] = c < HS ? hn::Load(d, qt + c * V) : hn::Zero(d);
      dy[c] = c < HS ? hn::Load(d, dyt + c * V) : hn::Zero(d);
      dq[c] = hn::Zero(d);
    }
    const auto real = hn::Lt(lane, hn::Set(d, static_cast<T>(rows)));
    for (int64_t j = 0; j < keys; ++j) {
      auto s = hn::Zero(d), dp = hn::Zero(d);
      for (int c = 0; c < kMaxHS; ++c)
        if (c < HS) {
          s = hn::MulAdd(q[c], hn::Set(d, kr[j][c]), s);
          dp = hn::MulAdd(dy[c], hn::Set(d, vr[j][c]), dp);
        }
      // p = exp(s - lse) where lane l sees key j (j <= t0 + l + offset) and is a real query
      const auto seen = hn::And(real, hn::Ge(lane, hn::Set(d, static_cast<T>(j - t0 - offset))));
      const auto p = hn::IfThenElseZero(
          seen, exp_nonpositive(d, hn::Sub(hn::Mul(s, hn::Set(d, scale)), lse_t)));
      const auto ds = hn::Mul(p, hn::Sub(dp, D_t));
      for (int c = 0; c < kMaxHS; ++c)
        if (c < HS) dq[c] = hn::MulAdd(ds, hn::Set(d, scale * kr[j][c]), dq[c]);
    }
    for (int c = 0; c < kMaxHS && c < HS; ++c) hn::Store(dq[c], d, qt + c * V);
    add_lanes_to_rows(dqr, qt, t0, rows, V, HS);
  }
}

// dk and dv of one head (either may be absent, its base null): V keys j0 .. j0 + V - 1 in the
// lanes, the loop over the queries that see them.
template <int kMaxHS, typename T>
void backward_dkv_key_lanes(Rows<T> dkr, Rows<T> dvr, const T* D, const T* lse_h, Rows<const T> dyr,
                            Rows<const T> qr, Rows<const T> kr, Rows<const T> vr,
                            const AttentionDims& n, T scale) {
  const hn::ScalableTag<T> d;
  using VT = hn::Vec<decltype(d)>;
  const int64_t V = static_cast<int64_t>(hn::Lanes(d)), HS = n.HS, offset = n.Tk - n.Tq;
  T* kt = thread_scratch<T, LaneScratch>(static_cast<size_t>(2 * HS * V));
  T* vt = kt + HS * V;  // kᵀ and vᵀ (HS, V), then dkᵀ and dvᵀ
  const auto lane = hn::Iota(d, T(0));
  for (int64_t j0 = 0; j0 < n.Tk; j0 += V) {
    const int64_t count = std::min(V, n.Tk - j0);
    rows_to_lanes(kt, kr, j0, count, V, HS);
    rows_to_lanes(vt, vr, j0, count, V, HS);
    VT k[kMaxHS], v[kMaxHS], dk[kMaxHS], dv[kMaxHS];
    for (int c = 0; c < kMaxHS; ++c) {
      k[c] = c < HS ? hn::Load(d, kt + c * V) : hn::Zero(d);
      v[c] = c < HS ? hn::Load(d, vt + c * V) : hn::Zero(d);
      dk[c] = hn::Zero(d);
      dv[c] = hn::Zero(d);
    }
    // query t sees key j0 + l when j0 + l <= t + offset: lanes up to t + offset - j0
    for (int64_t t = std::max<int64_t>(0, j0 - offset); t < n.Tq; ++t) {
      const T* q_t = qr[t];
      const T* dy_t = dyr[t];
      auto s = hn::Zero(d), dp = hn::Zero(d);
      for (int c = 0; c < kMaxHS; ++c)
        if (c < HS) {
          s = hn::MulAdd(k[c], hn::Set(d, q_t[c]), s);
          dp = hn::MulAdd(v[c], hn::Set(d, dy_t[c]), dp);
        }
      const auto seen = hn::Le(lane, hn::Set(d, static_cast<T>(t + offset - j0)));
      const auto p = hn::IfThenElseZero(
          seen, exp_nonpositive(d, hn::Sub(hn::Mul(s, hn::Set(d, scale)), hn::Set(d, lse_h[t]))));
      const auto ds = hn::Mul(p, hn::Sub(dp, hn::Set(d, D[t])));
      for (int c = 0; c < kMaxHS; ++c)
        if (c < HS) {
          dk[c] = hn::MulAdd(ds, hn::Set(d, scale * q_t[c]), dk[c]);
          dv[c] = hn::MulAdd(p, hn::Set(d, dy_t[c]), dv[c]);
        }
    }
    for (int c = 0; c < kMaxHS && c < HS; ++c) {
      hn::Store(dk[c], d, kt + c * V);
      hn::Store(dv[c], d, vt + c * V);
    }
    if (dkr.base != nullptr) add_lanes_to_rows(dkr, kt, j0, count, V, HS);
    if (dvr.base != nullptr) add_lanes_to_rows(dvr, vt, j0, count, V, HS);
  }
}

template <typename T>
void attention_forward_impl(T* y, HeadStrides ys, T* lse, const T* q, HeadStrides qs, const T* k,
                            HeadStrides ks, const T* v, HeadStrides vs, const AttentionDims& n) {
  const T scale = T(1) / std::sqrt(static_cast<T>(n.HS));
  const int64_t HS = n.HS, ld = padded_keys<T>(n.Tk);
  const bool lanes =
      HS < static_cast<int64_t>(hn::Lanes(hn::ScalableTag<T>())) && HWY_TARGET != HWY_SCALAR;
  for_each_head(n, [&](int64_t b, int64_t h) HWY_ATTR {
    if (lanes) {
      return with_channel_bound(HS, [&]<int kMaxHS>() HWY_ATTR {
        forward_query_lanes<kMaxHS>(head_rows(y, ys, b, h), lse + (b * n.NH + h) * n.Tq,
                                    head_rows(q, qs, b, h), head_rows(k, ks, b, h),
                                    head_rows(v, vs, b, h), n, scale);
      });
    }
    // kᵀ (HS, ld), a block's weights (kR, ld), and each query's sum of exps (Tq)
    T* kt = thread_scratch<T, HeadScratch>(static_cast<size_t>((HS + kR) * ld + n.Tq));
    T* p = kt + HS * ld;
    T* sums = p + kR * ld;
    const Rows<const T> qr = head_rows(q, qs, b, h), kr = head_rows(k, ks, b, h),
                        vr = head_rows(v, vs, b, h);
    const Rows<T> yr = head_rows(y, ys, b, h);
    T* lse_h = lse + (b * n.NH + h) * n.Tq;
    transpose_rows(kt, ld, kr, n.Tk, HS);
    for (int64_t t0 = 0; t0 < n.Tq; t0 += kR) {
      const QueryBlock<T> blk(t0, n);
      const T* q_rows[kR];
      blk.pointers(q_rows, qr);
      // pass 1: the block's scaled scores against the keys its last query sees
      rows_by_columns(p, q_rows, kt, ld, blk.keys, HS, scale);
      // pass 2, per query: e_j = exp(s_j - m) over its visible keys (simd-inl.h), 0 after; the
      // max m goes to lse now, log(sum e) is added below
      T inv_sum[kR] = {};
      for (int64_t r = 0; r < kR; ++r) {
        T* pr = p + r * ld;
        const int64_t visible = r < blk.rows ? blk.visible(r) : 0;
        if (visible > 0) {
          const LogSumExp<T> e = row_log_sum_exp(pr, visible, pr);
          lse_h[t0 + r] = e.max;
          sums[t0 + r] = e.sum;
          inv_sum[r] = T(1) / e.sum;
        }
        std::fill(pr + visible, pr + blk.zeroed_end(r, ld), T(0));
      }
      // pass 3: y_t = (sum_j e_tj v_j) / sum_j e_tj
      T* y_rows[kR];
      for (int64_t r = 0; r < blk.rows; ++r) y_rows[r] = yr[t0 + r];
      mix_rows(y_rows, blk.rows, p, ld, blk.keys, vr, HS, inv_sum, false);
    }
    // lse_t = m_t + log(sum_t), a vector of queries at a time: a scalar std::log per query was
    // 14% of nano's forward (head_dim 32, T = 64; perf, Zen 5, 2026-12-07)
    for_each_vector<T>(0, n.Tq, [&](auto d, int64_t t) HWY_ATTR {
      const auto log_sum = log_ieee(d, hn::LoadU(d, sums + t));
      hn::StoreU(hn::Add(hn::LoadU(d, lse_h + t), log_sum), d, lse_h + t);
    });
  });
}

template <typename T>
void attention_backward_impl(T* dq, T* dk, T* dv, const T* dy, const AttentionGradStrides& g,
                             const T* y, HeadStrides ys, const T* lse, const T* q, HeadStrides qs,
                             const T* k, HeadStrides ks, const T* v, HeadStrides vs,
                             const AttentionDims& n, bool accumulate) {
  const T scale = T(1) / std::sqrt(static_cast<T>(n.HS));
  const int64_t HS = n.HS, ld = padded_keys<T>(n.Tk);
  const bool lanes =
      HS < static_cast<int64_t>(hn::Lanes(hn::ScalableTag<T>())) && HWY_TARGET != HWY_SCALAR;
  for_each_head(n, [&](int64_t b, int64_t h) HWY_ATTR {
    // Written, not added: this head's rows start from zero, cleared here while the thread that
    // sums into them has them in cache (a separate pass would read the whole buffer again).
    if (!accumulate) {
      const std::tuple<T*, HeadStrides, int64_t> grads[] = {
          {dq, g.dq, n.Tq}, {dk, g.dk, n.Tk}, {dv, g.dv, n.Tk}};
      for (const auto& [grad, strides, rows] : grads)
        if (grad != nullptr)
          for (int64_t t = 0; t < rows; ++t) {
            T* row = head_rows(grad, strides, b, h)[t];
            std::fill(row, row + HS, T(0));
          }
    }
    if (lanes) {
      T* D = thread_scratch<T, DotsScratch>(static_cast<size_t>(n.Tq));
      const Rows<const T> qr = head_rows(q, qs, b, h), kr = head_rows(k, ks, b, h),
                          vr = head_rows(v, vs, b, h);
      const Rows<const T> dyr = head_rows(dy, g.dy, b, h);
      const T* lse_h = lse + (b * n.NH + h) * n.Tq;
      output_dots(D, dyr, head_rows(y, ys, b, h), n);
      const Rows<T> dkr = dk != nullptr ? head_rows(dk, g.dk, b, h) : Rows<T>{nullptr, 0};
      const Rows<T> dvr = dv != nullptr ? head_rows(dv, g.dv, b, h) : Rows<T>{nullptr, 0};
      return with_channel_bound(HS, [&]<int kMaxHS>() HWY_ATTR {
        if (dq != nullptr)
          backward_dq_query_lanes<kMaxHS>(head_rows(dq, g.dq, b, h), D, lse_h, dyr, qr, kr, vr, n,
                                          scale);
        if (dk != nullptr || dv != nullptr)
          backward_dkv_key_lanes<kMaxHS>(dkr, dvr, D, lse_h, dyr, qr, kr, vr, n, scale);
      });
    }
    // kᵀ and vᵀ (HS, ld), then a chunk of queries' weights p and their gradients ds (chunk, ld)
    const int64_t chunk = query_chunk<T>(n.Tq, ld);
    T* kt = thread_scratch<T, HeadScratch>(static_cast<size_t>((2 * HS + 2 * chunk) * ld + kR));
    T* vt = kt + HS * ld;
    T* p = vt + HS * ld;
    T* ds = p + chunk * ld;  // kR values of padding after it (add_weighted_rows)
    const Rows<const T> qr = head_rows(q, qs, b, h), kr = head_rows(k, ks, b, h),
                        vr = head_rows(v, vs, b, h);
    const Rows<const T> yr = head_rows(y, ys, b, h), dyr = head_rows(dy, g.dy, b, h);
    const T* lse_h = lse + (b * n.NH + h) * n.Tq;
    transpose_rows(kt, ld, kr, n.Tk, HS);
    transpose_rows(vt, ld, vr, n.Tk, HS);
    for (int64_t tc = 0; tc < n.Tq; tc += chunk) {
      const int64_t queries = std::min(chunk, n.Tq - tc);
      for (int64_t t0 = tc; t0 < tc + queries; t0 += kR) {
        const QueryBlock<T> blk(t0, n);
        const T *q_rows[kR], *dy_rows[kR];
        blk.pointers(q_rows, qr);
        blk.pointers(dy_rows, dyr);
        T* pb = p + (t0 - tc) * ld;  // the block's rows of p and ds (chunk is whole blocks)
        T* dsb = ds + (t0 - tc) * ld;
        // p_tj = exp(s_tj - lse_t): the forward's weights, recomputed; 0 after the visible keys
        rows_by_columns(pb, q_rows, kt, ld, blk.keys, HS, scale);
        rows_by_columns(dsb, dy_rows, vt, ld, blk.keys, HS, T(1));  // dp_tj = dy_t . v_j
        for (int64_t r = 0; r < kR; ++r) {
          T* pr = pb + r * ld;
          T* dsr = dsb + r * ld;
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
          std::fill(pr + visible, pr + blk.zeroed_end(r, ld), T(0));
          std::fill(dsr + visible, dsr + blk.zeroed_end(r, ld), T(0));
        }
        // dq_t += scale sum_j ds_tj k_j
        if (dq != nullptr) {
          T* dq_rows[kR];
          for (int64_t r = 0; r < blk.rows; ++r) dq_rows[r] = head_rows(dq, g.dq, b, h)[t0 + r];
          T dq_scale[kR];
          std::fill_n(dq_scale, kR, scale);
          mix_rows(dq_rows, blk.rows, dsb, ld, blk.keys, kr, HS, dq_scale, true);
        }
      }
      // dk_j += scale sum_t ds_tj q_t;  dv_j += sum_t p_tj dy_t, over the chunk's queries
      const int64_t keys = std::min(n.Tk, tc + queries + n.Tk - n.Tq);
      if (dk != nullptr)
        add_weighted_rows(head_rows(dk, g.dk, b, h), keys, ds, ld, qr, tc, queries, n.Tk - n.Tq, HS,
                          scale);
      if (dv != nullptr)
        add_weighted_rows(head_rows(dv, g.dv, b, h), keys, p, ld, dyr, tc, queries, n.Tk - n.Tq, HS,
                          T(1));
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
                (T * y, HeadStrides y_strides, T* lse, const T* q, HeadStrides q_strides,
                 const T* k, HeadStrides k_strides, const T* v, HeadStrides v_strides,
                 const AttentionDims& dims),
                (y, y_strides, lse, q, q_strides, k, k_strides, v, v_strides, dims));

ATTOGRAD_KERNEL(void, attention_backward,
                (T * dq, T* dk, T* dv, const T* dy, const AttentionGradStrides& grad_strides,
                 const T* y, HeadStrides y_strides, const T* lse, const T* q, HeadStrides q_strides,
                 const T* k, HeadStrides k_strides, const T* v, HeadStrides v_strides,
                 const AttentionDims& dims, bool accumulate),
                (dq, dk, dv, dy, grad_strides, y, y_strides, lse, q, q_strides, k, k_strides, v,
                 v_strides, dims, accumulate));

}  // namespace attograd::kernels
#endif  // HWY_ONCE
