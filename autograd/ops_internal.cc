#include "autograd/ops_internal.h"

#include <cstring>
#include <stdexcept>

#include "autograd/detail/tensor_impl.h"
#include "autograd/kernels/reduce.h"

namespace attograd::detail {

Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op) {
  const size_t n = std::max(a.size(), b.size());
  Shape out(n);
  for (size_t i = 0; i < n; ++i) {
    const int64_t da = i < n - a.size() ? 1 : a[i - (n - a.size())];
    const int64_t db = i < n - b.size() ? 1 : b[i - (n - b.size())];
    if (da != db && da != 1 && db != 1)
      throw std::invalid_argument(std::string(op) + ": shapes " + shape_str(a) + " and " +
                                  shape_str(b) + " cannot be broadcast (dimension " +
                                  std::to_string(i) + ": " + std::to_string(da) + " vs " +
                                  std::to_string(db) + ")");
    out[i] = da == 1 ? db : da;
  }
  return out;
}

Tensor view_of(const Tensor& t, const Shape& shape, const Shape& strides, int64_t extra_offset) {
  auto impl = TensorImpl::make();
  impl->storage = detail::impl(t)->storage;
  impl->shape = shape;
  impl->strides = strides;
  impl->offset = detail::impl(t)->offset + extra_offset;
  impl->dtype = t.dtype();
  return wrap(std::move(impl));
}

Tensor expand_view(const Tensor& t, const Shape& shape) {
  const size_t n = shape.size(), m = t.shape().size();
  Shape strides(n, 0);
  for (size_t i = 0; i < m; ++i) {
    const size_t j = n - m + i;
    strides[j] = t.shape()[i] == shape[j] ? t.strides()[i] : 0;
  }
  return view_of(t, shape, strides);
}

int64_t wrap_dim(int64_t d, int64_t ndim, const char* op) {
  const int64_t k = d < 0 ? d + ndim : d;
  if (k < 0 || k >= ndim)
    throw std::invalid_argument(std::string(op) + ": dimension " + std::to_string(d) +
                                " is out of range for a " + std::to_string(ndim) + "-d tensor");
  return k;
}

void check_floating_pair(const char* op, const Tensor& a, const Tensor& b) {
  if (!a.defined() || !b.defined())
    throw std::invalid_argument(std::string(op) + ": undefined tensor");
  if (a.dtype() == DType::i64 || b.dtype() == DType::i64) throw_not_floating(op, DType::i64);
  if (a.dtype() != b.dtype())
    throw std::invalid_argument(
        std::string(op) + ": dtypes differ, " + dtype_name(a.dtype()) + " " + shape_str(a.shape()) +
        " vs " + dtype_name(b.dtype()) + " " + shape_str(b.shape()) +
        " (attograd never converts implicitly; cast(x, DType::" + dtype_name(a.dtype()) +
        ") makes them one)");
}

namespace {
// Rows shorter than this are added in a plain loop: the gradient of a head-split tensor arrives
// as rows of head_dim values (2 in the lecture's pico model, 27,000 rows a step), and a
// dispatched kernel call per row cost more than the adds (8% of a pico step).
constexpr int64_t kKernelMinRow = 32;
}  // namespace

void accumulate(const Tensor& dst, const Tensor& src, double alpha) {
  dispatch_floating(src.dtype(), "accumulate", [&]<typename T>() {
    T* d = dst.data<T>();
    const T* s = src.data<T>();
    const T a = static_cast<T>(alpha);
    for_each_row<2>(
        src.shape(), {dst.strides(), src.strides()}, [&](auto off, int64_t n, auto inner) {
          T* dr = d + off[0];
          const T* sr = s + off[1];
          if (inner[0] == 1 && inner[1] == 1 && n >= kKernelMinRow) {
            kernels::axpy<T>(dr, a, sr, n);
          } else if (inner[0] == 1 &&
                     inner[1] == 1) {  // a short row: a call to the kernel costs more
            for (int64_t i = 0; i < n; ++i) dr[i] += a * sr[i];
          } else if (inner[0] == 0 && inner[1] == 1) {  // reduce a row into one element
            *dr += a * static_cast<T>(kernels::sum_all_double<T>(sr, n));
          } else if (inner[0] == 1 && inner[1] == 0) {  // broadcast one element over a row
            kernels::binary_scalar_right<T>(kernels::BinaryOp::add, dr, dr, a * *sr, n);
          } else {
            for (int64_t i = 0; i < n; ++i) dr[i * inner[0]] += a * sr[i * inner[1]];
          }
        });
  });
}

