// The ops a transformer is made of: embedding, causal mask, softmax (plain, causal-fused and
// log), layer norm, cross-entropy, dropout. Each forward is followed by its VJP.
#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>

#include "autograd/kernels/attention.h"
#include "autograd/kernels/cross_entropy.h"
#include "autograd/kernels/elementwise.h"
#include "autograd/kernels/layer_norm.h"
#include "autograd/kernels/matmul.h"
#include "autograd/kernels/reduce.h"
#include "autograd/kernels/softmax.h"
#include "autograd/ops.h"
#include "autograd/ops_internal.h"

namespace attograd {

// ----- embedding:  y[i] = weight[ids[i]];  dweight[ids[i]] += dy[i] (scatter-add) -----
Tensor embedding(const Tensor& weight, const Tensor& ids) {
  if (!weight.defined() || !ids.defined()) throw std::invalid_argument("embedding: undefined tensor");
  if (weight.dim() != 2)
    throw std::invalid_argument("embedding: expected weight (V, C), got " + shape_str(weight.shape()));
  if (ids.dtype() != DType::i64)
    throw std::invalid_argument(std::string("embedding: expected i64 token ids, got ") + dtype_name(ids.dtype()));
  const int64_t V = weight.shape()[0], C = weight.shape()[1];
  const Tensor idc = detail::contiguous_data(ids);  // ids itself when contiguous
  const int64_t* idv = idc.data<int64_t>();
  const int64_t n = idc.numel();
  for (int64_t i = 0; i < n; ++i)
    if (idv[i] < 0 || idv[i] >= V)
      throw std::out_of_range("embedding: token id " + std::to_string(idv[i]) + " at position " +
                              std::to_string(i) + " is outside [0, " + std::to_string(V) +
                              ") (vocab_size " + std::to_string(V) + "); check the tokenizer matches the model");
  const Tensor w = detail::contiguous_data(weight);
  Shape out_shape = ids.shape();
  out_shape.push_back(C);
  Tensor y = Tensor::empty(out_shape, weight.dtype());
  const size_t row_bytes = static_cast<size_t>(C) * dtype_size(weight.dtype());
  const char* src = reinterpret_cast<const char*>(w.impl()->storage->data) + w.impl()->offset * dtype_size(w.dtype());
  char* dst = static_cast<char*>(y.impl()->storage->data);
  for (int64_t i = 0; i < n; ++i) std::memcpy(dst + i * row_bytes, src + idv[i] * row_bytes, row_bytes);
  return record(y, "embedding", {weight, ids}, [idc, n, C](const Tensor& g, std::span<Tensor> gi) {
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
        } else {  // narrow embeddings (the lecture's C = 2 and 6): a kernel call per row costs more
          for (int64_t c = 0; c < C; ++c) row[c] += dy_i[c];
        }
      }
    });
  });
}

namespace {

// Checks a (..., Tq, Tk) score block for the causal ops and returns Tq, Tk.
std::pair<int64_t, int64_t> causal_dims(const Tensor& s, const char* op) {
  if (!s.defined()) throw std::invalid_argument(std::string(op) + ": undefined tensor");
  if (s.dim() < 2)
    throw std::invalid_argument(std::string(op) + ": expected scores (..., Tq, Tk), got " + shape_str(s.shape()));
  const int64_t Tq = s.size(-2), Tk = s.size(-1);
  if (Tq > Tk)
    throw std::invalid_argument(std::string(op) + ": more queries than keys in " + shape_str(s.shape()) +
                                " (query t sees keys j <= t + Tk - Tq, so Tq <= Tk)");
  return {Tq, Tk};
}

}  // namespace

// ----- causal_mask:  y = x, -inf where j > t + (Tk - Tq);  dx = dy where kept, 0 where masked -----
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
        kernels::axpy<T>(gi[0].data<T>() + r * Tk, T(1), g.data<T>() + r * Tk, r % Tq + 1 + (Tk - Tq));
    });
  });
}

namespace {

// Shared by softmax and causal_softmax: y = softmax(x) row-wise, dx = y (dy - sum(dy y)).
Tensor softmax_impl(const Tensor& x, int64_t causal_tq, const char* name) {
  const int64_t n = x.size(-1);
  const int64_t rows = n == 0 ? 0 : x.numel() / n;
  const Tensor xc = detail::contiguous_data(x);
  Tensor y = Tensor::empty(x.shape(), x.dtype());
  dispatch_floating(x.dtype(), name, [&]<typename T>() {
    kernels::softmax_forward<T>(y.data<T>(), xc.data<T>(), rows, n, causal_tq);
  });
  return record(y, name, {x}, [name, rows, n, y = y.detach()](const Tensor& g, std::span<Tensor> gi) {
    dispatch_floating(g.dtype(), name, [&]<typename T>() {
      kernels::softmax_backward<T>(gi[0].data<T>(), y.data<T>(), g.data<T>(), rows, n);
    });
  });
}

}  // namespace

