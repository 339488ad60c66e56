// The ops a transformer is made of: embedding and the other gathers (gather, take_along_dim),
// causal mask, softmax (plain, causal-fused and log), layer norm, the losses (cross-entropy,
// nll_loss), dropout. Each forward is followed by its VJP.
#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "autograd/gradcheck_inputs.h"
#include "autograd/kernels/attention.h"
#include "autograd/kernels/cross_entropy.h"
#include "autograd/kernels/elementwise.h"
#include "autograd/kernels/layer_norm.h"
#include "autograd/kernels/matmul.h"
#include "autograd/kernels/reduce.h"
#include "autograd/kernels/softmax.h"
#include "autograd/op_registry.h"
#include "autograd/ops.h"
#include "autograd/ops_internal.h"

namespace attograd {

using gradcheck_inputs::heads_for;
using gradcheck_inputs::Inputs;
using gradcheck_inputs::param;
using gradcheck_inputs::params_case;
using gradcheck_inputs::random_ids;
using gradcheck_inputs::Shapes;
using gradcheck_inputs::Sizes;
using gradcheck_inputs::targets_with_ignored;
using gradcheck_inputs::unary_case;

// ----- embedding -----
static void register_embedding(OpRegistry& r) {
  r.add({.name = "embedding",
         .forward = "`W[ids]`",
         .vjp = "`dW[ids[i]] += dy[i]` (scatter-add)",
         .tests = "ops_test: repeated ids",
         .cases = {{"weight (7, C), ids (B, T) with repeats",
                    [](Generator& g, DType d, const Sizes& s) {
                      std::vector<int64_t> ids(static_cast<size_t>(s.B * s.T));
                      for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int64_t>(i % 3);
                      return Inputs{param({7, s.C}, g, d), Tensor::from_ids(ids, {s.B, s.T})};
                    },
                    [](const Inputs& in) { return embedding(in[0], in[1]); }}}});
}

Tensor embedding(const Tensor& weight, const Tensor& ids) {
  if (!weight.defined() || !ids.defined())
    throw std::invalid_argument("embedding: undefined tensor");
  if (weight.dim() != 2)
    throw std::invalid_argument("embedding: expected weight (V, C), got " +
                                shape_str(weight.shape()));
  if (ids.dtype() != DType::i64)
    throw std::invalid_argument(std::string("embedding: expected i64 token ids, got ") +
                                dtype_name(ids.dtype()));
  const int64_t V = weight.shape()[0], C = weight.shape()[1];
  const Tensor idc = detail::contiguous_data(ids);  // ids itself when contiguous
  const int64_t* idv = idc.data<int64_t>();
  const int64_t n = idc.numel();
  for (int64_t i = 0; i < n; ++i)
    if (idv[i] < 0 || idv[i] >= V)
      throw std::out_of_range("embedding: token id " + std::to_string(idv[i]) + " at position " +
                              std::to_string(i) + " is outside [0, " + std::to_string(V) +
                              ") (vocab_size " + std::to_string(V) +
                              "); check the tokenizer matches the model");
  const Tensor w = detail::contiguous_data(weight);
  Shape out_shape = ids.shape();
  out_shape.push_back(C);
  Tensor y = Tensor::empty(out_shape, weight.dtype());
  const size_t row_bytes = static_cast<size_t>(C) * dtype_size(weight.dtype());
  const char* src = w.bytes();
  char* dst = y.bytes();
  for (int64_t i = 0; i < n; ++i)
    std::memcpy(dst + i * row_bytes, src + idv[i] * row_bytes, row_bytes);
  return record(y, "embedding", {weight, ids}, {{"ids", idc}},
                [n, C](const Tensor& g, std::span<Tensor> gi, const Tensor& idc) {
                  dispatch_floating(g.dtype(), "embedding", [&]<typename T>() {
                    // Repeated ids add up: the VJP of a gather is a scatter-ADD.
                    const int64_t* idv = idc.data<int64_t>();
                    T* dw = gi[0].data<T>();
                    const T* dy = g.data<T>();
                    for (int64_t i = 0; i < n; ++i) {
                      T* row = dw + idv[i] * C;
                      const T* dy_i = dy + i * C;
                      if (C >= 32) {
                        kernels::axpy<T>(row, T(1), dy_i, C);
                      } else {  // narrow embeddings (the lecture's C = 2 and 6): a kernel call per
                                // row costs more
                        for (int64_t c = 0; c < C; ++c) row[c] += dy_i[c];
                      }
                    }
                  });
                });
}

// ----- gather, take_along_dim -----
static void register_gathers(OpRegistry& r) {
  r.add(
      {.name = "gather",
       .forward = "`y[…, i, …] = x[…, index[…, i, …], …]` along dim",
       .vjp = "`dx[…, index, …] += dy` (scatter-add)",
       .tests = "ops_test: vs torch.gather",
       .cases = {{"x (B, T, C), index (B, 2, C) along T, ids repeating",
                  [](Generator& g, DType d, const Sizes& s) {
                    return Inputs{param({s.B, s.T, s.C}, g, d), random_ids({s.B, 2, s.C}, s.T, g)};
                  },
                  [](const Inputs& in) { return gather(in[0], 1, in[1]); }},
                 {"x (C, T, B) viewed transposed, index (B, T, 2) along the last axis",
                  [](Generator& g, DType d, const Sizes& s) {
                    return Inputs{param({s.C, s.T, s.B}, g, d), random_ids({s.B, s.T, 2}, s.C, g)};
                  },
                  [](const Inputs& in) { return gather(transpose(in[0], 0, 2), -1, in[1]); }}}});
  r.add({.name = "take_along_dim",
         .forward = "gather after broadcasting x and index outside dim",
         .vjp = "scatter-add, summed over broadcast dims",
         .tests = "ops_test: vs torch.take_along_dim",
         .cases = {{"x (B, 1, C) broadcast against index (B, T, 2) along C",
                    [](Generator& g, DType d, const Sizes& s) {
                      return Inputs{param({s.B, 1, s.C}, g, d), random_ids({s.B, s.T, 2}, s.C, g)};
                    },
                    [](const Inputs& in) { return take_along_dim(in[0], in[1], -1); }}}});
}

namespace {

// The strides that read a tensor (shape, strides) at each coordinate of an iteration over
// out_shape: its own strides, but 0 where it has size 1 and out_shape does not (it broadcasts)
// and along `dim` (-1: none), whose offset the index supplies instead.
Shape strides_over(const Shape& shape, const Shape& strides, const Shape& out_shape, int64_t dim) {
  Shape s(out_shape.size());
  for (size_t d = 0; d < s.size(); ++d)
    s[d] = static_cast<int64_t>(d) == dim || (shape[d] == 1 && out_shape[d] != 1) ? 0 : strides[d];
  return s;
}

// The shared body of gather and take_along_dim: y (out_shape) at coordinate c is x at c with
// c[dim] replaced by index at c; x and index are read through strides_over, so a size-1
// dimension of either broadcasts. The VJP scatter-adds dy through the same strides into dx,
// where a broadcast dimension's stride 0 sums the gradient back (sum_to).
Tensor gather_along(const char* op, const Tensor& x, int64_t dim, const Tensor& index,
                    const Shape& out_shape) {
  const int64_t size = x.shape()[dim];
  const std::vector<int64_t> ids = index.to_ids();
  for (size_t i = 0; i < ids.size(); ++i)
    if (ids[i] < 0 || ids[i] >= size)
      throw std::out_of_range(std::string(op) + ": index " + std::to_string(ids[i]) +
                              " at position " + std::to_string(i) + " is outside [0, " +
                              std::to_string(size) + ") along dimension " + std::to_string(dim) +
                              " of " + shape_str(x.shape()));
  Tensor y = Tensor::empty(out_shape, x.dtype());
  const Shape index_strides = strides_over(index.shape(), index.strides(), out_shape, -1);
  // Runs out_shape's coordinates: dst[o] (op)= src[s + idx[i] * step] with (s, i, o) the offsets
  // of the source (stride 0 along dim), the index and the output.
  auto walk = [out_shape, index_strides](const Shape& src_strides, int64_t step, const int64_t* idx,
                                         auto&& visit) {
    detail::for_each_row<3>(
        out_shape, {src_strides, index_strides, contiguous_strides(out_shape)},
        [&](const std::array<int64_t, 3>& off, int64_t n, const std::array<int64_t, 3>& inner) {
          for (int64_t j = 0; j < n; ++j)
            visit(off[0] + j * inner[0] + idx[off[1] + j * inner[1]] * step, off[2] + j * inner[2]);
        });
  };
  dispatch_floating(x.dtype(), op, [&]<typename T>() {
    const T* src = x.data<T>();
    T* dst = y.data<T>();
    walk(strides_over(x.shape(), x.strides(), out_shape, dim), x.strides()[dim],
         index.data<int64_t>(), [&](int64_t s, int64_t o) { dst[o] = src[s]; });
  });
  return record(y, op, {x, index}, {{"index", index}},
                [op, dim, walk](const Tensor& g, std::span<Tensor> gi, const Tensor& index) {
                  const Tensor& dx = gi[0];
                  dispatch_floating(g.dtype(), op, [&]<typename T>() {
                    T* dst = dx.data<T>();
                    const T* dy = g.data<T>();  // contiguous, out_shape
                    walk(strides_over(dx.shape(), dx.strides(), g.shape(), dim), dx.strides()[dim],
                         index.data<int64_t>(), [&](int64_t d, int64_t o) { dst[d] += dy[o]; });
                  });
                });
}

// The checks both ops share: a floating x with at least one dimension and an i64 index of as
// many dimensions; returns dim wrapped.
int64_t check_gather(const char* op, const Tensor& x, int64_t dim, const Tensor& index) {
  if (!x.defined() || !index.defined())
    throw std::invalid_argument(std::string(op) + ": undefined tensor");
  if (x.dtype() == DType::i64) throw_not_floating(op, DType::i64);
  if (index.dtype() != DType::i64)
    throw std::invalid_argument(std::string(op) + ": expected an i64 index, got " +
                                dtype_name(index.dtype()));
  if (x.dim() == 0 || index.dim() != x.dim())
    throw std::invalid_argument(std::string(op) +
                                ": expected an index with as many dimensions as the input " +
                                shape_str(x.shape()) + ", got " + shape_str(index.shape()));
  return detail::wrap_dim(dim, x.dim(), op);
}

}  // namespace

Tensor gather(const Tensor& x, int64_t dim_in, const Tensor& index) {
  const int64_t dim = check_gather("gather", x, dim_in, index);
  for (int64_t d = 0; d < x.dim(); ++d)
    if (d != dim && index.shape()[d] > x.shape()[d])
      throw std::invalid_argument("gather: index " + shape_str(index.shape()) +
                                  " is larger than the input " + shape_str(x.shape()) +
                                  " in dimension " + std::to_string(d) + " (only dimension " +
                                  std::to_string(dim) + " may differ freely)");
  return gather_along("gather", x, dim, index, index.shape());
}

Tensor take_along_dim(const Tensor& x, const Tensor& index, int64_t dim_in) {
  const int64_t dim = check_gather("take_along_dim", x, dim_in, index);
  Shape out_shape = x.shape();
  for (int64_t d = 0; d < x.dim(); ++d) {
    const int64_t a = x.shape()[d], b = index.shape()[d];
    if (d == dim) {
      out_shape[d] = b;
    } else if (a != b && a != 1 && b != 1) {
      throw std::invalid_argument("take_along_dim: input " + shape_str(x.shape()) + " and index " +
                                  shape_str(index.shape()) + " cannot be broadcast in dimension " +
                                  std::to_string(d));
    } else {
      out_shape[d] = a == 1 ? b : a;
    }
  }
  return gather_along("take_along_dim", x, dim, index, out_shape);
}

namespace {

// Checks a (..., Tq, Tk) score block for the causal ops and returns Tq, Tk.
std::pair<int64_t, int64_t> causal_dims(const Tensor& s, const char* op) {
  if (!s.defined()) throw std::invalid_argument(std::string(op) + ": undefined tensor");
  if (s.dim() < 2)
    throw std::invalid_argument(std::string(op) + ": expected scores (..., Tq, Tk), got " +
                                shape_str(s.shape()));
  const int64_t Tq = s.size(-2), Tk = s.size(-1);
  if (Tq > Tk)
    throw std::invalid_argument(std::string(op) + ": more queries than keys in " +
                                shape_str(s.shape()) +
                                " (query t sees keys j <= t + Tk - Tq, so Tq <= Tk)");
  return {Tq, Tk};
}

}  // namespace

// ----- causal_mask -----
static void register_causal_mask(OpRegistry& r) {
  r.add({.name = "causal_mask",
         .forward = "`−inf` above the (offset) diagonal",
         .vjp = "`dx = dy` where kept, 0 where masked",
         .tests = "ops_test: causal_ops_mask_exactly",
         .cases = {params_case(
             "(B, T, T) then softmax (masked entries are -inf)",
             [](const Sizes& s) {
               return Shapes{{s.B, s.T, s.T}};
             },
             [](const Inputs& in) { return softmax(causal_mask(in[0])); })}});
}

Tensor causal_mask(const Tensor& scores) {
  // Plain variables, not a structured binding: the lambdas below capture them, which C++20
  // allows but clang before 16 rejects.
  const std::pair<int64_t, int64_t> tq_tk = causal_dims(scores, "causal_mask");
  const int64_t Tq = tq_tk.first, Tk = tq_tk.second;
  Tensor y = detail::contiguous_data(scores).clone();
  const int64_t rows = y.numel() / std::max<int64_t>(Tk, 1);
  dispatch_floating(y.dtype(), "causal_mask", [&]<typename T>() {
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t kept = r % Tq + 1 + (Tk - Tq);
      kernels::fill<T>(y.data<T>() + r * Tk + kept, -std::numeric_limits<T>::infinity(), Tk - kept);
    }
  });
  return record(y, "causal_mask", {scores}, [rows, Tq, Tk](const Tensor& g, std::span<Tensor> gi) {
    dispatch_floating(g.dtype(), "causal_mask", [&]<typename T>() {
      for (int64_t r = 0; r < rows; ++r)
        kernels::axpy<T>(gi[0].data<T>() + r * Tk, T(1), g.data<T>() + r * Tk,
                         r % Tq + 1 + (Tk - Tq));
    });
  });
}

