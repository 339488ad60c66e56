// attograd's ops: the table of contents.
//
// Each op is declared once here with its shapes, its errors and what it computes. The forward
// and the VJP live side by side in one section of one ops_*.cc file, and that section registers
// the op's entry in the op registry (op_registry.h): its forward and VJP formulas, written once,
// and its finite-difference cases. docs/derivatives.md's table (op -> formula -> file -> test) is
// generated from the entries (`attograd gradcheck --markdown docs/derivatives.md`), and
// op_registry_test fails if an op declared here has no entry. Every op works on f32 and f64
// through the same SIMD kernels.
//
// Errors are std::invalid_argument naming both shapes.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <span>
#include <vector>

#include "autograd/random.h"
#include "autograd/tensor.h"

namespace attograd {

// ===== elementwise, with NumPy broadcasting (ops_elementwise.cc) =====
/// y = a + b.
Tensor add(const Tensor& a, const Tensor& b);
/// y = a - b.
Tensor sub(const Tensor& a, const Tensor& b);
/// y = a * b.
Tensor mul(const Tensor& a, const Tensor& b);
/// y = a / b.
Tensor div(const Tensor& a, const Tensor& b);
/// y = x + s (scalar s).
Tensor add_scalar(const Tensor& x, double s);
/// y = x * s (scalar s).
Tensor mul_scalar(const Tensor& x, double s);
/// y = -x.
Tensor neg(const Tensor& x);
/// y = exp(x).
Tensor exp(const Tensor& x);
/// y = log(x), x > 0.
Tensor log(const Tensor& x);
/// y = tanh(x).
Tensor tanh(const Tensor& x);
/// y = sqrt(x).
Tensor sqrt(const Tensor& x);
/// y = max(x, 0).
Tensor relu(const Tensor& x);
/// torch.sigmoid: y = 1 / (1 + exp(−x)), exactly 0 and 1 where it saturates; dx = dy y (1 − y).
Tensor sigmoid(const Tensor& x);
/// torch.abs: y = |x|; dx = sign(x) dy, 0 at x = 0 (and at NaN), as in PyTorch.
Tensor abs(const Tensor& x);
/// y = sin(x) (x in radians); dx = dy cos(x). Highway's Sin (3 ulp) for |x| <= 39000, std::sin
/// beyond.
Tensor sin(const Tensor& x);
/// y = cos(x); dx = −dy sin(x). As sin.
Tensor cos(const Tensor& x);
/// y = x^p (scalar exponent p).
Tensor pow(const Tensor& x, double p);
/// y = 0.5 x (1 + tanh(sqrt(2/pi)(x + 0.044715 x^3))), GPT-2's GELU (Hendrycks & Gimpel 2016).
Tensor gelu(const Tensor& x);
/// torch.clamp(x, min, max): x < min becomes min, then above max becomes max, so min > max gives
/// max everywhere (as torch); NaN stays NaN. Either bound may be std::nullopt (no bound): clamp(x,
/// 0.0) is torch.clamp(x, min=0), clamp(x, std::nullopt, 1.0) is torch.clamp(x, max=1). dx = dy
/// where min <= x <= max (the bounds included, as torch's), 0 outside. Throws
/// std::invalid_argument when both bounds are missing or one is NaN.
Tensor clamp(const Tensor& x, std::optional<double> min, std::optional<double> max = std::nullopt);
/// torch.where(cond, a, b): y = a where cond, b elsewhere, the three broadcast together as the
/// binary ops -> y of the broadcast shape in a's dtype. attograd has no bool dtype: cond is a mask
/// of any dtype (i64, f32, f64) holding only 0 and 1, what torch's bool tensor holds. a and b are
/// floating, of one dtype. da = sum_to(dy ⊙ cond), db = sum_to(dy ⊙ (1 − cond)); cond gets no
/// gradient. Throws std::invalid_argument for shapes that do not broadcast, a and b of different
/// dtypes, or a value of cond other than 0 and 1 (named, with its position).
Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b);
/// x.to(dtype): f32 <-> f64 (to nearest; f64 beyond f32's range becomes ±inf, as in torch), i64
/// -> f32 or f64, and f32 or f64 -> i64 (toward zero, as torch's .to(torch.int64)). The gradient
/// is cast back to x's dtype (dx = cast(dy, x.dtype)); an i64 output has no gradient. Returns x
/// itself when it already has that dtype (as torch). Throws std::out_of_range for a value that
/// i64 cannot hold (NaN, ±inf, beyond ±2^63), naming it and its position.
Tensor cast(const Tensor& x, DType dtype);

