// Matrix multiply C (M, N) (+)= op(A) (M, K) @ op(B) (K, N) (+ bias) for the four transpose
// layouts (matmul.h), SIMD through Highway with runtime dispatch. The scalar specification is
// matmul_ref.h; see elementwise.cc for how the per-target compilation works.
//
// The structure is GotoBLAS/BLIS's (Goto & van de Geijn 2008, "Anatomy of high-performance
// matrix multiplication"; Van Zee & van de Geijn 2015, "BLIS"): five loops around a register-
// blocked micro-kernel, with both operands copied ("packed") into the order the micro-kernel
// reads them, so that every layout costs one pack and then runs the same fast loop.
//
//   for jc in N step NC:                      B panel (KC x NC) stays in L2
//     for pc in K step KC:
//       pack B[pc:pc+KC, jc:jc+NC]            -> micro-panels of NR columns, k-major
//       for ic in M step MC:                  A block (MC x KC) stays in L2
//         pack A[ic:ic+MC, pc:pc+KC]          -> micro-panels of MR rows, k-major
//         for jr in NC step NR:               B micro-panel (KC x NR) stays in L1
//           for ir in MC step MR:
//             micro_kernel: C[MR x NR tile] (+)= A micro-panel @ B micro-panel
//
// The micro-kernel keeps an MR x NR tile of C in registers (NR = 2 vectors) for a whole KC
// block: per k, two vector loads of B and MR broadcasts of A feed 2 MR fused multiply-adds.
// Packing pads partial micro-panels with zeros, so the micro-kernel always runs whole tiles;
// an edge tile goes through a small buffer and only its valid part reaches C.
//
// Threads: C is cut into pieces (along whichever of M or N is longer; how many: pieces_of
// below), which the pool's threads take one at a time (thread_pool.h);
// each runs the five loops on its piece with its own packing buffers: no barriers, no shared
// writes. Every C[i, j] is the same sum in the same order (k blocks of KC in order, k in order
// inside a block) whatever the piece, tile or thread, so results do not depend on the number of
// threads.
#include "autograd/kernels/matmul.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "autograd/kernels/dispatch.h"

// Highway's per-target includes, in the order its skeleton.cc gives (foreach_target.h
// re-includes this file once per target): never sorted.
// clang-format off
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "autograd/kernels/matmul.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "autograd/kernels/simd-inl.h"
// clang-format on

