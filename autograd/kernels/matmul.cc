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
// an edge tile goes through a small buffer and only its valid part reaches C (C's last rows,
// when at most 4 are left, run a kernel of 4 rows instead). One exception to packing: an A whose
// values few tiles use is read where it is stored (a_in_place).
//
// Threads: C is cut into pieces (along whichever of M or N is longer; how many: pieces_of
// below), which the pool's threads take one at a time (thread_pool.h);
// each runs the five loops on its piece with its own packing buffers, reading an operand that
// was packed once for all pieces (pack_all) where one would be packed again: no barriers, no
// shared writes. Every C[i, j] is the same sum in the same order (k blocks of KC in order, k in
// order inside a block) whatever the piece, tile or thread, so results do not depend on the
// number of threads.
//
// bf16 (matmul_bf16): the same loops with other tiles (Bf16Tiles below). Packing rounds each f32
// to bf16 and stores the k's in pairs, the operand layout of AVX512-BF16's vdpbf16ps, which the
// micro-kernel runs on where the CPU has it; elsewhere the micro-kernel widens the pairs back to
// f32 and runs FMAs. Either way packed panels are half the bytes of f32 ones. Where the CPU has
// AMX, AmxTiles run the same loops on its tile unit, with 32 x 32 tiles of C.
//
// matmul_gelu: the same loops; each tile, once its last k block is stored, gets GELU (and
// gelu' where asked) while it is still in the L1 (activate below), instead of a pass over C in
// memory after the product.
#include "autograd/kernels/matmul.h"

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>

#include "autograd/kernels/bf16.h"
#include "autograd/kernels/dispatch.h"
#include "autograd/kernels/thread_pool.h"
#include "hwy/cache_control.h"  // hwy::Prefetch

#if defined(__x86_64__) && defined(__linux__)
#include <cpuid.h>
#include <sys/syscall.h>
#endif
#if __has_include(<unistd.h>)
#include <unistd.h>  // sysconf: the caches' sizes
#endif

namespace attograd::kernels::detail {
// Whether the AVX3 target may run matmul_bf16 on vdpbf16ps: the CPU has AVX512-BF16 and
// allow_avx512_bf16 has not turned it off. Defined once, in the HWY_ONCE part below.
bool avx512_bf16_enabled();
// Whether the AVX3 target may run matmul_bf16 on AMX (matmul_bf16_uses_amx's conditions).
bool amx_enabled();
// The bytes of packed data in an A block and in a B panel: matmul_blocking().block_bytes.
size_t gemm_block_bytes();
}  // namespace attograd::kernels::detail

// Highway's per-target includes, in the order its skeleton.cc gives (foreach_target.h
// re-includes this file once per target): never sorted.
// clang-format off
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "autograd/kernels/matmul.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "hwy/contrib/math/math-inl.h"
#include "autograd/kernels/simd-inl.h"
#include "autograd/kernels/transpose-inl.h"
#include "autograd/kernels/gelu-inl.h"
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

// Cache blocks. KC, the k's of a block, is fixed: it decides how each C[i, j] is rounded (its
// sum is split in blocks of KC, matmul.h), so a constant KC gives the same bits on every machine
// of one SIMD target whatever its caches, which data-parallel ranks and a checkpoint resumed on
// another machine rely on. A B micro-panel (KC x NR, 32 KiB of f32 on AVX-512) then fills 2/3 of
// a 48 KiB L1d. MC and NC change no sum, only which tiles are computed together, so they come
// from the CPU at run time (matmul_blocking): an A block (MC x KC) and a B panel (KC x NC) take
// half of the core's L2 each (detail::gemm_block_bytes). BLIS would keep the B panel in L3, for
// reuse by many A blocks; but at GPT shapes M is often a single A block (B*T = 256 rows for
// GPT-2 small), so each B panel is used once, and one that stays in L2 between its packing and
// its use measured faster (lm_head forward: 0.89x -> 0.95x OpenBLAS with 4 MiB -> 512 KiB on a
// 1 MiB L2). Measured on the same shapes (Zen 5), MR 12 vs 14 and KC 192 / 256 / 384 were all
// within noise (3%).
constexpr int64_t kKC = kMatmulBlockK;

// A second thread pays from kMatmulParallelMin multiply-adds (M * N * K) on (thread_pool.h):
// below it, waking the other core costs more than it saves (pico's 1024 x 65 x 6 products ran
// 5x slower on 2 threads with a threshold of 2e5; on Zen 5, 1 << 20 left nano no faster than
// 1 << 24 did; 1 << 23 since threads own shares, for nano's lm_head).
//
// How many pieces a product of `work` multiply-adds is cut into for the threads, along a side of
// `units` tiles: one per half kMatmulParallelMin (so from kMatmulParallelMin on there are two), at
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
  return std::clamp<int64_t>(work / (kMatmulParallelMin / 2), 1, std::min(units, kMaxPieces));
}

inline int64_t round_up(int64_t n, int64_t m) { return (n + m - 1) / m * m; }

struct Blocking {
  int64_t NR;  // columns of the register tile
  int64_t MC;  // rows of an A block, a multiple of the tiles' kRows
  int64_t NC;  // columns of a B panel, a multiple of NR
};

// The blocks of a kind of tiles (PlainTiles, Bf16Tiles below): the same bytes of packed data
// whatever the packed element, the register tile as wide as two vectors of C's element.
template <class Tiles>
Blocking blocking() {
  const hn::ScalableTag<typename Tiles::Acc> d;
  // bytes of one packed line of a k block
  constexpr size_t kPanelK = Tiles::kBlockK / Tiles::kGroup * sizeof(typename Tiles::Packed);
  const int64_t NR = kNV * static_cast<int64_t>(hn::Lanes(d));
  const size_t block_bytes = detail::gemm_block_bytes();
  const int64_t mc = static_cast<int64_t>(block_bytes / kPanelK);
  const int64_t nc = static_cast<int64_t>(block_bytes / kPanelK);
  constexpr int64_t MR = Tiles::kRows;
  return {NR, std::max<int64_t>(MR, mc / MR * MR), std::max<int64_t>(NR, nc / NR * NR)};
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
  // matmul_gelu: C's finished elements h become gelu(h), and slope (M, N) (if not null) gets
  // gelu'(h) (activate below).
  bool gelu = false;
  T* slope = nullptr;

  T A(int64_t i, int64_t k) const { return a[i * a_row + k * a_col]; }
  T B(int64_t k, int64_t j) const { return b[k * b_row + j * b_col]; }
  // C[i, j] = v (+ bias[j]) (+ C[i, j] when accumulating): how every finished sum is stored.
  void store(int64_t i, int64_t j, T v) const {
    T* cij = c + i * N + j;
    if (bias != nullptr) v += bias[j];
    *cij = accumulate ? *cij + v : v;
  }
};

