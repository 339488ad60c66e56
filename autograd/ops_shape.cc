// Shape and layout ops. transpose, permute, slice and select return views that share storage;
// their VJPs write the gradient back through the same view of the input's gradient buffer.
#include <numeric>
#include <optional>
#include <stdexcept>

#include "autograd/gradcheck_inputs.h"
#include "autograd/op_registry.h"
#include "autograd/ops.h"
#include "autograd/ops_internal.h"
#include "autograd/size_math.h"

namespace attograd {

using gradcheck_inputs::Inputs;
using gradcheck_inputs::params_case;
using gradcheck_inputs::Shapes;
using gradcheck_inputs::Sizes;
using gradcheck_inputs::unary_case;

namespace {

// The strides that show (old_shape, old_strides) as new_shape without copying, if any (the rule of
// torch.Tensor.view): walking from the last dimension, old dimensions that are contiguous with
// each other form a chunk, and a chunk can be re-cut into any run of new dimensions with the same
// product. Splitting c_attn's (B, T, C) slice into heads (B, T, NH, HS) is such a view, although
// the slice itself is not contiguous.
std::optional<Shape> view_strides(const Shape& old_shape, const Shape& old_strides,
                                  const Shape& new_shape) {
  if (shape_numel(old_shape) == 0 || old_shape.empty()) return contiguous_strides(new_shape);
  Shape new_strides(new_shape.size());
  int64_t view_d = static_cast<int64_t>(new_shape.size()) - 1;
  int64_t chunk_stride = old_strides.back();  // the stride of the current chunk's last dimension
  int64_t chunk_numel = 1, view_numel = 1;
  for (int64_t d = static_cast<int64_t>(old_shape.size()) - 1; d >= 0; --d) {
    chunk_numel *= old_shape[d];
    const bool chunk_ends =
        d == 0 || (old_shape[d - 1] != 1 && old_strides[d - 1] != chunk_numel * chunk_stride);
    if (!chunk_ends) continue;
    while (view_d >= 0 && (view_numel < chunk_numel || new_shape[view_d] == 1)) {
      new_strides[view_d] = view_numel * chunk_stride;
      view_numel *= new_shape[view_d];
      --view_d;
    }
    if (view_numel != chunk_numel) return std::nullopt;
    if (d > 0) {
      chunk_stride = old_strides[d - 1];
      chunk_numel = 1;
      view_numel = 1;
    }
  }
  if (view_d != -1) return std::nullopt;
  return new_strides;
}

}  // namespace

// ----- reshape -----
// The gradcheck cases of the shape ops follow most of them with another op, so that the output
// is not a plain view of the input.
static void register_reshape(OpRegistry& r) {
  r.add({.name = "reshape",
         .forward = "view (copy if not contiguous)",
         .vjp = "`dx = reshape(dy, x.shape)`",
         .cases = {unary_case([](const Tensor& x) {
                     return reshape(x, {-1, x.size(-1) * x.size(-2)});
                   }),
                   unary_case([](const Tensor& x) { return reshape(transpose(x, 0, 2), {-1}); })}});
}

Tensor reshape(const Tensor& x, const Shape& shape_in) {
  if (!x.defined()) throw std::invalid_argument("reshape: undefined tensor");
  Shape shape = shape_in;
  int64_t known = 1, infer = -1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == -1) {
      if (infer >= 0)
        throw std::invalid_argument("reshape: only one dimension can be -1, got " +
                                    shape_str(shape_in));
      infer = static_cast<int64_t>(i);
    } else if (shape[i] < 0) {
      throw std::invalid_argument("reshape: negative dimension in " + shape_str(shape_in));
    } else {
      known = checked_mul(known, shape[i], [&] { return "reshape to " + shape_str(shape_in); });
    }
  }
  if (infer >= 0) {
    if (known == 0 || x.numel() % known != 0)
      throw std::invalid_argument("reshape: cannot infer -1 in " + shape_str(shape_in) + " for " +
                                  std::to_string(x.numel()) + " elements of " +
                                  shape_str(x.shape()));
    shape[infer] = x.numel() / known;
  }
  if (shape_numel(shape) != x.numel())
    throw std::invalid_argument("reshape: cannot view " + shape_str(x.shape()) + " (" +
                                std::to_string(x.numel()) + " elements) as " + shape_str(shape_in));
  const std::optional<Shape> strides = view_strides(x.shape(), x.strides(), shape);
  Tensor y = strides
                 ? detail::view_of(x, shape, *strides)
                 : detail::view_of(detail::contiguous_data(x), shape, contiguous_strides(shape));
  return record(y, "reshape", {x}, [](const Tensor& g, std::span<Tensor> gi) {
    detail::accumulate(gi[0], detail::view_of(g, gi[0].shape(), contiguous_strides(gi[0].shape())));
  });
}

