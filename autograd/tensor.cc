#include "autograd/tensor.h"

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <iomanip>
#include <ostream>
#include <sstream>
#include <stdexcept>

#include "autograd/allocator.h"
#include "autograd/detail/tensor_impl.h"
#include "autograd/engine.h"
#include "autograd/kernels/elementwise.h"
#include "autograd/ops.h"
#include "autograd/ops_internal.h"
#include "autograd/size_math.h"

namespace attograd {

using detail::Storage;
using detail::TensorImpl;

size_t dtype_size(DType dtype) { return dtype == DType::f32 ? 4 : 8; }

const char* dtype_name(DType dtype) {
  switch (dtype) {
    case DType::f32:
      return "f32";
    case DType::f64:
      return "f64";
    case DType::i64:
      return "i64";
  }
  return "?";
}

void throw_not_floating(const char* op, DType dtype) {
  throw std::invalid_argument(std::string(op) + ": expected a floating tensor (f32 or f64), got " +
                              dtype_name(dtype) + "; cast(x, DType::f32) converts one");
}

std::string shape_str(const Shape& shape) {
  std::string s = "(";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + (shape.size() == 1 ? ",)" : ")");
}

int64_t shape_numel(const Shape& shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    n = checked_mul(n, d, [&] { return "elements of shape " + shape_str(shape); });
  return n;
}

Shape contiguous_strides(const Shape& shape) {
  // Checked on its own: a zero dimension makes numel 0 while the other dimensions' strides can
  // still overflow, as in (0, 2^40, 2^40).
  Shape strides(shape.size());
  int64_t s = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    strides[i] = s;
    s = checked_mul(s, shape[i], [&] { return "strides of shape " + shape_str(shape); });
  }
  return strides;
}

namespace detail {

// 64-byte aligned (a cache line and a full AVX-512 vector), from the storage cache.
Storage::Storage(size_t n) : data(allocate_storage(n)), bytes(n) {}

std::shared_ptr<Storage> Storage::make(size_t bytes) {
  return std::allocate_shared<Storage>(PoolAllocator<Storage>(), bytes);
}

std::shared_ptr<TensorImpl> TensorImpl::make() {
  return std::allocate_shared<TensorImpl>(PoolAllocator<TensorImpl>());
}

Storage::~Storage() { release_storage(data, bytes); }

}  // namespace detail

namespace {

// Frees a graph without recursion. Destroying a node destroys its inputs, whose impls would
// destroy their own grad_fn nodes, and so on down a chain as long as the graph: a million-op
// chain would overflow the stack. Instead every node that becomes unreferenced while the
// drain loop is running is parked on an explicit stack and destroyed from the loop.
// (The stack is kept per thread and reused, so freeing a step's graph allocates nothing.)
void release_graph(std::shared_ptr<Node> node) {
  thread_local std::vector<std::shared_ptr<Node>> stack;
  thread_local bool draining = false;
  if (node.use_count() != 1) return;  // still referenced elsewhere: dropping our handle is enough
  stack.push_back(std::move(node));
  if (draining) return;  // the loop below, further up this call stack, will get to it
  draining = true;
  while (!stack.empty()) {
    std::shared_ptr<Node> n = std::move(stack.back());
    stack.pop_back();
    n->release();  // may push more nodes onto `stack`
  }
  draining = false;
}

}  // namespace

detail::TensorImpl::~TensorImpl() {
  if (grad_fn) release_graph(std::move(grad_fn));
}

