// Batched matrix multiply:  C (..., M, N) = A (..., M, K) @ B (..., K, N).
//
// VJP:  dA = dC Bᵀ,  dB = Aᵀ dC  (summed over batch dimensions that were broadcast).
// All three products are the one kernel, kernels::matmul, with transpose flags; an operand
// that is a transposed view (last two strides swapped) is passed as is, flag set, no copy.
#include <stdexcept>

#include "autograd/kernels/matmul.h"
#include "autograd/ops.h"
#include "autograd/ops_internal.h"

namespace attograd {

namespace {

// How the last two dimensions of an operand sit in memory.
struct MatrixOperand {
  Tensor t;      // the tensor itself, or a contiguous copy when neither layout fits
  bool trans;    // true: each matrix is stored transposed (column-major)
};

MatrixOperand as_matrix_operand(const Tensor& x) {
  const int64_t r = x.dim();
  const int64_t rows = x.shape()[r - 2], cols = x.shape()[r - 1];
  const int64_t s_row = x.strides()[r - 2], s_col = x.strides()[r - 1];
  if ((s_col == 1 || cols == 1) && (s_row == cols || rows == 1)) return {x, false};
  if ((s_row == 1 || rows == 1) && (s_col == rows || cols == 1)) return {x, true};
  return {detail::contiguous_data(x), false};
}

// Element offsets of each batch matrix of t when the batch dimensions are broadcast to
// `batch` (stride 0 where t was broadcast); `strides` are t's own batch strides.
std::vector<int64_t> batch_offsets(const Shape& batch, const Shape& t_shape, const Shape& strides) {
  const Shape t_batch(t_shape.begin(), t_shape.end() - 2);
  const Shape t_strides(strides.begin(), strides.end() - 2);
  Shape eff(batch.size(), 0);
  for (size_t i = 0; i < t_batch.size(); ++i) {
    const size_t j = batch.size() - t_batch.size() + i;
    eff[j] = t_batch[i] == batch[j] ? t_strides[i] : 0;
  }
  std::vector<int64_t> out;
  out.reserve(static_cast<size_t>(shape_numel(batch)));
  for (int64_t i = 0; i < shape_numel(batch); ++i) {
    int64_t off = 0, rem = i;
    for (size_t d = batch.size(); d-- > 0;) {
      off += (rem % batch[d]) * eff[d];
      rem /= batch[d];
    }
    out.push_back(off);
  }
  return out;
}

}  // namespace

Tensor matmul(const Tensor& a, const Tensor& b) {
  detail::check_floating_pair("matmul", a, b);
  if (a.dim() < 2 || b.dim() < 2)
    throw std::invalid_argument("matmul: expected 2-D or batched operands (..., M, K) @ (..., K, N), got " +
                                shape_str(a.shape()) + " @ " + shape_str(b.shape()) +
                                " (reshape a vector to (1, K) or (K, 1))");
  const int64_t M = a.size(-2), K = a.size(-1), N = b.size(-1);
  if (b.size(-2) != K)
    throw std::invalid_argument("matmul: inner dimensions differ: " + shape_str(a.shape()) + " @ " +
                                shape_str(b.shape()) + " (" + std::to_string(K) + " vs " +
                                std::to_string(b.size(-2)) + ")");
  const Shape batch = detail::broadcast_shapes(Shape(a.shape().begin(), a.shape().end() - 2),
                                               Shape(b.shape().begin(), b.shape().end() - 2), "matmul");
  Shape out_shape = batch;
  out_shape.push_back(M);
  out_shape.push_back(N);

  MatrixOperand A = as_matrix_operand(a), B = as_matrix_operand(b);
  // x @ W with a contiguous (B, T, C) x and a 2-D W (every nn.Linear): fold the batch into M,
  // so the kernel sees one tall matrix and can spread its rows over threads.
  int64_t rows = M;
  std::vector<int64_t> a_off, b_off;
  if (b.dim() == 2 && !A.trans && A.t.is_contiguous()) {
    rows = shape_numel(batch) * M;
    a_off = {0};
    b_off = {0};
  } else {
    a_off = batch_offsets(batch, A.t.shape(), A.t.strides());
    b_off = batch_offsets(batch, B.t.shape(), B.t.strides());
  }
  Tensor c = Tensor::empty(out_shape, a.dtype());
  dispatch_floating(a.dtype(), "matmul", [&]<typename T>() {
    for (size_t i = 0; i < a_off.size(); ++i)
      kernels::matmul<T>(c.data<T>() + i * rows * N, A.t.data<T>() + a_off[i], B.t.data<T>() + b_off[i],
                         rows, K, N, A.trans, B.trans, false);
  });

  return record(c, "matmul", {a, b},
                [A = MatrixOperand{A.t.detach(), A.trans}, B = MatrixOperand{B.t.detach(), B.trans},
                 a_off, b_off, rows, K, N, batch](const Tensor& g, std::span<Tensor> gi) {
    // Gradient buffers are contiguous in each operand's logical shape: batch offsets come from
    // contiguous strides, broadcast dimensions get stride 0 so their products add up.
    const bool folded = a_off.size() == 1 && shape_numel(batch) != 1;
    auto grad_offsets = [&](const Tensor& buf) {
      return folded ? std::vector<int64_t>{0} : batch_offsets(batch, buf.shape(), buf.strides());
    };
    dispatch_floating(g.dtype(), "matmul", [&]<typename T>() {
      const T* dc = g.data<T>();
      if (gi[0].defined()) {  // dA (rows, K) += dC (rows, N) @ op(B)ᵀ
        const std::vector<int64_t> off = grad_offsets(gi[0]);
        for (size_t i = 0; i < off.size(); ++i)
          kernels::matmul<T>(gi[0].data<T>() + off[i], dc + i * rows * N, B.t.data<T>() + b_off[i],
                             rows, N, K, false, !B.trans, true);
      }
      if (gi[1].defined()) {  // dB (K, N) += op(A)ᵀ @ dC (rows, N)
        const std::vector<int64_t> off = grad_offsets(gi[1]);
        for (size_t i = 0; i < a_off.size(); ++i)
          kernels::matmul<T>(gi[1].data<T>() + off[folded ? 0 : i], A.t.data<T>() + a_off[i],
                             dc + i * rows * N, K, rows, N, !A.trans, false, true);
      }
    });
  });
}

}  // namespace attograd
