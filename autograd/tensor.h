// Tensor: an n-dimensional strided view of shared storage, plus its place in the autograd graph.
//
// Shapes and strides are in elements. transpose/permute/slice/reshape-of-contiguous return views
// that share storage (no copy), exactly as in PyTorch; kernels want contiguous rows, so ops call
// contiguous() where they need it and matmul accepts a transposed view directly.
//
// dtype is chosen at run time: f32 for training, f64 for finite-difference gradient checks
// (the same ops and SIMD kernels run in both), i64 for token ids and targets (never
// differentiable).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <iosfwd>
#include <memory>
#include <string>
#include <vector>

#include <boost/container/small_vector.hpp>

#include "autograd/random.h"

namespace attograd {

class Node;
namespace detail {
struct TensorImpl;  // autograd/detail/tensor_impl.h: autograd's own sources only
struct TensorAccess;
}  // namespace detail

/// Element type of a tensor, chosen at run time.
enum class DType { f32, f64, i64 };

/// Bytes per element of a dtype.
size_t dtype_size(DType dtype);
/// "f32", "f64" or "i64".
const char* dtype_name(DType dtype);

/// A tensor shape, e.g. {B, T, C}: a vector that keeps up to 6 dimensions inline (Boost's
/// small_vector, API-compatible with std::vector), so that creating a tensor or a view in a
/// training step allocates nothing for its shape and strides.
using Shape = boost::container::small_vector<int64_t, 6>;

/// "(2, 3, 4)": the form every error message uses.
std::string shape_str(const Shape& shape);
/// Product of the dimensions (1 for a 0-d scalar). Throws std::overflow_error (size_math.h)
/// naming the shape when the product does not fit int64_t.
int64_t shape_numel(const Shape& shape);
/// Row-major (C-contiguous) strides of a shape. Throws std::overflow_error naming the shape when
/// a stride does not fit int64_t.
Shape contiguous_strides(const Shape& shape);

/// A handle to a tensor: cheap to copy (copies share data and graph, like a PyTorch tensor).
/// A default-constructed Tensor is "undefined" (no data); most calls on it throw.
class Tensor;
/// A gradient hook (Tensor::register_hook): given the gradient, returns a replacement or an
/// undefined Tensor to keep it.
using GradHook = std::function<Tensor(const Tensor& grad)>;

class Tensor {
 public:
  Tensor() = default;

  // ----- creation (all contiguous, requires_grad = false) -----
  /// Uninitialised contents. Throws std::invalid_argument on a negative dimension.
  static Tensor empty(const Shape& shape, DType dtype = DType::f32);
  static Tensor zeros(const Shape& shape, DType dtype = DType::f32);
  static Tensor ones(const Shape& shape, DType dtype = DType::f32);
  static Tensor full(const Shape& shape, double value, DType dtype = DType::f32);
  /// A 0-d tensor holding value.
  static Tensor scalar(double value, DType dtype = DType::f32);
  /// Copies values (row-major) into a new tensor; values.size() must equal the shape's numel.
  static Tensor from_vector(const std::vector<double>& values, const Shape& shape,
                            DType dtype = DType::f32);
  /// Samples N(0, std^2) from gen, element by element in row-major order.
  static Tensor randn(const Shape& shape, Generator& gen, DType dtype = DType::f32,
                      double std = 1.0);
  /// Samples uniformly from [low, high).
  static Tensor uniform(const Shape& shape, Generator& gen, double low, double high,
                        DType dtype = DType::f32);
  /// Token ids or targets: an i64 tensor.
  static Tensor from_ids(const std::vector<int64_t>& ids, const Shape& shape);
  /// A tensor with a shape and dtype but no storage yet: every data access throws
  /// std::logic_error until allocate_in() places it. For laying out parameters before the one
  /// buffer that holds them exists (nn::ParameterArena, as llm.c's malloc_and_point_parameters).
  static Tensor unallocated(const Shape& shape, DType dtype = DType::f32);

