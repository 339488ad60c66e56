// Batched matrix multiply:  C (..., M, N) = A (..., M, K) @ B (..., K, N), and nn.Linear.
//
// The forward and both VJP products (the formulas: each op's entry below) are the one kernel,
// kernels::matmul, with transpose flags; an operand that is a transposed view (last two strides
// swapped) is passed as is, flag set, no copy. Under AutocastGuard(MatmulPrecision::bf16)
// (autograd/autocast.h) an f32 op takes kernels::matmul_bf16 instead, with the same arguments,
// for its forward and, recorded in its node, for both VJP products.
#include <span>
#include <stdexcept>
#include <string>
#include <utility>

#include "autograd/gradcheck_inputs.h"
#include "autograd/kernels/elementwise.h"
#include "autograd/kernels/matmul.h"
#include "autograd/kernels/reduce.h"
#include "autograd/op_registry.h"
#include "autograd/ops.h"
#include "autograd/ops_internal.h"
#include "autograd/size_math.h"

namespace attograd {

using gradcheck_inputs::Inputs;
using gradcheck_inputs::params_case;
using gradcheck_inputs::Shapes;
using gradcheck_inputs::Sizes;

namespace {

// How the last two dimensions of an operand sit in memory.
struct MatrixOperand {
  Tensor t;    // the tensor itself, or a contiguous copy when neither layout fits
  bool trans;  // true: each matrix is stored transposed (column-major)
};

MatrixOperand as_matrix_operand(const Tensor& x) {
  const int64_t r = x.dim();
  const int64_t rows = x.shape()[r - 2], cols = x.shape()[r - 1];
  const int64_t s_row = x.strides()[r - 2], s_col = x.strides()[r - 1];
  if ((s_col == 1 || cols == 1) && (s_row == cols || rows == 1)) return {x, false};
  if ((s_row == 1 || rows == 1) && (s_col == rows || cols == 1)) return {x, true};
  return {detail::contiguous_data(x), false};
}

// Element offsets of the batch matrices of t when its batch dimensions are broadcast to
// `batch` (stride 0 where t was broadcast), computed on demand: offset(i) for the i-th matrix
// in row-major batch order. Two Shapes (inline storage), so no heap allocation per matmul.
struct BatchOffsets {
  Shape batch, strides;  // strides: t's batch strides, aligned to `batch`, 0 where broadcast
  int64_t count = 1;     // number of matrices; 1 and offset 0 for a folded batch