HWY_BEFORE_NAMESPACE();
namespace attograd::kernels::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// This file's own helpers and kernel bodies get internal linkage (the shared ones come from
// simd-inl.h); only the exported names at the end are visible outside.
namespace {

// ---- Blocking ----------------------------------------------------------------------------------

// Rows of the register tile. The tile holds 2 * MR accumulators plus two vectors of B and one
// broadcast of A: 14 rows fill AVX-512's 32 registers (28 + 3), 6 rows fill the 16 of AVX2 and
// SSE (12 + 3). The scalar target gets a 4 x 2 tile.
#if HWY_TARGET <= HWY_AVX3
constexpr int64_t kMR = 14;
#elif HWY_TARGET == HWY_SCALAR
constexpr int64_t kMR = 4;
#else
constexpr int64_t kMR = 6;
#endif

// Vectors per row of the register tile: NR = kNV * Lanes columns.
constexpr int64_t kNV = 2;

// Cache blocks, in bytes of packed data, for this machine's caches (Zen 5: L1d 48 KiB,
// L2 1 MiB per core, L3 shared): a B micro-panel (KC x NR) fills about 2/3 of L1, and an A block
// (MC x KC) and a B panel (KC x NC) half of L2 each. BLIS would keep the B panel in L3, for
// reuse by many A blocks; but at GPT shapes M is often a single A block (B*T = 256 rows for
// GPT-2 small), so each B panel is used once, and one that stays in L2 between its packing and
// its use measured faster (lm_head forward: 0.89x -> 0.95x OpenBLAS with 4 MiB -> 512 KiB).
// Measured on the same shapes, MR 12 vs 14 and KC 192 / 256 / 384 were all within noise (3%).
constexpr int64_t kKC = 256;
constexpr size_t kABlockBytes = 512 << 10;
constexpr size_t kBPanelBytes = 512 << 10;

// A second thread pays from about a million multiply-adds (M * N * K, ~10 us of one core) on:
// below it, waking the other core costs more than it saves (pico's 1024 x 65 x 6 products ran
// 5x slower on 2 threads with a threshold of 2e5).
constexpr int64_t kParallelMinWork = 1 << 20;

// How many pieces a product of `work` multiply-adds is cut into for the threads, along a side of
// `units` tiles: one per half kParallelMinWork (so from kParallelMinWork on there are two), at
// most one per unit and at most kMaxPieces; a single one when the pool has one thread. Each
// piece packs the other operand again (the B panel when the pieces are row blocks), which cost
// nano's 1-thread step a quarter with 8 pieces, so pieces stay few; 8 still let a thread that
// another process keeps off its core leave most of its share to the others. The cut changes no
// sum (see the top of this file), so it may depend on the thread count.
constexpr int64_t kMaxPieces = 8;
// The largest operand packed once for all pieces (pack_all): GPT-2 small's lm_head gradient at
// B*T = 256 needs 54 MB; a larger one is packed piece by piece, as on one thread.
constexpr int64_t kPackAllBytes = int64_t{64} << 20;
inline int64_t pieces_of(int64_t work, int64_t units) {
  if (num_threads() == 1) return 1;
  return std::clamp<int64_t>(work / (kParallelMinWork / 2), 1, std::min(units, kMaxPieces));
}

template <typename T>
struct Blocking {
  int64_t NR;  // columns of the register tile
  int64_t MC;  // rows of an A block, a multiple of kMR
  int64_t NC;  // columns of a B panel, a multiple of NR
};

template <typename T>
Blocking<T> blocking() {
  const hn::ScalableTag<T> d;
  const int64_t NR = kNV * static_cast<int64_t>(hn::Lanes(d));
  const int64_t mc = static_cast<int64_t>(kABlockBytes / (kKC * sizeof(T)));
  const int64_t nc = static_cast<int64_t>(kBPanelBytes / (kKC * sizeof(T)));
  return {NR, std::max<int64_t>(kMR, mc / kMR * kMR), std::max<int64_t>(NR, nc / NR * NR)};
}

// ---- Operands ----------------------------------------------------------------------------------

// The problem as the loops see it: A(i, k) = a[i * a_row + k * a_col], B(k, j) = b[k * b_row +
// j * b_col], so the stored layouts (row-major, or transposed) only change two strides each.
template <typename T>
struct Problem {
  T* c;
  const T* a;
  const T* b;
  const T* bias;  // (N,) or null
  int64_t M, K, N;
  int64_t a_row, a_col, b_row, b_col;
  bool accumulate;

  T A(int64_t i, int64_t k) const { return a[i * a_row + k * a_col]; }
  T B(int64_t k, int64_t j) const { return b[k * b_row + j * b_col]; }
  // C[i, j] = v (+ bias[j]) (+ C[i, j] when accumulating): how every finished sum is stored.
  void store(int64_t i, int64_t j, T v) const {
    T* cij = c + i * N + j;
    if (bias != nullptr) v += bias[j];
    *cij = accumulate ? *cij + v : v;
  }
};

// ---- Packing -----------------------------------------------------------------------------------

// dst[k * ld_dst + r] = src[r * ld_src + k] for r < rows, k < kc: the transposing copy that packs
// an operand stored along k (A stored (M, K), B stored (N, K)) into k-major micro-panels.
// Scalar, one element per load and store: the specification of transpose_copy below.
template <typename T>
void transpose_copy_scalar(T* HWY_RESTRICT dst, int64_t ld_dst, const T* HWY_RESTRICT src,
                           int64_t ld_src, int64_t rows, int64_t kc) {
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t k = 0; k < kc; ++k) dst[k * ld_dst + r] = src[r * ld_src + k];
}