// ----- softmax:  y = exp(x - max) / sum;  dx = y (dy - sum(dy y)) -----
Tensor softmax(const Tensor& x) {
  if (!x.defined() || x.dim() < 1) throw std::invalid_argument("softmax: expected a tensor with at least one dimension");
  return softmax_impl(x, 0, "softmax");
}

// ----- causal_softmax: the fused softmax(causal_mask(x)) of attention -----
Tensor causal_softmax(const Tensor& scores) {
  const int64_t Tq = causal_dims(scores, "causal_softmax").first;
  return softmax_impl(scores, Tq, "causal_softmax");
}

// ----- causal_attention:  y = softmax(q kᵀ / sqrt(HS), causal) v, fused (kernels/attention.h) -----
//   VJP: D_t = dy_t . y_t;  ds = p (dy vᵀ - D);  dq = ds k / sqrt(HS);  dk = dsᵀ q / sqrt(HS);  dv = pᵀ dy
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
    throw std::invalid_argument("causal_attention: expected q (B, NH, Tq, HS) and k, v (B, NH, Tk, HS) with "
                                "1 <= Tq <= Tk, got q " + shape_str(q.shape()) + ", k " + shape_str(k.shape()) +
                                ", v " + shape_str(v.shape()));
  const kernels::AttentionDims dims{q.size(0), q.size(1), q.size(2), k.size(2), q.size(3)};
  const HeadOperand qh = head_operand(q), kh = head_operand(k), vh = head_operand(v);
  // y is stored (B, Tq, NH, HS) and returned as its (B, NH, Tq, HS) view, so that merging the
  // heads back, transpose(1, 2) then reshape to (B, Tq, C), is a view and copies nothing.
  const Tensor y_storage = Tensor::empty({dims.B, dims.Tq, dims.NH, dims.HS}, q.dtype());
  const kernels::HeadStrides ys{dims.Tq * dims.NH * dims.HS, dims.HS, dims.NH * dims.HS};
  const Tensor y = detail::view_of(y_storage, q.shape(), {ys.batch, ys.head, ys.time, 1});
  Tensor lse = Tensor::empty({dims.B, dims.NH, dims.Tq}, q.dtype());
  dispatch_floating(q.dtype(), "causal_attention", [&]<typename T>() {
    kernels::attention_forward<T>(y_storage.data<T>(), ys, lse.data<T>(), qh.data.data<T>(), qh.strides,
                                  kh.data.data<T>(), kh.strides, vh.data.data<T>(), vh.strides, dims);
  });
  return record(y, "causal_attention", {q, k, v},
                [q = qh.data.detach(), k = kh.data.detach(), v = vh.data.detach(), y = y_storage.detach(), lse,
                 qs = qh.strides, ks = kh.strides, vs = vh.strides, ys, dims](const Tensor& g, std::span<Tensor> gi) {
    dispatch_floating(g.dtype(), "causal_attention", [&]<typename T>() {
      auto ptr = [](const Tensor& t) { return t.defined() ? t.data<T>() : nullptr; };
      // Every gradient here is a contiguous (B, NH, T, HS) buffer.
      const kernels::HeadStrides cq = kernels::contiguous_heads(dims.NH, dims.Tq, dims.HS),
                                 ck = kernels::contiguous_heads(dims.NH, dims.Tk, dims.HS);
      kernels::attention_backward<T>(ptr(gi[0]), ptr(gi[1]), ptr(gi[2]), g.data<T>(), {cq, cq, ck, ck}, y.data<T>(), ys,
                                     lse.data<T>(),
                                     q.data<T>(), qs, k.data<T>(), ks, v.data<T>(), vs, dims);
    });
  });
}