  static BatchOffsets folded() { return {}; }
  BatchOffsets() = default;
  BatchOffsets(const Shape& batch_shape, const Shape& t_shape, const Shape& t_strides)
      : batch(batch_shape), strides(batch_shape.size(), 0), count(shape_numel(batch_shape)) {
    const size_t t_batch = t_shape.size() - 2;
    for (size_t i = 0; i < t_batch; ++i) {
      const size_t j = batch.size() - t_batch + i;
      strides[j] = t_shape[i] == batch[j] ? t_strides[i] : 0;
    }
  }
  int64_t operator[](int64_t i) const {
    int64_t off = 0;
    for (size_t d = batch.size(); d-- > 0;) {
      off += (i % batch[d]) * strides[d];
      i /= batch[d];
    }
    return off;
  }
};

// linear's and linear_gelu's operands: x (..., in), weight (out, in), bias (out,) or undefined,
// as contiguous data, with the product's sizes. Throws std::invalid_argument naming `op`.
struct LinearOperands {
  Tensor xc, wc, bc;
  int64_t rows, in, out;  // the product (rows, in) @ (in, out)
  Shape y_shape;          // (..., out)
};

LinearOperands linear_operands(const char* op, const Tensor& x, const Tensor& weight,
                               const Tensor& bias) {
  detail::check_floating_pair(op, x, weight);
  if (bias.defined()) detail::check_floating_pair(op, x, bias);
  if (weight.dim() != 2 || x.dim() < 1 || x.size(-1) != weight.size(1) ||
      (bias.defined() && bias.shape() != Shape{weight.size(0)}))
    throw std::invalid_argument(
        std::string(op) +
        ": expected input (..., in), weight (out, in) and bias (out,), got input " +
        shape_str(x.shape()) + ", weight " + shape_str(weight.shape()) +
        (bias.defined() ? ", bias " + shape_str(bias.shape()) : std::string()));
  // rows from the leading dimensions, not numel / in: with in == 0 there are still rows, each
  // y = b (or 0), as PyTorch gives.
  int64_t rows = 1;
  for (int64_t i = 0; i + 1 < x.dim(); ++i) rows *= x.size(i);
  Shape y_shape = x.shape();
  y_shape.back() = weight.size(0);
  return {detail::contiguous_data(x),
          detail::contiguous_data(weight),
          bias.defined() ? detail::contiguous_data(bias) : Tensor(),
          rows,
          weight.size(1),
          weight.size(0),
          std::move(y_shape)};
}

// The VJP of y = x Wᵀ + b from dy (rows, out): dx, dW and db into the buffers of gi that are
// defined (GradBuffers::first_write). dx reads W and dW reads x, each undefined when not saved.
template <typename T>
void linear_backward(MatmulPrecision precision, const T* dy, std::span<Tensor> gi, const Tensor& xc,
                     const Tensor& wc, int64_t rows, int64_t in, int64_t out) {
  if (gi[0].defined() && wc.defined())  // dx (rows, in) (+)= dy (rows, out) @ W (out, in)
    detail::matmul_in<T>(precision, gi[0].data<T>(), dy, wc.data<T>(), rows, out, in, false, false,
                         !first_gradient(gi[0]));
  if (gi[1].defined() && xc.defined())  // dW (out, in) (+)= dyᵀ @ x: dy stored (rows, out) is Aᵀ,
                                        // the a_trans layout
    detail::matmul_in<T>(precision, gi[1].data<T>(), dy, xc.data<T>(), out, rows, in, true, false,
                         !first_gradient(gi[1]));
  if (gi.size() > 2 && gi[2].defined())  // db (out,) (+)= sum over rows of dy (rows, out)
    kernels::sum_axis<T>(gi[2].data<T>(), dy, 1, rows, out, !first_gradient(gi[2]));
}

}  // namespace

// ----- matmul -----
static void register_matmul(OpRegistry& r) {
  const GradcheckFn plain = [](const Inputs& in) { return matmul(in[0], in[1]); };
  r.add({.name = "matmul",
         .forward = "`A @ B`, batched, broadcast batch, transposed views",
         .vjp = "`dA = dC @ Bᵀ`, `dB = Aᵀ @ dC` (summed over broadcast batch)",
         .kernel = "kernels/matmul",
         .tests = "ops_test: transposed view; batched",
         .autocast = "`C = bf16(A) @ bf16(B)` summed in f32 (kernels::matmul_bf16); "
                     "`dA = bf16(dC) @ bf16(B)ᵀ`, `dB = bf16(A)ᵀ @ bf16(dC)` likewise, in the "
                     "precision the forward recorded; C, dA, dB f32",
         .cases = {params_case(
                       "(T, C) @ (C, B)",
                       [](const Sizes& s) {
                         return Shapes{{s.T, s.C}, {s.C, s.B}};
                       },
                       plain),
                   params_case(
                       "(B, T, C) @ (C, 5), batch folded into rows",
                       [](const Sizes& s) {
                         return Shapes{{s.B, s.T, s.C}, {s.C, 5}};
                       },
                       plain),
                   params_case(
                       "(B, T, C) @ (B, C, T) batched",
                       [](const Sizes& s) {
                         return Shapes{{s.B, s.T, s.C}, {s.B, s.C, s.T}};
                       },
                       plain),
                   params_case(
                       "(C, T) viewed transposed @ (B, 5, C) viewed transposed, broadcast batch",
                       [](const Sizes& s) {
                         return Shapes{{s.C, s.T}, {s.B, 5, s.C}};
                       },
                       [](const Inputs& in) {
                         return matmul(transpose(in[0], 0, 1), transpose(in[1], 1, 2));
                       }),
                   params_case(
                       "(B, T, C) @ (B, T, C)ᵀ: attention scores Q Kᵀ",
                       [](const Sizes& s) {
                         return Shapes{{s.B, s.T, s.C}, {s.B, s.T, s.C}};
                       },
                       [](const Inputs& in) { return matmul(in[0], transpose(in[1], -2, -1)); })}});
}

Tensor matmul(const Tensor& a, const Tensor& b) {
  detail::check_floating_pair("matmul", a, b);
  if (a.dim() < 2 || b.dim() < 2)
    throw std::invalid_argument(
        "matmul: expected 2-D or batched operands (..., M, K) @ (..., K, N), got " +
        shape_str(a.shape()) + " @ " + shape_str(b.shape()) +
        " (reshape a vector to (1, K) or (K, 1))");
  const int64_t M = a.size(-2), K = a.size(-1), N = b.size(-1);
  if (b.size(-2) != K)
    throw std::invalid_argument("matmul: inner dimensions differ: " + shape_str(a.shape()) + " @ " +
                                shape_str(b.shape()) + " (" + std::to_string(K) + " vs " +
                                std::to_string(b.size(-2)) + ")");
  const Shape batch =
      detail::broadcast_shapes(Shape(a.shape().begin(), a.shape().end() - 2),
                               Shape(b.shape().begin(), b.shape().end() - 2), "matmul");
  Shape out_shape = batch;
  out_shape.push_back(M);
  out_shape.push_back(N);

  MatrixOperand A = as_matrix_operand(a), B = as_matrix_operand(b);
  // x @ W with a contiguous (B, T, C) x and a 2-D W (every nn.Linear): fold the batch into M,
  // so the kernel sees one tall matrix and can spread its rows over threads.
  int64_t rows = M;
  BatchOffsets a_off, b_off;
  if (b.dim() == 2 && !A.trans && A.t.is_contiguous()) {
    rows = checked_mul(shape_numel(batch), M, "matmul: the batch folded into rows");
  } else {
    a_off = BatchOffsets(batch, A.t.shape(), A.t.strides());
    b_off = BatchOffsets(batch, B.t.shape(), B.t.strides());
  }
  Tensor c = Tensor::empty(out_shape, a.dtype());
  const MatmulPrecision precision = detail::product_precision(a.dtype());
  dispatch_floating(a.dtype(), "matmul", [&]<typename T>() {
    for (int64_t i = 0; i < a_off.count; ++i)
      detail::matmul_in<T>(precision, c.data<T>() + i * rows * N, A.t.data<T>() + a_off[i],
                           B.t.data<T>() + b_off[i], rows, K, N, A.trans, B.trans, false);
  });

  // dA reads B and dB reads A: each is saved only when the other operand needs its gradient.
  return record(
      c, "matmul", {a, b},
      {{"a", detail::saved_if_grad(b, A.t)}, {"b", detail::saved_if_grad(a, B.t)}},
      [a_trans = A.trans, b_trans = B.trans, a_off, b_off, rows, K, N, batch, precision](
          const Tensor& g, std::span<Tensor> gi, const Tensor& A, const Tensor& B) {
        // Gradient buffers are contiguous in each operand's logical shape: batch offsets come from
        // contiguous strides, broadcast dimensions get stride 0 so their products add up.
        const bool folded = a_off.count == 1 && shape_numel(batch) != 1;
        auto grad_offsets = [&](const Tensor& buf) {
          return folded ? BatchOffsets::folded() : BatchOffsets(batch, buf.shape(), buf.strides());
        };
        dispatch_floating(g.dtype(), "matmul", [&]<typename T>() {
          const T* dc = g.data<T>();
          if (gi[0].defined() && B.defined()) {  // dA (rows, K) += dC (rows, N) @ op(B)ᵀ
            const BatchOffsets off = grad_offsets(gi[0]);
            for (int64_t i = 0; i < off.count; ++i)
              detail::matmul_in<T>(precision, gi[0].data<T>() + off[i], dc + i * rows * N,
                                   B.data<T>() + b_off[i], rows, N, K, false, !b_trans, true);
          }
          if (gi[1].defined() && A.defined()) {  // dB (K, N) += op(A)ᵀ @ dC (rows, N)
            const BatchOffsets off = grad_offsets(gi[1]);
            for (int64_t i = 0; i < a_off.count; ++i)
              detail::matmul_in<T>(precision, gi[1].data<T>() + off[folded ? 0 : i],
                                   A.data<T>() + a_off[i], dc + i * rows * N, K, rows, N, !a_trans,
                                   false, true);
          }
        });
      });
}

// ----- linear -----
static void register_linear(OpRegistry& r) {
  r.add({.name = "linear",
         .forward = "`x @ Wᵀ + b`, W stored (out, in) as nn.Linear",
         .vjp = "`dx = dy @ W`, `dW = dyᵀ @ x` (into W's gradient, no temporary), `db = Σ_rows dy`",
         .kernel = "kernels/matmul",
         .tests = "ops_test: linear vs matmul + add",
         .autocast = "`y = bf16(x) @ bf16(W)ᵀ + b` summed in f32; `dx = bf16(dy) @ bf16(W)`, "
                     "`dW = bf16(dy)ᵀ @ bf16(x)` likewise, in the precision the forward "
                     "recorded; `db`, y and the gradients f32",
         .cases = {params_case(
                       "x (B, T, C), weight (5, C), bias (5,)",
                       [](const Sizes& s) {
                         return Shapes{{s.B, s.T, s.C}, {5, s.C}, {5}};
                       },
                       [](const Inputs& in) { return linear(in[0], in[1], in[2]); }),
                   params_case(
                       "x (T, B, C) viewed transposed, weight (5, C), no bias",
                       [](const Sizes& s) {
                         return Shapes{{s.T, s.B, s.C}, {5, s.C}};
                       },
                       [](const Inputs& in) { return linear(transpose(in[0], 0, 1), in[1]); })}});
}

// nn.Linear as one op (PyTorch's F.linear): matmul(x, transpose(W)) + b would record three nodes,
// and its dW would land in a zero-filled (in, out) temporary that the transpose's VJP then adds
// into W's gradient with a strided loop. Here each product reads W in its stored (out, in)
// layout, the bias is added as the forward product is stored, and dW accumulates straight into
// W's gradient buffer (for a parameter: its slice of the arena).
Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias) {
  const LinearOperands op = linear_operands("linear", x, weight, bias);
  Tensor y = Tensor::empty(op.y_shape, x.dtype());
  const MatmulPrecision precision = detail::product_precision(x.dtype());
  dispatch_floating(x.dtype(), "linear", [&]<typename T>() {
    // y (rows, out) = x (rows, in) @ Wᵀ, W stored (out, in): the b_trans layout
    detail::matmul_in<T>(precision, y.data<T>(), op.xc.data<T>(), op.wc.data<T>(), op.rows, op.in,
                         op.out, false, true, false, detail::data_or_null<T>(op.bc));
  });
  TensorList inputs{x, weight};
  if (bias.defined()) inputs.push_back(bias);
  // dx reads W and dW reads x: each is saved only when the other needs its gradient (a frozen
  // weight keeps no input alive).
  return record(
      y, "linear", std::move(inputs),
      {{"x", detail::saved_if_grad(weight, op.xc)}, {"weight", detail::saved_if_grad(x, op.wc)}},
      [rows = op.rows, in = op.in, out = op.out, precision](const Tensor& g, std::span<Tensor> gi,
                                                            const Tensor& xc, const Tensor& wc) {
        dispatch_floating(g.dtype(), "linear", [&]<typename T>() {
          linear_backward<T>(precision, g.data<T>(), gi, xc, wc, rows, in, out);
        });
      },
      GradBuffers::first_write);
}