namespace {

// Shared by softmax and causal_softmax: the row-wise softmax and its VJP (formulas: their entries).
Tensor softmax_impl(const Tensor& x, int64_t causal_tq, const char* name) {
  const int64_t n = x.size(-1);
  const int64_t rows = n == 0 ? 0 : x.numel() / n;
  const Tensor xc = detail::contiguous_data(x);
  Tensor y = Tensor::empty(x.shape(), x.dtype());
  dispatch_floating(x.dtype(), name, [&]<typename T>() {
    kernels::softmax_forward<T>(y.data<T>(), xc.data<T>(), rows, n, causal_tq);
  });
  return record(y, name, {x}, {{"output", y}},
                [name, rows, n](const Tensor& g, std::span<Tensor> gi, const Tensor& y) {
                  dispatch_floating(g.dtype(), name, [&]<typename T>() {
                    kernels::softmax_backward<T>(gi[0].data<T>(), y.data<T>(), g.data<T>(), rows,
                                                 n);
                  });
                });
}

}  // namespace

// ----- softmax -----
static void register_softmax(OpRegistry& r) {
  r.add({.name = "softmax",
         .forward = "`exp(x − m)/Σ`",
         .vjp = "`dx = y ⊙ (dy − Σ dy ⊙ y)`",
         .kernel = "kernels/softmax",
         .tests = "fused vs primitives; overflow",
         .cases = {unary_case([](const Tensor& x) { return softmax(x); }, -3, 3)}});
}