// Derived ops: composed from the primitives above, so they need no VJP of their own.
/// y = x - s.
Tensor sub_scalar(const Tensor& x, double s);
/// y = x / s.
Tensor div_scalar(const Tensor& x, double s);
/// y = s - x.
Tensor rsub_scalar(double s, const Tensor& x);
/// y = s / x.
Tensor rdiv_scalar(double s, const Tensor& x);
/// x.masked_fill(mask, value): value where mask is 1, x where it is 0; mask is where's cond (0
/// and 1, any dtype) and broadcasts with x as in torch. Derived: where(mask, value, x), so dx =
/// dy where mask is 0. Throws as where.
Tensor masked_fill(const Tensor& x, const Tensor& mask, double value);
/// torch.gt(a, b), i.e. a > b; lt, ge, le, eq and ne likewise: 1 where the comparison holds, 0
/// elsewhere, a and b broadcast together as the binary ops. The mask is in a's dtype (attograd
/// has no bool dtype): where's cond, masked_fill's mask, or a factor. IEEE comparisons: a NaN on
/// either side makes each false but ne. No gradient (the mask is piecewise constant). Throws
/// std::invalid_argument for shapes that do not broadcast, or dtypes that differ or are i64.
Tensor gt(const Tensor& a, const Tensor& b);
Tensor lt(const Tensor& a, const Tensor& b);
Tensor ge(const Tensor& a, const Tensor& b);
Tensor le(const Tensor& a, const Tensor& b);
Tensor eq(const Tensor& a, const Tensor& b);
Tensor ne(const Tensor& a, const Tensor& b);
/// The same against a number: gt(x, s) is x > s (torch's x > s).
Tensor gt(const Tensor& x, double s);
Tensor lt(const Tensor& x, double s);
Tensor ge(const Tensor& x, double s);
Tensor le(const Tensor& x, double s);
Tensor eq(const Tensor& x, double s);
Tensor ne(const Tensor& x, double s);

Tensor operator+(const Tensor& a, const Tensor& b);
Tensor operator-(const Tensor& a, const Tensor& b);
Tensor operator*(const Tensor& a, const Tensor& b);
Tensor operator/(const Tensor& a, const Tensor& b);
Tensor operator-(const Tensor& x);
Tensor operator+(const Tensor& x, double s);
Tensor operator-(const Tensor& x, double s);
Tensor operator*(const Tensor& x, double s);
Tensor operator/(const Tensor& x, double s);
Tensor operator+(double s, const Tensor& x);
Tensor operator-(double s, const Tensor& x);
Tensor operator*(double s, const Tensor& x);
Tensor operator/(double s, const Tensor& x);

