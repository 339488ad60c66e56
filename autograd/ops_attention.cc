// Softmax and attention: the causal mask, softmax (plain, causal-fused and log), and causal
// attention itself (separate and packed q, k, v), the kernel families softmax and attention.
// Each forward is followed by its VJP.
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "autograd/gradcheck_inputs.h"
#include "autograd/kernels/attention.h"
#include "autograd/kernels/elementwise.h"
#include "autograd/kernels/softmax.h"
#include "autograd/op_registry.h"
#include "autograd/ops.h"
#include "autograd/ops_internal.h"

namespace attograd {

using gradcheck_inputs::heads_for;
using gradcheck_inputs::Inputs;
using gradcheck_inputs::param;
using gradcheck_inputs::params_case;
using gradcheck_inputs::Shapes;
using gradcheck_inputs::Sizes;
using gradcheck_inputs::unary_case;

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
         .cases = {unary_case([](const Tensor& x) { return softmax(x); }, -3, 3),
                   unary_case([](const Tensor& x) { return softmax(x, 1); }, -3, 3)}});
}

Tensor softmax(const Tensor& x) {
  if (!x.defined() || x.dim() < 1)
    throw std::invalid_argument("softmax: expected a tensor with at least one dimension");
  return softmax_impl(x, 0, "softmax");
}

namespace {
// f, a last-axis op, over axis `dim` of x: x's axis swapped to the end (a view), f, and back.
Tensor over_axis(const Tensor& x, int64_t dim_in, const char* op, Tensor (*f)(const Tensor&)) {
  if (!x.defined() || x.dim() < 1)
    throw std::invalid_argument(std::string(op) +
                                ": expected a tensor with at least one dimension");
  const int64_t dim = detail::wrap_dim(dim_in, x.dim(), op);
  if (dim == x.dim() - 1) return f(x);
  return transpose(f(transpose(x, dim, -1)), dim, -1);
}
}  // namespace

Tensor softmax(const Tensor& x, int64_t dim) {
  return over_axis(x, dim, "softmax", [](const Tensor& t) { return softmax(t); });
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
          kernels::attention_backward<T_>(dx, dx + C, dx + 2 * C, g.data<T_>(),
                                          {ys, heads, heads, heads}, y.data<T_>(), ys,
                                          lse.data<T_>(), x, heads, x + C, heads, x + 2 * C, heads,
                                          dims, !first_gradient(gi[0]));
        });
      },
      GradBuffers::first_write);
}

// ----- log_softmax -----
static void register_log_softmax(OpRegistry& r) {
  r.add({.name = "log_softmax",
         .forward = "`x − m − log Σ exp(x − m)`",
         .vjp = "`dx = dy − softmax(x) Σ dy`",
         .kernel = "kernels/softmax",
         .tests = "fused vs primitives",
         .cases = {unary_case([](const Tensor& x) { return log_softmax(x); }, -3, 3),
                   unary_case([](const Tensor& x) { return log_softmax(x, 0); }, -3, 3)}});
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

Tensor log_softmax(const Tensor& x, int64_t dim) {
  return over_axis(x, dim, "log_softmax", [](const Tensor& t) { return log_softmax(t); });
}

// ops.h's order.
void detail::register_attention_ops(OpRegistry& r) {
  for (auto* section :
       {register_causal_mask, register_softmax, register_causal_softmax, register_causal_attention,
        register_causal_attention_qkv, register_log_softmax})
    section(r);
}

}  // namespace attograd