Tensor softmax(const Tensor& x) {
  if (!x.defined() || x.dim() < 1)
    throw std::invalid_argument("softmax: expected a tensor with at least one dimension");
  return softmax_impl(x, 0, "softmax");
}

// ----- causal_softmax: the fused softmax(causal_mask(x)) of attention -----
static void register_causal_softmax(OpRegistry& r) {
  r.add({.name = "causal_softmax",
         .forward = "fused mask + softmax",
         .vjp = "`dx = y ⊙ (dy − Σ dy ⊙ y)` (0 where masked)",
         .kernel = "kernels/softmax",
         .tests = "fused vs primitives",
         .cases = {params_case(
                       "(B, T, T)",
                       [](const Sizes& s) {
                         return Shapes{{s.B, s.T, s.T}};
                       },
                       [](const Inputs& in) { return causal_softmax(in[0]); }),
                   params_case(
                       "(B, 2, T + 2): fewer queries than keys (a KV cache)",
                       [](const Sizes& s) {
                         return Shapes{{s.B, 2, s.T + 2}};
                       },
                       [](const Inputs& in) { return causal_softmax(in[0]); })}});
}

Tensor causal_softmax(const Tensor& scores) {
  const int64_t Tq = causal_dims(scores, "causal_softmax").first;
  return softmax_impl(scores, Tq, "causal_softmax");
}

// ----- causal_attention -----
static void register_causal_attention(OpRegistry& r) {
  const auto qkv_heads = [](const Inputs& in) {  // the head split of one (B, T, 3C) tensor
    const int64_t B = in[0].size(0), T = in[0].size(1), C = in[0].size(2) / 3, NH = heads_for(C);
    const std::vector<Tensor> qkv = split(in[0], {C, C, C}, -1);
    auto heads = [&](const Tensor& t) { return transpose(reshape(t, {B, T, NH, C / NH}), 1, 2); };
    return causal_attention(heads(qkv[0]), heads(qkv[1]), heads(qkv[2]));
  };
  r.add({.name = "causal_attention",
         .forward = "`softmax(q @ kᵀ/√HS, causal) @ v`, fused, weights never stored",
         .vjp = "`ds = p ⊙ (dy @ vᵀ − rowsum(dy ⊙ y))`, `dq = ds @ k/√HS`, `dk = dsᵀ @ q/√HS`, `dv "
                "= pᵀ @ dy`",
         .kernel = "kernels/attention",
         .tests = "attention_test; ops_test: fused vs primitives",
         .cases = {params_case(
                       "q, k, v (B, NH, T, C / NH): the head-split views of one (B, T, 3C) "
                       "tensor, NH = 2 (1 for odd C)",
                       [](const Sizes& s) {
                         return Shapes{{s.B, s.T, 3 * s.C}};
                       },
                       qkv_heads),
                   params_case(
                       "q (B, 1, 2, C), k and v (B, 1, T + 2, C): fewer queries than keys (a KV "
                       "cache)",
                       [](const Sizes& s) {
                         const Shape kv = {s.B, 1, s.T + 2, s.C};
                         return Shapes{{s.B, 1, 2, s.C}, kv, kv};
                       },
                       [](const Inputs& in) { return causal_attention(in[0], in[1], in[2]); })}});
}