// The same, L x L blocks at a time with one 128-bit vector per row of a block (L = 4 floats or 2
// doubles): L loads, an in-register transpose, L stores; the leftover rows and k's go through
// the scalar version. About 4x fewer memory operations than the scalar copy, which matters
// because with M = 256 (a GPT-2 batch of 4 x 64 tokens) packing the transposed weight of every
// forward product would otherwise cost a fifth of its time.
template <typename T>
void transpose_copy(T* HWY_RESTRICT dst, int64_t ld_dst, const T* HWY_RESTRICT src, int64_t ld_src,
                    int64_t rows, int64_t kc) {
#if HWY_TARGET == HWY_SCALAR
  transpose_copy_scalar(dst, ld_dst, src, ld_src, rows, kc);
#else
  const hn::Full128<T> d;
  constexpr int64_t L = static_cast<int64_t>(hn::MaxLanes(hn::Full128<T>()));
  const int64_t rows_l = rows / L * L, kc_l = kc / L * L;
  for (int64_t r = 0; r < rows_l; r += L) {
    const T* s = src + r * ld_src;
    T* o = dst + r;
    for (int64_t k = 0; k < kc_l; k += L) {
      if constexpr (L == 4) {
        // rows a, b, c, e of 4 k's each -> 4 k's of 4 rows each
        const auto a = hn::LoadU(d, s + k), b = hn::LoadU(d, s + ld_src + k);
        const auto c = hn::LoadU(d, s + 2 * ld_src + k), e = hn::LoadU(d, s + 3 * ld_src + k);
        const hn::Repartition<uint64_t, decltype(d)> d64;
        const auto ab_lo = hn::BitCast(d64, hn::InterleaveLower(d, a, b));  // a0 b0 a1 b1
        const auto ce_lo = hn::BitCast(d64, hn::InterleaveLower(d, c, e));  // c0 e0 c1 e1
        const auto ab_hi = hn::BitCast(d64, hn::InterleaveUpper(d, a, b));  // a2 b2 a3 b3
        const auto ce_hi = hn::BitCast(d64, hn::InterleaveUpper(d, c, e));  // c2 e2 c3 e3
        hn::StoreU(hn::BitCast(d, hn::InterleaveLower(d64, ab_lo, ce_lo)), d, o + (k + 0) * ld_dst);
        hn::StoreU(hn::BitCast(d, hn::InterleaveUpper(d64, ab_lo, ce_lo)), d, o + (k + 1) * ld_dst);
        hn::StoreU(hn::BitCast(d, hn::InterleaveLower(d64, ab_hi, ce_hi)), d, o + (k + 2) * ld_dst);
        hn::StoreU(hn::BitCast(d, hn::InterleaveUpper(d64, ab_hi, ce_hi)), d, o + (k + 3) * ld_dst);
      } else {
        static_assert(L == 2, "128-bit blocks of float or double");
        const auto a = hn::LoadU(d, s + k), b = hn::LoadU(d, s + ld_src + k);
        hn::StoreU(hn::InterleaveLower(d, a, b), d, o + (k + 0) * ld_dst);  // a0 b0
        hn::StoreU(hn::InterleaveUpper(d, a, b), d, o + (k + 1) * ld_dst);  // a1 b1
      }
    }
    transpose_copy_scalar(dst + kc_l * ld_dst + r, ld_dst, s + kc_l, ld_src, L, kc - kc_l);
  }
  transpose_copy_scalar(dst + rows_l, ld_dst, src + rows_l * ld_src, ld_src, rows - rows_l, kc);
#endif
}

// Packs `lines` lines of an operand (rows of A, or columns of B), kc k's each, into micro-panels
// of `width` lines (kMR for A, NR for B): panel p holds, for each k, the `width` values
// src[(p width + w) * line_stride + k * k_stride], w = 0..width-1, contiguous; lines past the
// end are zero. One of the strides is 1 for every stored layout:
//   line_stride == 1: the values of one k are contiguous (A stored (K, M), B stored (K, N));
//   k_stride == 1: each line runs along k (A stored (M, K), B stored (N, K), the nn.Linear
//   weight), so packing transposes.
template <typename T>
HWY_NOINLINE void pack_panels(T* HWY_RESTRICT dst, int64_t width, const T* src, int64_t line_stride,
                              int64_t k_stride, int64_t lines, int64_t kc) {
  const hn::ScalableTag<T> d;
  const int64_t V = static_cast<int64_t>(hn::Lanes(d));
  for (int64_t p = 0; p < lines; p += width) {
    const int64_t n = std::min(width, lines - p);
    T* panel = dst + p * kc;
    const T* s = src + p * line_stride;
    if (line_stride == 1) {
      for (int64_t k = 0; k < kc; ++k) {
        const T* from = s + k * k_stride;
        T* to = panel + k * width;
        if (n == width && width % V == 0) {
          for (int64_t w = 0; w < width; w += V) hn::Store(hn::LoadU(d, from + w), d, to + w);
        } else {
          for (int64_t w = 0; w < n; ++w) to[w] = from[w];
          for (int64_t w = n; w < width; ++w) to[w] = T(0);
        }
      }
    } else {
      transpose_copy(panel, width, s, line_stride, n, kc);
      for (int64_t k = 0; k < kc; ++k)
        for (int64_t w = n; w < width; ++w) panel[k * width + w] = T(0);
    }
  }
}

// A[i0 : i0+mc, k0 : k0+kc] into micro-panels of kMR rows, k-major.
template <typename T>
void pack_a(T* dst, const Problem<T>& pr, int64_t i0, int64_t mc, int64_t k0, int64_t kc) {
  pack_panels(dst, kMR, pr.a + i0 * pr.a_row + k0 * pr.a_col, pr.a_row, pr.a_col, mc, kc);
}