void copy_into(const Tensor& dst, const Tensor& src) {
  const size_t esize = dtype_size(src.dtype());
  char* d = dst.bytes();
  const char* s = src.bytes();
  for_each_row<2>(
      src.shape(), {dst.strides(), src.strides()}, [&](auto off, int64_t n, auto inner) {
        if (inner[0] == 1 && inner[1] == 1) {
          std::memcpy(d + off[0] * esize, s + off[1] * esize, static_cast<size_t>(n) * esize);
        } else {
          for (int64_t i = 0; i < n; ++i)
            std::memcpy(d + (off[0] + i * inner[0]) * esize, s + (off[1] + i * inner[1]) * esize,
                        esize);
        }
      });
}

Tensor contiguous_data(const Tensor& t) {
  if (t.is_contiguous()) return t;
  Tensor out = Tensor::empty(t.shape(), t.dtype());
  copy_into(out, t);
  return out;
}

namespace {
template <typename T>
T apply(kernels::BinaryOp op, T a, T b) {
  switch (op) {
    case kernels::BinaryOp::add:
      return a + b;
    case kernels::BinaryOp::sub:
      return a - b;
    case kernels::BinaryOp::mul:
      return a * b;
    case kernels::BinaryOp::div:
      return a / b;
  }
  return T(0);
}
}  // namespace

Tensor binary_raw(kernels::BinaryOp op, const Tensor& a, const Tensor& b) {
  const Shape shape = broadcast_shapes(a.shape(), b.shape(), "binary op");
  Tensor out = Tensor::empty(shape, a.dtype());
  const Tensor ea = expand_view(a, shape), eb = expand_view(b, shape);
  dispatch_floating(a.dtype(), "binary op", [&]<typename T>() {
    T* o = out.data<T>();
    const T* pa = ea.data<T>();
    const T* pb = eb.data<T>();
    for_each_row<3>(shape, {out.strides(), ea.strides(), eb.strides()},
                    [&](auto off, int64_t n, auto inner) {
                      T* orow = o + off[0];
                      const T* ar = pa + off[1];
                      const T* br = pb + off[2];
                      if (inner[1] == 1 && inner[2] == 1) {
                        kernels::binary_forward<T>(op, orow, ar, br, n);
                      } else if (inner[1] == 1 && inner[2] == 0) {
                        kernels::binary_scalar_right<T>(op, orow, ar, *br, n);
                      } else if (inner[1] == 0 && inner[2] == 1) {
                        kernels::binary_scalar_left<T>(op, orow, *ar, br, n);
                      } else {
                        for (int64_t i = 0; i < n; ++i)
                          orow[i] = apply(op, ar[i * inner[1]], br[i * inner[2]]);
                      }
                    });
  });
  return out;
}

}  // namespace attograd::detail

namespace attograd {

void accumulate_grad(const Tensor& grad_input, const Tensor& value) {
  if (!grad_input.defined()) return;
  if (!value.defined())
    throw std::invalid_argument("accumulate_grad: the value to add is undefined");
  if (value.dtype() != grad_input.dtype())
    throw std::invalid_argument(std::string("accumulate_grad: the value is ") +
                                dtype_name(value.dtype()) + " but the gradient is " +
                                dtype_name(grad_input.dtype()) + "; cast() it first");
  const Shape &to = grad_input.shape(), &from = value.shape();
  // Aligned from the right, each of the gradient's dimensions is value's or 1 (broadcast).
  bool sums_to = from.size() >= to.size();
  for (size_t i = 1; sums_to && i <= to.size(); ++i)
    sums_to = to[to.size() - i] == 1 || to[to.size() - i] == from[from.size() - i];
  if (!sums_to)
    throw std::invalid_argument("accumulate_grad: a value " + shape_str(from) +
                                " cannot be added into a gradient " + shape_str(to) +
                                ": it must have the gradient's shape, or the shape that one "
                                "broadcasts to (it is then summed back)");
  // A gradient (3,) seen as (2, 3) with stride 0 along the first axis: accumulate sums the rows.
  detail::accumulate(to == from ? grad_input : detail::expand_view(grad_input, from), value);
}

}  // namespace attograd