namespace {

// A (B, NH, T, HS) operand as the kernel reads it (HS contiguous), with its strides. A named
// struct rather than a pair: the lambdas of causal_attention capture its parts, and clang
// before 16 cannot capture structured bindings.
struct HeadOperand {
  Tensor data;
  kernels::HeadStrides strides;
};

// x itself when its HS is contiguous (e.g. the head-split views of c_attn's output), else a
// contiguous copy.
HeadOperand head_operand(const Tensor& x) {
  const Tensor t = x.strides()[3] == 1 || x.size(3) == 1 ? x : detail::contiguous_data(x);
  return {t, {t.strides()[0], t.strides()[1], t.strides()[2]}};
}

}  // namespace

Tensor causal_attention(const Tensor& q, const Tensor& k, const Tensor& v) {
  detail::check_floating_pair("causal_attention", q, k);
  detail::check_floating_pair("causal_attention", q, v);
  const bool ranks = q.dim() == 4 && k.dim() == 4 && v.dim() == 4;
  if (!ranks || k.shape() != v.shape() || q.size(0) != k.size(0) || q.size(1) != k.size(1) ||
      q.size(3) != k.size(3) || q.size(2) > k.size(2) || q.numel() == 0)
    throw std::invalid_argument(
        "causal_attention: expected q (B, NH, Tq, HS) and k, v (B, NH, Tk, HS) with "
        "1 <= Tq <= Tk, got q " +
        shape_str(q.shape()) + ", k " + shape_str(k.shape()) + ", v " + shape_str(v.shape()));
  const kernels::AttentionDims dims{q.size(0), q.size(1), q.size(2), k.size(2), q.size(3)};
  const HeadOperand qh = head_operand(q), kh = head_operand(k), vh = head_operand(v);
  // y is stored (B, Tq, NH, HS) and returned as its (B, NH, Tq, HS) view, so that merging the
  // heads back, transpose(1, 2) then reshape to (B, Tq, C), is a view and copies nothing.
  const Tensor y_storage = Tensor::empty({dims.B, dims.Tq, dims.NH, dims.HS}, q.dtype());
  const kernels::HeadStrides ys{dims.Tq * dims.NH * dims.HS, dims.HS, dims.NH * dims.HS};
  const Tensor y = detail::view_of(y_storage, q.shape(), {ys.batch, ys.head, ys.time, 1});
  Tensor lse = Tensor::empty({dims.B, dims.NH, dims.Tq}, q.dtype());
  dispatch_floating(q.dtype(), "causal_attention", [&]<typename T>() {
    kernels::attention_forward<T>(y_storage.data<T>(), ys, lse.data<T>(), qh.data.data<T>(),
                                  qh.strides, kh.data.data<T>(), kh.strides, vh.data.data<T>(),
                                  vh.strides, dims);
  });
  return record(
      y, "causal_attention", {q, k, v},
      {{"q", qh.data}, {"k", kh.data}, {"v", vh.data}, {"output", y_storage}},
      [lse, qs = qh.strides, ks = kh.strides, vs = vh.strides, ys, dims](
          const Tensor& g, std::span<Tensor> gi, const Tensor& q, const Tensor& k, const Tensor& v,
          const Tensor& y) {
        dispatch_floating(g.dtype(), "causal_attention", [&]<typename T>() {
          auto ptr = [](const Tensor& t) { return t.defined() ? t.data<T>() : nullptr; };
          // Every gradient here is a contiguous (B, NH, T, HS) buffer.
          const kernels::HeadStrides cq = kernels::contiguous_heads(dims.NH, dims.Tq, dims.HS),
                                     ck = kernels::contiguous_heads(dims.NH, dims.Tk, dims.HS);
          kernels::attention_backward<T>(ptr(gi[0]), ptr(gi[1]), ptr(gi[2]), g.data<T>(),
                                         {cq, cq, ck, ck}, y.data<T>(), ys, lse.data<T>(),
                                         q.data<T>(), qs, k.data<T>(), ks, v.data<T>(), vs, dims);
        });
      });
}

// ----- causal_attention_qkv: causal_attention on the heads of a packed (B, T, 3C) q, k, v -----
static void register_causal_attention_qkv(OpRegistry& r) {
  r.add({.name = "causal_attention_qkv",
         .forward = "`causal_attention` on the heads of a packed `qkv (B, T, 3C)`, `y (B, T, C)`",
         .vjp = "as `causal_attention`, written into `dqkv`'s head views",
         .kernel = "kernels/attention",
         .tests = "ops_test: vs split heads + causal_attention",
         .cases = {params_case(
             "qkv (B, T, 3C), 2 heads (1 for odd C)",
             [](const Sizes& s) {
               return Shapes{{s.B, s.T, 3 * s.C}};
             },
             [](const Inputs& in) {
               return causal_attention_qkv(in[0], heads_for(in[0].size(2) / 3));
             })}});
}

// What a GPT's attention layer computes from c_attn's output. Splitting it into heads with
// slice, reshape and transpose costs nothing going forward (views), but their VJPs copy each of
// dq, dk, dv twice on the way back to dqkv; this op reads the heads through strides and writes
// their gradients straight into dqkv's head-split views, and returns y as (B, T, C) with the
// heads side by side.
Tensor causal_attention_qkv(const Tensor& qkv, int64_t n_head) {
  if (!qkv.defined()) throw std::invalid_argument("causal_attention_qkv: undefined tensor");
  if (qkv.dtype() == DType::i64) throw_not_floating("causal_attention_qkv", DType::i64);
  if (qkv.dim() != 3 || qkv.size(2) % 3 != 0 || n_head < 1 || (qkv.size(2) / 3) % n_head != 0 ||
      qkv.numel() == 0)
    throw std::invalid_argument(
        "causal_attention_qkv: expected qkv (B, T, 3C) with n_head dividing C, got qkv " +
        shape_str(qkv.shape()) + " and n_head " + std::to_string(n_head));
  const int64_t B = qkv.size(0), T = qkv.size(1), C = qkv.size(2) / 3;
  const kernels::AttentionDims dims{B, n_head, T, T, C / n_head};
  const Tensor xc = detail::contiguous_data(qkv);
  const kernels::HeadStrides heads{T * 3 * C, dims.HS, 3 * C};  // q, k, v at offsets 0, C, 2C
  const kernels::HeadStrides ys{T * C, dims.HS, C};             // y (B, T, NH, HS) = (B, T, C)
  Tensor y = Tensor::empty({B, T, C}, qkv.dtype());
  Tensor lse = Tensor::empty({B, n_head, T}, qkv.dtype());
  dispatch_floating(qkv.dtype(), "causal_attention_qkv", [&]<typename T_>() {
    const T_* x = xc.data<T_>();
    kernels::attention_forward<T_>(y.data<T_>(), ys, lse.data<T_>(), x, heads, x + C, heads,
                                   x + 2 * C, heads, dims);
  });
  return record(
      y, "causal_attention_qkv", {qkv}, {{"qkv", xc}, {"output", y}},
      [lse, heads, ys, dims, C](const Tensor& g, std::span<Tensor> gi, const Tensor& xc,
                                const Tensor& y) {
        dispatch_floating(g.dtype(), "causal_attention_qkv", [&]<typename T_>() {
          const T_* x = xc.data<T_>();
          T_* dx =
              gi[0].data<T_>();  // dqkv (B, T, 3C), contiguous: dq, dk, dv are its head-split views
          kernels::attention_backward<T_>(
              dx, dx + C, dx + 2 * C, g.data<T_>(), {ys, heads, heads, heads}, y.data<T_>(), ys,
              lse.data<T_>(), x, heads, x + C, heads, x + 2 * C, heads, dims);
        });
      });
}

