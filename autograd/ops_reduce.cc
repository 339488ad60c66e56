// Reductions: sum (and mean, derived from it) over any axes, max and argmax over one axis.
#include <algorithm>
#include <cmath>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "autograd/engine.h"
#include "autograd/gradcheck_inputs.h"
#include "autograd/kernels/reduce.h"
#include "autograd/op_registry.h"
#include "autograd/ops.h"
#include "autograd/ops_internal.h"

namespace attograd {

using gradcheck_inputs::Inputs;
using gradcheck_inputs::param_distinct;
using gradcheck_inputs::Sizes;
using gradcheck_inputs::unary_case;

namespace {

// Sorted, de-duplicated, non-negative axes; empty input means every axis.
std::vector<int64_t> normalize_axes(const std::vector<int64_t>& axes, int64_t ndim,
                                    const char* op) {
  std::vector<int64_t> out;
  if (axes.empty()) {
    for (int64_t d = 0; d < ndim; ++d) out.push_back(d);
    return out;
  }
  for (int64_t a : axes) out.push_back(detail::wrap_dim(a, ndim, op));
  std::sort(out.begin(), out.end());
  if (std::adjacent_find(out.begin(), out.end()) != out.end())
    throw std::invalid_argument(std::string(op) + ": an axis is listed twice");
  return out;
}

// The shape after reducing `axes`, keeping them as size 1.
Shape keepdim_shape(const Shape& shape, const std::vector<int64_t>& axes) {
  Shape out = shape;
  for (int64_t a : axes) out[a] = 1;
  return out;
}

Shape drop_axes(const Shape& shape, const std::vector<int64_t>& axes) {
  Shape out;
  for (int64_t d = 0; d < static_cast<int64_t>(shape.size()); ++d)
    if (!std::binary_search(axes.begin(), axes.end(), d)) out.push_back(shape[d]);
  return out;
}

// Views `shape` as (outer, n, inner) around axis.
void split_at(const Shape& shape, int64_t axis, int64_t& outer, int64_t& n, int64_t& inner) {
  outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= shape[d];
  n = shape[axis];
  for (int64_t d = axis + 1; d < static_cast<int64_t>(shape.size()); ++d) inner *= shape[d];
}

}  // namespace

// ----- sum -----
static void register_sum(OpRegistry& r) {
  r.add({.name = "sum",
         .forward = "`Σ` over axes",
         .vjp = "`dx = broadcast(dy)` over the reduced axes",
         .kernel = "kernels/reduce",
         .tests = "ops_test: reductions",
         .cases = {unary_case([](const Tensor& x) { return sum(x); }),
                   unary_case([](const Tensor& x) { return sum(x, {-1}); }),
                   unary_case([](const Tensor& x) {
                     return sum(x, {0, 2}, true);
                   })}});
}

Tensor sum(const Tensor& x, const std::vector<int64_t>& axes_in, bool keepdim) {
  if (!x.defined()) throw std::invalid_argument("sum: undefined tensor");
  const std::vector<int64_t> axes = normalize_axes(axes_in, x.dim(), "sum");
  const Shape kept = keepdim_shape(x.shape(), axes);
  Tensor cur = detail::contiguous_data(x);
  dispatch_floating(x.dtype(), "sum", [&]<typename T>() {
    if (static_cast<int64_t>(axes.size()) == x.dim()) {  // everything: one long row
      Tensor out = Tensor::empty(kept, x.dtype());
      kernels::sum_axis<T>(out.data<T>(), cur.data<T>(), 1, cur.numel(), 1, false);
      cur = out;
      return;
    }
    Shape shape = x.shape();
    for (auto it = axes.rbegin(); it != axes.rend(); ++it) {  // innermost axis first
      int64_t outer, n, inner;
      split_at(shape, *it, outer, n, inner);
      shape[*it] = 1;
      Tensor out = Tensor::empty(shape, x.dtype());
      kernels::sum_axis<T>(out.data<T>(), cur.data<T>(), outer, n, inner, false);
      cur = out;
    }
  });
  const Shape out_shape = keepdim ? kept : drop_axes(x.shape(), axes);
  Tensor y = detail::view_of(cur, out_shape, contiguous_strides(out_shape));
  return record(y, "sum", {x}, [kept](const Tensor& g, std::span<Tensor> gi) {
    const Tensor g_kept = detail::view_of(g, kept, contiguous_strides(kept));
    detail::accumulate(gi[0], detail::expand_view(g_kept, gi[0].shape()));
  });
}

// ----- mean -----
static void register_mean(OpRegistry& r) {
  r.add({.name = "mean",
         .forward = "`Σ / n` over axes",
         .vjp = "derived: `mul_scalar(sum(x), 1/n)`",
         .cases = {unary_case([](const Tensor& x) { return mean(x, {1}); }),
                   unary_case([](const Tensor& x) { return mean(x); })}});
}

Tensor mean(const Tensor& x, const std::vector<int64_t>& axes_in, bool keepdim) {
  if (!x.defined()) throw std::invalid_argument("mean: undefined tensor");
  int64_t count = 1;
  for (int64_t a : normalize_axes(axes_in, x.dim(), "mean")) count *= x.shape()[a];
  if (count == 0)
    throw std::invalid_argument("mean: reducing " + shape_str(x.shape()) + " over an empty axis");
  return mul_scalar(sum(x, axes_in, keepdim), 1.0 / static_cast<double>(count));
}

// ----- max -----
// A (B, T, C) input with every value 0.05 from the next (f32's step is 5e-3): which element is
// a row's largest never changes within x ± eps.
static GradcheckCase max_case(std::string label, std::function<Tensor(const Tensor&)> f) {
  return {std::move(label),
          [](Generator& g, DType d, const Sizes& s) {
            return Inputs{param_distinct({s.B, s.T, s.C}, g, d, 0.05)};
          },
          [f = std::move(f)](const Inputs& in) { return f(in[0]); }};
}

static void register_max(OpRegistry& r) {
  r.add({.name = "max",
         .forward = "max over an axis",
         .vjp = "`dx[first argmax] = dy` (ties: the first, the index torch.max(x, dim) returns)",
         .kernel = "kernels/reduce",
         .tests = "ops_test: reductions",
         .cases = {max_case("(B, T, C) over C", [](const Tensor& x) { return max(x, -1); }),
                   max_case("(B, T, C) over T, keepdim",
                            [](const Tensor& x) { return max(x, 1, true); })}});
}

namespace {
// max over one axis, as max(x, axis) (ties: the whole gradient to the first maximum, the index
// torch.max(x, dim) returns) or as amax (ties: the gradient split evenly among them, as
// torch.amax and torch.max(x) do: each of k equal maxima gets dy / k). `name` is the op's, for
// errors and the graph.
Tensor max_over(const Tensor& x, int64_t axis_in, bool keepdim, const char* name, bool split_ties) {
  if (!x.defined()) throw std::invalid_argument(std::string(name) + ": undefined tensor");
  const int64_t axis = detail::wrap_dim(axis_in, x.dim(), name);
  int64_t outer, n, inner;
  split_at(x.shape(), axis, outer, n, inner);
  if (n == 0)
    throw std::invalid_argument(std::string(name) + ": axis " + std::to_string(axis_in) + " of " +
                                shape_str(x.shape()) + " is empty");
  const Tensor xc = detail::contiguous_data(x);
  const Shape kept = keepdim_shape(x.shape(), {axis});
  Tensor y = Tensor::empty(keepdim ? kept : drop_axes(x.shape(), {axis}), x.dtype());
  auto argmax = std::make_shared<std::vector<int64_t>>(static_cast<size_t>(outer * inner));
  dispatch_floating(x.dtype(), name, [&]<typename T>() {
    kernels::max_axis<T>(y.data<T>(), argmax->data(), xc.data<T>(), outer, n, inner);
  });
  if (!split_ties)
    return record(y, name, {x}, [argmax, outer, n, inner](const Tensor& g, std::span<Tensor> gi) {
      dispatch_floating(g.dtype(), "max", [&]<typename T>() {
        T* dx = gi[0].data<T>();
        const T* dy = g.data<T>();
        for (int64_t o = 0; o < outer; ++o)
          for (int64_t i = 0; i < inner; ++i)
            dx[(o * n + (*argmax)[o * inner + i]) * inner + i] += dy[o * inner + i];
      });
    });
  // The ties are found again in the VJP from x and y, saved (the argmax alone cannot tell them).
  // A NaN is the maximum (as argmax says), and a row's NaNs are its ties: torch.max(x) splits
  // among them too (torch.amax gives NaN to every element of such a row instead).
  return record(
      y, name, {x}, {{"x", xc}, {"output", y}},
      [outer, n, inner](const Tensor& g, std::span<Tensor> gi, const Tensor& xs, const Tensor& ys) {
        dispatch_floating(g.dtype(), "amax", [&]<typename T>() {
          T* dx = gi[0].data<T>();
          const T* dy = g.data<T>();
          const T* xv = xs.data<T>();
          const T* yv = ys.data<T>();
          for (int64_t o = 0; o < outer; ++o)
            for (int64_t i = 0; i < inner; ++i) {
              const T top = yv[o * inner + i];
              const bool nan = std::isnan(top);
              const auto tied = [&](T v) { return nan ? std::isnan(v) : v == top; };
              int64_t ties = 0;
              for (int64_t j = 0; j < n; ++j) ties += tied(xv[(o * n + j) * inner + i]);
              const T share = dy[o * inner + i] / static_cast<T>(ties);  // ties >= 1: y is an x
              for (int64_t j = 0; j < n; ++j)
                if (tied(xv[(o * n + j) * inner + i])) dx[(o * n + j) * inner + i] += share;
            }
        });
      });
}
}  // namespace

Tensor max(const Tensor& x, int64_t axis, bool keepdim) {
  return max_over(x, axis, keepdim, "max", /*split_ties=*/false);
}

// ----- argmax -----
namespace {

// A differentiable input whose rows (along the last axis, n values) are each a shuffle of n levels
// 4/n apart in [-2, 2), plus a little noise: no finite-difference step (5e-3 at most) can change
// which element is a row's maximum.
Tensor param_distinct_rows(const Shape& shape, Generator& g, DType d) {
  const int64_t n = shape.back();
  std::vector<double> v(static_cast<size_t>(shape_numel(shape)));
  for (size_t row = 0; row < v.size(); row += static_cast<size_t>(n)) {
    std::vector<int64_t> level(static_cast<size_t>(n));
    for (int64_t k = 0; k < n; ++k) level[k] = k;
    for (int64_t k = n - 1; k > 0; --k)  // Fisher-Yates
      std::swap(level[k], level[g.below(static_cast<uint64_t>(k + 1))]);
    for (int64_t k = 0; k < n; ++k)
      v[row + k] = -2 + 4.0 * static_cast<double>(level[k]) / n + 0.1 * g.uniform() / n;
  }
  return Tensor::from_vector(v, shape, d).set_requires_grad();
}

}  // namespace

// No VJP: the output is integers. The case checks the pick it is made for, take_along_dim at
// argmax, whose gradient goes to each row's maximum.
static void register_argmax(OpRegistry& r) {
  r.add({.name = "argmax",
         .forward = "index of the first maximum over an axis, i64",
         .vjp = "none (integer output)",
         .kernel = "kernels/reduce",
         .tests = "ops_test: vs torch.argmax",
         .cases = {{"take_along_dim(x, argmax(x, −1, keepdim), −1), x (B, T, C), distinct levels",
                    [](Generator& g, DType d, const Sizes& s) {
                      return Inputs{param_distinct_rows({s.B, s.T, s.C}, g, d)};
                    },
                    [](const Inputs& in) {
                      return take_along_dim(in[0], argmax(in[0], -1, true), -1);
                    }}}});
}

namespace {
// The checks argmax and argmin share, in the name called: a floating x, a dim in range, not empty.
// Returns the dim, made non-negative.
int64_t check_arg_extreme(const Tensor& x, int64_t dim_in, const char* op, const char* extreme) {
  if (!x.defined()) throw std::invalid_argument(std::string(op) + ": undefined tensor");
  if (x.dtype() == DType::i64) throw_not_floating(op, x.dtype());
  const int64_t dim = detail::wrap_dim(dim_in, x.dim(), op);
  if (x.shape()[dim] == 0)
    throw std::invalid_argument(std::string(op) + ": dimension " + std::to_string(dim_in) + " of " +
                                shape_str(x.shape()) + " is empty, so it has no " + extreme);
  return dim;
}
}  // namespace

Tensor argmax(const Tensor& x, int64_t dim_in, bool keepdim) {
  const int64_t dim = check_arg_extreme(x, dim_in, "argmax", "maximum");
  int64_t outer, n, inner;
  split_at(x.shape(), dim, outer, n, inner);
  const Tensor xc = detail::contiguous_data(x);
  const Shape shape = keepdim ? keepdim_shape(x.shape(), {dim}) : drop_axes(x.shape(), {dim});
  Tensor index = Tensor::empty(shape, DType::i64);
  dispatch_floating(x.dtype(), "argmax", [&]<typename T>() {
    // max_axis's argmax is the first maximum (NaN counting as the largest), as torch.argmax.
    std::vector<T> values(static_cast<size_t>(outer * inner));
    kernels::max_axis<T>(values.data(), index.data<int64_t>(), xc.data<T>(), outer, n, inner);
  });
  return index;  // not recorded: an integer output has no gradient
}

namespace {
// max(x) and min(x) of no element: torch refuses it too (a max of nothing has no value).
void require_elements(const Tensor& x, const char* op) {
  if (!x.defined()) throw std::invalid_argument(std::string(op) + ": undefined tensor");
  if (x.numel() == 0)
    throw std::invalid_argument(std::string(op) + ": the tensor " + shape_str(x.shape()) +
                                " has no element, so it has no " + op +
                                " (torch refuses it too); reduce over a non-empty dim instead");
}
}  // namespace

Tensor max(const Tensor& x) {
  require_elements(x, "max");
  return max_over(reshape(x, {-1}), 0, false, "max", /*split_ties=*/true);
}

// ----- amax, amin, min, argmin: the max's and argmax's other names and mirror images -----
// Ties: amax, amin and the whole tensor's max and min split the gradient evenly among equal
// extremes, as torch.amax, torch.amin, torch.max(x) and torch.min(x); max(x, dim) and min(x, dim)
// give it to the first, the element at the index torch.max(x, dim) returns beside the values.
static void register_amax(OpRegistry& r) {
  r.add({.name = "amax",
         .forward = "max over an axis, or of the whole tensor (max(x))",
         .vjp = "`dx[i] = dy / k` for each of the k elements equal to the max (ties split "
                "evenly, as torch.amax)",
         .tests = "ops_test: ties, against torch",
         .cases = {max_case("(B, T, C) over C", [](const Tensor& x) { return amax(x, -1); }),
                   max_case("(B, T, C), the whole tensor: max(x)",
                            [](const Tensor& x) { return max(x); })}});
}

Tensor amax(const Tensor& x, int64_t axis, bool keepdim) {
  return max_over(x, axis, keepdim, "amax", /*split_ties=*/true);
}

static void register_amin(OpRegistry& r) {
  r.add({.name = "amin",
         .forward = "min over an axis, or of the whole tensor (min(x))",
         .vjp = "derived: `−amax(−x, axis)`; ties split evenly",
         .cases = {max_case("(B, T, C) over T, keepdim",
                            [](const Tensor& x) { return amin(x, 1, true); }),
                   max_case("(B, T, C), the whole tensor: min(x)",
                            [](const Tensor& x) { return min(x); })}});
}

Tensor amin(const Tensor& x, int64_t axis, bool keepdim) {
  if (!x.defined()) throw std::invalid_argument("amin: undefined tensor");
  if (x.dtype() == DType::i64) throw_not_floating("amin", x.dtype());
  return neg(max_over(neg(x), axis, keepdim, "amin", /*split_ties=*/true));
}

static void register_min(OpRegistry& r) {
  r.add({.name = "min",
         .forward = "min over an axis (torch.min(x, dim).values)",
         .vjp = "derived: `−max(−x, axis)`; `dx[first argmin] = dy`",
         .cases = {max_case("(B, T, C) over C", [](const Tensor& x) { return min(x, -1); })}});
}

Tensor min(const Tensor& x, int64_t axis, bool keepdim) {
  if (!x.defined()) throw std::invalid_argument("min: undefined tensor");
  if (x.dtype() == DType::i64) throw_not_floating("min", x.dtype());
  return neg(max_over(neg(x), axis, keepdim, "min", /*split_ties=*/false));
}

Tensor min(const Tensor& x) {
  require_elements(x, "min");
  if (x.dtype() == DType::i64) throw_not_floating("min", x.dtype());
  return neg(max_over(neg(reshape(x, {-1})), 0, false, "min", /*split_ties=*/true));
}

// No VJP, as argmax: the case checks the pick, take_along_dim at argmin.
static void register_argmin(OpRegistry& r) {
  r.add({.name = "argmin",
         .forward = "index of the first minimum over an axis, i64",
         .vjp = "none (integer output)",
         .tests = "ops_test: argmin of x is argmax of −x",
         .cases = {
             {"take_along_dim(x, argmin(x, 1, keepdim), 1), x (B, T, C), distinct levels",
              [](Generator& g, DType d, const Sizes& s) {
                return Inputs{param_distinct({s.B, s.T, s.C}, g, d, 0.05)};
              },
              [](const Inputs& in) { return take_along_dim(in[0], argmin(in[0], 1, true), 1); }}}});
}

Tensor argmin(const Tensor& x, int64_t dim, bool keepdim) {
  check_arg_extreme(x, dim, "argmin", "minimum");
  NoGradGuard no_grad;  // an index has no gradient: −x need not be recorded
  return argmax(neg(x), dim, keepdim);
}

// ----- var, std -----
static void register_var(OpRegistry& r) {
  r.add({.name = "var",
         .forward = "`Σ (x − mean)² / (n − correction)` over axes",
         .vjp = "derived: mean, sub, mul, sum; `dx = 2 (x − mean) dy / (n − correction)`",
         .tests = "ops_test: vs torch.var",
         .cases = {unary_case([](const Tensor& x) { return var(x, {-1}); }),
                   unary_case([](const Tensor& x) {
                     return var(x, {0, 2}, 0, true);
                   })}});
}

namespace {
// var's computation, its errors in the name called (var, or std, which is built on it).
Tensor variance(const Tensor& x, const std::vector<int64_t>& axes, int64_t correction, bool keepdim,
                const char* op) {
  if (!x.defined()) throw std::invalid_argument(std::string(op) + ": undefined tensor");
  int64_t n = 1;
  for (int64_t a : normalize_axes(axes, x.dim(), op)) n *= x.shape()[a];
  if (correction < 0 || n - correction <= 0)
    throw std::invalid_argument(
        std::string(op) + ": " + std::to_string(n) + " element(s) reduced with correction " +
        std::to_string(correction) + " leave n − correction = " + std::to_string(n - correction) +
        ", and the variance divides by it; reduce over more elements or use correction 0 (the "
        "population variance)");
  const Tensor centred = sub(x, mean(x, axes, true));
  return mul_scalar(sum(mul(centred, centred), axes, keepdim),
                    1.0 / static_cast<double>(n - correction));
}
}  // namespace

Tensor var(const Tensor& x, const std::vector<int64_t>& axes, int64_t correction, bool keepdim) {
  return variance(x, axes, correction, keepdim, "var");
}

static void register_std(OpRegistry& r) {
  r.add({.name = "std",
         .forward = "`sqrt(var)`",
         .vjp = "derived: `sqrt(var(x))`, 0 where the variance is 0 (as torch's std_backward)",
         .tests = "ops_test: vs torch.std",
         .cases = {unary_case([](const Tensor& x) { return std(x, {-1}); }),
                   unary_case([](const Tensor& x) { return std(x); })}});
}

Tensor std(const Tensor& x, const std::vector<int64_t>& axes, int64_t correction, bool keepdim) {
  // sqrt's derivative is infinite at 0, and var's is 0 where all values are equal: inf * 0 made
  // the gradient NaN there. torch's std_backward gives 0 where std is 0; so does this, by giving
  // sqrt a stand-in 1 where the variance is 0 (a finite derivative, then multiplied by where's
  // 0) and taking the 0 from the other branch.
  const Tensor v = variance(x, axes, correction, keepdim, "std");
  const Tensor positive = gt(v, 0.0);
  const Tensor zero = Tensor::scalar(0.0, v.dtype());
  return where(positive, sqrt(where(positive, v, Tensor::scalar(1.0, v.dtype()))), zero);
}

void detail::register_reduce_ops(OpRegistry& r) {
  for (auto* section : {register_sum, register_mean, register_max, register_argmax, register_amax,
                        register_amin, register_min, register_argmin, register_var, register_std})
    section(r);
}

}  // namespace attograd