// ----- linear_gelu -----
static void register_linear_gelu(OpRegistry& r) {
  const GradcheckFn fused = [](const Inputs& in) { return linear_gelu(in[0], in[1], in[2]); };
  r.add({.name = "linear_gelu",
         .forward = "`gelu(x @ Wᵀ + b)`: GPT-2's c_fc and its GELU, GELU applied as the "
                    "product's tiles are stored; saves `gelu′(h)`, h = x @ Wᵀ + b",
         .vjp = "`dh = dy ⊙ gelu′(h)` (saved), then linear's: `dx = dh @ W`, `dW = dhᵀ @ x`, "
                "`db = Σ_rows dh`",
         .kernel = "kernels/matmul (matmul_gelu), kernels/gelu",
         .tests = "matmul_test: matmul_gelu is matmul then gelu, bit for bit; ops_test: "
                  "linear_gelu vs gelu(linear)",
         .autocast = "`h = bf16(x) @ bf16(W)ᵀ + b` summed in f32 (matmul_bf16_gelu), gelu and "
                     "gelu′ in f32; the VJP's products as linear's",
         .cases = {
             params_case(
                 "x (B, T, C), weight (5, C), bias (5,)",
                 [](const Sizes& s) {
                   return Shapes{{s.B, s.T, s.C}, {5, s.C}, {5}};
                 },
                 fused),
             params_case(
                 "x (T, B, C) viewed transposed, weight (4 C, C), no bias",
                 [](const Sizes& s) {
                   return Shapes{{s.T, s.B, s.C}, {4 * s.C, s.C}};
                 },
                 [](const Inputs& in) { return linear_gelu(transpose(in[0], 0, 1), in[1]); })}});
}

