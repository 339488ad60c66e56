// Matrix multiply C (M, N) (+)= op(A) (M, K) @ op(B) (K, N) for the four transpose layouts
// (matmul.h), SIMD through Highway with runtime dispatch. The scalar specification is
// matmul_ref.h; see elementwise.cc for how the per-target compilation works.
//
// Two inner loops, chosen by how B is stored, so that the innermost loop always reads B
// contiguously:
//   b_trans  (B stored (N, K), the nn.Linear weight): C[i, j] = dot(A row i, B row j), two
//            contiguous rows. When A is stored transposed too, a panel of A's columns is first
//            copied into contiguous rows.
//   !b_trans (B stored (K, N)): C[i, :] = sum_k A(i, k) * B[k, :], rows of B scaled and added
//            ("row axpy"), with a small tile of C held in registers over all k.
//
// Work is split into panels of kRowPanel rows of C, each computed whole by one thread. Every
// C[i, j] is computed by the same sequence of operations whatever the panel, tile or thread,
// so results do not depend on the thread count.
#include "autograd/kernels/matmul.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "autograd/kernels/dispatch.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "autograd/kernels/matmul.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "autograd/kernels/simd-inl.h"

HWY_BEFORE_NAMESPACE();
namespace attograd::kernels::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// This file's own helpers and kernel bodies get internal linkage (the shared ones come from
// simd-inl.h); only the exported names at the end are visible outside.
namespace {

// A second thread pays from about 1e5 multiply-adds (M * N * K) on.
constexpr int64_t kParallelMinWork = 100000;

// Rows of C per unit of work: 32 rows of A (32 * K elements) stay in L2 while the column strips
// of B stream past them, and M = 64 already gives both cores a panel.
constexpr int64_t kRowPanel = 32;

// The operands, with A read through strides so that both of its layouts look alike:
// A(i, k) = a[i * a_row + k * a_col], i.e. a_row = K, a_col = 1 when A is stored (M, K), and
// a_row = 1, a_col = M when A is stored transposed, (K, M).
template <typename T>
struct Operands {
  T* c;
  const T* a;
  const T* b;
  int64_t M, K, N;
  int64_t a_row, a_col;
  bool accumulate;

