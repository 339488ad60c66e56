// The losses: cross-entropy, nll_loss and the fused language-model head with its loss
// (linear_cross_entropy), with ignore_index and label smoothing; the kernel family
// cross_entropy. Each forward is followed by its VJP.
#include <cmath>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "autograd/gradcheck_inputs.h"
#include "autograd/kernels/cross_entropy.h"
#include "autograd/kernels/matmul.h"
#include "autograd/kernels/reduce.h"
#include "autograd/op_registry.h"
#include "autograd/ops.h"
#include "autograd/ops_internal.h"

namespace attograd {

using gradcheck_inputs::Inputs;
using gradcheck_inputs::param;
using gradcheck_inputs::random_ids;
using gradcheck_inputs::Sizes;
using gradcheck_inputs::targets_with_ignored;

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
         .autocast = "the logits `bf16(x) @ bf16(W)ᵀ` summed in f32, `dx = bf16(dlogits) @ "
                     "bf16(W)`, `dW = bf16(dlogits)ᵀ @ bf16(x)`; the logits, the softmax, the "
                     "loss and dlogits f32",
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
  // The three products take the precision of the forward (autocast.h); the softmax, the loss and
  // the logits' gradient stay in the logits' dtype.
  const MatmulPrecision precision = detail::product_precision(x.dtype());
  auto compute_logits = [N, C, V, precision](const Tensor& out, const Tensor& xs,
                                             const Tensor& ws) {
    dispatch_floating(out.dtype(), "linear_cross_entropy", [&]<typename T>() {
      detail::matmul_in<T>(precision, out.data<T>(), xs.data<T>(), ws.data<T>(), N, C, V, false,
                           true, false);  // x Wᵀ
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
      [N, V, C, count, ignore_index, label_smoothing, logits, lse, compute_logits, precision,
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
          if (gi[0].defined())  // dx (N, C) (+)= dlogits (N, V) @ W (V, C)
            detail::matmul_in<T>(precision, gi[0].data<T>(), dlogits, wc.data<T>(), N, V, C, false,
                                 false, !first_gradient(gi[0]));
          if (gi[1].defined())  // dW (V, C) (+)= dlogitsᵀ @ x: dlogits stored (N, V) is Aᵀ, the
                                // a_trans layout
            detail::matmul_in<T>(precision, gi[1].data<T>(), dlogits, xc.data<T>(), V, N, C, true,
                                 false, !first_gradient(gi[1]));
        });
      },
      GradBuffers::first_write);
}

// ops.h's order.
void detail::register_loss_ops(OpRegistry& r) {
  for (auto* section : {register_cross_entropy, register_nll_loss, register_linear_cross_entropy})
    section(r);
}

}  // namespace attograd