  // ----- metadata -----
  bool defined() const { return impl_ != nullptr; }
  const Shape& shape() const;
  const Shape& strides() const;
  /// Number of dimensions.
  int64_t dim() const;
  /// Size of dimension d; negative d counts from the end (-1 is the last).
  int64_t size(int64_t d) const;
  int64_t numel() const;
  DType dtype() const;
  bool is_contiguous() const;
  /// True when both are views of one storage (one allocation), e.g. parameters in one arena.
  bool shares_storage(const Tensor& other) const;
  /// True when both are handles to the same tensor (Python's `a is b` on torch tensors): what a
  /// module's parameters() deduplicates by, so a weight tied between two modules counts once.
  bool is_same(const Tensor& other) const { return impl_ == other.impl_; }

  // ----- data access -----
  /// Pointer to the first element (storage + offset). Throws std::invalid_argument if T does
  /// not match dtype(). For a non-contiguous view, index with strides(). A write through it is
  /// not seen by version(): after changing a tensor that a graph may have saved, call
  /// bump_version() (as torch's data_ptr() writes need torch.autograd.graph.increment_version).
  template <typename T>
  T* data() const;
  /// The value of a one-element tensor, converted to double.
  double item() const;
  /// Element at a multi-index (any layout), converted to double. For tests and printing.
  double at(std::initializer_list<int64_t> index) const;
  /// All elements in row-major order, converted to double.
  std::vector<double> to_vector() const;
  /// All elements of an i64 tensor in row-major order.
  std::vector<int64_t> to_ids() const;
  /// The first element's address as raw bytes (storage + offset), whatever the dtype: for byte
  /// I/O such as safetensors. A view's later elements lie at strides() × dtype_size(dtype()).
  /// Writes through it are not counted either (see data()).
  char* bytes() const;

  // ----- in-place writes (never recorded in the graph, as torch's under no_grad) -----
  // Each bumps version(), so that backward() refuses a graph that saved the old values
  // (engine.h, SavedTensor) instead of computing a silently wrong gradient.

  /// The version of this tensor's storage: 0 when created, bumped by every in-place change
  /// (copy_from, fill_, normal_, zero_grad of a gradient, backward adding into a gradient, an
  /// optimizer step, bump_version()). Shared by all views of one storage, so parameters in one
  /// arena share one counter. torch's Tensor._version. 0 for a tensor without storage yet.
  uint64_t version() const;
  /// Counts an in-place change made through data() or bytes(): the graphs that saved this
  /// tensor (any view of its storage) then refuse to backpropagate through the old values.
  /// torch.autograd.graph.increment_version. A no-op on a tensor without storage.
  void bump_version() const;
  /// Copies src's values into this tensor: same shape and dtype, any strides on either side.
  /// Throws std::invalid_argument naming both shapes/dtypes on a mismatch.
  Tensor& copy_from(const Tensor& src);
  /// Sets every element to value (converted to the dtype); any strides.
  Tensor& fill_(double value);
  /// Samples N(0, std^2) from gen into a contiguous floating tensor, element by element in
  /// row-major order: the same numbers randn() gives for the same generator state.
  Tensor& normal_(Generator& gen, double std = 1.0);
  /// Gives an unallocated() tensor its storage: numel() contiguous elements of the contiguous
  /// tensor `buffer` (same dtype) from element `offset` on, sharing buffer's storage. Throws
  /// std::logic_error for a tensor that already has storage: a live tensor is never re-pointed,
  /// since views taken of it earlier would keep the old storage. std::out_of_range when the
  /// range does not fit in buffer.
  void allocate_in(const Tensor& buffer, int64_t offset);

