// The transposing copy of 32-bit and 64-bit lanes that two kernel files share: matmul.cc packs
// an operand stored along k (A stored (M, K), B stored (N, K)) into k-major micro-panels with it,
// and attention.cc turns a head's keys and values (Tk, HS) into kᵀ and vᵀ (HS, Tk). Compiled
// once per Highway target like the kernels; a kernel file includes it after simd-inl.h:
//
//   #include "autograd/kernels/simd-inl.h"
//   #include "autograd/kernels/transpose-inl.h"
//
// Per-target include guard: Highway's toggle idiom (see simd-inl.h).
#if defined(ATTOGRAD_KERNELS_TRANSPOSE_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef ATTOGRAD_KERNELS_TRANSPOSE_INL_H_
#undef ATTOGRAD_KERNELS_TRANSPOSE_INL_H_
#else
#define ATTOGRAD_KERNELS_TRANSPOSE_INL_H_
#endif

#include <cstdint>

#include "hwy/cache_control.h"  // hwy::Prefetch
#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace attograd::kernels::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// dst[k * ld_dst + r] = src[r * ld_src + k] for r < rows, k < kc: the transposing copy that packs
// an operand stored along k (A stored (M, K), B stored (N, K)) into k-major micro-panels.
// Scalar, one element per load and store: the specification of transpose_copy below.
template <typename T>
void transpose_copy_scalar(T* HWY_RESTRICT dst, int64_t ld_dst, const T* HWY_RESTRICT src,
                           int64_t ld_src, int64_t rows, int64_t kc) {
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t k = 0; k < kc; ++k) dst[k * ld_dst + r] = src[r * ld_src + k];
}

#if HWY_TARGET != HWY_SCALAR
// The 4 x 4 block src[r * ld + k] (r, k < 4) of 32-bit lanes, transposed in registers: t[k]
// holds rows 0..3 at k.
template <class D>
HWY_INLINE void transpose_4x4(D d, const hn::TFromD<D>* HWY_RESTRICT src, int64_t ld,
                              hn::Vec<D> t[4]) {
  static_assert(hn::MaxLanes(D()) == 4, "one 128-bit vector of 32-bit lanes per row");
  // rows a, b, c, e of 4 k's each -> 4 k's of 4 rows each
  const auto a = hn::LoadU(d, src), b = hn::LoadU(d, src + ld);
  const auto c = hn::LoadU(d, src + 2 * ld), e = hn::LoadU(d, src + 3 * ld);
  const hn::Repartition<uint64_t, D> d64;
  const auto ab_lo = hn::BitCast(d64, hn::InterleaveLower(d, a, b));  // a0 b0 a1 b1
  const auto ce_lo = hn::BitCast(d64, hn::InterleaveLower(d, c, e));  // c0 e0 c1 e1
  const auto ab_hi = hn::BitCast(d64, hn::InterleaveUpper(d, a, b));  // a2 b2 a3 b3
  const auto ce_hi = hn::BitCast(d64, hn::InterleaveUpper(d, c, e));  // c2 e2 c3 e3
  t[0] = hn::BitCast(d, hn::InterleaveLower(d64, ab_lo, ce_lo));
  t[1] = hn::BitCast(d, hn::InterleaveUpper(d64, ab_lo, ce_lo));
  t[2] = hn::BitCast(d, hn::InterleaveLower(d64, ab_hi, ce_hi));
  t[3] = hn::BitCast(d, hn::InterleaveUpper(d64, ab_hi, ce_hi));
}
#endif

#if HWY_TARGET != HWY_SCALAR && HWY_MAX_BYTES >= 32
// The 8 x 8 block src[r * ld + k] (r, k < 8) of 32-bit lanes into dst[k * ld_dst + r], with
// 256-bit vectors: 8 loads, three rounds of 8 shuffles (32-bit and 64-bit interleaves inside
// each 128-bit half, then the halves swapped across), 8 stores: a quarter fewer shuffles and
// half the loads and stores of four 4 x 4 blocks.
template <typename T>
HWY_INLINE void transpose_8x8(const T* HWY_RESTRICT src, int64_t ld, T* HWY_RESTRICT dst,
                              int64_t ld_dst) {
  static_assert(sizeof(T) == 4, "eight 32-bit lanes per row");
  const hn::Simd<T, 8, 0> d;
  const hn::Repartition<uint64_t, decltype(d)> d64;
  hn::Vec<decltype(d64)> pairs[8];  // rows 2i, 2i + 1 interleaved: k 0 1 | 4 5, then 2 3 | 6 7
  for (int64_t i = 0; i < 4; ++i) {
    const auto a = hn::LoadU(d, src + 2 * i * ld), b = hn::LoadU(d, src + (2 * i + 1) * ld);
    pairs[2 * i] = hn::BitCast(d64, hn::InterleaveLower(d, a, b));
    pairs[2 * i + 1] = hn::BitCast(d64, hn::InterleaveUpper(d, a, b));
  }
  // quads[h][j]: rows 4h .. 4h + 3 at k = j (lower half) and k = j + 4 (upper half)
  hn::Vec<decltype(d)> quads[2][4];
  for (int64_t h = 0; h < 2; ++h) {
    const auto* q = pairs + 4 * h;  // rows 4h, 4h + 1 in q[0], q[1]; 4h + 2, 4h + 3 in q[2], q[3]
    quads[h][0] = hn::BitCast(d, hn::InterleaveLower(d64, q[0], q[2]));
    quads[h][1] = hn::BitCast(d, hn::InterleaveUpper(d64, q[0], q[2]));
    quads[h][2] = hn::BitCast(d, hn::InterleaveLower(d64, q[1], q[3]));
    quads[h][3] = hn::BitCast(d, hn::InterleaveUpper(d64, q[1], q[3]));
  }
  for (int64_t j = 0; j < 4; ++j) {
    hn::StoreU(hn::ConcatLowerLower(d, quads[1][j], quads[0][j]), d, dst + j * ld_dst);
    hn::StoreU(hn::ConcatUpperUpper(d, quads[1][j], quads[0][j]), d, dst + (j + 4) * ld_dst);
  }
}
#endif