// ===== reductions (ops_reduce.cc) =====
/// Sum over `axes` (negative counts from the end; empty = all axes); keepdim keeps them as 1.
Tensor sum(const Tensor& x, const std::vector<int64_t>& axes = {}, bool keepdim = false);
/// Mean over `axes` (derived: sum / count).
Tensor mean(const Tensor& x, const std::vector<int64_t>& axes = {}, bool keepdim = false);
/// torch.max(x, dim).values: the max over one axis. Ties: the whole gradient goes to the first
/// maximal element, the one at the index torch.max(x, dim) returns beside the values (and
/// argmax(x, dim) here). For torch.amax's even split, amax.
Tensor max(const Tensor& x, int64_t axis, bool keepdim = false);
/// torch.argmax(x, dim, keepdim): the i64 index of the first maximum along dim (a NaN counts as
/// the maximum, as in torch), dim dropped (kept as 1 with keepdim). No gradient: pick the values
/// with take_along_dim(x, argmax(x, d, true), d), which has one. For the whole tensor's argmax,
/// argmax(reshape(x, {-1}), 0). Throws std::invalid_argument for a dim out of range or empty.
Tensor argmax(const Tensor& x, int64_t dim, bool keepdim = false);
/// torch.max(x): the largest element of the whole tensor, a () tensor. Ties split the gradient
/// evenly, as torch's (amax(reshape(x, {-1}), 0), named max). Throws std::invalid_argument for
/// a tensor of no element, as torch.
Tensor max(const Tensor& x);
/// torch.amax(x, dim, keepdim): the max over one axis. Ties split the gradient evenly (k equal
/// maxima get dy / k each), as torch.amax. A NaN is the max, and a row's NaNs split its gradient
/// (as torch.max(x) does; torch.amax gives every element of such a row NaN).
Tensor amax(const Tensor& x, int64_t axis, bool keepdim = false);
/// torch.amin(x, dim, keepdim): the min over one axis (derived: −amax(−x)); ties split evenly.
Tensor amin(const Tensor& x, int64_t axis, bool keepdim = false);
/// torch.min(x, dim).values: the min over one axis (derived: −max(−x)); ties: the first minimum
/// gets the whole gradient, as max(x, dim).
Tensor min(const Tensor& x, int64_t axis, bool keepdim = false);
/// torch.min(x): the smallest element of the whole tensor, a () tensor; ties split evenly. Throws
/// std::invalid_argument for a tensor of no element, as torch.
Tensor min(const Tensor& x);
/// torch.argmin(x, dim, keepdim): the i64 index of the first minimum along dim (argmax of −x, so
/// a NaN counts as the minimum, as in torch). No gradient. Throws as argmax.
Tensor argmin(const Tensor& x, int64_t dim, bool keepdim = false);
/// torch.var(x, dim, correction, keepdim): Σ (x − mean)² / (n − correction) over `axes` (empty =
/// all), n the elements reduced; correction 1 (torch's default) is Bessel's unbiased estimate, 0
/// the population variance. Derived from mean, sub, mul and sum. Throws std::invalid_argument
/// when n − correction <= 0 (torch would return inf or nan) or correction < 0.
Tensor var(const Tensor& x, const std::vector<int64_t>& axes = {}, int64_t correction = 1,
           bool keepdim = false);
/// torch.std: sqrt(var(x, axes, correction, keepdim)). Its gradient is 0 where the variance is 0
/// (all values equal), as torch's std_backward gives (sqrt alone would give inf * 0 = NaN). Call it
/// attograd::std, as libtorch's torch::std:
/// after `using namespace attograd`, a bare std(x) is ambiguous with the namespace std.
Tensor std(const Tensor& x, const std::vector<int64_t>& axes = {}, int64_t correction = 1,
           bool keepdim = false);