  // ----- autograd -----
  bool requires_grad() const;
  /// Marks a leaf as a parameter/input whose gradient backward() accumulates into grad().
  /// Throws std::logic_error on a non-leaf (its gradient flows to its inputs instead) or on
  /// an i64 tensor.
  Tensor& set_requires_grad(bool value = true);
  /// PyTorch's name for set_requires_grad. Unlike torch, requires_grad_(true) on a non-leaf
  /// throws too (torch lets it pass as a no-op).
  Tensor& requires_grad_(bool value = true) { return set_requires_grad(value); }
  /// The accumulated gradient of a leaf, or of a non-leaf after retain_grad(); undefined before
  /// the first backward that reaches it (and always for other non-leaves).
  Tensor grad() const;
  /// Sets the accumulated gradient to zero (keeps the buffer).
  void zero_grad() const;
  /// zero_grad without the fill: the gradient is zero from now on, but its buffer is not
  /// written. The next backward that reaches this tensor writes its first gradient straight
  /// into the buffer (no zero pass before the op's own), and grad() fills the zeros first if
  /// none did. So a training step's zero_grad costs nothing: a pass over every parameter's
  /// gradient, 2.8% of GPT-2 small's step (docs/performance.md). A gradient tensor taken with
  /// grad() before this call still reads the old values (as one kept in torch across
  /// zero_grad(set_to_none=True)): take grad() again. The buffer must be this tensor's alone (no
  /// other tensor's gradient overlapping it, as set_grad could make it): two tensors sharing one
  /// would each write their first gradient over the other's; use zero_grad for those.
  /// ParameterArena::zero_grad uses it (its gradients are views that never overlap).
  void zero_grad_deferred() const;
  /// Makes `grad` this tensor's accumulated gradient buffer (backward adds into it), e.g. a view
  /// into one buffer of all gradients; an undefined tensor drops it. Throws std::invalid_argument
  /// unless grad is contiguous with this tensor's shape and dtype.
  void set_grad(const Tensor& grad) const;
  /// Keeps this non-leaf's gradient in grad() after backward, as torch's retain_grad(); it
  /// accumulates over backward calls like a leaf's. A no-op on a leaf that requires grad.
  /// Throws std::logic_error on a tensor that does not require grad.
  void retain_grad() const;
  /// True for a non-leaf after retain_grad() (false for leaves, as in torch).
  bool retains_grad() const;
  /// Calls `hook` with this tensor's gradient in every backward pass (and grad()) that reaches
  /// it, as torch's register_hook: for a leaf once per pass with the pass's total, before it is
  /// added into grad(); for a non-leaf once its gradient is complete, before it flows to the
  /// inputs (and before retain_grad() keeps it). The hook may return a tensor of the same
  /// shape and dtype to use instead (gradient surgery, clipping one tensor), or an undefined
  /// Tensor to keep the gradient as it is; hooks run in the order registered, each given the
  /// previous one's result. Throws std::logic_error on a tensor that does not require grad;
  /// backward throws std::invalid_argument when a hook returns another shape or dtype.
  void register_hook(GradHook hook) const;
  /// True for tensors not produced by a recorded op.
  bool is_leaf() const;
  const std::shared_ptr<Node>& grad_fn() const;
  /// Same data, cut from the graph: never requires grad.
  Tensor detach() const;
  /// Reverse-mode pass from this tensor. A non-scalar tensor needs an explicit grad_output of
  /// its shape. The graph is freed afterwards unless retain_graph is true; a second backward
  /// through a freed graph throws std::logic_error saying so.
  void backward(const Tensor& grad_output = Tensor(), bool retain_graph = false) const;

  /// A contiguous deep copy with no graph (for tests, optimizers and checkpoints).
  Tensor clone() const;
  /// This tensor if already contiguous, else a contiguous copy; recorded (the op contiguous()
  /// of ops.h, VJP dx = dy).
  Tensor contiguous() const;

 private:
  friend struct detail::TensorAccess;
  explicit Tensor(std::shared_ptr<detail::TensorImpl> impl) : impl_(std::move(impl)) {}
  void check_defined(const char* what) const;
  std::shared_ptr<detail::TensorImpl> impl_;
};

/// Prints "tensor(shape (2, 3), f32, [[...], [...]])", eliding long dimensions.
std::ostream& operator<<(std::ostream& os, const Tensor& t);

[[noreturn]] void throw_not_floating(const char* op, DType dtype);

/// Calls f.template operator()<T>() with T = float or double for a floating tensor; throws
/// std::invalid_argument naming `op` for i64. Lets each op be written once as a template.
template <typename F>
decltype(auto) dispatch_floating(DType dtype, const char* op, F&& f) {
  if (dtype == DType::f32) return f.template operator()<float>();
  if (dtype == DType::f64) return f.template operator()<double>();
  throw_not_floating(op, dtype);
}

}  // namespace attograd
