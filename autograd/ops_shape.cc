// Shape and layout ops, and indexing along a dimension. transpose, permute and slice return
// views that share storage; their VJPs write the gradient back through the same view of the
// input's gradient buffer. gather and take_along_dim copy; their VJPs scatter-add.
#include <array>
#include <numeric>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "autograd/ops.h"
#include "autograd/ops_internal.h"

namespace attograd {

namespace {

// The strides that show (old_shape, old_strides) as new_shape without copying, if any (the rule of
// torch.Tensor.view): walking from the last dimension, old dimensions that are contiguous with
// each other form a chunk, and a chunk can be re-cut into any run of new dimensions with the same
// product. Splitting c_attn's (B, T, C) slice into heads (B, T, NH, HS) is such a view, although
// the slice itself is not contiguous.
std::optional<Shape> view_strides(const Shape& old_shape, const Shape& old_strides, const Shape& new_shape) {
  if (shape_numel(old_shape) == 0 || old_shape.empty()) return contiguous_strides(new_shape);
  Shape new_strides(new_shape.size());
  int64_t view_d = static_cast<int64_t>(new_shape.size()) - 1;
  int64_t chunk_stride = old_strides.back();  // the stride of the current chunk's last dimension
  int64_t chunk_numel = 1, view_numel = 1;
  for (int64_t d = static_cast<int64_t>(old_shape.size()) - 1; d >= 0; --d) {
    chunk_numel *= old_shape[d];
    const bool chunk_ends = d == 0 || (old_shape[d - 1] != 1 && old_strides[d - 1] != chunk_numel * chunk_stride);
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

// ----- reshape:  y = x viewed as `shape`;  dx = reshape(dy, x.shape) -----
Tensor reshape(const Tensor& x, const Shape& shape_in) {
  if (!x.defined()) throw std::invalid_argument("reshape: undefined tensor");
  Shape shape = shape_in;
  int64_t known = 1, infer = -1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == -1) {
      if (infer >= 0) throw std::invalid_argument("reshape: only one dimension can be -1, got " + shape_str(shape_in));
      infer = static_cast<int64_t>(i);
    } else if (shape[i] < 0) {
      throw std::invalid_argument("reshape: negative dimension in " + shape_str(shape_in));
    } else {
      known *= shape[i];
    }
  }
  if (infer >= 0) {
    if (known == 0 || x.numel() % known != 0)
      throw std::invalid_argument("reshape: cannot infer -1 in " + shape_str(shape_in) + " for " +
                                  std::to_string(x.numel()) + " elements of " + shape_str(x.shape()));
    shape[infer] = x.numel() / known;
  }
  if (shape_numel(shape) != x.numel())
    throw std::invalid_argument("reshape: cannot view " + shape_str(x.shape()) + " (" +
                                std::to_string(x.numel()) + " elements) as " + shape_str(shape_in));
  const std::optional<Shape> strides = view_strides(x.shape(), x.strides(), shape);
  Tensor y = strides ? detail::view_of(x, shape, *strides) : detail::view_of(detail::contiguous_data(x), shape, contiguous_strides(shape));
  return record(y, "reshape", {x}, [](const Tensor& g, std::span<Tensor> gi) {
    detail::accumulate(gi[0], detail::view_of(g, gi[0].shape(), contiguous_strides(gi[0].shape())));
  });
}

// ----- permute:  y.shape[i] = x.shape[perm[i]];  dx = permute(dy, inverse(perm)) -----
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
      if (perm[j] == perm[i]) throw std::invalid_argument("permute: axis " + std::to_string(perm[i]) + " repeated");
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

// ----- transpose: derived, a permute that swaps two axes -----
Tensor transpose(const Tensor& x, int64_t d0, int64_t d1) {
  if (!x.defined()) throw std::invalid_argument("transpose: undefined tensor");
  Shape perm(x.dim());
  std::iota(perm.begin(), perm.end(), 0);
  std::swap(perm[detail::wrap_dim(d0, x.dim(), "transpose")], perm[detail::wrap_dim(d1, x.dim(), "transpose")]);
  return permute(x, perm);
}

namespace {
Tensor slice_view(const Tensor& x, int64_t dim, int64_t start, int64_t end) {
  Shape shape = x.shape();
  shape[dim] = end - start;
  return detail::view_of(x, shape, x.strides(), start * x.strides()[dim]);
}
}  // namespace

// ----- slice:  y = x[start:end] along dim;  dx[start:end] = dy -----
Tensor slice(const Tensor& x, int64_t dim_in, int64_t start, int64_t end) {
  if (!x.defined()) throw std::invalid_argument("slice: undefined tensor");
  const int64_t dim = detail::wrap_dim(dim_in, x.dim(), "slice");
  if (start < 0 || start > end || end > x.shape()[dim])
    throw std::invalid_argument("slice: range [" + std::to_string(start) + ", " + std::to_string(end) +
                                ") is not within dimension " + std::to_string(dim) + " of " +
                                shape_str(x.shape()) + " (need 0 <= start <= end <= size)");
  return record(slice_view(x, dim, start, end), "slice", {x},
                [dim, start, end](const Tensor& g, std::span<Tensor> gi) {
                  detail::accumulate(slice_view(gi[0], dim, start, end), g);
                });
}

// ----- concat:  y = [x_0, x_1, ...] along dim;  dx_i = the matching slice of dy -----
Tensor concat(const std::vector<Tensor>& xs, int64_t dim_in) {
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
                                  shape_str(x.shape()) + " differ outside dimension " + std::to_string(dim));
    shape[dim] += x.shape()[dim];
  }
  Tensor y = Tensor::empty(shape, xs[0].dtype());
  std::vector<int64_t> starts;
  int64_t start = 0;
  for (const Tensor& x : xs) {
    starts.push_back(start);
    detail::copy_into(slice_view(y, dim, start, start + x.shape()[dim]), x);
    start += x.shape()[dim];
  }
  return record(y, "concat", TensorList(xs.begin(), xs.end()), [dim, starts](const Tensor& g, std::span<Tensor> gi) {
    for (size_t i = 0; i < gi.size(); ++i)
      if (gi[i].defined())
        detail::accumulate(gi[i], slice_view(g, dim, starts[i], starts[i] + gi[i].shape()[dim]));
  });
}