// ===== shape and layout; views share storage (ops_shape.cc) =====
/// Same data in a new shape with the same numel; one dimension may be -1 (inferred). A view
/// whenever x's strides allow it (torch.Tensor.view's rule), else a copy.
Tensor reshape(const Tensor& x, const Shape& shape);
/// Swaps dimensions d0 and d1 (a view).
Tensor transpose(const Tensor& x, int64_t d0, int64_t d1);
/// y.shape[i] = x.shape[perm[i]] (a view).
Tensor permute(const Tensor& x, const Shape& perm);
/// x[..., start:end:step, ...] along dim (a view; 0 <= start <= end <= size, step >= 1):
/// ceil((end − start) / step) elements, as torch's x[:, start:end:step]. Throws
/// std::invalid_argument for a range outside the dimension or a step below 1.
Tensor slice(const Tensor& x, int64_t dim, int64_t start, int64_t end, int64_t step = 1);
/// x.select(dim, index), i.e. x[..., index, ...]: one position along dim, dim removed (a view);
/// a negative index counts from the end. dx[..., index, ...] = dy. Throws std::out_of_range for
/// an index outside [−size, size).
Tensor select(const Tensor& x, int64_t dim, int64_t index);
/// torch.squeeze(x, dim): x without dimension dim when its size is 1, else x unchanged (a view).
/// Throws std::invalid_argument for a dim out of range.
Tensor squeeze(const Tensor& x, int64_t dim);
/// torch.squeeze(x): x without every dimension of size 1 (a view).
Tensor squeeze(const Tensor& x);
/// torch.unsqueeze(x, dim): a dimension of size 1 inserted before dim, dim in [−(n+1), n] for an
/// n-dimensional x (−1 appends one). A view. Throws std::invalid_argument for a dim out of range.
Tensor unsqueeze(const Tensor& x, int64_t dim);
/// Joins tensors of equal shape but along dim.
Tensor concat(std::span<const Tensor> xs, int64_t dim);
/// concat of a braced list, concat({a, b}, -1), without building a vector (RoPE calls it per step).
inline Tensor concat(std::initializer_list<Tensor> xs, int64_t dim) {
  return concat(std::span<const Tensor>(xs.begin(), xs.size()), dim);
}
/// torch.stack: joins tensors of one shape and dtype along a new dimension dim (in [−n−1, n] for
/// n-d tensors) -> the shape with len(xs) inserted at dim. Derived: concat of reshapes.
Tensor stack(std::span<const Tensor> xs, int64_t dim);
/// stack of a braced list, stack({a, b}, 0).
inline Tensor stack(std::initializer_list<Tensor> xs, int64_t dim) {
  return stack(std::span<const Tensor>(xs.begin(), xs.size()), dim);
}
/// Splits x along dim into pieces of the given sizes (derived: one slice per piece).
std::vector<Tensor> split(const Tensor& x, const std::vector<int64_t>& sizes, int64_t dim);
/// x itself if already contiguous, else a contiguous copy.
Tensor contiguous(const Tensor& x);

// ===== matrix multiply (ops_matmul.cc) =====
/// (..., M, K) @ (..., K, N) -> (..., M, N), batch dims broadcast; either operand may be a
/// transposed view (no copy). 2-D and batched; 1-D operands are rejected.
Tensor matmul(const Tensor& a, const Tensor& b);
/// nn.Linear: x (..., in), weight (out, in), bias (out,) or undefined -> y = x Wᵀ + b (..., out).
Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias = Tensor());
/// gelu(linear(x, weight, bias)) as one op: GPT-2's c_fc and its GELU (tanh form). The same
/// values as the two ops (the same product, then gelu's formula, on the same kernels), computed
/// as the product's tiles are stored (kernels::matmul_gelu), and the VJP reads gelu' saved by
/// the forward instead of recomputing it from x Wᵀ + b. Shapes and errors as linear.
Tensor linear_gelu(const Tensor& x, const Tensor& weight, const Tensor& bias = Tensor());

// ===== gathers and layers (ops_nn.cc) =====
/// Gathers rows: weight (V, C), ids i64 (...) -> (..., C). Throws std::out_of_range naming
/// the first id outside [0, V).
Tensor embedding(const Tensor& weight, const Tensor& ids);
/// torch.gather: y[..., i, ...] = x[..., index[..., i, ...], ...] along dim; index i64 with x's
/// number of dimensions and index.size(d) <= x.size(d) for d != dim -> y of index's shape.
/// Throws std::out_of_range naming the first index outside [0, x.size(dim)).
Tensor gather(const Tensor& x, int64_t dim, const Tensor& index);
/// torch.take_along_dim: gather after broadcasting x and index against each other in every
/// dimension but dim (a size-1 dimension stretches); e.g. x (B, V) and index (B, 1) pick one
/// entry per row.
Tensor take_along_dim(const Tensor& x, const Tensor& index, int64_t dim);
/// Layer norm over the last axis of x (..., C) with gamma, beta (C); biased variance.
Tensor layer_norm(const Tensor& x, const Tensor& gamma, const Tensor& beta, double eps = 1e-5);
/// Inverted dropout: zeroes each element with probability p and scales the rest by 1/(1-p);
/// identity when !training or p == 0. Derived: mul by a mask drawn from `gen`.
Tensor dropout(const Tensor& x, double p, bool training, Generator& gen);