namespace {

// A contiguous impl of that shape, with fresh storage when `allocate` (else none: unallocated()).
std::shared_ptr<TensorImpl> make_impl(const Shape& shape, DType dtype, bool allocate = true) {
  for (int64_t d : shape)
    if (d < 0)
      throw std::invalid_argument("tensor: negative dimension in shape " + shape_str(shape));
  auto impl = TensorImpl::make();
  const size_t bytes = checked_mul(static_cast<size_t>(shape_numel(shape)), dtype_size(dtype), [&] {
    return std::string("bytes of a ") + dtype_name(dtype) + " tensor of shape " + shape_str(shape);
  });
  if (allocate) impl->storage = Storage::make(bytes);
  impl->shape = shape;
  impl->strides = contiguous_strides(shape);
  impl->dtype = dtype;
  return impl;
}

// Offset (in elements) of the row-major linear index `linear` in a strided layout.
int64_t strided_offset(const Shape& shape, const Shape& strides, int64_t linear) {
  int64_t off = 0;
  for (size_t d = shape.size(); d-- > 0;) {
    off += (linear % shape[d]) * strides[d];
    linear /= shape[d];
  }
  return off;
}

double read_element(const TensorImpl& t, int64_t offset) {
  if (!t.storage)
    throw std::logic_error("Tensor: reading a tensor that has no storage yet (unallocated())");
  const char* base = static_cast<const char*>(t.storage->data);
  switch (t.dtype) {
    case DType::f32:
      return reinterpret_cast<const float*>(base)[t.offset + offset];
    case DType::f64:
      return reinterpret_cast<const double*>(base)[t.offset + offset];
    case DType::i64:
      return static_cast<double>(reinterpret_cast<const int64_t*>(base)[t.offset + offset]);
  }
  return 0;
}

}  // namespace

Tensor Tensor::empty(const Shape& shape, DType dtype) { return Tensor(make_impl(shape, dtype)); }

Tensor Tensor::full(const Shape& shape, double value, DType dtype) {
  Tensor t = empty(shape, dtype);
  t.fill_(value);
  t.impl_->storage->version = 0;  // filling a new tensor creates it: version 0, as documented
  return t;
}

Tensor Tensor::unallocated(const Shape& shape, DType dtype) {
  return Tensor(make_impl(shape, dtype, false));
}

Tensor Tensor::zeros(const Shape& shape, DType dtype) { return full(shape, 0.0, dtype); }
Tensor Tensor::ones(const Shape& shape, DType dtype) { return full(shape, 1.0, dtype); }
Tensor Tensor::scalar(double value, DType dtype) { return full({}, value, dtype); }

Tensor Tensor::from_vector(const std::vector<double>& values, const Shape& shape, DType dtype) {
  Tensor t = empty(shape, dtype);
  if (static_cast<int64_t>(values.size()) != t.numel())
    throw std::invalid_argument("from_vector: " + std::to_string(values.size()) +
                                " values do not fill shape " + shape_str(shape) + " (" +
                                std::to_string(t.numel()) + " elements)");
  for (int64_t i = 0; i < t.numel(); ++i) {
    switch (dtype) {
      case DType::f32:
        t.data<float>()[i] = static_cast<float>(values[i]);
        break;
      case DType::f64:
        t.data<double>()[i] = values[i];
        break;
      case DType::i64:
        t.data<int64_t>()[i] = static_cast<int64_t>(values[i]);
        break;
    }
  }
  return t;
}

// Both samplers write straight into the typed buffer: GPT-2's wte alone is 38M values.
Tensor Tensor::randn(const Shape& shape, Generator& gen, DType dtype, double std) {
  Tensor t = empty(shape, dtype);
  t.normal_(gen, std);
  t.impl_->storage->version = 0;  // a new tensor: version 0
  return t;
}

Tensor& Tensor::normal_(Generator& gen, double std) {
  if (!is_contiguous())
    throw std::invalid_argument("normal_: expected a contiguous tensor, got strides " +
                                shape_str(strides()));
  dispatch_floating(dtype(), "normal_", [&]<typename T>() {
    T* p = data<T>();
    for (int64_t i = 0; i < numel(); ++i) p[i] = static_cast<T>(std * gen.normal());
  });
  bump_version();
  return *this;
}

Tensor Tensor::uniform(const Shape& shape, Generator& gen, double low, double high, DType dtype) {
  Tensor t = empty(shape, dtype);
  dispatch_floating(dtype, "uniform", [&]<typename T>() {
    T* p = t.data<T>();
    for (int64_t i = 0; i < t.numel(); ++i)
      p[i] = static_cast<T>(low + (high - low) * gen.uniform());
  });
  return t;
}

Tensor Tensor::from_ids(const std::vector<int64_t>& ids, const Shape& shape) {
  Tensor t = empty(shape, DType::i64);
  if (static_cast<int64_t>(ids.size()) != t.numel())
    throw std::invalid_argument("from_ids: " + std::to_string(ids.size()) +
                                " ids do not fill shape " + shape_str(shape));
  if (!ids.empty()) std::memcpy(t.data<int64_t>(), ids.data(), ids.size() * sizeof(int64_t));
  return t;
}