// ----- permute -----
static void register_permute(OpRegistry& r) {
  r.add({.name = "permute",
         .forward = "`y.shape[i] = x.shape[perm[i]]`, a view",
         .vjp = "`dx = permute(dy, perm⁻¹)`",
         .tests = "tensor_test: views",
         .cases = {unary_case([](const Tensor& x) {
           return exp(permute(x, {2, 0, 1}));
         })}});
}

Tensor permute(const Tensor& x, const Shape& perm_in) {
  if (!x.defined()) throw std::invalid_argument("permute: undefined tensor");
  const int64_t n = x.dim();
  if (static_cast<int64_t>(perm_in.size()) != n)
    throw std::invalid_argument("permute: " + std::to_string(perm_in.size()) + " axes given for " +
                                shape_str(x.shape()));
  Shape perm(n), shape(n), strides(n);
  for (int64_t i = 0; i < n; ++i) {
    perm[i] = detail::wrap_dim(perm_in[i], n, "permute");
    for (int64_t j = 0; j < i; ++j)
      if (perm[j] == perm[i])
        throw std::invalid_argument("permute: axis " + std::to_string(perm[i]) + " repeated");
    shape[i] = x.shape()[perm[i]];
    strides[i] = x.strides()[perm[i]];
  }
  Tensor y = detail::view_of(x, shape, strides);
  return record(y, "permute", {x}, [perm](const Tensor& g, std::span<Tensor> gi) {
    // The same permutation applied to dx's buffer lines it up with dy.
    const Tensor& dx = gi[0];
    Shape shape(perm.size()), strides(perm.size());
    for (size_t i = 0; i < perm.size(); ++i) {
      shape[i] = dx.shape()[perm[i]];
      strides[i] = dx.strides()[perm[i]];
    }
    detail::accumulate(detail::view_of(dx, shape, strides), g);
  });
}

// ----- transpose -----
static void register_transpose(OpRegistry& r) {
  r.add({.name = "transpose",
         .forward = "swaps two dimensions, a view",
         .vjp = "derived: a `permute`",
         .tests = "tensor_test: views",
         .cases = {unary_case(
             [](const Tensor& x) { return mul(transpose(x, 1, 2), transpose(x, 1, 2)); })}});
}

Tensor transpose(const Tensor& x, int64_t d0, int64_t d1) {
  if (!x.defined()) throw std::invalid_argument("transpose: undefined tensor");
  Shape perm(x.dim());
  std::iota(perm.begin(), perm.end(), 0);
  std::swap(perm[detail::wrap_dim(d0, x.dim(), "transpose")],
            perm[detail::wrap_dim(d1, x.dim(), "transpose")]);
  return permute(x, perm);
}

namespace {
// x[..., start:end:step, ...] along dim: ceil((end - start) / step) elements, `step` apart.
Tensor slice_view(const Tensor& x, int64_t dim, int64_t start, int64_t end, int64_t step = 1) {
  Shape shape = x.shape(), strides = x.strides();
  shape[dim] = (end - start + step - 1) / step;
  strides[dim] *= step;
  return detail::view_of(x, shape, strides, start * x.strides()[dim]);
}

// x[..., index, ...]: dim dropped.
Tensor select_view(const Tensor& x, int64_t dim, int64_t index) {
  Shape shape = x.shape(), strides = x.strides();
  shape.erase(shape.begin() + dim);
  strides.erase(strides.begin() + dim);
  return detail::view_of(x, shape, strides, index * x.strides()[dim]);
}
}  // namespace

