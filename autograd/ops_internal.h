// Helpers shared by the ops_*.cc files: strided iteration, broadcasting, graph-free copies.
// Not part of the public API (ops.h is).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <type_traits>

#include "autograd/autocast.h"
#include "autograd/engine.h"
#include "autograd/kernels/elementwise.h"
#include "autograd/kernels/matmul.h"
#include "autograd/tensor.h"

namespace attograd {
class OpRegistry;
}

namespace attograd::detail {

/// Each ops_*.cc file's registration function: adds the entry of every op in the file, in
/// ops.h's order (op_registry.h). Called once, by op_registry().
void register_elementwise_ops(OpRegistry& registry);
void register_reduce_ops(OpRegistry& registry);
void register_shape_ops(OpRegistry& registry);
void register_matmul_ops(OpRegistry& registry);
void register_nn_ops(OpRegistry& registry);
void register_attention_ops(OpRegistry& registry);
void register_loss_ops(OpRegistry& registry);

/// `t` when `other` requires grad, else an undefined tensor: what an op saves of one operand when
/// only the other operand's gradient reads it (mul's b is read only for da), so that a tensor no
/// VJP will read is neither kept alive nor version-checked (PyTorch saves the same way). Which
/// gradients exist is decided when the op runs, as in PyTorch: a VJP skips an input whose
/// partner was not saved (it did not require grad then).
inline Tensor saved_if_grad(const Tensor& other, const Tensor& t) {
  return grad_enabled() && other.requires_grad() ? t : Tensor();
}

/// The precision a matrix product of an op with this dtype takes, decided when its forward runs
/// (autocast.h): bf16 for f32 under AutocastGuard(MatmulPrecision::bf16), else f32; f64 never
/// changes. The op captures it for its VJP, so backward repeats the forward's choice.
inline MatmulPrecision product_precision(DType dtype) {
  return dtype == DType::f32 ? autocast_precision() : MatmulPrecision::f32;
}

/// kernels::matmul<T>(c, a, b, ...) (kernels/matmul.h), or kernels::matmul_bf16 with the same
/// arguments when `precision` is bf16 (only ever so for T = float: product_precision).
template <typename T>
void matmul_in(MatmulPrecision precision, T* c, const T* a, const T* b, int64_t M, int64_t K,
               int64_t N, bool a_trans, bool b_trans, bool accumulate, const T* bias = nullptr) {
  if constexpr (std::is_same_v<T, float>) {
    if (precision == MatmulPrecision::bf16)
      return kernels::matmul_bf16(c, a, b, M, K, N, a_trans, b_trans, accumulate, bias);
  }
  kernels::matmul<T>(c, a, b, M, K, N, a_trans, b_trans, accumulate, bias);
}

/// kernels::matmul_gelu<T> (kernels/matmul.h), or kernels::matmul_bf16_gelu when `precision` is
/// bf16, as matmul_in chooses.
template <typename T>
void matmul_gelu_in(MatmulPrecision precision, T* y, T* slope, const T* a, const T* b, int64_t M,
                    int64_t K, int64_t N, bool a_trans, bool b_trans, const T* bias) {
  if constexpr (std::is_same_v<T, float>) {
    if (precision == MatmulPrecision::bf16)
      return kernels::matmul_bf16_gelu(y, slope, a, b, M, K, N, a_trans, b_trans, bias);
  }
  kernels::matmul_gelu<T>(y, slope, a, b, M, K, N, a_trans, b_trans, bias);
}
/// t's data, or nullptr for an undefined tensor (a gradient not needed, a tensor not saved).
template <typename T>
T* data_or_null(const Tensor& t) {
  return t.defined() ? t.data<T>() : nullptr;
}

/// NumPy broadcasting of two shapes (align right; each pair equal or one of them 1).
/// Throws std::invalid_argument "op: shapes (2, 3) and (4,) cannot be broadcast".
Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op);

/// A view of t with new shape and strides, offset `extra_offset` elements further. No graph.
Tensor view_of(const Tensor& t, const Shape& shape, const Shape& strides, int64_t extra_offset = 0);

/// A view of t broadcast to `shape` (stride 0 along broadcast dimensions). No graph.
Tensor expand_view(const Tensor& t, const Shape& shape);

/// Wraps a possibly negative dimension index into [0, ndim); throws naming op and shape.
int64_t wrap_dim(int64_t d, int64_t ndim, const char* op);

/// Throws unless a and b are floating tensors of the same dtype.
void check_floating_pair(const char* op, const Tensor& a, const Tensor& b);

/// Calls fn(offsets, n, inner_strides) once per innermost row of an iteration over `shape`
/// shared by K operands with the given strides; offsets[k] is operand k's element offset.
/// Dimensions that are contiguous in every operand are merged first (as PyTorch's
/// TensorIterator does), so contiguous tensors make one long row and kernels get long runs.
template <size_t K, typename F>
void for_each_row(Shape shape, std::array<Shape, K> strides, F&& fn) {
  if (shape_numel(shape) == 0) return;
  // Drop size-1 dimensions, then merge d-1 into d where every operand allows it.
  Shape s;
  std::array<Shape, K> st;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 1) continue;
    bool merge = !s.empty();
    for (size_t k = 0; k < K && merge; ++k) merge = st[k].back() == strides[k][d] * shape[d];
    if (merge) {
      s.back() *= shape[d];
      for (size_t k = 0; k < K; ++k) st[k].back() = strides[k][d];
    } else {
      s.push_back(shape[d]);
      for (size_t k = 0; k < K; ++k) st[k].push_back(strides[k][d]);
    }
  }
  if (s.empty()) {  // a single element
    s.push_back(1);
    for (size_t k = 0; k < K; ++k) st[k].push_back(0);
  }
  const size_t outer_dims = s.size() - 1;
  const int64_t n = s.back();
  std::array<int64_t, K> inner{}, offsets{};
  for (size_t k = 0; k < K; ++k) inner[k] = st[k].back();
  Shape counter(outer_dims, 0);
  const int64_t rows = shape_numel(s) / n;
  for (int64_t r = 0; r < rows; ++r) {
    fn(offsets, n, inner);
    // Odometer increment over the outer dimensions, updating offsets incrementally.
    for (size_t d = outer_dims; d-- > 0;) {
      for (size_t k = 0; k < K; ++k) offsets[k] += st[k][d];
      if (++counter[d] < s[d]) break;
      for (size_t k = 0; k < K; ++k) offsets[k] -= st[k][d] * s[d];
      counter[d] = 0;
    }
  }
}

/// dst += alpha * src, elementwise over src's shape. dst is a view of the same shape whose
/// strides may be 0 along dimensions that src spreads over: those are summed, which is
/// exactly the "sum_to" that undoes broadcasting in a VJP.
void accumulate(const Tensor& dst, const Tensor& src, double alpha = 1.0);

/// Copies src into dst (same shape and dtype, any strides). No graph.
void copy_into(const Tensor& dst, const Tensor& src);

/// A contiguous copy (or t itself if already contiguous). No graph.
Tensor contiguous_data(const Tensor& t);

/// out = a op b with broadcasting, into a new contiguous tensor. No graph.
Tensor binary_raw(kernels::BinaryOp op, const Tensor& a, const Tensor& b);

}  // namespace attograd::detail