void Tensor::check_defined(const char* what) const {
  if (!impl_) throw std::logic_error(std::string("Tensor::") + what + ": the tensor is undefined");
}

const Shape& Tensor::shape() const {
  check_defined("shape");
  return impl_->shape;
}
const Shape& Tensor::strides() const {
  check_defined("strides");
  return impl_->strides;
}
int64_t Tensor::dim() const { return static_cast<int64_t>(shape().size()); }
int64_t Tensor::numel() const { return shape_numel(shape()); }
DType Tensor::dtype() const {
  check_defined("dtype");
  return impl_->dtype;
}

int64_t Tensor::size(int64_t d) const {
  const int64_t n = dim();
  const int64_t k = d < 0 ? d + n : d;
  if (k < 0 || k >= n)
    throw std::out_of_range("size: dimension " + std::to_string(d) + " out of range for shape " +
                            shape_str(shape()));
  return impl_->shape[k];
}

bool Tensor::is_contiguous() const {
  check_defined("is_contiguous");
  int64_t expected = 1;
  for (size_t d = impl_->shape.size(); d-- > 0;) {
    if (impl_->shape[d] == 1) continue;  // the stride of a size-1 dimension never matters
    if (impl_->strides[d] != expected) return false;
    expected *= impl_->shape[d];
  }
  return true;
}

bool Tensor::shares_storage(const Tensor& other) const {
  check_defined("shares_storage");
  other.check_defined("shares_storage");
  return impl_->storage == other.impl_->storage;
}

template <typename T>
T* Tensor::data() const {
  check_defined("data");
  constexpr DType want = std::is_same_v<T, float>    ? DType::f32
                         : std::is_same_v<T, double> ? DType::f64
                                                     : DType::i64;
  if (impl_->dtype != want)
    throw std::invalid_argument(std::string("Tensor::data: tensor is ") + dtype_name(impl_->dtype) +
                                ", requested " + dtype_name(want));
  return reinterpret_cast<T*>(bytes());
}
template float* Tensor::data<float>() const;
template double* Tensor::data<double>() const;
template int64_t* Tensor::data<int64_t>() const;

char* Tensor::bytes() const {
  check_defined("bytes");
  if (!impl_->storage)
    throw std::logic_error("Tensor: this " + shape_str(impl_->shape) +
                           " tensor has no storage yet (unallocated(); "
                           "a parameter is readable once its ParameterArena is allocated)");
  return static_cast<char*>(impl_->storage->data) +
         impl_->offset * static_cast<int64_t>(dtype_size(impl_->dtype));
}

Tensor& Tensor::copy_from(const Tensor& src) {
  check_defined("copy_from");
  src.check_defined("copy_from");
  if (src.shape() != shape() || src.dtype() != dtype())
    throw std::invalid_argument("copy_from: source " + std::string(dtype_name(src.dtype())) + " " +
                                shape_str(src.shape()) + " does not match destination " +
                                dtype_name(dtype()) + " " + shape_str(shape()));
  detail::copy_into(*this, src);
  bump_version();
  return *this;
}

Tensor& Tensor::fill_(double value) {
  check_defined("fill_");
  if (!is_contiguous()) return copy_from(full(shape(), value, dtype()));
  if (dtype() == DType::i64) {
    int64_t* p = data<int64_t>();
    for (int64_t i = 0; i < numel(); ++i) p[i] = static_cast<int64_t>(value);
    bump_version();
    return *this;
  }
  dispatch_floating(dtype(), "fill_", [&]<typename T>() {
    kernels::fill<T>(data<T>(), static_cast<T>(value), numel());
  });
  bump_version();
  return *this;
}

uint64_t Tensor::version() const {
  check_defined("version");
  return impl_->storage ? impl_->storage->version.load(std::memory_order_relaxed) : 0;
}

void Tensor::bump_version() const {
  check_defined("bump_version");
  if (impl_->storage) impl_->storage->version.fetch_add(1, std::memory_order_relaxed);
}