// ----- slice -----
static void register_slice(OpRegistry& r) {
  r.add({.name = "slice",
         .forward = "`x[start:end:step]` along dim, a view",
         .vjp = "`dx[start:end:step] = dy`",
         .tests = "ops_test: shape ops; vs torch's steps",
         .cases = {unary_case([](const Tensor& x) { return tanh(slice(x, 1, 1, x.size(1))); }),
                   unary_case([](const Tensor& x) { return slice(x, -1, 0, 2); }),
                   unary_case([](const Tensor& x) {
                     return exp(slice(x, -1, 1, x.size(-1), 2));  // odd channels
                   }),
                   unary_case([](const Tensor& x) {  // every third of a transposed view
                     return tanh(slice(transpose(x, 0, 2), 0, 0, x.size(2), 3));
                   }),
                   unary_case([](const Tensor& x) {  // one strided view used twice
                     const Tensor even_t = slice(x, 1, 0, x.size(1), 2);
                     return mul(even_t, even_t);
                   })}});
}

Tensor slice(const Tensor& x, int64_t dim_in, int64_t start, int64_t end, int64_t step) {
  if (!x.defined()) throw std::invalid_argument("slice: undefined tensor");
  const int64_t dim = detail::wrap_dim(dim_in, x.dim(), "slice");
  if (start < 0 || start > end || end > x.shape()[dim])
    throw std::invalid_argument("slice: range [" + std::to_string(start) + ", " +
                                std::to_string(end) + ") is not within dimension " +
                                std::to_string(dim) + " of " + shape_str(x.shape()) +
                                " (need 0 <= start <= end <= size)");
  if (step < 1)
    throw std::invalid_argument("slice: step " + std::to_string(step) +
                                " must be at least 1 (as torch's; for the reverse order, "
                                "index the positions with gather)");
  // y = x[start:end:step] (a view);  dx[start:end:step] += dy
  return record(slice_view(x, dim, start, end, step), "slice", {x},
                [dim, start, end, step](const Tensor& g, std::span<Tensor> gi) {
                  detail::accumulate(slice_view(gi[0], dim, start, end, step), g);
                });
}

// ----- select -----
static void register_select(OpRegistry& r) {
  r.add({.name = "select",
         .forward = "`x[…, index, …]` along dim, dim removed, a view",
         .vjp = "`dx[…, index, …] = dy`",
         .tests = "ops_test: vs torch.select",
         .cases = {unary_case([](const Tensor& x) { return exp(select(x, 1, -1)); }),
                   unary_case([](const Tensor& x) {
                     return mul(select(x, 0, 0), select(x, 0, x.size(0) - 1));
                   })}});
}

Tensor select(const Tensor& x, int64_t dim_in, int64_t index_in) {
  if (!x.defined()) throw std::invalid_argument("select: undefined tensor");
  if (x.dim() == 0)
    throw std::invalid_argument("select: a 0-d tensor has no dimension to index; use item()");
  const int64_t dim = detail::wrap_dim(dim_in, x.dim(), "select");
  const int64_t size = x.shape()[dim];
  if (index_in < -size || index_in >= size)
    throw std::out_of_range("select: index " + std::to_string(index_in) +
                            " is out of range for dimension " + std::to_string(dim) + " of " +
                            shape_str(x.shape()) + " (size " + std::to_string(size) + "; valid: -" +
                            std::to_string(size) + " to " + std::to_string(size - 1) + ")");
  const int64_t index = index_in < 0 ? index_in + size : index_in;
  // y = x[..., index, ...] (a view);  dx[..., index, ...] += dy
  return record(select_view(x, dim, index), "select", {x},
                [dim, index](const Tensor& g, std::span<Tensor> gi) {
                  detail::accumulate(select_view(gi[0], dim, index), g);
                });
}

// ----- concat -----
static void register_concat(OpRegistry& r) {
  r.add({.name = "concat",
         .forward = "`[x_0, x_1, …]` along dim, a copy",
         .vjp = "`dx_i` = the matching slice of `dy`",
         .cases = {params_case(
             "(B, T, C) with (B, 2, C) along T",
             [](const Sizes& s) {
               return Shapes{{s.B, s.T, s.C}, {s.B, 2, s.C}};
             },
             [](const Inputs& in) {
               return tanh(concat({in[0], in[1], in[0]}, 1));
             })}});
}