// ----- causal_attention_qkv: causal_attention on the heads of a packed (B, T, 3C) q, k, v -----
//
// What a GPT's attention layer computes from c_attn's output. Splitting it into heads with
// slice, reshape and transpose costs nothing going forward (views), but their VJPs copy each of
// dq, dk, dv twice on the way back to dqkv; this op reads the heads through strides and writes
// their gradients straight into dqkv's head-split views, and returns y as (B, T, C) with the
// heads side by side.
Tensor causal_attention_qkv(const Tensor& qkv, int64_t n_head) {
  if (!qkv.defined()) throw std::invalid_argument("causal_attention_qkv: undefined tensor");
  if (qkv.dtype() == DType::i64) throw_not_floating("causal_attention_qkv", DType::i64);
  if (qkv.dim() != 3 || qkv.size(2) % 3 != 0 || n_head < 1 || (qkv.size(2) / 3) % n_head != 0 || qkv.numel() == 0)
    throw std::invalid_argument("causal_attention_qkv: expected qkv (B, T, 3C) with n_head dividing C, got qkv " +
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
    kernels::attention_forward<T_>(y.data<T_>(), ys, lse.data<T_>(), x, heads, x + C, heads, x + 2 * C, heads, dims);
  });
  return record(y, "causal_attention_qkv", {qkv},
                [xc = xc.detach(), y = y.detach(), lse, heads, ys, dims, C](const Tensor& g, std::span<Tensor> gi) {
    dispatch_floating(g.dtype(), "causal_attention_qkv", [&]<typename T_>() {
      const T_* x = xc.data<T_>();
      T_* dx = gi[0].data<T_>();  // dqkv (B, T, 3C), contiguous: dq, dk, dv are its head-split views
      kernels::attention_backward<T_>(dx, dx + C, dx + 2 * C, g.data<T_>(), {ys, heads, heads, heads}, y.data<T_>(),
                                      ys, lse.data<T_>(), x, heads, x + C, heads, x + 2 * C, heads, dims);
    });
  });
}

// ----- log_softmax:  y = x - max - log(sum exp(x - max));  dx = dy - exp(y) sum(dy) -----
Tensor log_softmax(const Tensor& x) {
  if (!x.defined() || x.dim() < 1) throw std::invalid_argument("log_softmax: expected a tensor with at least one dimension");
  const int64_t n = x.size(-1);
  const int64_t rows = n == 0 ? 0 : x.numel() / n;
  const Tensor xc = detail::contiguous_data(x);
  Tensor y = Tensor::empty(x.shape(), x.dtype());
  dispatch_floating(x.dtype(), "log_softmax", [&]<typename T>() {
    kernels::log_softmax_forward<T>(y.data<T>(), xc.data<T>(), rows, n);
  });
  return record(y, "log_softmax", {x}, [rows, n, y = y.detach()](const Tensor& g, std::span<Tensor> gi) {
    dispatch_floating(g.dtype(), "log_softmax", [&]<typename T>() {
      kernels::log_softmax_backward<T>(gi[0].data<T>(), y.data<T>(), g.data<T>(), rows, n);
    });
  });
}

// ----- layer_norm:  y = gamma (x - mean) rstd + beta;  VJP in kernels/layer_norm.h -----
Tensor layer_norm(const Tensor& x, const Tensor& gamma, const Tensor& beta, double eps) {
  detail::check_floating_pair("layer_norm", x, gamma);
  detail::check_floating_pair("layer_norm", x, beta);
  const int64_t C = gamma.numel();
  if (x.dim() < 1 || gamma.dim() != 1 || beta.shape() != gamma.shape() || x.size(-1) != C)
    throw std::invalid_argument("layer_norm: expected input (..., " + std::to_string(C) +
                                ") with gamma and beta (" + std::to_string(C) + ",), got input " +
                                shape_str(x.shape()) + ", gamma " + shape_str(gamma.shape()) +
                                ", beta " + shape_str(beta.shape()));
  if (!(eps > 0)) throw std::invalid_argument("layer_norm: eps must be positive, got " + std::to_string(eps));
  const int64_t rows = C == 0 ? 0 : x.numel() / C;
  const Tensor xc = detail::contiguous_data(x), gc = detail::contiguous_data(gamma),
               bc = detail::contiguous_data(beta);
  Tensor y = Tensor::empty(x.shape(), x.dtype());
  Tensor mean = Tensor::empty({rows}, x.dtype()), rstd = Tensor::empty({rows}, x.dtype());
  dispatch_floating(x.dtype(), "layer_norm", [&]<typename T>() {
    kernels::layer_norm_forward<T>(y.data<T>(), mean.data<T>(), rstd.data<T>(), xc.data<T>(),
                                   gc.data<T>(), bc.data<T>(), rows, C, static_cast<T>(eps));
  });
  return record(y, "layer_norm", {x, gamma, beta},
                [rows, C, xc = xc.detach(), gc = gc.detach(), mean, rstd](const Tensor& g, std::span<Tensor> gi) {
    dispatch_floating(g.dtype(), "layer_norm", [&]<typename T>() {
      auto ptr = [](const Tensor& t) { return t.defined() ? t.data<T>() : nullptr; };
      kernels::layer_norm_backward<T>(ptr(gi[0]), ptr(gi[1]), ptr(gi[2]), g.data<T>(), xc.data<T>(),
                                      mean.data<T>(), rstd.data<T>(), gc.data<T>(), rows, C);
    });
  });
}