// ----- log_softmax -----
static void register_log_softmax(OpRegistry& r) {
  r.add({.name = "log_softmax",
         .forward = "`x − m − log Σ exp(x − m)`",
         .vjp = "`dx = dy − softmax(x) Σ dy`",
         .kernel = "kernels/softmax",
         .tests = "fused vs primitives",
         .cases = {unary_case([](const Tensor& x) { return log_softmax(x); }, -3, 3)}});
}

Tensor log_softmax(const Tensor& x) {
  if (!x.defined() || x.dim() < 1)
    throw std::invalid_argument("log_softmax: expected a tensor with at least one dimension");
  const int64_t n = x.size(-1);
  const int64_t rows = n == 0 ? 0 : x.numel() / n;
  const Tensor xc = detail::contiguous_data(x);
  Tensor y = Tensor::empty(x.shape(), x.dtype());
  dispatch_floating(x.dtype(), "log_softmax", [&]<typename T>() {
    kernels::log_softmax_forward<T>(y.data<T>(), xc.data<T>(), rows, n);
  });
  return record(y, "log_softmax", {x}, {{"output", y}},
                [rows, n](const Tensor& g, std::span<Tensor> gi, const Tensor& y) {
                  dispatch_floating(g.dtype(), "log_softmax", [&]<typename T>() {
                    kernels::log_softmax_backward<T>(gi[0].data<T>(), y.data<T>(), g.data<T>(),
                                                     rows, n);
                  });
                });
}

// ----- layer_norm -----
static void register_layer_norm(OpRegistry& r) {
  r.add(
      {.name = "layer_norm",
       .forward = "`γ (x − μ) rstd + β`",
       .vjp =
           "`dx = rstd (g − mean g − x̂ ⊙ mean(g ⊙ x̂))`, `g = dy ⊙ γ`; `dγ = Σ dy ⊙ x̂`; `dβ = Σ dy`",
       .kernel = "kernels/layer_norm",
       .tests = "fused vs primitives; large mean",
       .cases = {params_case(
           "x (B, T, C), gamma (C), beta (C)",
           [](const Sizes& s) {
             return Shapes{{s.B, s.T, s.C}, {s.C}, {s.C}};
           },
           [](const Inputs& in) { return layer_norm(in[0], in[1], in[2]); })}});
}

Tensor layer_norm(const Tensor& x, const Tensor& gamma, const Tensor& beta, double eps) {
  detail::check_floating_pair("layer_norm", x, gamma);
  detail::check_floating_pair("layer_norm", x, beta);
  const int64_t C = gamma.numel();
  if (x.dim() < 1 || gamma.dim() != 1 || beta.shape() != gamma.shape() || x.size(-1) != C)
    throw std::invalid_argument("layer_norm: expected input (..., " + std::to_string(C) +
                                ") with gamma and beta (" + std::to_string(C) + ",), got input " +
                                shape_str(x.shape()) + ", gamma " + shape_str(gamma.shape()) +
                                ", beta " + shape_str(beta.shape()));
  if (!(eps > 0))
    throw std::invalid_argument("layer_norm: eps must be positive, got " + std::to_string(eps));
  const int64_t rows = C == 0 ? 0 : x.numel() / C;
  const Tensor xc = detail::contiguous_data(x), gc = detail::contiguous_data(gamma),
               bc = detail::contiguous_data(beta);
  Tensor y = Tensor::empty(x.shape(), x.dtype());
  Tensor mean = Tensor::empty({rows}, x.dtype()), rstd = Tensor::empty({rows}, x.dtype());
  dispatch_floating(x.dtype(), "layer_norm", [&]<typename T>() {
    kernels::layer_norm_forward<T>(y.data<T>(), mean.data<T>(), rstd.data<T>(), xc.data<T>(),
                                   gc.data<T>(), bc.data<T>(), rows, C, static_cast<T>(eps));
  });
  return record(y, "layer_norm", {x, gamma, beta}, {{"x", xc}, {"gamma", gc}},
                [rows, C, mean, rstd](const Tensor& g, std::span<Tensor> gi, const Tensor& xc,
                                      const Tensor& gc) {
                  dispatch_floating(g.dtype(), "layer_norm", [&]<typename T>() {
                    auto ptr = [](const Tensor& t) { return t.defined() ? t.data<T>() : nullptr; };
                    kernels::layer_norm_backward<T>(ptr(gi[0]), ptr(gi[1]), ptr(gi[2]), g.data<T>(),
                                                    xc.data<T>(), mean.data<T>(), rstd.data<T>(),
                                                    gc.data<T>(), rows, C);
                  });
                });
}