void Tensor::allocate_in(const Tensor& buffer, int64_t offset) {
  check_defined("allocate_in");
  buffer.check_defined("allocate_in");
  if (impl_->storage)
    throw std::logic_error("allocate_in: this " + shape_str(shape()) +
                           " tensor already has storage; a live tensor "
                           "is never re-pointed (views taken of it would keep the old data)");
  if (buffer.dtype() != dtype() || !buffer.is_contiguous() || !buffer.impl_->storage)
    throw std::invalid_argument("allocate_in: expected an allocated contiguous " +
                                std::string(dtype_name(dtype())) + " buffer, got " +
                                dtype_name(buffer.dtype()) + " " + shape_str(buffer.shape()));
  if (offset < 0 || offset > buffer.numel() || numel() > buffer.numel() - offset)
    throw std::out_of_range("allocate_in: elements [" + std::to_string(offset) + ", " +
                            std::to_string(offset) + " + " + std::to_string(numel()) +
                            ") do not fit in a buffer of " + std::to_string(buffer.numel()));
  impl_->storage = buffer.impl_->storage;
  impl_->offset = buffer.impl_->offset + offset;
}

double Tensor::item() const {
  if (numel() != 1)
    throw std::invalid_argument("item: expected a one-element tensor, got shape " +
                                shape_str(shape()));
  return read_element(*impl_, 0);
}

double Tensor::at(std::initializer_list<int64_t> index) const {
  if (static_cast<int64_t>(index.size()) != dim())
    throw std::invalid_argument("at: " + std::to_string(index.size()) + " indices for shape " +
                                shape_str(shape()));
  int64_t off = 0, d = 0;
  for (int64_t i : index) {
    if (i < 0 || i >= impl_->shape[d])
      throw std::out_of_range("at: index " + std::to_string(i) + " out of range for dimension " +
                              std::to_string(d) + " of shape " + shape_str(shape()));
    off += i * impl_->strides[d++];
  }
  return read_element(*impl_, off);
}

std::vector<double> Tensor::to_vector() const {
  std::vector<double> out(static_cast<size_t>(numel()));
  for (int64_t i = 0; i < numel(); ++i)
    out[i] = read_element(*impl_, strided_offset(impl_->shape, impl_->strides, i));
  return out;
}

std::vector<int64_t> Tensor::to_ids() const {
  const int64_t* p = data<int64_t>();
  std::vector<int64_t> out(static_cast<size_t>(numel()));
  for (int64_t i = 0; i < numel(); ++i) out[i] = p[strided_offset(impl_->shape, impl_->strides, i)];
  return out;
}

bool Tensor::requires_grad() const { return impl_ && impl_->requires_grad; }

Tensor& Tensor::set_requires_grad(bool value) {
  check_defined("set_requires_grad");
  if (impl_->grad_fn)
    throw std::logic_error(
        "set_requires_grad: only leaf tensors can be marked; this one is the "
        "output of '" +
        std::string(impl_->grad_fn->name()) + "' (call detach() first to make a new leaf)");
  if (value && impl_->dtype == DType::i64)
    throw std::logic_error("set_requires_grad: i64 tensors (token ids) are not differentiable");
  impl_->requires_grad = value;
  return *this;
}

Tensor Tensor::grad() const {
  check_defined("grad");
  if (impl_->grad && impl_->grad_void) {  // zero_grad_deferred's zeros, written now
    Tensor g(impl_->grad);
    dispatch_floating(g.dtype(), "grad",
                      [&]<typename T>() { kernels::fill<T>(g.data<T>(), T(0), g.numel()); });
    impl_->grad_void = false;
  }
  return Tensor(impl_->grad);
}

void Tensor::zero_grad() const {
  check_defined("zero_grad");
  if (!impl_->grad) return;
  Tensor g(impl_->grad);
  dispatch_floating(g.dtype(), "zero_grad",
                    [&]<typename T>() { kernels::fill<T>(g.data<T>(), T(0), g.numel()); });
  impl_->grad_void = false;
  g.bump_version();
}

void Tensor::zero_grad_deferred() const {
  check_defined("zero_grad_deferred");
  if (!impl_->grad) return;
  impl_->grad_void = true;
  Tensor(impl_->grad).bump_version();  // its values changed, as zero_grad's
}

void Tensor::set_grad(const Tensor& grad) const {
  check_defined("set_grad");
  if (grad.defined() &&
      (grad.shape() != shape() || grad.dtype() != dtype() || !grad.is_contiguous()))
    throw std::invalid_argument(
        "set_grad: expected a contiguous " + std::string(dtype_name(dtype())) + " " +
        shape_str(shape()) + " gradient, got " + dtype_name(grad.dtype()) + " " +
        shape_str(grad.shape()) + (grad.is_contiguous() ? "" : " (not contiguous)"));
  impl_->grad = grad.impl_;
  impl_->grad_void = false;
}