  T A(int64_t i, int64_t k) const { return a[i * a_row + k * a_col]; }
  T* C(int64_t i, int64_t j) const { return c + i * N + j; }
};

// ---- b_trans: C[i, j] = dot(A row i, B row j) ------------------------------------------------

// Four dot products of one row of A (K contiguous values) with rows j..j+3 of B: each load of A
// is shared four ways, and the four accumulators are independent chains of FMAs. When fewer
// than four columns remain (cols < 4), the missing rows of B repeat the last real one and
// their results are dropped. Each dot: lane-wise FMAs, a sum across lanes, then the scalar
// tail k = K - K % Lanes .. K-1.
template <typename T>
HWY_INLINE void dot4(T* c_row, const T* a_row, const T* b_rows, int64_t K, int64_t cols,
                     bool accumulate) {
  const hn::ScalableTag<T> d;
  const int64_t N = static_cast<int64_t>(hn::Lanes(d));
  const T* b0 = b_rows;
  const T* b1 = b_rows + std::min<int64_t>(1, cols - 1) * K;
  const T* b2 = b_rows + std::min<int64_t>(2, cols - 1) * K;
  const T* b3 = b_rows + std::min<int64_t>(3, cols - 1) * K;
  auto acc0 = hn::Zero(d), acc1 = hn::Zero(d), acc2 = hn::Zero(d), acc3 = hn::Zero(d);
  int64_t k = 0;
  for (; k + N <= K; k += N) {
    const auto a = hn::LoadU(d, a_row + k);
    acc0 = hn::MulAdd(a, hn::LoadU(d, b0 + k), acc0);
    acc1 = hn::MulAdd(a, hn::LoadU(d, b1 + k), acc1);
    acc2 = hn::MulAdd(a, hn::LoadU(d, b2 + k), acc2);
    acc3 = hn::MulAdd(a, hn::LoadU(d, b3 + k), acc3);
  }
  T s[4] = {hn::GetLane(hn::SumOfLanes(d, acc0)), hn::GetLane(hn::SumOfLanes(d, acc1)),
            hn::GetLane(hn::SumOfLanes(d, acc2)), hn::GetLane(hn::SumOfLanes(d, acc3))};
  for (; k < K; ++k) {
    s[0] += a_row[k] * b0[k];
    s[1] += a_row[k] * b1[k];
    s[2] += a_row[k] * b2[k];
    s[3] += a_row[k] * b3[k];
  }
  for (int64_t q = 0; q < cols; ++q) c_row[q] = accumulate ? c_row[q] + s[q] : s[q];
}

// Rows i0..i1 of C, B stored (N, K).
template <typename T>
void panel_dots(const Operands<T>& op, int64_t i0, int64_t i1) {
  const int64_t K = op.K;
  // Rows of A for this panel, contiguous. A stored (M, K) already has them (a_col == 1, which
  // also holds for a transposed A with M = 1); A stored (K, M) has columns instead, so gather
  // the panel's columns into a per-thread buffer (reused from call to call: no allocation once
  // it has grown).
  const T* a_rows = op.a + i0 * K;
  if (op.a_col != 1) {
    thread_local std::vector<T> packed;
    packed.resize(static_cast<size_t>((i1 - i0) * K));
    for (int64_t k = 0; k < K; ++k)
      for (int64_t i = i0; i < i1; ++i) packed[(i - i0) * K + k] = op.A(i, k);
    a_rows = packed.data();
  }
  // Four rows of B (a few KB) at a time against every row of the panel.
  for (int64_t j = 0; j < op.N; j += 4) {
    const int64_t cols = std::min<int64_t>(4, op.N - j);
    for (int64_t i = i0; i < i1; ++i) {
      dot4(op.c + i * op.N + j, a_rows + (i - i0) * K, op.b + j * K, K, cols, op.accumulate);
    }
  }
}

// ---- !b_trans: C[i, :] = sum_k A(i, k) * B[k, :] ---------------------------------------------

// Writes a finished sum of products to C: C = sum, or C = C + sum when accumulating. The sum
// starts from zero, not from C, so a call adds one contribution that does not depend on what
// C holds (from zero, two accumulating calls give exactly twice one).
template <class D, class V, typename T = hn::TFromD<D>>
HWY_INLINE void store_tile(D d, V sum, T* c, bool accumulate) {
  hn::StoreU(accumulate ? hn::Add(hn::LoadU(d, c), sum) : sum, d, c);
}

// The rows i0..i3 of a tile of 4 rows of C starting at row i. When fewer than 4 remain (rows < 4,
// at the end of a panel), the missing ones repeat the last real row, so the k loop stays the
// same; their results are not stored.
struct TileRows {
  int64_t i0, i1, i2, i3;
  TileRows(int64_t i, int64_t rows)
      : i0(i),
        i1(i + std::min<int64_t>(1, rows - 1)),
        i2(i + std::min<int64_t>(2, rows - 1)),
        i3(i + std::min<int64_t>(3, rows - 1)) {}
};

// A tile of C (4 rows x 2 vectors) kept in 8 registers for the whole k loop: per k, two loads
// of B and four broadcasts of A feed eight FMAs.
template <typename T>
HWY_INLINE void tile_4x2(const Operands<T>& op, int64_t i, int64_t rows, int64_t j) {
  const hn::ScalableTag<T> d;
  const int64_t N = static_cast<int64_t>(hn::Lanes(d));
  const auto [i0, i1, i2, i3] = TileRows(i, rows);
  auto c00 = hn::Zero(d), c01 = hn::Zero(d), c10 = hn::Zero(d), c11 = hn::Zero(d);
  auto c20 = hn::Zero(d), c21 = hn::Zero(d), c30 = hn::Zero(d), c31 = hn::Zero(d);
  for (int64_t k = 0; k < op.K; ++k) {
    const T* bk = op.b + k * op.N + j;
    const auto b0 = hn::LoadU(d, bk), b1 = hn::LoadU(d, bk + N);
    const auto a0 = hn::Set(d, op.A(i0, k)), a1 = hn::Set(d, op.A(i1, k));
    const auto a2 = hn::Set(d, op.A(i2, k)), a3 = hn::Set(d, op.A(i3, k));
    c00 = hn::MulAdd(a0, b0, c00);
    c01 = hn::MulAdd(a0, b1, c01);
    c10 = hn::MulAdd(a1, b0, c10);
    c11 = hn::MulAdd(a1, b1, c11);
    c20 = hn::MulAdd(a2, b0, c20);
    c21 = hn::MulAdd(a2, b1, c21);
    c30 = hn::MulAdd(a3, b0, c30);
    c31 = hn::MulAdd(a3, b1, c31);
  }
  store_tile(d, c00, op.C(i0, j), op.accumulate);
  store_tile(d, c01, op.C(i0, j + N), op.accumulate);
  if (rows > 1) {
    store_tile(d, c10, op.C(i1, j), op.accumulate);
    store_tile(d, c11, op.C(i1, j + N), op.accumulate);
  }
  if (rows > 2) {
    store_tile(d, c20, op.C(i2, j), op.accumulate);
    store_tile(d, c21, op.C(i2, j + N), op.accumulate);
  }
  if (rows > 3) {
    store_tile(d, c30, op.C(i3, j), op.accumulate);
    store_tile(d, c31, op.C(i3, j + N), op.accumulate);
  }
}

// The same for a 4 x 1 tile whose width is one vector or, with a 1-lane tag dt, one column:
// the columns left over after the 2-vector tiles.
template <class D, typename T = hn::TFromD<D>>
HWY_INLINE void tile_4x1(D dt, const Operands<T>& op, int64_t i, int64_t rows, int64_t j) {
  const auto [i0, i1, i2, i3] = TileRows(i, rows);
  auto acc0 = hn::Zero(dt), acc1 = hn::Zero(dt), acc2 = hn::Zero(dt), acc3 = hn::Zero(dt);
  for (int64_t k = 0; k < op.K; ++k) {
    const auto bk = hn::LoadU(dt, op.b + k * op.N + j);
    acc0 = hn::MulAdd(hn::Set(dt, op.A(i0, k)), bk, acc0);
    acc1 = hn::MulAdd(hn::Set(dt, op.A(i1, k)), bk, acc1);
    acc2 = hn::MulAdd(hn::Set(dt, op.A(i2, k)), bk, acc2);
    acc3 = hn::MulAdd(hn::Set(dt, op.A(i3, k)), bk, acc3);
  }
  store_tile(dt, acc0, op.C(i0, j), op.accumulate);
  if (rows > 1) store_tile(dt, acc1, op.C(i1, j), op.accumulate);
  if (rows > 2) store_tile(dt, acc2, op.C(i2, j), op.accumulate);
  if (rows > 3) store_tile(dt, acc3, op.C(i3, j), op.accumulate);
}

// Rows i0..i1 of C, B stored (K, N): for each strip of columns (B's strip, K x width, stays in
// cache), every block of 4 rows of the panel.
template <typename T>
void panel_axpy(const Operands<T>& op, int64_t i0, int64_t i1) {
  const hn::ScalableTag<T> d;
  const int64_t N = static_cast<int64_t>(hn::Lanes(d));
  int64_t j = 0;
  for (; j + 2 * N <= op.N; j += 2 * N)
    for (int64_t i = i0; i < i1; i += 4) tile_4x2(op, i, std::min<int64_t>(4, i1 - i), j);
  // The columns left over: one vector, then one column, at a time.
  for_each_vector<T>(j, op.N, [&](auto dt, int64_t jj) HWY_ATTR {
    for (int64_t i = i0; i < i1; i += 4) tile_4x1(dt, op, i, std::min<int64_t>(4, i1 - i), jj);
  });
}

// ---- Entry -----------------------------------------------------------------------------------

template <typename T>
void matmul_impl(T* c, const T* a, const T* b, int64_t M, int64_t K, int64_t N, bool a_trans,
                 bool b_trans, bool accumulate) {
  const Operands<T> op{c, a, b, M, K, N, a_trans ? 1 : K, a_trans ? M : 1, accumulate};
  const int64_t panels = (M + kRowPanel - 1) / kRowPanel;
  for_range(panels, M * N * K >= kParallelMinWork, [&](int64_t p) HWY_ATTR {
    const int64_t i0 = p * kRowPanel;
    const int64_t i1 = std::min(M, i0 + kRowPanel);
    if (b_trans) {
      panel_dots(op, i0, i1);
    } else {
      panel_axpy(op, i0, i1);
    }
  });
}

}  // namespace

// ---- Exports: HWY_EXPORT takes plain names, not template-ids: one per element type ------------

constexpr auto& matmul_impl_f32 = matmul_impl<float>;
constexpr auto& matmul_impl_f64 = matmul_impl<double>;

}  // namespace attograd::kernels::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace attograd::kernels {

HWY_EXPORT(matmul_impl_f32);
HWY_EXPORT(matmul_impl_f64);

// The public template calls the f32 or f64 export for the best target of this CPU (dispatch.h).
template <typename T>
void matmul(T* c, const T* a, const T* b, int64_t M, int64_t K, int64_t N, bool a_trans,
            bool b_trans, bool accumulate) {
  ATTOGRAD_DYNAMIC_DISPATCH(T, matmul_impl)(c, a, b, M, K, N, a_trans, b_trans, accumulate);
}

template void matmul<float>(float*, const float*, const float*, int64_t, int64_t, int64_t, bool,
                            bool, bool);
template void matmul<double>(double*, const double*, const double*, int64_t, int64_t, int64_t, bool,
                             bool, bool);

}  // namespace attograd::kernels
#endif  // HWY_ONCE