// ----- cross_entropy -----
static void register_cross_entropy(OpRegistry& r) {
  r.add(
      {.name = "cross_entropy",
       .forward = "`mean_i((1 − ε)(lse_i − x_i[t_i]) + ε mean_c(lse_i − x_ic))` over the N rows "
                  "whose target is not `ignore_index`; ε = `label_smoothing`",
       .vjp = "`dx_i = dL (softmax(x_i) − q_i) / N`, `q_i = (1 − ε) onehot(t_i) + ε/V`; 0 for "
              "ignored rows",
       .kernel = "kernels/cross_entropy",
       .tests = "fused vs primitives; 7e5; underflow; ops_test: ignore_index and label_smoothing "
                "vs torch",
       .cases = {
           {"logits (B, T, C), targets (B, T)",
            [](Generator& g, DType d, const Sizes& s) {
              const Tensor t = random_ids({s.B, s.T}, s.C, g);
              return Inputs{param({s.B, s.T, s.C}, g, d), t};
            },
            [](const Inputs& in) { return cross_entropy(in[0], in[1]); }},
           {"logits (B, T, C), targets (B, T) with two ignored (-1)",
            [](Generator& g, DType d, const Sizes& s) {
              return Inputs{param({s.B, s.T, s.C}, g, d), targets_with_ignored({s.B, s.T}, s.C, g)};
            },
            [](const Inputs& in) { return cross_entropy(in[0], in[1]); }},
           {"logits (B, T, C), targets (B, T) with two ignored (-1), label_smoothing 0.3",
            [](Generator& g, DType d, const Sizes& s) {
              return Inputs{param({s.B, s.T, s.C}, g, d), targets_with_ignored({s.B, s.T}, s.C, g)};
            },
            [](const Inputs& in) { return cross_entropy(in[0], in[1], -1, 0.3); }}}});
}

// PyTorch's ignore_index: a row whose target equals it adds no loss and gets exactly 0 gradient,
// and N counts only the other rows. With none left, L = 0 and every gradient is 0 (PyTorch's
// mean over zero elements is NaN; a fully padded micro-batch must not poison a training run).
namespace {

// The targets of a loss over rows, checked: i64 of the input's leading shape, each in [0, V) or
// equal to ignore_index. `t` is contiguous (the targets themselves when they are); `count` is
// the number of rows that are not ignored, the N of the mean.
struct CheckedTargets {
  Tensor t;
  int64_t count = 0;
};

CheckedTargets checked_targets(const char* op, const Tensor& targets, const Shape& leading,
                               int64_t V, int64_t ignore_index, const std::string& got) {
  if (!targets.defined()) throw std::invalid_argument(std::string(op) + ": undefined targets");
  if (targets.dtype() != DType::i64)
    throw std::invalid_argument(std::string(op) + ": expected i64 targets, got " +
                                dtype_name(targets.dtype()));
  if (targets.shape() != leading)
    throw std::invalid_argument(std::string(op) + ": expected targets " + shape_str(leading) +
                                ", got " + got + " and targets " + shape_str(targets.shape()));
  if (targets.numel() == 0)
    throw std::invalid_argument(std::string(op) +
                                ": empty batch (no targets), the mean is undefined");
  CheckedTargets c{detail::contiguous_data(targets), 0};
  const int64_t* ids = c.t.data<int64_t>();
  for (int64_t i = 0; i < c.t.numel(); ++i) {
    if (ids[i] == ignore_index) continue;
    if (ids[i] < 0 || ids[i] >= V)
      throw std::out_of_range(std::string(op) + ": target " + std::to_string(ids[i]) +
                              " at position " + std::to_string(i) + " is outside [0, " +
                              std::to_string(V) + ") (vocab_size) and is not ignore_index " +
                              std::to_string(ignore_index));
    ++c.count;
  }
  return c;
}

// checked_targets for a loss over the rows of x (..., V), x being a floating tensor of at
// least one dimension (logits or log-probabilities, named `what` in errors).
CheckedTargets checked_rows(const char* op, const Tensor& x, const char* what,
                            const Tensor& targets, int64_t ignore_index) {
  if (!x.defined()) throw std::invalid_argument(std::string(op) + ": undefined tensor");
  if (x.dtype() == DType::i64) throw_not_floating(op, DType::i64);
  if (x.dim() < 1)
    throw std::invalid_argument(std::string(op) + ": expected " + what +
                                " (..., V), got a 0-d tensor");
  const Shape leading(x.shape().begin(), x.shape().end() - 1);
  return checked_targets(op, targets, leading, x.size(-1), ignore_index,
                         std::string(what) + " " + shape_str(x.shape()));
}

// sum / count as the loss of a mean over the counted rows: 0 when every row was ignored.
double mean_over(double sum, int64_t count) {
  return count > 0 ? sum / static_cast<double>(count) : 0.0;
}

// PyTorch's label_smoothing range, checked by the three losses. NaN fails too.
void check_label_smoothing(const char* op, double label_smoothing) {
  if (label_smoothing >= 0 && label_smoothing <= 1) return;
  std::ostringstream os;
  os << op << ": label_smoothing must be in [0, 1], got " << label_smoothing
     << " (the weight of the uniform distribution mixed into the targets: 0 turns smoothing off, "
        "0.1 is the usual choice)";
  throw std::invalid_argument(os.str());
}

// The mean over the counted rows of V logits of the (smoothed) cross-entropy, as a 0-d tensor;
// each row's logsumexp goes to lse (N,) for the backward. The sum over rows is taken in double.
template <typename T>
Tensor mean_cross_entropy(const T* logits, const CheckedTargets& c, Tensor& lse, int64_t V,
                          int64_t ignore_index, double label_smoothing, DType dtype) {
  const int64_t N = c.t.numel();
  Tensor losses = Tensor::empty({N}, dtype);
  kernels::cross_entropy_forward<T>(losses.data<T>(), lse.data<T>(), logits, c.t.data<int64_t>(), N,
                                    V, ignore_index, static_cast<T>(label_smoothing));
  return Tensor::scalar(mean_over(kernels::sum_all_double<T>(losses.data<T>(), N), c.count), dtype);
}

// The upstream gradient of each of the N rows' loss for a mean over `count` rows, dL / count, as
// the (N,) tensor the backward kernel reads (ignored rows never read it).
Tensor per_row_gradient(const Tensor& g, int64_t N, int64_t count) {
  return Tensor::full({N}, mean_over(g.item(), count), g.dtype());
}

}  // namespace