Tensor concat(std::span<const Tensor> xs, int64_t dim_in) {
  if (xs.empty()) throw std::invalid_argument("concat: no tensors given");
  const int64_t dim = detail::wrap_dim(dim_in, xs[0].dim(), "concat");
  Shape shape = xs[0].shape();
  shape[dim] = 0;
  for (const Tensor& x : xs) {
    detail::check_floating_pair("concat", xs[0], x);
    Shape a = x.shape(), b = xs[0].shape();
    if (a.size() == b.size()) a[dim] = b[dim] = 0;
    if (a != b)
      throw std::invalid_argument("concat: shapes " + shape_str(xs[0].shape()) + " and " +
                                  shape_str(x.shape()) + " differ outside dimension " +
                                  std::to_string(dim));
    shape[dim] = checked_add(shape[dim], x.shape()[dim], "concat: the joined dimension");
  }
  Tensor y = Tensor::empty(shape, xs[0].dtype());
  Shape starts;  // inline storage: no heap allocation for a few inputs
  int64_t start = 0;
  for (const Tensor& x : xs) {
    starts.push_back(start);
    detail::copy_into(slice_view(y, dim, start, start + x.shape()[dim]), x);
    start += x.shape()[dim];
  }
  return record(y, "concat", TensorList(xs.begin(), xs.end()),
                [dim, starts](const Tensor& g, std::span<Tensor> gi) {
                  for (size_t i = 0; i < gi.size(); ++i)
                    if (gi[i].defined())
                      detail::accumulate(
                          gi[i], slice_view(g, dim, starts[i], starts[i] + gi[i].shape()[dim]));
                });
}

// ----- stack -----
static void register_stack(OpRegistry& r) {
  r.add({.name = "stack",
         .forward = "`[x_0, x_1, …]` along a new dim",
         .vjp = "derived: `concat` of `reshape`s",
         .tests = "ops_test: vs torch.stack",
         .cases = {params_case(
                       "three (B, T, C) along a new dim 1, one of them twice",
                       [](const Sizes& s) {
                         return Shapes{{s.B, s.T, s.C}, {s.B, s.T, s.C}};
                       },
                       [](const Inputs& in) {
                         return tanh(stack({in[0], in[1], in[0]}, 1));
                       }),
                   params_case(
                       "two (B, T, C) along a new last dim",
                       [](const Sizes& s) {
                         return Shapes{{s.B, s.T, s.C}, {s.B, s.T, s.C}};
                       },
                       [](const Inputs& in) {
                         return exp(stack({in[0], in[1]}, -1));
                       })}});
}

Tensor stack(std::span<const Tensor> xs, int64_t dim_in) {
  if (xs.empty()) throw std::invalid_argument("stack: no tensors given; give at least one");
  if (!xs[0].defined()) throw std::invalid_argument("stack: undefined tensor");
  // The new dimension may come after the last: n-d tensors take dim in [-n - 1, n].
  const int64_t n = xs[0].dim();
  if (dim_in < -n - 1 || dim_in > n)
    throw std::invalid_argument("stack: dimension " + std::to_string(dim_in) +
                                " is out of range for stacking " + std::to_string(n) +
                                "-d tensors (the new dimension goes in [" + std::to_string(-n - 1) +
                                ", " + std::to_string(n) + "])");
  const int64_t dim = dim_in < 0 ? dim_in + n + 1 : dim_in;
  for (size_t i = 1; i < xs.size(); ++i) {
    detail::check_floating_pair("stack", xs[0], xs[i]);
    if (xs[i].shape() != xs[0].shape())
      throw std::invalid_argument("stack: every tensor must have one shape, but tensor 0 is " +
                                  shape_str(xs[0].shape()) + " and tensor " + std::to_string(i) +
                                  " is " + shape_str(xs[i].shape()) +
                                  "; to join along an existing dimension, use concat");
  }
  Shape shape = xs[0].shape();
  shape.insert(shape.begin() + dim, 1);
  TensorList parts;
  for (const Tensor& x : xs) parts.push_back(reshape(x, shape));
  return concat(std::span<const Tensor>(parts.data(), parts.size()), dim);
}

// ----- split -----
static void register_split(OpRegistry& r) {
  r.add({.name = "split",
         .forward = "pieces of given sizes along dim",
         .vjp = "derived: one `slice` per piece",
         .cases = {unary_case([](const Tensor& x) {
           const auto parts = split(x, {1, x.size(-1) - 1}, -1);
           return mul(sum(parts[0], {-1}, true), parts[1]);
         })}});
}