// ----- split: derived, one slice per piece -----
std::vector<Tensor> split(const Tensor& x, const std::vector<int64_t>& sizes, int64_t dim_in) {
  if (!x.defined()) throw std::invalid_argument("split: undefined tensor");
  const int64_t dim = detail::wrap_dim(dim_in, x.dim(), "split");
  int64_t total = 0;
  for (int64_t s : sizes) {
    if (s < 0) throw std::invalid_argument("split: negative piece size");
    total += s;
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

// ----- contiguous:  y = x in row-major order;  dx = dy -----
Tensor contiguous(const Tensor& x) {
  if (!x.defined()) throw std::invalid_argument("contiguous: undefined tensor");
  if (x.is_contiguous()) return x;
  return record(detail::contiguous_data(x), "contiguous", {x},
                [](const Tensor& g, std::span<Tensor> gi) { detail::accumulate(gi[0], g); });
}

// ----- gather / take_along_dim:  y = x[..., index, ...] along dim;  dx[..., index, ...] += dy -----
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
Tensor gather_along(const char* op, const Tensor& x, int64_t dim, const Tensor& index, const Shape& out_shape) {
  const int64_t size = x.shape()[dim];
  const std::vector<int64_t> ids = index.to_ids();
  for (size_t i = 0; i < ids.size(); ++i)
    if (ids[i] < 0 || ids[i] >= size)
      throw std::out_of_range(std::string(op) + ": index " + std::to_string(ids[i]) + " at position " +
                              std::to_string(i) + " is outside [0, " + std::to_string(size) + ") along dimension " +
                              std::to_string(dim) + " of " + shape_str(x.shape()));
  Tensor y = Tensor::empty(out_shape, x.dtype());
  const Shape index_strides = strides_over(index.shape(), index.strides(), out_shape, -1);
  // Runs out_shape's coordinates: dst[o] (op)= src[s + idx[i] * step] with (s, i, o) the offsets
  // of the source (stride 0 along dim), the index and the output.
  auto walk = [out_shape, index_strides](const Shape& src_strides, int64_t step, const int64_t* idx, auto&& visit) {
    detail::for_each_row<3>(out_shape, {src_strides, index_strides, contiguous_strides(out_shape)},
                            [&](const std::array<int64_t, 3>& off, int64_t n, const std::array<int64_t, 3>& inner) {
      for (int64_t j = 0; j < n; ++j)
        visit(off[0] + j * inner[0] + idx[off[1] + j * inner[1]] * step, off[2] + j * inner[2]);
    });
  };
  dispatch_floating(x.dtype(), op, [&]<typename T>() {
    const T* src = x.data<T>();
    T* dst = y.data<T>();
    walk(strides_over(x.shape(), x.strides(), out_shape, dim), x.strides()[dim], index.data<int64_t>(),
         [&](int64_t s, int64_t o) { dst[o] = src[s]; });
  });
  return record(y, op, {x, index}, [op, dim, walk, index = index.detach()](const Tensor& g, std::span<Tensor> gi) {
    const Tensor& dx = gi[0];
    dispatch_floating(g.dtype(), op, [&]<typename T>() {
      T* dst = dx.data<T>();
      const T* dy = g.data<T>();  // contiguous, out_shape
      walk(strides_over(dx.shape(), dx.strides(), g.shape(), dim), dx.strides()[dim], index.data<int64_t>(),
           [&](int64_t d, int64_t o) { dst[d] += dy[o]; });
    });
  });
}

// The checks both ops share: a floating x with at least one dimension and an i64 index of as
// many dimensions; returns dim wrapped.
int64_t check_gather(const char* op, const Tensor& x, int64_t dim, const Tensor& index) {
  if (!x.defined() || !index.defined()) throw std::invalid_argument(std::string(op) + ": undefined tensor");
  if (x.dtype() == DType::i64) throw_not_floating(op, DType::i64);
  if (index.dtype() != DType::i64)
    throw std::invalid_argument(std::string(op) + ": expected an i64 index, got " + dtype_name(index.dtype()));
  if (x.dim() == 0 || index.dim() != x.dim())
    throw std::invalid_argument(std::string(op) + ": expected an index with as many dimensions as the input " +
                                shape_str(x.shape()) + ", got " + shape_str(index.shape()));
  return detail::wrap_dim(dim, x.dim(), op);
}

}  // namespace

Tensor gather(const Tensor& x, int64_t dim_in, const Tensor& index) {
  const int64_t dim = check_gather("gather", x, dim_in, index);
  for (int64_t d = 0; d < x.dim(); ++d)
    if (d != dim && index.shape()[d] > x.shape()[d])
      throw std::invalid_argument("gather: index " + shape_str(index.shape()) + " is larger than the input " +
                                  shape_str(x.shape()) + " in dimension " + std::to_string(d) +
                                  " (only dimension " + std::to_string(dim) + " may differ freely)");
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
                                  shape_str(index.shape()) + " cannot be broadcast in dimension " + std::to_string(d));
    } else {
      out_shape[d] = a == 1 ? b : a;
    }
  }
  return gather_along("take_along_dim", x, dim, index, out_shape);
}

}  // namespace attograd