// B[k0 : k0+kc, j0 : j0+nc] into micro-panels of NR columns, k-major.
template <typename T>
void pack_b(T* dst, const Problem<T>& pr, int64_t NR, int64_t k0, int64_t kc, int64_t j0,
            int64_t nc) {
  pack_panels(dst, NR, pr.b + k0 * pr.b_row + j0 * pr.b_col, pr.b_col, pr.b_row, nc, kc);
}

// All of one operand (lines = M for A, N for B, all of K) packed once for every piece of a
// threaded product: k blocks of kKC one after the other, block pc at dst + pc * round_up(lines,
// width), and in it the panel of line l (a multiple of width) at + l * kc, as pack_a/pack_b lay
// out a block. Without it each piece of C packed the other operand again: 8 pieces at 2 threads
// spent 36% more time packing than OpenMP's one piece per thread (nano, perf), and GPT-2 small's
// dx = dy W of the lm_head (K = 50,257) copied its 51 MB dy eight times a step. The packing runs
// as its own parallel loop, in groups of 8 panels per k block.
struct PackedAllTag {};

inline int64_t round_up(int64_t n, int64_t m) { return (n + m - 1) / m * m; }

// An operand packed by pack_all (data null: none).
template <typename T>
struct PackedAll {
  const T* data = nullptr;
  int64_t lines_padded = 0;
  // The packed block of k block pc, from line l.
  const T* block(int64_t pc, int64_t l, int64_t kc) const {
    return data + pc * lines_padded + l * kc;
  }
};

template <typename T>
PackedAll<T> pack_all(int64_t width, const T* src, int64_t line_stride, int64_t k_stride,
                      int64_t lines, int64_t K) {
  const int64_t lines_padded = round_up(lines, width);
  T* dst = thread_scratch<T, PackedAllTag>(static_cast<size_t>(lines_padded * K));
  const int64_t group = 8 * width;
  const int64_t groups = (lines + group - 1) / group, blocks = (K + kKC - 1) / kKC;
  for_range(groups * blocks, true, [&](int64_t t) HWY_ATTR {
    const int64_t pc = t / groups * kKC, l0 = t % groups * group;
    const int64_t kc = std::min(kKC, K - pc);
    pack_panels(dst + pc * lines_padded + l0 * kc, width, src + pc * k_stride + l0 * line_stride,
                line_stride, k_stride, std::min(group, lines - l0), kc);
  });
  return {dst, lines_padded};
}

// ---- Micro-kernel ------------------------------------------------------------------------------

// How a finished tile meets C: the first k block overwrites C (or adds to it when the caller
// accumulates) and adds the bias; later k blocks add their partial sums.
struct StoreMode {
  bool add;        // C = C + tile, else C = tile
  bool with_bias;  // + bias[j]
};

// One row of a finished tile, two vectors wide, into c_row (columns j .. j + 2 Lanes).
template <class D, class V, typename T = hn::TFromD<D>>
HWY_INLINE void store_row(D d, V v0, V v1, T* HWY_RESTRICT c_row, const T* bias, StoreMode mode) {
  const size_t N = hn::Lanes(d);
  if (mode.with_bias) {
    v0 = hn::Add(v0, hn::LoadU(d, bias));
    v1 = hn::Add(v1, hn::LoadU(d, bias + N));
  }
  if (mode.add) {
    v0 = hn::Add(hn::LoadU(d, c_row), v0);
    v1 = hn::Add(hn::LoadU(d, c_row + N), v1);
  }
  hn::StoreU(v0, d, c_row);
  hn::StoreU(v1, d, c_row + N);
}

// Expands X(r) for each row r of the largest register tile (14); rows r >= kMR compile away.
#define ATTOGRAD_GEMM_TILE_ROWS(X) \
  X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11) X(12) X(13)
static_assert(kMR <= 14, "ATTOGRAD_GEMM_TILE_ROWS lists 14 rows");