// L = mean_i [(1 − ε)(lse_i − x_i[t_i]) + ε mean_c(lse_i − x_ic)];  dx_i = dL (p_i − q_i) / N,
// q_i = (1 − ε) onehot(t_i) + ε / V: both in kernels/cross_entropy.
Tensor cross_entropy(const Tensor& logits, const Tensor& targets, int64_t ignore_index,
                     double label_smoothing) {
  check_label_smoothing("cross_entropy", label_smoothing);
  const CheckedTargets c = checked_rows("cross_entropy", logits, "logits", targets, ignore_index);
  const int64_t N = c.t.numel(), V = logits.size(-1), count = c.count;
  const Tensor xc = detail::contiguous_data(logits);
  Tensor lse = Tensor::empty({N}, logits.dtype());
  const Tensor loss = dispatch_floating(logits.dtype(), "cross_entropy", [&]<typename T>() {
    return mean_cross_entropy<T>(xc.data<T>(), c, lse, V, ignore_index, label_smoothing,
                                 logits.dtype());
  });
  return record(loss, "cross_entropy", {logits, targets}, {{"logits", xc}, {"targets", c.t}},
                [N, V, count, ignore_index, label_smoothing, lse](
                    const Tensor& g, std::span<Tensor> gi, const Tensor& xc, const Tensor& t) {
                  dispatch_floating(g.dtype(), "cross_entropy", [&]<typename T>() {
                    kernels::cross_entropy_backward<T>(
                        gi[0].data<T>(), xc.data<T>(), lse.data<T>(), t.data<int64_t>(),
                        per_row_gradient(g, N, count).data<T>(), N, V, ignore_index, true,
                        static_cast<T>(label_smoothing));
                  });
                });
}

// ----- nll_loss -----
static void register_nll_loss(OpRegistry& r) {
  r.add(
      {.name = "nll_loss",
       .forward = "`−mean_i((1 − ε) x_i[t_i] + ε mean_c x_ic)`, `ignore_index` and ε as "
                  "cross_entropy",
       .vjp = "`dx_ic = −dL ((1 − ε)[c = t_i] + ε/V) / N`; 0 for ignored rows",
       .tests = "ops_test: −inf entries vs torch; = cross_entropy after log_softmax, smoothed too",
       .cases = {
           {"log-probabilities (B, T, C), targets (B, T) with two ignored (-1)",
            [](Generator& g, DType d, const Sizes& s) {
              return Inputs{param({s.B, s.T, s.C}, g, d), targets_with_ignored({s.B, s.T}, s.C, g)};
            },
            [](const Inputs& in) { return nll_loss(log_softmax(in[0]), in[1]); }},
           {"log-probabilities (B, T, C), targets (B, T) with two ignored (-1), label_smoothing "
            "0.3",
            [](Generator& g, DType d, const Sizes& s) {
              return Inputs{param({s.B, s.T, s.C}, g, d), targets_with_ignored({s.B, s.T}, s.C, g)};
            },
            [](const Inputs& in) { return nll_loss(log_softmax(in[0]), in[1], -1, 0.3); }}}});
}

// The pick of log-probabilities at the targets, with cross_entropy's ignore_index and mean:
//   L = −mean_i [(1 − ε) x_i[t_i] + ε mean_c x_ic];  dx_ic = −dL ((1 − ε)[c = t_i] + ε/V) / N.
// Written as a sum of picked entries, never as a product with a one-hot: -inf * 0 would be NaN
// wherever a log-probability is -inf (a masked class), although nothing picks it. Smoothing
// (ε > 0) reads every entry, so there a -inf entry makes the loss +inf, as in PyTorch's
// cross_entropy with label_smoothing.
Tensor nll_loss(const Tensor& log_probs, const Tensor& targets, int64_t ignore_index,
                double label_smoothing) {
  check_label_smoothing("nll_loss", label_smoothing);
  const CheckedTargets c =
      checked_rows("nll_loss", log_probs, "log-probabilities", targets, ignore_index);
  const int64_t N = c.t.numel(), V = log_probs.size(-1), count = c.count;
  const double eps = label_smoothing;
  const Tensor xc = detail::contiguous_data(log_probs);
  const Tensor loss = dispatch_floating(log_probs.dtype(), "nll_loss", [&]<typename T>() {
    const T* x = xc.data<T>();
    const int64_t* t = c.t.data<int64_t>();
    double sum = 0;
    for (int64_t i = 0; i < N; ++i) {
      if (t[i] == ignore_index) continue;
      double row = static_cast<double>(x[i * V + t[i]]);
      if (eps != 0) {
        double sum_x = 0;
        for (int64_t j = 0; j < V; ++j) sum_x += static_cast<double>(x[i * V + j]);
        row = (1 - eps) * row + eps * sum_x / static_cast<double>(V);
      }
      sum -= row;
    }
    return Tensor::scalar(mean_over(sum, count), log_probs.dtype());
  });
  return record(loss, "nll_loss", {log_probs, targets}, {{"targets", c.t}},
                [N, V, count, ignore_index, eps](const Tensor& g, std::span<Tensor> gi,
                                                 const Tensor& targets) {
                  dispatch_floating(g.dtype(), "nll_loss", [&]<typename T>() {
                    const double dmean = -mean_over(g.item(), count);
                    const T dpick = static_cast<T>(dmean * (1 - eps)),
                            dall = static_cast<T>(dmean * eps / static_cast<double>(V));
                    const int64_t* t = targets.data<int64_t>();
                    T* dx = gi[0].data<T>();
                    for (int64_t i = 0; i < N; ++i) {
                      if (t[i] == ignore_index) continue;
                      if (eps != 0)
                        for (int64_t j = 0; j < V; ++j) dx[i * V + j] += dall;
                      dx[i * V + t[i]] += dpick;
                    }
                  });
                });
}

// ----- linear_cross_entropy -----
static void register_linear_cross_entropy(OpRegistry& r) {
  r.add({.name = "linear_cross_entropy",
         .forward = "`cross_entropy(x @ Wᵀ, t, ignore_index, ε)`: the lm_head and its loss, "
                    "logits kept once",
         .vjp = "`dlogits = dL(softmax − q)/N` written over the logits, then `dx = dlogits @ W`, "
                "`dW = dlogitsᵀ @ x`",
         .kernel = "kernels/matmul, kernels/cross_entropy",
         .tests = "ops_test: vs linear + cross_entropy; twice with retain_graph; ignore_index",
         .cases = {{"x (B, T, C), weight (7, C), targets (B, T)",
                    [](Generator& g, DType d, const Sizes& s) {
                      const Tensor t = random_ids({s.B, s.T}, 7, g);
                      return Inputs{param({s.B, s.T, s.C}, g, d), param({7, s.C}, g, d), t};
                    },
                    [](const Inputs& in) { return linear_cross_entropy(in[0], in[1], in[2]); }},
                   {"x (B, T, C), weight (7, C), targets (B, T) with two ignored (-1)",
                    [](Generator& g, DType d, const Sizes& s) {
                      return Inputs{param({s.B, s.T, s.C}, g, d), param({7, s.C}, g, d),
                                    targets_with_ignored({s.B, s.T}, 7, g)};
                    },
                    [](const Inputs& in) { return linear_cross_entropy(in[0], in[1], in[2]); }},
                   {"x (B, T, C), weight (7, C), targets (B, T) with two ignored (-1), "
                    "label_smoothing 0.3",
                    [](Generator& g, DType d, const Sizes& s) {
                      return Inputs{param({s.B, s.T, s.C}, g, d), param({7, s.C}, g, d),
                                    targets_with_ignored({s.B, s.T}, 7, g)};
                    },
                    [](const Inputs& in) {
                      return linear_cross_entropy(in[0], in[1], in[2], -1, 0.3);
                    }}}});
}