// The problem of matmul's arguments (matmul.h).
template <typename T>
Problem<T> problem_of(T* c, const T* a, const T* b, int64_t M, int64_t K, int64_t N, bool a_trans,
                      bool b_trans, bool accumulate, const T* bias) {
  return {c,
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
}

// matmul_gelu's epilogue on the finished block C[i0 : i0+rows, j0 : j0+cols]: each h becomes
// gelu(h), and slope gets gelu'(h), by gelu-inl.h's formulas (gelu.cc's), whole vectors then
// for_each_vector's narrower tail. Called on a tile just stored, so C's values are read from
// the L1.
template <typename T>
void activate(const Problem<T>& pr, int64_t i0, int64_t rows, int64_t j0, int64_t cols) {
  for (int64_t r = i0; r < i0 + rows; ++r) {
    T* c_row = pr.c + r * pr.N + j0;
    T* slope_row = pr.slope != nullptr ? pr.slope + r * pr.N + j0 : nullptr;
    for_each_vector<T>(0, cols, [&](auto d, int64_t j) HWY_ATTR {
      const auto h = hn::LoadU(d, c_row + j);
      const auto t = gelu_tanh(d, h);
      if (slope_row != nullptr) hn::StoreU(gelu_slope(d, h, t), d, slope_row + j);
      hn::StoreU(gelu_value(d, h, t), d, c_row + j);
    });
  }
}

// ---- Packing -----------------------------------------------------------------------------------

// Software prefetch for packing, which reads its source from memory (a weight is read once per
// product, and GPT-2 small's are 500 MB): the hardware prefetcher needs a few misses in a row to
// start following a stream and does not follow one across a page, so reads that jump from row
// to row of the source waited on memory: packing was a fifth of GPT-2 small's bf16 step and a
// tenth of its f32 one, most of it stalled on loads (perf annotate, Zen 5, 2026-12-07).
// Lines ahead that packing along k (k_stride 1) asks for.
[[maybe_unused]] constexpr int64_t kPrefetchLines = 4;  // (not on the scalar target)
// k's ahead that packing across the lines (line_stride 1) asks for.
constexpr int64_t kPrefetchRows = 8;

// Asks for the cache lines of src[0, n) (no fault, no wait).
template <typename T>
HWY_INLINE void prefetch_span(const T* src, int64_t n) {
  constexpr int64_t kPerCacheLine = 64 / static_cast<int64_t>(sizeof(T));
  for (int64_t i = 0; i < n; i += kPerCacheLine) hwy::Prefetch(src + i);
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
  if (line_stride == 1) {
    // Row k of the source across all the panels, then row k + 1: each row is read front to back,
    // and the row kPrefetchRows ahead is asked for meanwhile (panel by panel, the reads jumped a
    // whole row between panels' values).
    for (int64_t k = 0; k < kc; ++k) {
      const T* from = src + k * k_stride;
      const T* ahead = k + kPrefetchRows < kc ? from + kPrefetchRows * k_stride : nullptr;
      for (int64_t p = 0; p < lines; p += width) {
        const int64_t n = std::min(width, lines - p);
        T* to = dst + p * kc + k * width;
        if (ahead != nullptr) prefetch_span(ahead + p, n);
        if (n == width && width % V == 0) {
          for (int64_t w = 0; w < width; w += V) hn::Store(hn::LoadU(d, from + p + w), d, to + w);
        } else {
          for (int64_t w = 0; w < n; ++w) to[w] = from[p + w];
          for (int64_t w = n; w < width; ++w) to[w] = T(0);
        }
      }
    }
    return;
  }
  for (int64_t p = 0; p < lines; p += width) {
    const int64_t n = std::min(width, lines - p);
    T* panel = dst + p * kc;
    const T* s = src + p * line_stride;
    transpose_copy(panel, width, s, line_stride, n, kc, lines - p);
    for (int64_t k = 0; k < kc; ++k)
      for (int64_t w = n; w < width; ++w) panel[k * width + w] = T(0);
  }
}

// ---- Packing to bf16 ----------------------------------------------------------------------------
// pack_panels' layout with every value rounded to bf16 on the way and the k's in pairs: a packed
// element is a uint32_t holding one line's bf16 at k (lower half) and k + 1 (upper half), k even,
// and a panel holds, pair by pair, its `width` lines' pairs contiguous; an odd kc is padded with a
// zero k. That is vdpbf16ps' operand layout (f32 lane i multiplies elements 2i and 2i + 1 of its
// two operands and adds both products), so a B vector is one pair of 16 columns and an A
// broadcast one pair of a row.

// Scalar: panel[q * width + w] = the bf16 pair of line w at k's 2q, 2q + 1 (bf16_from_f32), for
// lines [w0, w1) and pairs [q0, q1); zero for a line >= n or a k >= kc (the padding). The
// specification of pack_bf16_panels, and its edges.
void pack_bf16_block(uint32_t* HWY_RESTRICT panel, int64_t width, const float* HWY_RESTRICT s,
                     int64_t line_stride, int64_t k_stride, int64_t n, int64_t kc, int64_t w0,
                     int64_t w1, int64_t q0, int64_t q1) {
  auto bf16_at = [&](int64_t w, int64_t k) -> uint32_t {
    return w < n && k < kc ? bf16_from_f32(s[w * line_stride + k * k_stride]) : 0u;
  };
  for (int64_t q = q0; q < q1; ++q)
    for (int64_t w = w0; w < w1; ++w)
      panel[q * width + w] = bf16_at(w, 2 * q) | bf16_at(w, 2 * q + 1) << 16;
}

#if HWY_TARGET != HWY_SCALAR
// bf16_from_f32 of each lane, in the upper 16 bits of a 32-bit lane (the lower 16 are left over).
template <class D>
HWY_INLINE hn::Vec<hn::RebindToUnsigned<D>> bf16_in_upper_half(D /*d*/, hn::Vec<D> x) {
  const hn::RebindToUnsigned<D> du;
  const auto bits = hn::BitCast(du, x);
  const auto lowest_kept = hn::And(hn::ShiftRight<16>(bits), hn::Set(du, 1u));
  const auto rounded = hn::Add(bits, hn::Add(lowest_kept, hn::Set(du, 0x7FFFu)));
  return hn::IfThenElse(hn::RebindMask(du, hn::Eq(x, x)), rounded, hn::Set(du, 0x7FC00000u));
}

// The bf16 pairs of the lanes of `even` (at k) and `odd` (at k + 1), stored to dst.
template <class D>
HWY_INLINE void store_bf16_pairs(D d, hn::Vec<D> even, hn::Vec<D> odd, uint32_t* dst) {
  const hn::RebindToUnsigned<D> du;
  hn::StoreU(hn::Or(hn::ShiftRight<16>(bf16_in_upper_half(d, even)),
                    hn::And(bf16_in_upper_half(d, odd), hn::Set(du, 0xFFFF0000u))),
             du, dst);
}

// The pairs of one panel's lines, line by line (staged[w * pairs + q]), before their transpose.
struct StagedPairs {};

// One line along k (k_stride 1) rounded to bf16 and paired: to[q] = the pair at k's 2q, 2q + 1,
// q < ceil(kc / 2) (a missing k + 1 is 0). LoadInterleaved2 splits the even and odd k's of whole
// vectors; the last pairs go through pack_bf16_block.
// (Not on the scalar target, whose pack_bf16_panels is pack_bf16_block throughout.)
void pair_line(const float* HWY_RESTRICT line, int64_t kc, uint32_t* HWY_RESTRICT to) {
  const hn::ScalableTag<float> d;
  const int64_t V = static_cast<int64_t>(hn::Lanes(d)), kc_v = kc / (2 * V) * (2 * V);
  for (int64_t k = 0; k < kc_v; k += 2 * V) {
    hn::Vec<decltype(d)> even, odd;
    hn::LoadInterleaved2(d, line + k, even, odd);
    store_bf16_pairs(d, even, odd, to + k / 2);
  }
  pack_bf16_block(to, 1, line, 0, 1, 1, kc, 0, 1, kc_v / 2, (kc + 1) / 2);
}
#endif

// Packs `lines` lines, kc k's each, into bf16 micro-panels of `width` lines (the layout above),
// with pack_panels' arguments and its two cases:
//   line_stride == 1 (the values of one k contiguous): vectors along the lines, the values at k
//     and k + 1 rounded and paired;
//   k_stride == 1 (each line along k): each line rounded and paired along k in whole vectors
//     (LoadInterleaved2 splits even and odd k's) into a per-thread buffer that stays in L1, then
//     the pairs transposed 4 x 4 into the panel (transpose_copy on 32-bit pairs: half the
//     shuffles of transposing the f32 values, and the rounding runs on full vectors).
// `steps` (>= ceil(kc / 2)) is the packed elements per line: pairs past ceil(kc / 2) are zero
// (AMX's tiles take 16 pairs at a time).
HWY_NOINLINE void pack_bf16_panels(uint32_t* HWY_RESTRICT dst, int64_t width, const float* src,
                                   int64_t line_stride, int64_t k_stride, int64_t lines, int64_t kc,
                                   int64_t steps) {
  const int64_t pairs = (kc + 1) / 2;
#if HWY_TARGET == HWY_SCALAR
  for (int64_t p = 0; p < lines; p += width) {
    uint32_t* panel = dst + p * steps;
    std::fill(panel + pairs * width, panel + steps * width, 0u);
    pack_bf16_block(panel, width, src + p * line_stride, line_stride, k_stride,
                    std::min(width, lines - p), kc, 0, width, 0, pairs);
  }
#else
  if (line_stride == 1) {
    // Two rows of the source (k, k + 1) across all the lines, then the next two: each row is
    // read front to back, which the hardware prefetcher follows. Panel by panel, a row was read
    // `width` values at a time with a jump of a whole row (K's stride, kilobytes) between reads,
    // which no prefetcher followed: the load waited on memory (GPT-2 small's dx = dy W, bf16).
    for (int64_t k = 0; k < kc; k += 2) {
      const float* even = src + k * k_stride;
      const float* ahead = k + kPrefetchRows < kc ? even + kPrefetchRows * k_stride : nullptr;
      for (int64_t p = 0; p < lines; p += width) {
        const int64_t n = std::min(width, lines - p);
        uint32_t* to = dst + p * steps + k / 2 * width;
        if (ahead != nullptr) {
          prefetch_span(ahead + p, n);
          if (k + 1 + kPrefetchRows < kc) prefetch_span(ahead + k_stride + p, n);
        }
        for_each_vector<float>(0, n, [&](auto dv, int64_t w) HWY_ATTR {
          const auto odd = k + 1 < kc ? hn::LoadU(dv, even + k_stride + p + w) : hn::Zero(dv);
          store_bf16_pairs(dv, hn::LoadU(dv, even + p + w), odd, to + w);
        });
      }
    }
  }
  for (int64_t p = 0; p < lines; p += width) {
    const int64_t n = std::min(width, lines - p);
    uint32_t* panel = dst + p * steps;
    const float* s = src + p * line_stride;
    std::fill(panel + pairs * width, panel + steps * width, 0u);
    if (line_stride != 1) {
      uint32_t* staged = thread_scratch<uint32_t, StagedPairs>(static_cast<size_t>(n * pairs));
      for (int64_t w = 0; w < n; ++w) {
        // The line kPrefetchLines ahead, which starts far from this one (each line is a row of
        // the source, K's stride apart), is asked for now so that it has arrived when its turn
        // comes (see kPrefetchLines: each line's first reads would otherwise miss).
        if (p + w + kPrefetchLines < lines)
          prefetch_span(s + (w + kPrefetchLines) * line_stride, kc);
        pair_line(s + w * line_stride, kc, staged + w * pairs);
      }
      transpose_copy(panel, width, staged, pairs, n, pairs);
    }
    pack_bf16_block(panel, width, s, line_stride, k_stride, n, kc, n, width, 0, pairs);
  }
#endif
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

// Row r of a Highway register tile (micro_kernel_fma, micro_kernel_bf16_widen): its two
// accumulators c<r>0, c<r>1 zeroed, and stored to C's row r (store_row) at the end.
#define ATTOGRAD_GEMM_ZERO(r) \
  auto c##r##0 = hn::Zero(d); \
  auto c##r##1 = hn::Zero(d);
#define ATTOGRAD_GEMM_STORE(r) \
  if constexpr (r < kMR) store_row(d, c##r##0, c##r##1, c + r * ldc, bias, mode);
// Row r's two accumulators += a_r (a broadcast) times the two vectors of B.
#define ATTOGRAD_GEMM_MUL_ADD(r, a_r, b0, b1) \
  c##r##0 = hn::MulAdd(a_r, b0, c##r##0);     \
  c##r##1 = hn::MulAdd(a_r, b1, c##r##1);

// tile (R x 2 Lanes, row stride ldc) (+)=
//     A micro-panel (kc x kMR) @ B micro-panel (kc x 2 Lanes), its top R rows,
// of which the first `rows` are stored. Row r keeps its two accumulators c<r>0, c<r>1 in
// registers for the whole k loop. A whole tile is R = rows = kMR. C's last row tile, when at
// most PlainTiles::kTopRows rows are left, takes R = kTopRows: A's panel keeps its kMR-wide
// layout, zero-padded, and only its first R values per k are read. Computing a whole tile into
// a buffer for those rows (edge_tile) cost GPT-2 small's products 4% of their time (M = 256 =
// 18 x 14 + 4: 4 rows in 14).
// A's micro-panel is read as a[r * a_row + k * a_step] (row r, k-th step): packed, a_row = 1
// and a_step = kMR; read where A is stored (a_in_place, below), either A stored (K, M) (a_row 1,
// a_step M) or A stored (M, K) (a_row K, a_step 1: kRowStrided, so that the packed panel's row
// offsets stay constants in the loop's addresses).
template <int64_t R = kMR, bool kRowStrided = false, class D, typename T = hn::TFromD<D>>
HWY_INLINE void micro_kernel_fma(D d, int64_t kc, const T* HWY_RESTRICT a, int64_t a_step,
                                 int64_t a_row, const T* HWY_RESTRICT b, T* HWY_RESTRICT c,
                                 int64_t ldc, const T* bias, StoreMode mode, int64_t rows = R) {
  static_assert(R <= kMR, "at most the register tile's rows");
  const size_t N = hn::Lanes(d);
  if constexpr (!kRowStrided) a_row = 1;
  ATTOGRAD_GEMM_TILE_ROWS(ATTOGRAD_GEMM_ZERO)
  for (int64_t k = 0; k < kc; ++k) {
    const auto b0 = hn::Load(d, b);
    const auto b1 = hn::Load(d, b + N);
#define ATTOGRAD_GEMM_FMA(r)                                   \
  if constexpr (r < R) {                                       \
    ATTOGRAD_GEMM_MUL_ADD(r, hn::Set(d, a[r * a_row]), b0, b1) \
  }
    ATTOGRAD_GEMM_TILE_ROWS(ATTOGRAD_GEMM_FMA)
#undef ATTOGRAD_GEMM_FMA
    a += a_step;
    b += 2 * N;
  }
#define ATTOGRAD_GEMM_STORE_ROWS(r)                                        \
  if constexpr (r < R) {                                                   \
    if (r < rows) store_row(d, c##r##0, c##r##1, c + r * ldc, bias, mode); \
  }
  ATTOGRAD_GEMM_TILE_ROWS(ATTOGRAD_GEMM_STORE_ROWS)
#undef ATTOGRAD_GEMM_STORE_ROWS
}

// The same tile from bf16 micro-panels (pack_bf16_panels, `pairs` pairs of k's), on any target:
// each bf16 widened to f32 (its bits moved to the upper half: Highway's PromoteTo, done on the
// pair) and fed to FMAs, k in order. A product of two bf16 is exact in f32, so for one k block
// this is the scalar twin's sum bit for bit.
template <class D>
HWY_INLINE void micro_kernel_bf16_widen(D d, int64_t pairs, const uint32_t* HWY_RESTRICT a,
                                        const uint32_t* HWY_RESTRICT b, float* HWY_RESTRICT c,
                                        int64_t ldc, const float* bias, StoreMode mode) {
  const hn::RebindToUnsigned<D> du;
  const size_t N = hn::Lanes(d);
  const auto upper = hn::Set(du, 0xFFFF0000u);
  const auto even_of = [&](auto pairs)
                           HWY_ATTR { return hn::BitCast(d, hn::ShiftLeft<16>(pairs)); };
  const auto odd_of = [&](auto pairs) HWY_ATTR { return hn::BitCast(d, hn::And(pairs, upper)); };
  ATTOGRAD_GEMM_TILE_ROWS(ATTOGRAD_GEMM_ZERO)
  for (int64_t q = 0; q < pairs; ++q) {
    const auto b0 = hn::LoadU(du, b), b1 = hn::LoadU(du, b + N);  // 2 N columns' pairs
    const auto b0_even = even_of(b0), b1_even = even_of(b1);
    const auto b0_odd = odd_of(b0), b1_odd = odd_of(b1);
#define ATTOGRAD_GEMM_FMA(r)                                 \
  if constexpr (r < kMR) {                                   \
    const auto a_r = hn::Set(du, a[r]);                      \
    ATTOGRAD_GEMM_MUL_ADD(r, even_of(a_r), b0_even, b1_even) \
    ATTOGRAD_GEMM_MUL_ADD(r, odd_of(a_r), b0_odd, b1_odd)    \
  }
    ATTOGRAD_GEMM_TILE_ROWS(ATTOGRAD_GEMM_FMA)
#undef ATTOGRAD_GEMM_FMA
    a += kMR;
    b += 2 * N;
  }
  ATTOGRAD_GEMM_TILE_ROWS(ATTOGRAD_GEMM_STORE)
}

#undef ATTOGRAD_GEMM_ZERO
#undef ATTOGRAD_GEMM_STORE
#undef ATTOGRAD_GEMM_MUL_ADD

#if HWY_TARGET <= HWY_AVX3
// The same tile with AVX512-BF16's vdpbf16ps (_mm512_dpbf16_ps; Highway 1.0.3 has no op for it):
// f32 lane i of the accumulator += a[2i] b[2i] + a[2i + 1] b[2i + 1], the two k's of a pair for
// one (row, column), so one instruction does the multiply-adds of two FMAs. Compiled for this
// target plus avx512bf16 (the function's own target attribute: the rest of the file must run
// without it), and called only where detail::avx512_bf16_enabled() said the CPU has it.
// vdpbf16ps flushes subnormal inputs and results to zero and may round its two additions in
// another order than the twin, which adds k before k + 1.
__attribute__((target(HWY_TARGET_STR ",avx512bf16"))) void micro_kernel_dpbf16(
    int64_t pairs, const uint32_t* HWY_RESTRICT a, const uint32_t* HWY_RESTRICT b,
    float* HWY_RESTRICT c, int64_t ldc, const float* bias, StoreMode mode) {
  const hn::Full512<float> d;
  constexpr int64_t N = 16;  // f32 lanes; a B vector holds one pair of N columns
#define ATTOGRAD_GEMM_ZERO(r)           \
  __m512 c##r##0 = _mm512_setzero_ps(); \
  __m512 c##r##1 = _mm512_setzero_ps();
  ATTOGRAD_GEMM_TILE_ROWS(ATTOGRAD_GEMM_ZERO)
#undef ATTOGRAD_GEMM_ZERO
  for (int64_t q = 0; q < pairs; ++q) {
    const __m512bh b0 = (__m512bh)_mm512_loadu_si512(b);
    const __m512bh b1 = (__m512bh)_mm512_loadu_si512(b + N);
#define ATTOGRAD_GEMM_DP(r)                                                   \
  if constexpr (r < kMR) {                                                    \
    const __m512bh a_r = (__m512bh)_mm512_set1_epi32(static_cast<int>(a[r])); \
    c##r##0 = _mm512_dpbf16_ps(c##r##0, a_r, b0);                             \
    c##r##1 = _mm512_dpbf16_ps(c##r##1, a_r, b1);                             \
  }
    ATTOGRAD_GEMM_TILE_ROWS(ATTOGRAD_GEMM_DP)
#undef ATTOGRAD_GEMM_DP
    a += kMR;
    b += 2 * N;
  }
#define ATTOGRAD_GEMM_STORE(r) \
  if constexpr (r < kMR)       \
    store_row(d, hn::Vec512<float>{c##r##0}, hn::Vec512<float>{c##r##1}, c + r * ldc, bias, mode);
  ATTOGRAD_GEMM_TILE_ROWS(ATTOGRAD_GEMM_STORE)
#undef ATTOGRAD_GEMM_STORE
}
#endif

#if HWY_TARGET <= HWY_AVX3 && HWY_ARCH_X86_64
// ---- AMX ---------------------------------------------------------------------------------------
// Intel's Advanced Matrix Extensions: eight tile registers of up to 16 rows x 64 bytes, and
// tdpbf16ps, C tile (16 x 16 f32) += A tile (16 rows x 32 bf16 along k) times B tile (16 rows,
// row q holding 16 columns' bf16 pairs at k's 2q, 2q + 1): the pairs' layout pack_bf16_panels
// writes for B already. One instruction does 16 x 16 x 32 multiply-adds. The micro-kernel keeps
// a 32 x 32 tile of C in four tile registers and loads two A tiles and two B tiles per step (all
// eight registers); 14 rows (one A tile, the register tile's kMR) measured 0.6x the rate. A tile
// row is one row of A's 32 k's, so A's panel holds each row's pairs contiguous (AmxTiles::pack_a).
constexpr int64_t kAmxRows = 32;   // rows of C per micro-kernel call: two 16-row tiles
constexpr int64_t kAmxPairs = 16;  // k pairs per tile step: an A tile row is 64 bytes

// The tile registers' shapes for this thread (ldtilecfg's 64-byte description, palette 1): all
// eight 16 rows x 64 bytes. The configuration is per thread and stays until changed, so each
// thread loads it once. Inline assembly, not _tile_loadconfig: gcc 12 does not see that builtin
// read the description, dropped the stores that fill it, and the first tile instruction faulted.
inline void configure_amx_tiles() {
  static thread_local bool configured = false;
  if (configured) return;
  struct alignas(64) {
    uint8_t palette = 1, start_row = 0, reserved[14] = {};
    uint16_t bytes_per_row[16] = {};
    uint8_t rows[16] = {};
  } config;
  for (int t = 0; t < 8; ++t) {
    config.bytes_per_row[t] = 64;
    config.rows[t] = 16;
  }
  asm volatile("ldtilecfg %0" ::"m"(config));
  configured = true;
}

// C (+)= the 32 x 32 tile of A's panel (32 rows of `steps` pairs each: AmxTiles::pack_a) times
// B's micro-panel (`steps` rows of 32 columns' pairs: pack_bf16_panels); steps is a multiple of
// kAmxPairs (AmxTiles::steps pads lines with zero pairs). The four C tiles are stored to a buffer
// and meet C, the bias and the accumulation row by row as every micro-kernel's do (store_row).
__attribute__((target(HWY_TARGET_STR ",amx-tile,amx-bf16"))) void micro_kernel_amx(
    int64_t steps, const uint32_t* HWY_RESTRICT a, const uint32_t* HWY_RESTRICT b,
    float* HWY_RESTRICT c, int64_t ldc, const float* bias, StoreMode mode) {
  configure_amx_tiles();
  const int64_t a_row_bytes = steps * static_cast<int64_t>(sizeof(uint32_t));
  constexpr int64_t kBRowBytes = 32 * sizeof(uint32_t);  // one pair row of 32 columns
  _tile_zero(0);
  _tile_zero(1);
  _tile_zero(2);
  _tile_zero(3);
  for (int64_t q = 0; q < steps; q += kAmxPairs) {
    _tile_loadd(4, a + q, a_row_bytes);               // rows 0-15
    _tile_loadd(5, a + 16 * steps + q, a_row_bytes);  // rows 16-31
    _tile_loadd(6, b + q * 32, kBRowBytes);           // columns 0-15
    _tile_loadd(7, b + q * 32 + 16, kBRowBytes);      // columns 16-31
    _tile_dpbf16ps(0, 4, 6);
    _tile_dpbf16ps(1, 4, 7);
    _tile_dpbf16ps(2, 5, 6);
    _tile_dpbf16ps(3, 5, 7);
  }
  HWY_ALIGN float tile[kAmxRows * 32];
  constexpr int64_t kTileRowBytes = 32 * sizeof(float);
  _tile_stored(0, tile, kTileRowBytes);
  _tile_stored(1, tile + 16, kTileRowBytes);
  _tile_stored(2, tile + 16 * 32, kTileRowBytes);
  _tile_stored(3, tile + 16 * 32 + 16, kTileRowBytes);
  const hn::Full512<float> d;
  for (int64_t r = 0; r < kAmxRows; ++r)
    store_row(d, hn::Load(d, tile + r * 32), hn::Load(d, tile + r * 32 + 16), c + r * ldc, bias,
              mode);
}
#endif

// ---- Tiles: what the five loops pack and multiply
// ------------------------------------------------ The five loops (gemm_rectangle) are the same for
// every precision; a kind of tiles says how panels are packed and multiplied:
//   Packed, Acc   the element of a packed panel, and of C and the register tile;
//   kGroup        k's per packed element;
//   kBlockK       k's per cache block, the blocks C's sums are split in (top of this file);
//   kRows         rows of C per micro-kernel call (the register tile's kMR, or AMX's 32);
//   steps(kc)     packed elements per line of kc k's (ceil(kc / kGroup), or more, zero-padded);
//   pack_a(dst, src, line_stride, k_stride, lines, kc)   A's lines into panels of kRows lines;
//   pack_b(dst, width, src, line_stride, k_stride, lines, kc)   B's into panels of `width` (NR);
//                 both with pack_panels' arguments;
//   micro_kernel(steps, a, b, c, ldc, bias, mode)   a whole kRows x NR tile from panels of
//                 `steps` packed elements per line;
//   kReadsInPlace whether micro_kernel also takes A's micro-panel where A is stored (APanel,
//                 a_in_place below); false where packing converts the values.

// A's micro-panel as the micro-kernel reads it: its first element, the elements from one k to
// the next (kRows when packed) and from one row to the next (1 when packed).
template <typename P>
struct APanel {
  const P* data;
  int64_t step;
  int64_t row = 1;
};

// f32 or f64, packed as they are, one k per step: matmul.
template <typename T>
struct PlainTiles {
  using Packed = T;
  using Acc = T;
  static constexpr int64_t kGroup = 1;
  static constexpr int64_t kBlockK = kKC;
  static constexpr int64_t kRows = kMR;
  static int64_t steps(int64_t kc) { return kc; }
  void pack_a(T* dst, const T* src, int64_t line_stride, int64_t k_stride, int64_t lines,
              int64_t kc) const {
    pack_panels(dst, kRows, src, line_stride, k_stride, lines, kc);
  }
  void pack_b(T* dst, int64_t width, const T* src, int64_t line_stride, int64_t k_stride,
              int64_t lines, int64_t kc) const {
    pack_panels(dst, width, src, line_stride, k_stride, lines, kc);
  }
  static constexpr bool kReadsInPlace = true;
  HWY_INLINE void micro_kernel(int64_t kc, APanel<T> a, const T* b, T* c, int64_t ldc,
                               const T* bias, StoreMode mode) const {
    const hn::ScalableTag<T> d;
    if (a.row == 1) return micro_kernel_fma(d, kc, a.data, a.step, 1, b, c, ldc, bias, mode);
    micro_kernel_fma<kMR, true>(d, kc, a.data, a.step, a.row, b, c, ldc, bias, mode);
  }
  // The first `rows` rows of a tile (rows <= kTopRows), for C's last row tile.
  static constexpr int64_t kTopRows = kMR > 4 ? 4 : 0;
  HWY_INLINE void micro_kernel_top(int64_t kc, APanel<T> a, const T* b, T* c, int64_t ldc,
                                   int64_t rows, const T* bias, StoreMode mode) const {
    const hn::ScalableTag<T> d;
    if (a.row == 1)
      return micro_kernel_fma<kTopRows>(d, kc, a.data, a.step, 1, b, c, ldc, bias, mode, rows);
    micro_kernel_fma<kTopRows, true>(d, kc, a.data, a.step, a.row, b, c, ldc, bias, mode, rows);
  }
};

// f32 operands rounded to bf16 pairs, products summed in f32: matmul_bf16.
struct Bf16Tiles {
  using Packed = uint32_t;  // a pair of bf16 (pack_bf16_panels)
  using Acc = float;
  static constexpr int64_t kGroup = 2;
  static constexpr int64_t kBlockK = kKC;
  static constexpr int64_t kRows = kMR;
  static int64_t steps(int64_t kc) { return (kc + 1) / 2; }
  static constexpr bool kReadsInPlace = false;  // every value is rounded and paired
  bool avx512_bf16;  // micro_kernel_dpbf16 (AVX3 only), else micro_kernel_bf16_widen
  void pack_a(uint32_t* dst, const float* src, int64_t line_stride, int64_t k_stride, int64_t lines,
              int64_t kc) const {
    pack_bf16_panels(dst, kRows, src, line_stride, k_stride, lines, kc, steps(kc));
  }
  void pack_b(uint32_t* dst, int64_t width, const float* src, int64_t line_stride, int64_t k_stride,
              int64_t lines, int64_t kc) const {
    pack_bf16_panels(dst, width, src, line_stride, k_stride, lines, kc, steps(kc));
  }
  void micro_kernel(int64_t pairs, const uint32_t* a, const uint32_t* b, float* c, int64_t ldc,
                    const float* bias, StoreMode mode) const {
#if HWY_TARGET <= HWY_AVX3
    if (avx512_bf16) return micro_kernel_dpbf16(pairs, a, b, c, ldc, bias, mode);
#endif
    micro_kernel_bf16_widen(hn::ScalableTag<float>(), pairs, a, b, c, ldc, bias, mode);
  }
};

#if HWY_TARGET <= HWY_AVX3 && HWY_ARCH_X86_64
// bf16 pairs on AMX (micro_kernel_amx): B packed as for Bf16Tiles (NR = 32 on AVX3: two B tiles
// side by side), A packed the same way into a buffer, then transposed into rows of pairs; each
// line padded with zero pairs to whole tile steps (16 pairs, 32 k's).
struct AmxStagedA {};  // thread_scratch tag: pack_a's k-major panel
struct AmxTiles {
  using Packed = uint32_t;
  using Acc = float;
  static constexpr int64_t kGroup = 2;
  static constexpr int64_t kBlockK = kKC;
  static constexpr int64_t kRows = kAmxRows;
  static int64_t steps(int64_t kc) { return round_up((kc + 1) / 2, kAmxPairs); }
  static constexpr bool kReadsInPlace = false;  // every value is rounded and paired
  void pack_a(uint32_t* dst, const float* src, int64_t line_stride, int64_t k_stride, int64_t lines,
              int64_t kc) const {
    const int64_t kp = steps(kc);
    if (k_stride == 1) {
      // Each line along k (A stored (M, K): every Linear's x): its pairs are a tile row already,
      // so they go straight to their row, without the k-major panel and the transpose back.
      for (int64_t w = 0; w < lines; ++w) {
        uint32_t* row = dst + w * kp;
        pair_line(src + w * line_stride, kc, row);
        std::fill(row + (kc + 1) / 2, row + kp, 0u);  // to a whole tile step
      }
      std::fill(dst + lines * kp, dst + round_up(lines, kRows) * kp, 0u);  // the last panel's rows
      return;
    }
    uint32_t* staged = thread_scratch<uint32_t, AmxStagedA>(static_cast<size_t>(kRows * kp));
    for (int64_t p = 0; p < lines; p += kRows) {
      pack_bf16_panels(staged, kRows, src + p * line_stride, line_stride, k_stride,
                       std::min(kRows, lines - p), kc, kp);
      // dst[row * kp + q] = staged[q * kRows + row]
      transpose_copy(dst + p * kp, kp, staged, kRows, kp, kRows);
    }
  }
  void pack_b(uint32_t* dst, int64_t width, const float* src, int64_t line_stride, int64_t k_stride,
              int64_t lines, int64_t kc) const {
    pack_bf16_panels(dst, width, src, line_stride, k_stride, lines, kc, steps(kc));
  }
  void micro_kernel(int64_t kp, const uint32_t* a, const uint32_t* b, float* c, int64_t ldc,
                    const float* bias, StoreMode mode) const {
    micro_kernel_amx(kp, a, b, c, ldc, bias, mode);
  }
};
#endif

// A[i0 : i0+mc, k0 : k0+kc] into micro-panels of kRows rows.
template <class Tiles, typename T>
void pack_a(const Tiles& tiles, typename Tiles::Packed* dst, const Problem<T>& pr, int64_t i0,
            int64_t mc, int64_t k0, int64_t kc) {
  tiles.pack_a(dst, pr.a + i0 * pr.a_row + k0 * pr.a_col, pr.a_row, pr.a_col, mc, kc);
}

// B[k0 : k0+kc, j0 : j0+nc] into micro-panels of NR columns, k-major.
template <class Tiles, typename T>
void pack_b(const Tiles& tiles, typename Tiles::Packed* dst, const Problem<T>& pr, int64_t NR,
            int64_t k0, int64_t kc, int64_t j0, int64_t nc) {
  tiles.pack_b(dst, NR, pr.b + k0 * pr.b_row + j0 * pr.b_col, pr.b_col, pr.b_row, nc, kc);
}

// A whole tile (kRows x NR) from two micro-panels; a kind of tiles that does not read in place
// gets a packed A panel only.
template <class Tiles, typename P, typename T>
HWY_INLINE void tile_kernel(const Tiles& tiles, int64_t kp, APanel<P> a, const P* b, T* c,
                            int64_t ldc, const T* bias, StoreMode mode) {
  if constexpr (Tiles::kReadsInPlace) {
    tiles.micro_kernel(kp, a, b, c, ldc, bias, mode);
  } else {
    tiles.micro_kernel(kp, a.data, b, c, ldc, bias, mode);
  }
}

// A tile at the bottom or right edge of C (rows < kRows or cols < NR): computed whole into a
// buffer from the zero-padded panels, then only its valid part is stored.
template <class Tiles, typename T = typename Tiles::Acc, typename P = typename Tiles::Packed>
void edge_tile(const Tiles& tiles, int64_t kp, APanel<P> a, const P* b, T* c, int64_t ldc,
               int64_t rows, int64_t cols, const T* bias, StoreMode mode) {
  const hn::ScalableTag<T> d;
  constexpr size_t kMaxNR = kNV * hn::MaxLanes(hn::ScalableTag<T>());
  HWY_ALIGN T tile[Tiles::kRows * kMaxNR];
  const int64_t NR = kNV * static_cast<int64_t>(hn::Lanes(d));
  tile_kernel(tiles, kp, a, b, tile, NR, static_cast<const T*>(nullptr), StoreMode{false, false});
  for (int64_t r = 0; r < rows; ++r) {
    T* c_row = c + r * ldc;
    for (int64_t j = 0; j < cols; ++j) {
      const T v = tile[r * NR + j] + (mode.with_bias ? bias[j] : T(0));
      c_row[j] = mode.add ? c_row[j] + v : v;
    }
  }
}

// All of one operand (lines = M for A, N for B, all of K) packed once for every piece of a
// threaded product: its k blocks one after the other, each as pack_a/pack_b lay out a block (the
// panel of line l, a multiple of width, at l * kp packed elements, kp per line), block pc at
// (pc / kBlockK) * lines_padded * steps(kBlockK). Without it each piece of C packed the
// other operand again: 8 pieces at 2 threads spent 36% more time packing than OpenMP's one piece
// per thread (nano, perf), and GPT-2 small's dx = dy W of the lm_head (K = 50,257) copied its
// 51 MB dy eight times a step. The same holds on one thread for A: gemm_rectangle packs an A
// block again for every B panel of NC columns, so GPT-2 small's x (256 x 768) was transposed six
// times per c_fc forward (N = 3072) and 99 times per lm_head forward. The packing runs as its
// own parallel loop, in groups of 8 panels per k block. A and B have buffers of their own, since
// a product may pack both once.
struct PackedAllA {};
struct PackedAllB {};

// An operand packed by pack_all (data null: none).
template <typename P>
struct PackedAll {
  const P* data = nullptr;
  int64_t block_stride = 0;  // packed elements per k block: lines_padded * steps(kBlockK)
  int64_t block_k = 1;       // k's per block (kBlockK)
  // k block pc's panels from line l, kp packed elements per line.
  const P* block(int64_t pc, int64_t l, int64_t kp) const {
    return data + pc / block_k * block_stride + l * kp;
  }
};

// pack_all's layout for `lines` lines of K k's: k blocks of block_stride packed elements.
struct PackAllLayout {
  int64_t blocks, block_stride;
  template <class Tiles>
  static PackAllLayout of(int64_t width, int64_t lines, int64_t K) {
    constexpr int64_t KC = Tiles::kBlockK;
    return {(K + KC - 1) / KC, round_up(lines, width) * Tiles::steps(KC)};
  }
  // Bytes of the copy, for kPackAllBytes.
  template <class Tiles>
  int64_t bytes() const {
    return blocks * block_stride * static_cast<int64_t>(sizeof(typename Tiles::Packed));
  }
};

// a_side: A's lines (panels of kRows, pack_a), else B's (panels of `width`, pack_b). parallel:
// whether the product runs on several threads (a product below the grain packs on one too).
template <class Tiles, typename T>
PackedAll<typename Tiles::Packed> pack_all(const Tiles& tiles, bool a_side, int64_t width,
                                           const T* src, int64_t line_stride, int64_t k_stride,
                                           int64_t lines, int64_t K, bool parallel) {
  using P = typename Tiles::Packed;
  constexpr int64_t KC = Tiles::kBlockK;
  const PackAllLayout layout = PackAllLayout::of<Tiles>(width, lines, K);
  const int64_t blocks = layout.blocks, block_stride = layout.block_stride;
  const auto size = static_cast<size_t>(blocks * block_stride);
  P* dst = a_side ? thread_scratch<P, PackedAllA>(size) : thread_scratch<P, PackedAllB>(size);
  const int64_t group = 8 * width;
  const int64_t groups = (lines + group - 1) / group;
  for_range(groups * blocks, parallel, [&](int64_t t) HWY_ATTR {
    const int64_t pc = t / groups * KC, l0 = t % groups * group;
    const int64_t kc = std::min(KC, K - pc), kp = Tiles::steps(kc);
    P* to = dst + t / groups * block_stride + l0 * kp;
    const T* from = src + pc * k_stride + l0 * line_stride;
    if (a_side) {
      tiles.pack_a(to, from, line_stride, k_stride, std::min(group, lines - l0), kc);
    } else {
      tiles.pack_b(to, width, from, line_stride, k_stride, std::min(group, lines - l0), kc);
    }
  });
  return {dst, block_stride, KC};
}

// ---- The five loops ----------------------------------------------------------------------------

// The two packing buffers (thread_scratch tags).
struct PackedA {};
struct PackedB {};

// Whether the micro-kernel reads A's whole micro-panels where A is stored, unpacked. Packing
// copies every value of A once per product so that the tiles read it contiguous; when A's values
// are used by few tiles (N <= kInPlaceMaxUses NR: nano's products with N = 128, 4 uses) that
// copy does not pay for itself. Both of A's stored layouts can be read as they are:
//   A stored (K, M) (a weight gradient's dyᵀ) already holds, for each k, a row tile's kRows
//     values side by side: the packed layout, only M elements from one k to the next instead of
//     kRows. Packing was a sixth of nano's c_attn and c_fc dW (perf, Zen 5, 2026-12-07), and
//     reading in place measured 1.11-1.19x (`bench/kernels_ab.py`).
//   A stored (M, K) (x of a forward, dy of an input gradient): each of the tile's rows is read
//     along k, kRows rows apart (micro_kernel_fma's kRowStrided), in place of a transposing pack:
//     nano's c_attn and c_fc dx, mlp.c_proj's forward and the lm_head's forward (N = 65) measured
//     1.04-1.18x at 1 thread and 1.04-1.10x at 2 (2026-12-07).
// With more uses the packed panel pays: in place measured 0.97x at 12 uses (baby's c_fc dW),
// 0.90x at 24 with M = 50,257 (GPT-2 small's lm_head dW, every k on another page), and for A
// stored (M, K) 0.87-0.97x at 12 uses (baby's dx and mlp.c_proj forward, N = 384), 0.95-0.97x at
// 16 (nano's c_fc forward) and 0.63x at 24 (GPT-2 small's c_fc dx, N = 768). B
// stored (K, N) could be read in place the same way; it measured 0.95-1.04x (its panel is used by
// every row tile), so it is always packed. Partial panels are packed too (their padding is the
// packing's zeros). Same sums, same order.
constexpr int64_t kInPlaceMaxUses = 4;

template <class Tiles, typename T>
bool a_in_place(const Problem<T>& pr, int64_t NR) {
  if constexpr (Tiles::kReadsInPlace) {
    return (pr.a_row == 1 || pr.a_col == 1) && pr.N <= kInPlaceMaxUses * NR;
  } else {
    return false;
  }
}

// C[i_begin : i_end, j_begin : j_end], all of K: one thread's rectangle. a_all (all of A, as
// pack_all lays it out) or b_all, when given, replaces packing that operand here; A read in place
// (a_in_place) is packed only for its partial panel.
template <class Tiles, typename T>
void gemm_rectangle(const Tiles& tiles, const Problem<T>& pr, int64_t i_begin, int64_t i_end,
                    int64_t j_begin, int64_t j_end, PackedAll<typename Tiles::Packed> a_all = {},
                    PackedAll<typename Tiles::Packed> b_all = {}) {
  using P = typename Tiles::Packed;
  const Blocking bl = blocking<Tiles>();
  const int64_t NR = bl.NR, KC = Tiles::kBlockK, MR = Tiles::kRows;
  const bool in_place = a_in_place<Tiles>(pr, NR);
  // A panel read in place, from A as stored (none for Tiles that pack every value).
  const auto stored = [&](int64_t i, int64_t k) -> APanel<P> {
    if constexpr (Tiles::kReadsInPlace) {
      if (pr.a_row == 1) return {pr.a + i + k * pr.a_col, pr.a_col};  // A stored (K, M)
      return {pr.a + i * pr.a_row + k, 1, pr.a_row};                  // A stored (M, K)
    } else {
      return {nullptr, 0};
    }
  };
  // The rows up to which C's last row tile runs the short kernel (Tiles that have one).
  constexpr int64_t kTopRows = [] {
    if constexpr (requires { Tiles::kTopRows; }) return Tiles::kTopRows;
    return int64_t{0};
  }();
  // The packing buffers are sized for the whole C, not this piece: any thread may take any
  // piece, and a buffer sized by the piece would grow again the first time a thread took a
  // larger one, in the middle of training.
  const int64_t mc_max = std::min(bl.MC, round_up(pr.M, MR));
  const int64_t nc_max = std::min(bl.NC, round_up(pr.N, NR));
  const int64_t kc_max = Tiles::steps(std::min(KC, pr.K));  // packed elements per line
  P* a_pack = thread_scratch<P, PackedA>(static_cast<size_t>(mc_max * kc_max));
  P* b_pack = thread_scratch<P, PackedB>(static_cast<size_t>(nc_max * kc_max));

  for (int64_t jc = j_begin; jc < j_end; jc += bl.NC) {
    const int64_t nc = std::min(bl.NC, j_end - jc);
    for (int64_t pc = 0; pc < pr.K; pc += KC) {
      const int64_t kc = std::min(KC, pr.K - pc);
      const int64_t kp = Tiles::steps(kc);  // packed elements per line
      const StoreMode mode{pc > 0 || pr.accumulate, pc == 0 && pr.bias != nullptr};
      const bool activated = pr.gelu && pc + KC >= pr.K;  // C's last k block: its final values
      const P* b_block = b_pack;
      if (b_all.data != nullptr) {
        b_block = b_all.block(pc, jc, kp);
      } else {
        pack_b(tiles, b_pack, pr, NR, pc, kc, jc, nc);
      }
      for (int64_t ic = i_begin; ic < i_end; ic += bl.MC) {
        const int64_t mc = std::min(bl.MC, i_end - ic);
        const int64_t mc_in = in_place ? mc / MR * MR : 0;  // rows of A read in place
        const P* a_block = a_pack;
        if (a_all.data != nullptr) {
          a_block = a_all.block(pc, ic, kp);
        } else if (mc_in < mc) {
          pack_a(tiles, a_pack, pr, ic + mc_in, mc - mc_in, pc, kc);
        }
        for (int64_t jr = 0; jr < nc; jr += NR) {
          const int64_t cols = std::min(NR, nc - jr);
          const P* b_panel = b_block + jr * kp;
          const T* bias = pr.bias != nullptr ? pr.bias + jc + jr : nullptr;
          for (int64_t ir = 0; ir < mc; ir += MR) {
            const int64_t rows = std::min(MR, mc - ir);
            const APanel<P> a_panel =
                ir < mc_in ? stored(ic + ir, pc) : APanel<P>{a_block + (ir - mc_in) * kp, MR};
            T* c = pr.c + (ic + ir) * pr.N + jc + jr;
            if (rows == MR && cols == NR) {
              tile_kernel(tiles, kp, a_panel, b_panel, c, pr.N, bias, mode);
            } else if (cols == NR && rows <= kTopRows) {
              if constexpr (kTopRows > 0)
                tiles.micro_kernel_top(kp, a_panel, b_panel, c, pr.N, rows, bias, mode);
            } else {
              edge_tile(tiles, kp, a_panel, b_panel, c, pr.N, rows, cols, bias, mode);
            }
            if (activated) activate(pr, ic + ir, rows, jc + jr, cols);
          }
        }
      }
    }
  }
}

// The packed kernel on columns [0, n) of C, in pieces for the threads cut along the longer side
// of C in whole tiles (so a piece's edge tiles are only those of C itself).
template <class Tiles, typename T>
void gemm_packed(const Tiles& tiles, const Problem<T>& pr, int64_t n) {
  const Blocking bl = blocking<Tiles>();
  const int64_t NR = bl.NR, MR = Tiles::kRows, M = pr.M;
  const bool split_m = M >= n;
  const int64_t unit = split_m ? MR : NR;
  const int64_t units = ((split_m ? M : n) + unit - 1) / unit;
  const int64_t parts = pieces_of(M * n * pr.K, units);
  // An operand that would be packed more than once is packed once, up to kPackAllBytes (a copy
  // of it): B when several pieces are row blocks (each reads all of B); A when several pieces
  // are column blocks, or when a piece spans more than one B panel (gemm_rectangle packs A again
  // for each) and the copy stays in the L3 until its last use. A larger copy goes to memory and
  // comes back once per B panel: one write and one read more than packing A again from its
  // source each time, which a transpose in cache costs less than (GPT-2 small's lm_head
  // gradients at B*T = 256, 51 MB of dlogits over two B panels, one thread: Zen 5, ~10%).
  using Packed = PackedAll<typename Tiles::Packed>;
  const bool column_pieces = parts > 1 && !split_m;
  const int64_t a_bytes = PackAllLayout::of<Tiles>(MR, M, pr.K).template bytes<Tiles>();
  const bool a_once =
      a_bytes <= kPackAllBytes &&
      (column_pieces ||
       (n > bl.NC && a_bytes <= static_cast<int64_t>(matmul_blocking().l3_bytes / 2)));
  const bool b_once =
      parts > 1 && split_m &&
      PackAllLayout::of<Tiles>(NR, n, pr.K).template bytes<Tiles>() <= kPackAllBytes;
  const Packed a_all = a_once && !a_in_place<Tiles>(pr, NR)
                           ? pack_all(tiles, true, MR, pr.a, pr.a_row, pr.a_col, M, pr.K, parts > 1)
                           : Packed{};
  const Packed b_all =
      b_once ? pack_all(tiles, false, NR, pr.b, pr.b_col, pr.b_row, n, pr.K, parts > 1) : Packed{};
  for_range(parts, parts > 1, [&](int64_t p) HWY_ATTR {
    const int64_t u0 = units * p / parts, u1 = units * (p + 1) / parts;
    if (split_m) {
      gemm_rectangle(tiles, pr, u0 * MR, std::min(M, u1 * MR), 0, n, a_all, b_all);
    } else {
      gemm_rectangle(tiles, pr, 0, M, u0 * NR, std::min(n, u1 * NR), a_all, b_all);
    }
  });
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
  const bool parallel = pr.M * (j_end - j_begin) * K >= kMatmulParallelMin && blocks > 1;
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

// The paths other than the packed kernel (K = 0, few rows, thin columns) store C without
// matmul_gelu's activation; this applies it afterwards to C's columns [j0, j1), every row. Those
// products are small (M <= 8, or N % NR columns), so one pass on the calling thread.
template <typename T>
void activate_columns(const Problem<T>& pr, int64_t j0, int64_t j1) {
  if (pr.gelu && j0 < j1) activate(pr, 0, pr.M, j0, j1 - j0);
}

// Few rows (M <= 4, or up to 8 with B stored (K, N)): small_m<M>; false for any other M.
template <typename T>
bool few_rows(const Problem<T>& pr) {
  switch (pr.M) {
    case 1:
      return small_m<1>(pr), true;
    case 2:
      return small_m<2>(pr), true;
    case 3:
      return small_m<3>(pr), true;
    case 4:
      return small_m<4>(pr), true;
    default:
      break;
  }
  static_assert(kSmallM == 4, "the switch above lists the few-row cases");
  // B stored (K, N) takes the few-row register tile up to 8 rows (a 6-wide layer's weight
  // gradient, dW (6, 24) = dyᵀ x: 0.36x OpenBLAS packed).
  if (pr.b_col == 1) {
    switch (pr.M) {
      case 5:
        return small_m<5>(pr), true;
      case 6:
        return small_m<6>(pr), true;
      case 7:
        return small_m<7>(pr), true;
      case 8:
        return small_m<8>(pr), true;
      default:
        break;
    }
  }
  return false;
}

// matmul and matmul_gelu on a problem with M, N > 0: the path for its shape.
template <typename T>
void gemm(const Problem<T>& pr) {
  const int64_t M = pr.M, K = pr.K, N = pr.N;
  if (K == 0) return gemm_empty_k(pr), activate_columns(pr, 0, N);
  if (few_rows(pr)) return activate_columns(pr, 0, N);
  const int64_t NR = blocking<PlainTiles<T>>().NR;
  // Thin (all of C, or the last N % NR columns when they would leave most of a micro-panel
  // empty): rows enough for a vector, and a K long enough to pay for the column-by-column stores
  // (measured: with K = 6 the packed path stays faster). nano's lm_head (N = 65 = 2 NR + 1):
  // 0.78x -> ~1x OpenBLAS.
  const int64_t V = static_cast<int64_t>(hn::Lanes(hn::ScalableTag<T>()));
  const bool thin_ok = M >= V && K >= V;
  const int64_t n_packed = !thin_ok ? N : N < NR ? 0 : N % NR <= NR / 2 ? N - N % NR : N;
  if (n_packed < N) thin_gemm(pr, n_packed, N), activate_columns(pr, n_packed, N);
  if (n_packed > 0) gemm_packed(PlainTiles<T>{}, pr, n_packed);
}

template <typename T>
void matmul_impl(T* c, const T* a, const T* b, int64_t M, int64_t K, int64_t N, bool a_trans,
                 bool b_trans, bool accumulate, const T* bias) {
  if (M == 0 || N == 0) return;
  gemm(problem_of(c, a, b, M, K, N, a_trans, b_trans, accumulate, bias));
}

// matmul_gelu's and matmul_bf16_gelu's problem (matmul.h): matmul's, C overwritten, with the
// activation.
template <typename T>
Problem<T> gelu_problem_of(T* y, T* slope, const T* a, const T* b, int64_t M, int64_t K, int64_t N,
                           bool a_trans, bool b_trans, const T* bias) {
  Problem<T> pr = problem_of(y, a, b, M, K, N, a_trans, b_trans, false, bias);
  pr.gelu = true;
  pr.slope = slope;
  return pr;
}

template <typename T>
void matmul_gelu_impl(T* y, T* slope, const T* a, const T* b, int64_t M, int64_t K, int64_t N,
                      bool a_trans, bool b_trans, const T* bias) {
  if (M == 0 || N == 0) return;
  gemm(gelu_problem_of(y, slope, a, b, M, K, N, a_trans, b_trans, bias));
}

// Whether this target's matmul_bf16 runs on AMX (matmul_bf16_uses_amx).
bool uses_amx_impl() { return HWY_TARGET <= HWY_AVX3 && HWY_ARCH_X86_64 && detail::amx_enabled(); }
// Whether this target's matmul_bf16 runs on vdpbf16ps (matmul_bf16_uses_avx512_bf16).
bool uses_avx512_bf16_impl() {
  return HWY_TARGET <= HWY_AVX3 && !uses_amx_impl() && detail::avx512_bf16_enabled();
}

// matmul_bf16 (matmul.h) and matmul_bf16_gelu (pr.gelu): every shape on the packed kernel,
// with bf16 tiles.
void gemm_bf16(const Problem<float>& pr) {
  if (pr.K == 0) return gemm_empty_k(pr), activate_columns(pr, 0, pr.N);
#if HWY_TARGET <= HWY_AVX3 && HWY_ARCH_X86_64
  if (uses_amx_impl()) return gemm_packed(AmxTiles{}, pr, pr.N);
#endif
  gemm_packed(Bf16Tiles{uses_avx512_bf16_impl()}, pr, pr.N);
}

void matmul_bf16_impl(float* c, const float* a, const float* b, int64_t M, int64_t K, int64_t N,
                      bool a_trans, bool b_trans, bool accumulate, const float* bias) {
  if (M == 0 || N == 0) return;
  gemm_bf16(problem_of(c, a, b, M, K, N, a_trans, b_trans, accumulate, bias));
}

void matmul_bf16_gelu_impl(float* y, float* slope, const float* a, const float* b, int64_t M,
                           int64_t K, int64_t N, bool a_trans, bool b_trans, const float* bias) {
  if (M == 0 || N == 0) return;
  gemm_bf16(gelu_problem_of(y, slope, a, b, M, K, N, a_trans, b_trans, bias));
}

}  // namespace

// ---- Exports: the names HWY_EXPORT takes, <name>_impl_f32 and _f64 (dispatch.h) ---------------

ATTOGRAD_KERNEL_TARGET(matmul);
ATTOGRAD_KERNEL_TARGET(matmul_gelu);

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

ATTOGRAD_KERNEL(void, matmul_gelu,
                (T * y, T* slope, const T* a, const T* b, int64_t M, int64_t K, int64_t N,
                 bool a_trans, bool b_trans, const T* bias),
                (y, slope, a, b, M, K, N, a_trans, b_trans, bias));

// bf16 is for f32 only: exported by name, not through ATTOGRAD_KERNEL's float/double pair.
HWY_EXPORT(matmul_bf16_impl);
HWY_EXPORT(matmul_bf16_gelu_impl);
HWY_EXPORT(uses_avx512_bf16_impl);
HWY_EXPORT(uses_amx_impl);

void matmul_bf16(float* c, const float* a, const float* b, int64_t M, int64_t K, int64_t N,
                 bool a_trans, bool b_trans, bool accumulate, const float* bias) {
  HWY_DYNAMIC_DISPATCH(matmul_bf16_impl)(c, a, b, M, K, N, a_trans, b_trans, accumulate, bias);
}

void matmul_bf16_gelu(float* y, float* slope, const float* a, const float* b, int64_t M, int64_t K,
                      int64_t N, bool a_trans, bool b_trans, const float* bias) {
  HWY_DYNAMIC_DISPATCH(matmul_bf16_gelu_impl)(y, slope, a, b, M, K, N, a_trans, b_trans, bias);
}

bool matmul_bf16_uses_avx512_bf16() { return HWY_DYNAMIC_DISPATCH(uses_avx512_bf16_impl)(); }
bool matmul_bf16_uses_amx() { return HWY_DYNAMIC_DISPATCH(uses_amx_impl)(); }

namespace {
// The caches' sizes, in bytes.
struct CpuCaches {
  size_t l1d, l2, l3;
};

// Linux's own account of cpu0's caches, one folder per cache:
// /sys/devices/system/cpu/cpu0/cache/index<i>/{level,type,size} ("3", "Unified", "32768K"), the
// size of one instance. Sets the sizes it finds and says which (an index without a size, as
// Linux shows a cache of unknown size, is skipped; the folders end at the first missing one).
struct FoundCaches {
  bool l1d = false, l2 = false, l3 = false;
};
FoundCaches read_sysfs_caches(CpuCaches& c) {
  FoundCaches found;
  for (int i = 0;; ++i) {
    const std::string dir = "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(i) + "/";
    std::ifstream level_file(dir + "level");
    if (!level_file) return found;
    std::ifstream type_file(dir + "type"), size_file(dir + "size");
    int level = 0;
    std::string type, size;
    if (!(level_file >> level) || !(type_file >> type) || !(size_file >> size)) continue;
    char* unit = nullptr;
    size_t bytes = std::strtoull(size.c_str(), &unit, 10);
    if (*unit == 'K') bytes <<= 10;
    if (*unit == 'M') bytes <<= 20;
    if (*unit == 'G') bytes <<= 30;
    if (bytes == 0) continue;
    if (level == 1 && type == "Data") c.l1d = bytes, found.l1d = true;
    if (level == 2 && type != "Instruction") c.l2 = bytes, found.l2 = true;
    if (level == 3 && type != "Instruction") c.l3 = bytes, found.l3 = true;
  }
}

// Linux's sizes (sysfs) where it has them, else those sysconf reports (glibc reads them from
// cpuid), each where the system says nothing (0 or -1: another OS, WebAssembly) the Zen 5's the
// constants were first measured on. sysfs first: glibc 2.36's sysconf gave a Zen 4 VM's L3 as
// 320 MiB (its cpuid leaf 0x80000006; sysfs and lscpu: 32 MiB, from leaf 0x8000001D, 2026-12-08),
// which let an operand packed once for several uses outgrow the real L3 (gemm_packed's a_once).
CpuCaches read_cpu_caches() {
  CpuCaches c{48 << 10, 1 << 20, 32 << 20};
  [[maybe_unused]] const FoundCaches sysfs = read_sysfs_caches(c);
#if defined(_SC_LEVEL1_DCACHE_SIZE) && defined(_SC_LEVEL2_CACHE_SIZE) && \
    defined(_SC_LEVEL3_CACHE_SIZE)
  const auto ask = [](bool known, int name, size_t& bytes) {
    if (known) return;
    if (const long reported = ::sysconf(name); reported > 0) bytes = static_cast<size_t>(reported);
  };
  ask(sysfs.l1d, _SC_LEVEL1_DCACHE_SIZE, c.l1d);
  ask(sysfs.l2, _SC_LEVEL2_CACHE_SIZE, c.l2);
  ask(sysfs.l3, _SC_LEVEL3_CACHE_SIZE, c.l3);
#endif
  return c;
}
// An A block or B panel of at least 64 KiB (a 256 KiB L2) and at most 4 MiB: past that BLIS's
// own blocks stop growing, and a bigger panel would only wait longer for its packing.
constexpr size_t kMinBlockBytes = 64 << 10, kMaxBlockBytes = 4 << 20;

// The CPU's caches, asked once; set_matmul_l2_bytes' override (0: none).
const CpuCaches cpu_caches = read_cpu_caches();
std::atomic<size_t> l2_override{0};

std::atomic<bool> avx512_bf16_allowed{true};

// Asked once: cpuid does not change while the process runs. (The OS's saving of the AVX-512
// registers, which AVX512-BF16 uses too, is what Highway checked before choosing AVX3.)
bool cpu_has_avx512_bf16() {
#if HWY_ARCH_X86
  static const bool has = __builtin_cpu_supports("avx512bf16");
  return has;
#else
  return false;
#endif
}

std::atomic<bool> amx_allowed{true};

// The CPU has AMX-TILE and AMX-BF16 (cpuid leaf 7: EDX bits 24 and 22), and Linux granted this
// process the tiles' register state: since Linux 5.16 a process asks for it once (arch_prctl
// ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA = 18), or its first tile instruction faults. Asked
// while the library loads (amx_permitted below), before a program sets up an alternate signal
// stack: Linux refuses the permission while one exists that is too small for a signal frame
// carrying the 8 KiB of tiles.
bool request_amx() {
#if defined(__x86_64__) && defined(__linux__)
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (__get_cpuid_max(0, nullptr) < 7) return false;
  __cpuid_count(7, 0, eax, ebx, ecx, edx);
  const bool has_amx = (edx >> 24 & 1) != 0 && (edx >> 22 & 1) != 0;
  constexpr long kArchReqXcompPerm = 0x1023, kXfeatureXtiledata = 18;
  return has_amx && syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) == 0;
#else
  return false;
#endif
}
const bool amx_permitted = request_amx();
}  // namespace

MatmulBlocking matmul_blocking() {
  const size_t overridden = l2_override.load(std::memory_order_relaxed);
  const size_t l2 = overridden != 0 ? overridden : cpu_caches.l2;
  return {kMatmulBlockK, cpu_caches.l1d, l2, cpu_caches.l3,
          std::clamp(l2 / 2, kMinBlockBytes, kMaxBlockBytes)};
}

void set_matmul_l2_bytes(size_t bytes) { l2_override.store(bytes, std::memory_order_relaxed); }

size_t detail::gemm_block_bytes() { return matmul_blocking().block_bytes; }

void allow_amx(bool allowed) { amx_allowed.store(allowed, std::memory_order_relaxed); }

bool detail::amx_enabled() { return amx_permitted && amx_allowed.load(std::memory_order_relaxed); }

void allow_avx512_bf16(bool allowed) {
  avx512_bf16_allowed.store(allowed, std::memory_order_relaxed);
}

bool detail::avx512_bf16_enabled() {
  return cpu_has_avx512_bf16() && avx512_bf16_allowed.load(std::memory_order_relaxed);
}

}  // namespace attograd::kernels
#endif  // HWY_ONCE