// tile (kMR x 2 Lanes, row stride ldc) (+)=
//     A micro-panel (kc x kMR) @ B micro-panel (kc x 2 Lanes).
// Row r keeps its two accumulators c<r>0, c<r>1 in registers for the whole k loop.
template <class D, typename T = hn::TFromD<D>>
HWY_INLINE void micro_kernel(D d, int64_t kc, const T* HWY_RESTRICT a, const T* HWY_RESTRICT b,
                             T* HWY_RESTRICT c, int64_t ldc, const T* bias, StoreMode mode) {
  const size_t N = hn::Lanes(d);
#define ATTOGRAD_GEMM_ZERO(r) \
  auto c##r##0 = hn::Zero(d); \
  auto c##r##1 = hn::Zero(d);
  ATTOGRAD_GEMM_TILE_ROWS(ATTOGRAD_GEMM_ZERO)
#undef ATTOGRAD_GEMM_ZERO
  for (int64_t k = 0; k < kc; ++k) {
    const auto b0 = hn::Load(d, b);
    const auto b1 = hn::Load(d, b + N);
#define ATTOGRAD_GEMM_FMA(r)                \
  if constexpr (r < kMR) {                  \
    const auto a_r = hn::Set(d, a[r]);      \
    c##r##0 = hn::MulAdd(a_r, b0, c##r##0); \
    c##r##1 = hn::MulAdd(a_r, b1, c##r##1); \
  }
    ATTOGRAD_GEMM_TILE_ROWS(ATTOGRAD_GEMM_FMA)
#undef ATTOGRAD_GEMM_FMA
    a += kMR;
    b += 2 * N;
  }
#define ATTOGRAD_GEMM_STORE(r) \
  if constexpr (r < kMR) store_row(d, c##r##0, c##r##1, c + r * ldc, bias, mode);
  ATTOGRAD_GEMM_TILE_ROWS(ATTOGRAD_GEMM_STORE)
#undef ATTOGRAD_GEMM_STORE
}

// A tile at the bottom or right edge of C (rows < kMR or cols < NR): computed whole into a
// buffer from the zero-padded panels, then only its valid part is stored.
template <typename T>
void edge_tile(int64_t kc, const T* a, const T* b, T* c, int64_t ldc, int64_t rows, int64_t cols,
               const T* bias, StoreMode mode) {
  const hn::ScalableTag<T> d;
  constexpr size_t kMaxNR = kNV * hn::MaxLanes(hn::ScalableTag<T>());
  HWY_ALIGN T tile[kMR * kMaxNR];
  const int64_t NR = kNV * static_cast<int64_t>(hn::Lanes(d));
  micro_kernel(d, kc, a, b, tile, NR, static_cast<const T*>(nullptr), StoreMode{false, false});
  for (int64_t r = 0; r < rows; ++r) {
    T* c_row = c + r * ldc;
    for (int64_t j = 0; j < cols; ++j) {
      const T v = tile[r * NR + j] + (mode.with_bias ? bias[j] : T(0));
      c_row[j] = mode.add ? c_row[j] + v : v;
    }
  }
}

// ---- The five loops ----------------------------------------------------------------------------

// The two packing buffers (thread_scratch tags).
struct PackedA {};
struct PackedB {};

// C[i_begin : i_end, j_begin : j_end], all of K: one thread's rectangle. a_all (all of A, as
// pack_all lays it out) or b_all, when given, replaces packing that operand here.
template <typename T>
void gemm_rectangle(const Problem<T>& pr, int64_t i_begin, int64_t i_end, int64_t j_begin,
                    int64_t j_end, PackedAll<T> a_all = {}, PackedAll<T> b_all = {}) {
  const hn::ScalableTag<T> d;
  const Blocking<T> bl = blocking<T>();
  const int64_t NR = bl.NR;
  // The packing buffers are sized for the whole C, not this piece: any thread may take any
  // piece, and a buffer sized by the piece would grow again the first time a thread took a
  // larger one, in the middle of training.
  const int64_t mc_max = std::min(bl.MC, (pr.M + kMR - 1) / kMR * kMR);
  const int64_t nc_max = std::min(bl.NC, (pr.N + NR - 1) / NR * NR);
  const int64_t kc_max = std::min(kKC, pr.K);
  T* a_pack = thread_scratch<T, PackedA>(static_cast<size_t>(mc_max * kc_max));
  T* b_pack = thread_scratch<T, PackedB>(static_cast<size_t>(nc_max * kc_max));

  for (int64_t jc = j_begin; jc < j_end; jc += bl.NC) {
    const int64_t nc = std::min(bl.NC, j_end - jc);
    for (int64_t pc = 0; pc < pr.K; pc += kKC) {
      const int64_t kc = std::min(kKC, pr.K - pc);
      const StoreMode mode{pc > 0 || pr.accumulate, pc == 0 && pr.bias != nullptr};
      const T* b_block = b_pack;
      if (b_all.data != nullptr) {
        b_block = b_all.block(pc, jc, kc);
      } else {
        pack_b(b_pack, pr, NR, pc, kc, jc, nc);
      }
      for (int64_t ic = i_begin; ic < i_end; ic += bl.MC) {
        const int64_t mc = std::min(bl.MC, i_end - ic);
        const T* a_block = a_pack;
        if (a_all.data != nullptr) {
          a_block = a_all.block(pc, ic, kc);
        } else {
          pack_a(a_pack, pr, ic, mc, pc, kc);
        }
        for (int64_t jr = 0; jr < nc; jr += NR) {
          const int64_t cols = std::min(NR, nc - jr);
          const T* b_panel = b_block + jr * kc;
          const T* bias = pr.bias != nullptr ? pr.bias + jc + jr : nullptr;
          for (int64_t ir = 0; ir < mc; ir += kMR) {
            const int64_t rows = std::min(kMR, mc - ir);
            T* c = pr.c + (ic + ir) * pr.N + jc + jr;
            if (rows == kMR && cols == NR) {
              micro_kernel(d, kc, a_block + ir * kc, b_panel, c, pr.N, bias, mode);
            } else {
              edge_tile(kc, a_block + ir * kc, b_panel, c, pr.N, rows, cols, bias, mode);
            }
          }
        }
      }
    }
  }
}

// K = 0: the product is empty, C = bias (or 0), or C += bias when accumulating.
template <typename T>
void gemm_empty_k(const Problem<T>& pr) {
  for (int64_t i = 0; i < pr.M; ++i)
    for (int64_t j = 0; j < pr.N; ++j) pr.store(i, j, T(0));
}

// ---- Few rows: no packing ----------------------------------------------------------------------
// With M <= kSmallM rows (a GPT generating one token at batch 1: every Linear is a matrix-vector
// product), each element of B is used at most M times, so packing B would read and write all of
// it to save nothing, and the work is bound by reading B once. So B is streamed as stored:
//   b_trans (B stored (N, K), the Linear weight): C[i, j] = dot(A row i, B row j), 4 rows of B
//     at a time against the M rows of A, lanes along k, one sum across lanes per output;
//   otherwise (B stored (K, N)): a register tile (simd-inl.h) of the M rows by up to 4 vectors
//     of columns, one row of B per k.
// Threads split the columns.
constexpr int64_t kSmallM = 4;

// Columns [j0, j1) of C, B stored (N, K), A's M rows contiguous in a_rows (M, K).
template <int M, typename T>
void small_m_dots(const Problem<T>& pr, const T* a_rows, int64_t j0, int64_t j1) {
  const hn::ScalableTag<T> d;
  using V = hn::Vec<decltype(d)>;
  const int64_t N = static_cast<int64_t>(hn::Lanes(d)), K = pr.K;
  for (int64_t j = j0; j < j1; j += 4) {
    const int64_t cols = std::min<int64_t>(4, j1 - j);
    const T* b_rows[4];  // a short last group repeats its last row; the extra sums are dropped
    for (int64_t q = 0; q < 4; ++q) b_rows[q] = pr.b + std::min(j + q, j1 - 1) * pr.b_col;
    V acc[M][4];
    for (int i = 0; i < M; ++i)
      for (int q = 0; q < 4; ++q) acc[i][q] = hn::Zero(d);
    int64_t k = 0;
    for (; k + N <= K; k += N) {
      V b[4];
      for (int q = 0; q < 4; ++q) b[q] = hn::LoadU(d, b_rows[q] + k);
      for (int i = 0; i < M; ++i) {
        const V a = hn::LoadU(d, a_rows + i * K + k);
        for (int q = 0; q < 4; ++q) acc[i][q] = hn::MulAdd(a, b[q], acc[i][q]);
      }
    }
    for (int i = 0; i < M; ++i)
      for (int64_t q = 0; q < cols; ++q) {
        T sum = hn::GetLane(hn::SumOfLanes(d, acc[i][q]));
        for (int64_t kk = k; kk < K; ++kk) sum += a_rows[i * K + kk] * b_rows[q][kk];
        pr.store(i, j + q, sum);
      }
  }
}

// Columns [j0, j1) of C, B stored (K, N). (Up to 8 rows: 8 rows by 2 vectors keep 16
// accumulators, as 4 by 4 do.)
template <int M, typename T>
void small_m_axpy(const Problem<T>& pr, int64_t j0, int64_t j1) {
  for_each_tile<T, M <= 4 ? kTileVectors : std::min(kTileVectors, 2)>(
      j1 - j0, true, [&]<int NV>(auto d, int64_t jj) HWY_ATTR {
        const int64_t j = j0 + jj, N = static_cast<int64_t>(hn::Lanes(d));
        outer_product_tile<M, NV>(
            d, pr.K, [&](int i, int64_t k) { return pr.A(i, k); },
            [&](int64_t k) { return pr.b + k * pr.b_row + j; },
            [&](int i, int v, auto acc) HWY_ATTR {
              HWY_ALIGN T lanes[hn::MaxLanes(decltype(d)())];
              hn::Store(acc, d, lanes);
              for (int64_t l = 0; l < N; ++l) pr.store(i, j + v * N + l, lanes[l]);
            });
      });
}

// The rows of A as a contiguous (M, K) block, for the dot products: A itself when stored (M, K),
// else gathered from its transposed storage into a per-thread buffer.
struct SmallMRows {};

// M rows of C; M > kSmallM only with B stored (K, N) (the register tile; dot products would
// need 4 M accumulators).
template <int M, typename T>
void small_m(const Problem<T>& pr) {
  const bool dots = M <= kSmallM && pr.b_row == 1;  // B stored (N, K)
  const T* a_rows = pr.a;
  if (dots && pr.a_col != 1) {
    T* gathered = thread_scratch<T, SmallMRows>(static_cast<size_t>(M * pr.K));
    for (int i = 0; i < M; ++i)
      for (int64_t k = 0; k < pr.K; ++k) gathered[i * pr.K + k] = pr.A(i, k);
    a_rows = gathered;
  }
  // Columns in units of 4 (the dot groups) or of a vector, in pieces for the threads.
  const int64_t unit = dots ? 4 : static_cast<int64_t>(hn::Lanes(hn::ScalableTag<T>()));
  const int64_t units = (pr.N + unit - 1) / unit;
  const int64_t parts = pieces_of(M * pr.N * pr.K, units);
  for_range(parts, parts > 1, [&](int64_t p) HWY_ATTR {
    const int64_t j0 = units * p / parts * unit,
                  j1 = std::min(pr.N, units * (p + 1) / parts * unit);
    if constexpr (M <= kSmallM) {
      if (dots) return small_m_dots<M>(pr, a_rows, j0, j1);
    }
    small_m_axpy<M>(pr, j0, j1);
  });
}

// ---- Thin products: fewer columns than a register tile ------------------------------------------
// A product with N < NR columns (a lecture model's C = 6, the gradient of a 6-wide layer) would
// pad every micro-panel of B to NR columns and compute mostly zeros (pico's products ran at
// 0.2-0.4x OpenBLAS that way). Instead, vectors run along C's rows, M, the long side in a GPT
// (B*T): a register tile (simd-inl.h) of 4 columns of C by up to 4 vectors of rows, each step k
// broadcasting 4 coefficients B(k, j) and loading the rows' A(i, k). A is read as stored when that
// is a contiguous run (A stored (K, M): the weight-gradient layout), else a block of rows is first
// copied transposed. Threads split the row blocks.
struct ThinRows {};

// Columns [j_begin, j_end) of C.
template <typename T>
void thin_gemm(const Problem<T>& pr, int64_t j_begin, int64_t j_end) {
  const int64_t V = static_cast<int64_t>(hn::Lanes(hn::ScalableTag<T>()));
  const int64_t block = kTileVectors * V, blocks = (pr.M + block - 1) / block, K = pr.K;
  const bool parallel = pr.M * (j_end - j_begin) * K >= kParallelMinWork && blocks > 1;
  for_range(blocks, parallel, [&](int64_t blk) HWY_ATTR {
    const int64_t i0 = blk * block, rows = std::min(block, pr.M - i0);
    // at[k * ld + r] = A(i0 + r, k)
    const T* at = pr.a + i0;
    int64_t ld = pr.a_col;
    if (pr.a_row != 1) {
      T* staged = thread_scratch<T, ThinRows>(static_cast<size_t>(K * block));
      transpose_copy(staged, block, pr.a + i0 * pr.a_row, pr.a_row, rows, K);
      at = staged;
      ld = block;
    }
    for (int64_t j0 = j_begin; j0 < j_end; j0 += 4) {
      const int64_t cols = std::min<int64_t>(4, j_end - j0);
      for_each_tile<T>(rows, true, [&]<int NV>(auto d, int64_t r0) HWY_ATTR {
        const int64_t lanes = static_cast<int64_t>(hn::Lanes(d));
        outer_product_tile<4, NV>(
            d, K, [&](int c, int64_t k) { return pr.B(k, j0 + std::min<int64_t>(c, cols - 1)); },
            [&](int64_t k) { return at + k * ld + r0; },
            [&](int c, int v, auto acc) HWY_ATTR {
              if (c >= cols) return;
              HWY_ALIGN T column[hn::MaxLanes(decltype(d)())];
              hn::Store(acc, d, column);
              for (int64_t l = 0; l < lanes; ++l)
                pr.store(i0 + r0 + v * lanes + l, j0 + c, column[l]);
            });
      });
    }
  });
}

template <typename T>
void matmul_impl(T* c, const T* a, const T* b, int64_t M, int64_t K, int64_t N, bool a_trans,
                 bool b_trans, bool accumulate, const T* bias) {
  if (M == 0 || N == 0) return;
  const Problem<T> pr{c,
                      a,
                      b,
                      bias,
                      M,
                      K,
                      N,
                      a_trans ? 1 : K,
                      a_trans ? M : 1,  // A(i, k)
                      b_trans ? 1 : N,
                      b_trans ? K : 1,  // B(k, j)
                      accumulate};
  if (K == 0) return gemm_empty_k(pr);
  switch (M) {
    case 1:
      return small_m<1>(pr);
    case 2:
      return small_m<2>(pr);
    case 3:
      return small_m<3>(pr);
    case 4:
      return small_m<4>(pr);
    default:
      break;
  }
  static_assert(kSmallM == 4, "the switch above lists the few-row cases");
  // B stored (K, N) takes the few-row register tile up to 8 rows (a 6-wide layer's weight
  // gradient, dW (6, 24) = dyᵀ x: 0.36x OpenBLAS packed).
  if (pr.b_col == 1) {
    switch (M) {
      case 5:
        return small_m<5>(pr);
      case 6:
        return small_m<6>(pr);
      case 7:
        return small_m<7>(pr);
      case 8:
        return small_m<8>(pr);
      default:
        break;
    }
  }
  const int64_t NR = blocking<T>().NR;
  // Thin (all of C, or the last N % NR columns when they would leave most of a micro-panel
  // empty): rows enough for a vector, and a K long enough to pay for the column-by-column stores
  // (measured: with K = 6 the packed path stays faster). nano's lm_head (N = 65 = 2 NR + 1):
  // 0.78x -> ~1x OpenBLAS.
  const int64_t V = static_cast<int64_t>(hn::Lanes(hn::ScalableTag<T>()));
  const bool thin_ok = M >= V && K >= V;
  const int64_t n_packed = !thin_ok ? N : N < NR ? 0 : N % NR <= NR / 2 ? N - N % NR : N;
  if (n_packed < N) thin_gemm(pr, n_packed, N);
  if (n_packed == 0) return;
  // Pieces cut along the longer side of C in whole tiles (so a piece's edge tiles are only
  // those of C itself).
  const bool split_m = M >= n_packed;
  const int64_t unit = split_m ? kMR : NR;
  const int64_t units = ((split_m ? M : n_packed) + unit - 1) / unit;
  const int64_t parts = pieces_of(M * n_packed * K, units);
  // With several pieces, the operand that every piece reads whole (B when the pieces are row
  // blocks, A when they are column blocks) is packed once, up to kPackAllBytes (a copy of it).
  const int64_t shared_bytes =
      (split_m ? round_up(n_packed, NR) : round_up(M, kMR)) * K * static_cast<int64_t>(sizeof(T));
  const bool pack_once = parts > 1 && shared_bytes <= kPackAllBytes;
  const PackedAll<T> a_all =
      pack_once && !split_m ? pack_all(kMR, pr.a, pr.a_row, pr.a_col, M, K) : PackedAll<T>{};
  const PackedAll<T> b_all =
      pack_once && split_m ? pack_all(NR, pr.b, pr.b_col, pr.b_row, n_packed, K) : PackedAll<T>{};
  for_range(parts, parts > 1, [&](int64_t p) HWY_ATTR {
    const int64_t u0 = units * p / parts, u1 = units * (p + 1) / parts;
    if (split_m) {
      gemm_rectangle(pr, u0 * kMR, std::min(M, u1 * kMR), 0, n_packed, a_all, b_all);
    } else {
      gemm_rectangle(pr, 0, M, u0 * NR, std::min(n_packed, u1 * NR), a_all, b_all);
    }
  });
}

}  // namespace

// ---- Exports: the names HWY_EXPORT takes, <name>_impl_f32 and _f64 (dispatch.h) ---------------

ATTOGRAD_KERNEL_TARGET(matmul);

}  // namespace attograd::kernels::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace attograd::kernels {

// The public kernel: forwards to the f32 or f64 export for the best target of this CPU and is
// instantiated for float and double (ATTOGRAD_KERNEL, dispatch.h).

ATTOGRAD_KERNEL(void, matmul,
                (T * c, const T* a, const T* b, int64_t M, int64_t K, int64_t N, bool a_trans,
                 bool b_trans, bool accumulate, const T* bias),
                (c, a, b, M, K, N, a_trans, b_trans, accumulate, bias));

}  // namespace attograd::kernels
#endif  // HWY_ONCE