// The language-model head and its loss as one op. cross_entropy(linear(x, W), t) would keep the
// (N, V) logits for the loss's backward and hand linear's backward a second (N, V) buffer, zeroed,
// for their gradient: for GPT-2 (V = 50257) the two largest tensors of a step. Here the logits
// are computed into one buffer, which the backward overwrites with their gradient (the kernel
// reads each logit before writing it) and then feeds to the two products.
Tensor linear_cross_entropy(const Tensor& x, const Tensor& weight, const Tensor& targets,
                            int64_t ignore_index, double label_smoothing) {
  check_label_smoothing("linear_cross_entropy", label_smoothing);
  detail::check_floating_pair("linear_cross_entropy", x, weight);
  if (weight.dim() != 2 || x.dim() < 1 || x.size(-1) != weight.size(1))
    throw std::invalid_argument(
        "linear_cross_entropy: expected x (..., C) and weight (V, C), got x " +
        shape_str(x.shape()) + " and weight " + shape_str(weight.shape()));
  const int64_t V = weight.size(0), C = weight.size(1);
  const Shape leading(x.shape().begin(), x.shape().end() - 1);
  const CheckedTargets c = checked_targets("linear_cross_entropy", targets, leading, V,
                                           ignore_index, "x " + shape_str(x.shape()));
  const int64_t N = c.t.numel(), count = c.count;
  const Tensor xc = detail::contiguous_data(x), wc = detail::contiguous_data(weight);
  Tensor logits = Tensor::empty({N, V}, x.dtype()), lse = Tensor::empty({N}, x.dtype());
  auto compute_logits = [N, C, V](const Tensor& out, const Tensor& xs, const Tensor& ws) {
    dispatch_floating(out.dtype(), "linear_cross_entropy", [&]<typename T>() {
      kernels::matmul<T>(out.data<T>(), xs.data<T>(), ws.data<T>(), N, C, V, false, true,
                         false);  // x Wᵀ
    });
  };
  compute_logits(logits, xc, wc);
  const Tensor loss = dispatch_floating(x.dtype(), "linear_cross_entropy", [&]<typename T>() {
    return mean_cross_entropy<T>(logits.data<T>(), c, lse, V, ignore_index, label_smoothing,
                                 x.dtype());
  });
  // x and W are both saved whatever needs a gradient: a second backward through a retained graph
  // recomputes the logits from them. The logits buffer is the op's own (captured, not saved).
  return record(
      loss, "linear_cross_entropy", {x, weight, targets},
      {{"x", xc}, {"weight", wc}, {"targets", c.t}},
      [N, V, C, count, ignore_index, label_smoothing, logits, lse, compute_logits,
       logits_intact = true](const Tensor& g, std::span<Tensor> gi, const Tensor& xc,
                             const Tensor& wc, const Tensor& t) mutable {
        // A second backward through a retained graph finds the buffer holding the gradient: redo
        // it.
        if (!logits_intact) compute_logits(logits, xc, wc);
        logits_intact = false;
        dispatch_floating(g.dtype(), "linear_cross_entropy", [&]<typename T>() {
          T* dlogits = logits.data<T>();  // the logits, turned into their gradient in place
          kernels::cross_entropy_backward<T>(dlogits, dlogits, lse.data<T>(), t.data<int64_t>(),
                                             per_row_gradient(g, N, count).data<T>(), N, V,
                                             ignore_index, false, static_cast<T>(label_smoothing));
          if (gi[0].defined())  // dx (N, C) += dlogits (N, V) @ W (V, C)
            kernels::matmul<T>(gi[0].data<T>(), dlogits, wc.data<T>(), N, V, C, false, false, true);
          if (gi[1].defined())  // dW (V, C) += dlogitsᵀ @ x: dlogits stored (N, V) is Aᵀ, the
                                // a_trans layout
            kernels::matmul<T>(gi[1].data<T>(), dlogits, xc.data<T>(), V, N, C, true, false, true);
        });
      });
}

// ----- dropout -----
static void register_dropout(OpRegistry& r) {
  r.add({.name = "dropout",
         .forward = "`x ⊙ mask`, mask ∈ {0, 1/(1−p)}",
         .vjp = "derived: a `mul`",
         .tests = "ops_test: seeded",
         .cases = {unary_case([](const Tensor& x) {
           Generator mask_gen(7);  // the same mask on every evaluation, as within one training step
           return dropout(x, 0.3, true, mask_gen);
         })}});
}

Tensor dropout(const Tensor& x, double p, bool training, Generator& gen) {
  if (!(p >= 0 && p <= 1))
    throw std::invalid_argument("dropout: p must be in [0, 1], got " + std::to_string(p));
  if (!training || p == 0) return x;
  const double scale = p < 1 ? 1.0 / (1.0 - p) : 0.0;
  // The mask is drawn straight into a tensor from the storage cache (no staging vector, so a
  // training step with dropout allocates nothing), one uniform per element in order.
  Tensor mask = Tensor::empty(x.shape(), x.dtype());
  dispatch_floating(x.dtype(), "dropout", [&]<typename T>() {
    T* m = mask.data<T>();
    for (int64_t i = 0; i < mask.numel(); ++i)
      m[i] = static_cast<T>(gen.uniform() < p ? 0.0 : scale);
  });
  return mul(x, mask);
}

// ops.h's order.
void detail::register_nn_ops(OpRegistry& r) {
  for (auto* section :
       {register_embedding, register_gathers, register_causal_mask, register_softmax,
        register_causal_softmax, register_causal_attention, register_causal_attention_qkv,
        register_log_softmax, register_layer_norm, register_cross_entropy, register_nll_loss,
        register_linear_cross_entropy, register_dropout})
    section(r);
}

}  // namespace attograd