std::vector<Tensor> split(const Tensor& x, const std::vector<int64_t>& sizes, int64_t dim_in) {
  if (!x.defined()) throw std::invalid_argument("split: undefined tensor");
  const int64_t dim = detail::wrap_dim(dim_in, x.dim(), "split");
  int64_t total = 0;
  for (int64_t s : sizes) {
    if (s < 0) throw std::invalid_argument("split: negative piece size");
    total = checked_add(total, s, "split: the piece sizes");
  }
  if (total != x.shape()[dim])
    throw std::invalid_argument("split: piece sizes add up to " + std::to_string(total) +
                                " but dimension " + std::to_string(dim) + " of " +
                                shape_str(x.shape()) + " is " + std::to_string(x.shape()[dim]));
  std::vector<Tensor> out;
  int64_t start = 0;
  for (int64_t s : sizes) {
    out.push_back(slice(x, dim, start, start + s));
    start += s;
  }
  return out;
}

// ----- contiguous -----
static void register_contiguous(OpRegistry& r) {
  r.add(
      {.name = "contiguous",
       .forward = "a row-major copy (x itself if contiguous)",
       .vjp = "`dx = dy`",
       .cases = {unary_case([](const Tensor& x) { return exp(contiguous(transpose(x, 0, 1))); })}});
}

Tensor contiguous(const Tensor& x) {
  if (!x.defined()) throw std::invalid_argument("contiguous: undefined tensor");
  if (x.is_contiguous()) return x;
  return record(detail::contiguous_data(x), "contiguous", {x},
                [](const Tensor& g, std::span<Tensor> gi) { detail::accumulate(gi[0], g); });
}

// ops.h's order.
// ----- squeeze, unsqueeze: reshapes that drop or add a dimension of size 1 -----
static void register_squeeze(OpRegistry& r) {
  r.add({.name = "squeeze",
         .forward = "dimensions of size 1 removed, a view",
         .vjp = "derived: `reshape`",
         .tests = "ops_test: vs torch.squeeze",
         .cases = {unary_case([](const Tensor& x) { return exp(squeeze(slice(x, 1, 0, 1), 1)); }),
                   unary_case([](const Tensor& x) { return tanh(squeeze(slice(x, 0, 0, 1))); })}});
}

Tensor squeeze(const Tensor& x, int64_t dim_in) {
  if (!x.defined()) throw std::invalid_argument("squeeze: undefined tensor");
  if (x.dim() == 0) {  // torch: dim 0 or -1 of a 0-d tensor names the tensor itself
    detail::wrap_dim(dim_in, 1, "squeeze");
    return x;
  }
  const int64_t dim = detail::wrap_dim(dim_in, x.dim(), "squeeze");
  if (x.shape()[dim] != 1) return x;  // torch leaves a dimension of another size as it is
  Shape shape = x.shape();
  shape.erase(shape.begin() + dim);
  return reshape(x, shape);
}

Tensor squeeze(const Tensor& x) {
  if (!x.defined()) throw std::invalid_argument("squeeze: undefined tensor");
  Shape shape;
  for (const int64_t d : x.shape())
    if (d != 1) shape.push_back(d);
  return reshape(x, shape);
}

static void register_unsqueeze(OpRegistry& r) {
  r.add({.name = "unsqueeze",
         .forward = "a dimension of size 1 inserted, a view",
         .vjp = "derived: `reshape`",
         .tests = "ops_test: vs torch.unsqueeze",
         .cases = {unary_case([](const Tensor& x) {  // (B, T, C) * (B, 1, T, C) broadcast
                     return mul(x, unsqueeze(x, 1));
                   }),
                   unary_case([](const Tensor& x) { return exp(unsqueeze(x, -1)); })}});
}

Tensor unsqueeze(const Tensor& x, int64_t dim_in) {
  if (!x.defined()) throw std::invalid_argument("unsqueeze: undefined tensor");
  // Positions of the result: n + 1 of them, so dim in [−(n + 1), n].
  const int64_t n = x.dim(), dim = dim_in < 0 ? dim_in + n + 1 : dim_in;
  if (dim < 0 || dim > n)
    throw std::invalid_argument("unsqueeze: dimension " + std::to_string(dim_in) +
                                " is out of range for a " + std::to_string(n) +
                                "-d tensor (a new dimension goes at 0 to " + std::to_string(n) +
                                ", or −1 to −" + std::to_string(n + 1) + " from the end)");
  Shape shape = x.shape();
  shape.insert(shape.begin() + dim, 1);
  return reshape(x, shape);
}

void detail::register_shape_ops(OpRegistry& r) {
  for (auto* section : {register_reshape, register_transpose, register_permute, register_slice,
                        register_select, register_squeeze, register_unsqueeze, register_concat,
                        register_stack, register_split, register_contiguous})
    section(r);
}

}  // namespace attograd