// The MLP's first half as one op. Unfused, linear writes h = x Wᵀ + b to memory, gelu reads it
// back and writes y, and gelu's VJP reads h again to recompute tanh. Here GELU runs on each tile
// of h while it is in the L1, the forward saves gelu'(h) (the same bytes as h) and the VJP only
// multiplies: dh = dy ⊙ gelu'(h), then linear's three products.
Tensor linear_gelu(const Tensor& x, const Tensor& weight, const Tensor& bias) {
  const LinearOperands op = linear_operands("linear_gelu", x, weight, bias);
  TensorList inputs{x, weight};
  if (bias.defined()) inputs.push_back(bias);
  Tensor y = Tensor::empty(op.y_shape, x.dtype());
  // gelu'(h) only when a VJP will read it.
  const Tensor slope = detail::needs_node(inputs) ? Tensor::empty(op.y_shape, x.dtype()) : Tensor();
  const MatmulPrecision precision = detail::product_precision(x.dtype());
  dispatch_floating(x.dtype(), "linear_gelu", [&]<typename T>() {
    detail::matmul_gelu_in<T>(precision, y.data<T>(), detail::data_or_null<T>(slope),
                              op.xc.data<T>(), op.wc.data<T>(), op.rows, op.in, op.out, false, true,
                              detail::data_or_null<T>(op.bc));
  });
  return record(
      y, "linear_gelu", std::move(inputs),
      {{"x", detail::saved_if_grad(weight, op.xc)},
       {"weight", detail::saved_if_grad(x, op.wc)},
       {"slope", slope}},
      [rows = op.rows, in = op.in, out = op.out, precision](const Tensor& g, std::span<Tensor> gi,
                                                            const Tensor& xc, const Tensor& wc,
                                                            const Tensor& slope) {
        dispatch_floating(g.dtype(), "linear_gelu", [&]<typename T>() {
          // dh (rows, out) = dy ⊙ gelu'(h): gelu's VJP with its factor read instead of computed
          const Tensor dh = Tensor::empty(slope.shape(), g.dtype());
          kernels::binary_forward<T>(kernels::BinaryOp::mul, dh.data<T>(), g.data<T>(),
                                     slope.data<T>(), rows * out);
          linear_backward<T>(precision, dh.data<T>(), gi, xc, wc, rows, in, out);
        });
      },
      GradBuffers::first_write);
}

void detail::register_matmul_ops(OpRegistry& r) {
  register_matmul(r);
  register_linear(r);
  register_linear_gelu(r);
}

}  // namespace attograd