void Tensor::retain_grad() const {
  check_defined("retain_grad");
  if (!impl_->requires_grad)
    throw std::logic_error(
        "retain_grad: the tensor does not require grad, so backward never reaches it "
        "(compute it from a leaf marked with set_requires_grad())");
  if (impl_->grad_fn) impl_->grad_fn->retain_grad_of(impl_);
}

void Tensor::register_hook(GradHook hook) const {
  check_defined("register_hook");
  if (!impl_->requires_grad)
    throw std::logic_error(
        "register_hook: the tensor does not require grad, so no gradient ever reaches it "
        "(compute it from a leaf marked with set_requires_grad())");
  if (impl_->grad_fn)
    impl_->grad_fn->add_hook(std::move(hook));
  else
    impl_->hooks.push_back(std::move(hook));
}

bool Tensor::retains_grad() const {
  check_defined("retains_grad");
  return impl_->grad_fn && impl_->grad_fn->retains_grad_of(impl_.get());
}

bool Tensor::is_leaf() const {
  check_defined("is_leaf");
  return impl_->grad_fn == nullptr;
}

const std::shared_ptr<Node>& Tensor::grad_fn() const {
  check_defined("grad_fn");
  return impl_->grad_fn;
}

Tensor Tensor::detach() const {
  check_defined("detach");
  auto impl = TensorImpl::make();
  impl->storage = impl_->storage;
  impl->shape = impl_->shape;
  impl->strides = impl_->strides;
  impl->offset = impl_->offset;
  impl->dtype = impl_->dtype;
  return Tensor(std::move(impl));
}

Tensor Tensor::clone() const {
  Tensor out = empty(shape(), dtype());
  const size_t esize = dtype_size(dtype());
  char* dst = out.bytes();
  const char* src = bytes();
  if (is_contiguous()) {
    std::memcpy(dst, src, static_cast<size_t>(numel()) * esize);
  } else {
    for (int64_t i = 0; i < numel(); ++i)
      std::memcpy(dst + i * esize, src + strided_offset(impl_->shape, impl_->strides, i) * esize,
                  esize);
  }
  return out;
}

Tensor Tensor::contiguous() const { return attograd::contiguous(*this); }

void Tensor::backward(const Tensor& grad_output, bool retain_graph) const {
  check_defined("backward");
  run_backward(*this, grad_output, retain_graph);
}

namespace {

// Prints dimension d of t starting at element offset `off`, eliding the middle of long
// dimensions; nested rows are indented under their opening bracket, as PyTorch prints them.
void print_dim(std::ostream& os, const Tensor& t, size_t d, int64_t off, size_t indent) {
  const auto& shape = t.shape();
  const int64_t n = shape[d];
  const int64_t edge = 3;
  const bool last = d + 1 == shape.size();
  const std::string newline = ",\n" + std::string(indent + d + 1, ' ');
  os << '[';
  for (int64_t i = 0; i < n; ++i) {
    if (n > 2 * edge + 1 && i == edge) {
      os << "..." << (last ? ", " : newline);
      i = n - edge - 1;
      continue;
    }
    const int64_t o = off + i * t.strides()[d];
    if (last) {
      os << read_element(*detail::impl(t), o);
    } else {
      print_dim(os, t, d + 1, o, indent);
    }
    if (i + 1 < n) os << (last ? ", " : newline);
  }
  os << ']';
}

}  // namespace

std::ostream& operator<<(std::ostream& os, const Tensor& t) {
  if (!t.defined()) return os << "tensor(undefined)";
  std::ostringstream body;
  body << std::setprecision(t.dtype() == DType::f32 ? 7 : 15);
  if (t.dim() == 0) {
    body << t.item();
  } else {
    print_dim(body, t, 0, 0, /*indent=*/7);  // under "tensor("
  }
  os << "tensor(" << body.str() << ", shape " << shape_str(t.shape()) << ", "
     << dtype_name(t.dtype());
  if (t.requires_grad())
    os << (t.is_leaf() ? ", requires_grad" : ", grad_fn=")
       << (t.is_leaf() ? "" : t.grad_fn()->name());
  return os << ')';
}

}  // namespace attograd
