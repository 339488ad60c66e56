// The insides of a Tensor: its storage and the shared state behind the handle. Only autograd's
// own sources (ops, engine, graph printing) and its white-box tests (tests/autograd) include this
// header; nn/, gpt/, examples and the tests of those layers go through Tensor's public API. The
// build enforces it: autograd/detail/ is on a PRIVATE include root of the attograd target
// (autograd/CMakeLists.txt), and tests/layering checks that nn/ cannot include it.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "autograd/tensor.h"

namespace attograd {
class Node;
}

namespace attograd::detail {

/// A 64-byte aligned, uninitialised byte buffer shared by a tensor and all its views.
struct Storage {
  /// A new storage of `bytes` bytes, the object itself from the small-object pool (allocator.h).
  static std::shared_ptr<Storage> make(size_t bytes);
  explicit Storage(size_t bytes);
  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;
  void* data = nullptr;
  size_t bytes = 0;
  // Bumped by every in-place change of the data (Tensor::version()): shared by all views, as
  // PyTorch's version counter is shared by a tensor and its views. Atomic (relaxed) because
  // threads may write disjoint views of one storage at once; a bump is one uncontended add.
  std::atomic<uint64_t> version{0};
};

/// The shared state behind a Tensor handle. Users go through Tensor; ops and the engine read
/// these fields directly.
struct TensorImpl {
  std::shared_ptr<Storage> storage;  // null only for Tensor::unallocated() before allocate_in()
  Shape shape;
  Shape strides;       // in elements; 0 for a broadcast (expanded) dimension
  int64_t offset = 0;  // in elements, from storage->data
  DType dtype = DType::f32;
  bool requires_grad = false;
  std::shared_ptr<TensorImpl> grad;  // accumulated gradient of a leaf, same shape, contiguous
  // grad's values are void, zero by definition (Tensor::zero_grad_deferred): the next backward
  // that reaches this tensor writes its first gradient over them, and Tensor::grad() fills
  // zeros first when none did.
  bool grad_void = false;
  std::shared_ptr<Node> grad_fn;  // the op that produced this tensor; null for leaves
  std::vector<GradHook> hooks;    // a leaf's register_hook()s (a non-leaf's are on grad_fn)

  /// A new, empty impl from the small-object pool (allocator.h): creating a tensor or a view in a
  /// training step calls malloc for none of its parts.
  static std::shared_ptr<TensorImpl> make();
  TensorImpl() = default;
  TensorImpl(const TensorImpl&) = delete;
  TensorImpl& operator=(const TensorImpl&) = delete;
  // Frees the graph behind grad_fn iteratively: a million-node chain must not recurse.
  ~TensorImpl();
};

/// The one door from a Tensor handle to its insides (Tensor befriends it).
struct TensorAccess {
  static TensorImpl* impl(const Tensor& t) { return t.impl_.get(); }
  static const std::shared_ptr<TensorImpl>& impl_ptr(const Tensor& t) { return t.impl_; }
  static Tensor wrap(std::shared_ptr<TensorImpl> impl) { return Tensor(std::move(impl)); }
};

/// t's impl (null for an undefined tensor).
inline TensorImpl* impl(const Tensor& t) { return TensorAccess::impl(t); }
/// t's impl as the shared handle (to store it, as a gradient or a retained output).
inline const std::shared_ptr<TensorImpl>& impl_ptr(const Tensor& t) {
  return TensorAccess::impl_ptr(t);
}
/// A Tensor handle to impl.
inline Tensor wrap(std::shared_ptr<TensorImpl> impl) { return TensorAccess::wrap(std::move(impl)); }

}  // namespace attograd::detail