// ----- cross_entropy:  L = mean_i (logsumexp(x_i) - x_i[t_i]);  dx_i = dL (softmax(x_i) - onehot) / N -----
namespace {

// The targets of a cross-entropy: i64 of the logits' leading shape, each in [0, V); returned
// contiguous (the targets themselves when they are).
Tensor checked_targets(const char* op, const Tensor& targets, const Shape& leading, int64_t V, const std::string& got) {
  if (!targets.defined()) throw std::invalid_argument(std::string(op) + ": undefined targets");
  if (targets.dtype() != DType::i64)
    throw std::invalid_argument(std::string(op) + ": expected i64 targets, got " + dtype_name(targets.dtype()));
  if (targets.shape() != leading)
    throw std::invalid_argument(std::string(op) + ": expected targets " + shape_str(leading) + ", got " + got +
                                " and targets " + shape_str(targets.shape()));
  if (targets.numel() == 0) throw std::invalid_argument(std::string(op) + ": empty batch (no targets), the mean is undefined");
  Tensor t = detail::contiguous_data(targets);
  const int64_t* ids = t.data<int64_t>();
  for (int64_t i = 0; i < t.numel(); ++i)
    if (ids[i] < 0 || ids[i] >= V)
      throw std::out_of_range(std::string(op) + ": target " + std::to_string(ids[i]) + " at position " + std::to_string(i) +
                              " is outside [0, " + std::to_string(V) + ") (vocab_size)");
  return t;
}

// The mean over N rows of V logits of -log softmax at the target, as a 0-d tensor; each row's
// logsumexp goes to lse (N,) for the backward. The sum over rows is taken in double.
template <typename T>
Tensor mean_cross_entropy(const T* logits, const Tensor& t, Tensor& lse, int64_t V, DType dtype) {
  const int64_t N = t.numel();
  Tensor losses = Tensor::empty({N}, dtype);
  kernels::cross_entropy_forward<T>(losses.data<T>(), lse.data<T>(), logits, t.data<int64_t>(), N, V);
  return Tensor::scalar(kernels::sum_all_double<T>(losses.data<T>(), N) / static_cast<double>(N), dtype);
}

// The upstream gradient of each row's loss for a mean over N rows, dL / N, as the (N,) tensor the
// backward kernel reads.
Tensor per_row_gradient(const Tensor& g, int64_t N) {
  return Tensor::full({N}, g.item() / static_cast<double>(N), g.dtype());
}

}  // namespace

Tensor cross_entropy(const Tensor& logits, const Tensor& targets) {
  if (!logits.defined()) throw std::invalid_argument("cross_entropy: undefined tensor");
  if (logits.dtype() == DType::i64) throw_not_floating("cross_entropy", DType::i64);
  if (logits.dim() < 1) throw std::invalid_argument("cross_entropy: expected logits (..., V), got a 0-d tensor");
  const Shape leading(logits.shape().begin(), logits.shape().end() - 1);
  const int64_t V = logits.size(-1);
  const Tensor t = checked_targets("cross_entropy", targets, leading, V, "logits " + shape_str(logits.shape()));
  const int64_t N = t.numel();
  const Tensor xc = detail::contiguous_data(logits);
  Tensor lse = Tensor::empty({N}, logits.dtype());
  const Tensor loss = dispatch_floating(logits.dtype(), "cross_entropy", [&]<typename T>() {
    return mean_cross_entropy<T>(xc.data<T>(), t, lse, V, logits.dtype());
  });
  return record(loss, "cross_entropy", {logits, targets},
                [t, N, V, xc = xc.detach(), lse](const Tensor& g, std::span<Tensor> gi) {
    dispatch_floating(g.dtype(), "cross_entropy", [&]<typename T>() {
      kernels::cross_entropy_backward<T>(gi[0].data<T>(), xc.data<T>(), lse.data<T>(), t.data<int64_t>(),
                                         per_row_gradient(g, N).data<T>(), N, V, true);
    });
  });
}