// The same with vectors, for the blocks that fit, and the scalar copy for the rest: rows in
// groups of 8 (8 x 8 blocks, with 32-bit lanes on targets of 256-bit vectors or more), then of
// L (L x L blocks with one 128-bit vector per row: L = 4 floats or 2 doubles), then a last
// pair of rows of floats (two 128-bit loads interleaved, stored in 64-bit halves); only a last
// row or the k's past a whole block go one element at a time. Packing transposes the operand
// of every forward product (x and the weight are both stored along k), so its speed shows: a
// 14-row A panel copied its last 2 rows element by element, a third of the packing time, and
// packing was a sixth of GPT-2 small's c_fc forward (perf, Zen 5).
// `readable` (>= rows) rows of src may be read: while a group of 8 rows is transposed, the next
// group's, when readable, are asked for, a cache line of each per 16 k's.
template <typename T>
void transpose_copy(T* HWY_RESTRICT dst, int64_t ld_dst, const T* HWY_RESTRICT src, int64_t ld_src,
                    int64_t rows, int64_t kc, [[maybe_unused]] int64_t readable = 0) {
#if HWY_TARGET == HWY_SCALAR
  transpose_copy_scalar(dst, ld_dst, src, ld_src, rows, kc);
#else
  int64_t r = 0;
#if HWY_MAX_BYTES >= 32
  if constexpr (sizeof(T) == 4) {
    const int64_t kc_8 = kc / 8 * 8;
    for (; r + 8 <= rows; r += 8) {
      const int64_t ahead = std::clamp<int64_t>(readable - (r + 8), 0, 8);
      for (int64_t k = 0; k < kc_8; k += 8) {
        if (k % 16 == 0)
          for (int64_t i = 0; i < ahead; ++i) hwy::Prefetch(src + (r + 8 + i) * ld_src + k);
        transpose_8x8(src + r * ld_src + k, ld_src, dst + k * ld_dst + r, ld_dst);
      }
      transpose_copy_scalar(dst + kc_8 * ld_dst + r, ld_dst, src + r * ld_src + kc_8, ld_src, 8,
                            kc - kc_8);
    }
  }
#endif
  const hn::Full128<T> d;
  constexpr int64_t L = static_cast<int64_t>(hn::MaxLanes(hn::Full128<T>()));
  const int64_t kc_l = kc / L * L;
  for (; r + L <= rows; r += L) {
    const T* s = src + r * ld_src;
    T* o = dst + r;
    for (int64_t k = 0; k < kc_l; k += L) {
      if constexpr (L == 4) {
        hn::Vec<decltype(d)> t[4];
        transpose_4x4(d, s + k, ld_src, t);
        for (int64_t i = 0; i < 4; ++i) hn::StoreU(t[i], d, o + (k + i) * ld_dst);
      } else {
        static_assert(L == 2, "128-bit blocks of float or double");
        const auto a = hn::LoadU(d, s + k), b = hn::LoadU(d, s + ld_src + k);
        hn::StoreU(hn::InterleaveLower(d, a, b), d, o + (k + 0) * ld_dst);  // a0 b0
        hn::StoreU(hn::InterleaveUpper(d, a, b), d, o + (k + 1) * ld_dst);  // a1 b1
      }
    }
    transpose_copy_scalar(dst + kc_l * ld_dst + r, ld_dst, s + kc_l, ld_src, L, kc - kc_l);
  }
  if constexpr (L == 4) {
    if (r + 2 <= rows) {
      const hn::Half<decltype(d)> d2;
      const T* s = src + r * ld_src;
      T* o = dst + r;
      for (int64_t k = 0; k < kc_l; k += 4) {
        const auto a = hn::LoadU(d, s + k), b = hn::LoadU(d, s + ld_src + k);
        const auto lo = hn::InterleaveLower(d, a, b), hi = hn::InterleaveUpper(d, a, b);
        hn::StoreU(hn::LowerHalf(d2, lo), d2, o + (k + 0) * ld_dst);  // a0 b0
        hn::StoreU(hn::UpperHalf(d2, lo), d2, o + (k + 1) * ld_dst);  // a1 b1
        hn::StoreU(hn::LowerHalf(d2, hi), d2, o + (k + 2) * ld_dst);  // a2 b2
        hn::StoreU(hn::UpperHalf(d2, hi), d2, o + (k + 3) * ld_dst);  // a3 b3
      }
      transpose_copy_scalar(dst + kc_l * ld_dst + r, ld_dst, s + kc_l, ld_src, 2, kc - kc_l);
      r += 2;
    }
  }
  transpose_copy_scalar(dst + r, ld_dst, src + r * ld_src, ld_src, rows - r, kc);
#endif
}

}  // namespace attograd::kernels::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // ATTOGRAD_KERNELS_TRANSPOSE_INL_H_
