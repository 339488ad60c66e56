// The layers' ops: embedding and the other gathers (gather, take_along_dim), layer norm and
// dropout. Softmax and attention are in ops_attention.cc, the losses in ops_loss.cc. Each
// forward is followed by its VJP.
#include <array>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "autograd/gradcheck_inputs.h"
#include "autograd/kernels/elementwise.h"
#include "autograd/kernels/layer_norm.h"
#include "autograd/op_registry.h"
#include "autograd/ops.h"
#include "autograd/ops_internal.h"

namespace attograd {

using gradcheck_inputs::Inputs;
using gradcheck_inputs::param;
using gradcheck_inputs::params_case;
using gradcheck_inputs::random_ids;
using gradcheck_inputs::Shapes;
using gradcheck_inputs::Sizes;
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
       {register_embedding, register_gathers, register_layer_norm, register_dropout})
    section(r);
}

}  // namespace attograd