// ----- linear_cross_entropy:  L = cross_entropy(x Wᵀ, t);  dlogits in place, dx = dlogits W, dW = dlogitsᵀ x -----
//
// The language-model head and its loss as one op. cross_entropy(linear(x, W), t) would keep the
// (N, V) logits for the loss's backward and hand linear's backward a second (N, V) buffer, zeroed,
// for their gradient: for GPT-2 (V = 50257) the two largest tensors of a step. Here the logits
// are computed into one buffer, which the backward overwrites with their gradient (the kernel
// reads each logit before writing it) and then feeds to the two products.
Tensor linear_cross_entropy(const Tensor& x, const Tensor& weight, const Tensor& targets) {
  detail::check_floating_pair("linear_cross_entropy", x, weight);
  if (weight.dim() != 2 || x.dim() < 1 || x.size(-1) != weight.size(1))
    throw std::invalid_argument("linear_cross_entropy: expected x (..., C) and weight (V, C), got x " +
                                shape_str(x.shape()) + " and weight " + shape_str(weight.shape()));
  const int64_t V = weight.size(0), C = weight.size(1);
  const Shape leading(x.shape().begin(), x.shape().end() - 1);
  const Tensor t = checked_targets("linear_cross_entropy", targets, leading, V, "x " + shape_str(x.shape()));
  const int64_t N = t.numel();
  const Tensor xc = detail::contiguous_data(x), wc = detail::contiguous_data(weight);
  Tensor logits = Tensor::empty({N, V}, x.dtype()), lse = Tensor::empty({N}, x.dtype());
  auto compute_logits = [N, C, V](const Tensor& out, const Tensor& xs, const Tensor& ws) {
    dispatch_floating(out.dtype(), "linear_cross_entropy", [&]<typename T>() {
      kernels::matmul<T>(out.data<T>(), xs.data<T>(), ws.data<T>(), N, C, V, false, true, false);  // x Wᵀ
    });
  };
  compute_logits(logits, xc, wc);
  const Tensor loss = dispatch_floating(x.dtype(), "linear_cross_entropy", [&]<typename T>() {
    return mean_cross_entropy<T>(logits.data<T>(), t, lse, V, x.dtype());
  });
  return record(loss, "linear_cross_entropy", {x, weight, targets},
                [t, N, V, C, xc = xc.detach(), wc = wc.detach(), logits, lse, compute_logits,
                 logits_intact = true](const Tensor& g, std::span<Tensor> gi) mutable {
    // A second backward through a retained graph finds the buffer holding the gradient: redo it.
    if (!logits_intact) compute_logits(logits, xc, wc);
    logits_intact = false;
    dispatch_floating(g.dtype(), "linear_cross_entropy", [&]<typename T>() {
      T* dlogits = logits.data<T>();  // the logits, turned into their gradient in place
      kernels::cross_entropy_backward<T>(dlogits, dlogits, lse.data<T>(), t.data<int64_t>(), per_row_gradient(g, N).data<T>(),
                                         N, V, false);
      if (gi[0].defined())  // dx (N, C) += dlogits (N, V) @ W (V, C)
        kernels::matmul<T>(gi[0].data<T>(), dlogits, wc.data<T>(), N, V, C, false, false, true);
      if (gi[1].defined())  // dW (V, C) += dlogitsᵀ @ x: dlogits stored (N, V) is Aᵀ, the a_trans layout
        kernels::matmul<T>(gi[1].data<T>(), dlogits, xc.data<T>(), V, N, C, true, false, true);
    });
  });
}

// ----- dropout: derived, x * mask with mask in {0, 1/(1-p)} -----
Tensor dropout(const Tensor& x, double p, bool training, Generator& gen) {
  if (!(p >= 0 && p <= 1)) throw std::invalid_argument("dropout: p must be in [0, 1], got " + std::to_string(p));
  if (!training || p == 0) return x;
  const double scale = p < 1 ? 1.0 / (1.0 - p) : 0.0;
  std::vector<double> mask(static_cast<size_t>(x.numel()));
  for (double& m : mask) m = gen.uniform() < p ? 0.0 : scale;
  return mul(x, Tensor::from_vector(mask, x.shape(), x.dtype()));
}

}  // namespace attograd