// ===== softmax and attention (ops_attention.cc) =====
/// Scores (..., Tq, Tk) with -inf where key j > query t + (Tk - Tq) (no looking ahead).
Tensor causal_mask(const Tensor& scores);
/// Softmax over the last axis, max-subtracted.
Tensor softmax(const Tensor& x);
/// torch.softmax(x, dim): softmax over any axis (the last-axis kernel on x with dim moved last).
Tensor softmax(const Tensor& x, int64_t dim);
/// Fused causal_mask + softmax over (..., Tq, Tk): masked entries are exactly 0 and get
/// exactly 0 gradient.
Tensor causal_softmax(const Tensor& scores);
/// Causal scaled dot-product attention (Vaswani et al. 2017, eq. 1, with GPT's mask) as one op:
/// q (B, NH, Tq, HS), k and v (B, NH, Tk, HS), 1 <= Tq <= Tk -> y (B, NH, Tq, HS), where query t
/// attends to keys j <= t + Tk - Tq. Equals matmul(causal_softmax(q kᵀ / sqrt(HS)), v), but never
/// stores the (Tq, Tk) weights (the backward recomputes them) nor computes the masked half; q, k,
/// v may be views (the head split of c_attn's output), and y is a view whose transpose(1, 2) is
/// contiguous, so merging the heads copies nothing.
Tensor causal_attention(const Tensor& q, const Tensor& k, const Tensor& v);
/// causal_attention on the n_head heads of a packed qkv (B, T, 3C) (c_attn's output: q, k, v
/// side by side, each head HS = C / n_head channels) -> y (B, T, C), the heads side by side.
/// The gradient lands in dqkv directly, with no copies through split and transpose views.
Tensor causal_attention_qkv(const Tensor& qkv, int64_t n_head);
/// log(softmax(x)) over the last axis.
Tensor log_softmax(const Tensor& x);
/// torch.log_softmax(x, dim): log_softmax over any axis.
Tensor log_softmax(const Tensor& x, int64_t dim);

// ===== losses (ops_loss.cc) =====
/// Mean cross-entropy of logits (..., V) against i64 targets (...) -> scalar; the sum over
/// rows is reduced in double. A target equal to ignore_index (PyTorch's convention; nanoGPT's
/// -1 by default) adds no loss and gets exactly 0 gradient, and N counts the other rows; with
/// none left the loss is 0 (torch: NaN) and every gradient 0. label_smoothing ε (PyTorch's
/// label_smoothing; Szegedy et al. 2016, sec. 7) aims at (1 − ε) onehot(t) + ε/V instead of
/// onehot(t): each row's loss is (1 − ε)(−log p_t) + ε mean_c(−log p_c). Throws std::out_of_range
/// for any other target outside [0, V), std::invalid_argument for ε outside [0, 1].
Tensor cross_entropy(const Tensor& logits, const Tensor& targets, int64_t ignore_index = -1,
                     double label_smoothing = 0.0);
/// Mean negative log-likelihood of log-probabilities (..., V) (e.g. log_softmax's output) at
/// i64 targets (...) -> scalar: -mean_i x_i[t_i], with cross_entropy's ignore_index and N.
/// A -inf entry that no target picks leaves the loss and its gradient finite. Classes are the
/// last axis (torch.nn.functional.nll_loss wants them in axis 1; for (N, V) the two agree).
/// label_smoothing ε as cross_entropy's, so that cross_entropy(x, t, i, ε) ==
/// nll_loss(log_softmax(x), t, i, ε) (torch's nll_loss has no smoothing): the row's loss is
/// −(1 − ε) x_t − ε mean_c x_c, which a -inf entry makes +inf when ε > 0. Throws as
/// cross_entropy.
Tensor nll_loss(const Tensor& log_probs, const Tensor& targets, int64_t ignore_index = -1,
                double label_smoothing = 0.0);
/// The language-model head and its loss in one op: mean cross_entropy(x Wᵀ, targets,
/// ignore_index, label_smoothing) for x (..., C), weight (V, C), targets i64 (...) -> scalar.
/// The (N, V) logits, the largest tensors of a GPT-2 step, exist once: the backward overwrites
/// them with their gradient (a second backward through a retained graph recomputes them).
/// Errors as linear and cross_entropy.
Tensor linear_cross_entropy(const Tensor& x, const Tensor& weight, const Tensor& targets,
                            int64_t ignore_index = -1, double label_smoothing = 0.0);
}  // namespace attograd
