// The dynamic graph and the reverse-mode engine.
//
// Every op that has an input requiring grad records a Node on its output: the inputs (the
// graph's edges) and a backward function, the op's vector-Jacobian product. Tensor::backward()
// orders the nodes topologically with an explicit stack (never the call stack), then calls each
// node's VJP once, in reverse order. VJPs ACCUMULATE (+=) into gradient buffers the engine
// allocates (zero-filled, contiguous, in each input's shape), so fan-out and tied weights need
// no special case. An op may declare that its VJP writes the first gradient of an intermediate
// tensor (or of a leaf whose zero_grad was deferred) itself (GradBuffers::first_write): its
// buffer is then handed over unfilled, and the VJP
// writes (=) instead of adding, which saves the zero fill and its read (PyTorch's engine has the
// same saving: the first gradient of a tensor is taken as it is, later ones are added to it).
//
// Ownership rule: a node owns its inputs (and whatever its backward saved), never its own
// output. A VJP that needs the forward's output saves output.detach(), which shares the data
// but not the graph, so there is no shared_ptr cycle.
//
// Saved tensors and versions (PyTorch's SavedVariable, pytorch/pytorch#37573): a tensor the
// VJP reads back that someone else can change (an input, the output) is saved in an explicit
// slot, record()'s `saved` list, with the version its storage had (Tensor::version(), bumped by
// every in-place change). Before running any VJP, backward() compares every slot of the graph
// with its storage's version now, and throws naming the op and the tensor if one changed: the
// gradient would be computed from the new values and be silently wrong. So a VJP never captures
// a Tensor that the caller holds; it receives its saved tensors as parameters, after g and gi.
// Buffers the forward made for the backward alone (logsumexp, mean and rstd, argmax) are
// captured as before: nobody else can change them. The cost is one integer per saved tensor and
// one comparison per saved tensor per backward.
//
// Allocation: a node and its backward closure are one object (ClosureNode<F>, the closure held
// by value), taken with its inputs from the small-object pool (allocator.h), and the engine keeps
// its work lists per thread and reuses them, so recording and running a step's graph calls
// malloc for none of it after warm-up.
#pragma once

#include <array>
#include <boost/container/small_vector.hpp>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <tuple>
#include <utility>
#include <vector>

#include "autograd/allocator.h"
#include "autograd/tensor.h"

namespace attograd {

class Engine;  // engine.cc: the backward pass, which keeps its bookkeeping on the nodes

/// A node's inputs: up to 4 inline (every op but concat has at most 3).
using TensorList = boost::container::small_vector<Tensor, 4>;

/// A tensor an op's forward keeps for its VJP, with the version of its storage when saved.
struct SavedTensor {
  const char* name = "";  // the op's name for it, as in ops.h: "x", "weight", "output"
  Tensor tensor;          // detached (the data, never the graph); undefined: nothing saved
  uint64_t version = 0;   // tensor.version() when the forward saved it
};

/// One entry of record()'s `saved` list: the op's name for the tensor, and the tensor (undefined
/// when this call's VJP will not read it, e.g. mul's b when a needs no gradient).
struct Save {
  const char* name;
  const Tensor& tensor;
};

/// How a VJP meets the gradient buffers the engine hands it (record()'s last argument).
enum class GradBuffers {
  /// Every buffer holds zeros or the gradients summed so far: the VJP adds (+=) into it.
  accumulate,
  /// The buffer of an intermediate tensor is fresh, its contents undefined, when this VJP is the
  /// first of the pass to give that tensor a gradient; so is a leaf's grad() after
  /// Tensor::zero_grad_deferred (a ParameterArena's zero_grad), until its first gradient.
  /// Right before writing input i's gradient the VJP asks first_gradient(gi[i]), once, and writes
  /// (=) when it says true, adds (+=) when false. A fresh buffer it leaves unclaimed is zero-filled
  /// after it returns.
  first_write,
};

/// For a VJP recorded with GradBuffers::first_write: true when grad_input, the buffer the engine
/// handed it for one input, is fresh (nothing written yet, its contents undefined: write the
/// gradient into it), false when it holds gradients to add to, or is undefined. Claims the
/// buffer, so a second call for it says false: an op whose two inputs are one tensor (add(x, x))
/// writes the first gradient and adds the second. Ask with the buffer itself, not a view of it.
bool first_gradient(const Tensor& grad_input);

/// One recorded op application: its inputs and, in a subclass, its VJP: given dL/d(output)
/// (contiguous, the output's shape), add dL/d(input_i) into grad_inputs[i]. grad_inputs[i] is
/// undefined when input i needs no gradient: computing only what is needed is the per-input
/// needs-grad mask.
class Node {
 public:
  virtual ~Node() = default;
  Node(const Node&) = delete;
  Node& operator=(const Node&) = delete;

  /// The op's name, as in ops.h ("matmul", "softmax", ...).
  const char* name() const { return name_; }
  const TensorList& inputs() const { return inputs_; }
  /// False once backward ran without retain_graph (the saved tensors are gone).
  bool has_saved() const { return saved_; }
  /// Runs the VJP; throws std::logic_error if the graph was already freed.
  void apply(const Tensor& grad_output, std::span<Tensor> grad_inputs);
  /// The tensors the VJP reads back (empty once released).
  virtual std::span<const SavedTensor> saved_tensors() const = 0;
  /// Throws std::logic_error naming this op, the saved tensor, its shape and both versions when
  /// a saved tensor was changed in place since the forward. The engine calls it for every node
  /// before running any VJP.
  void check_saved_versions(const char* who) const;
  /// Drops the inputs and everything the VJP saved.
  void release();
  /// Keeps the gradient of this node's output in output->grad after each backward pass
  /// (Tensor::retain_grad). Held weakly: a node never owns its output.
  void retain_grad_of(const std::shared_ptr<detail::TensorImpl>& output) { retained_ = output; }
  /// True when retain_grad_of(output) was called for this output.
  bool retains_grad_of(const detail::TensorImpl* output) const {
    return output && retained_.lock().get() == output;
  }
  /// A register_hook() of this node's output: run on its gradient once complete.
  void add_hook(GradHook hook) { hooks_.push_back(std::move(hook)); }
  /// How the VJP meets its gradient buffers (record()'s argument).
  GradBuffers grad_buffers() const { return buffers_; }

 protected:
  Node(const char* name, TensorList inputs, GradBuffers buffers)
      : name_(name), inputs_(std::move(inputs)), buffers_(buffers) {}
  virtual void backward(const Tensor& grad_output, std::span<Tensor> grad_inputs) = 0;
  virtual void drop_saved() = 0;

 private:
  friend class Engine;
  const char* name_;
  TensorList inputs_;
  GradBuffers buffers_;
  bool saved_ = true;
  // The engine's bookkeeping during one backward pass: the pass that last visited this node,
  // the gradient of its output summed so far, and (grad() only) whether that gradient is needed
  // (the output is wanted, or the VJP must run) and whether the VJP must run (an input needs a
  // gradient: a wanted leaf, or a tensor whose node needs its gradient).
  uint64_t visited_in_pass_ = 0;
  Tensor grad_;
  bool grad_needed_ = true;
  bool vjp_needed_ = true;
  std::weak_ptr<detail::TensorImpl> retained_;  // the output whose gradient retain_grad() keeps
  std::vector<GradHook> hooks_;                 // the output's register_hook()s
};

/// The node of an op whose VJP is the closure F, given the N saved tensors after the gradients:
/// void F(const Tensor& grad_output, std::span<Tensor> grad_inputs, const Tensor& saved_0, ...).
/// F may capture sizes and the forward's private buffers, never a tensor someone else holds.
template <class F, size_t N = 0>
class ClosureNode final : public Node {
 public:
  ClosureNode(const char* name, TensorList inputs, std::array<SavedTensor, N> saved, F backward,
              GradBuffers buffers)
      : Node(name, std::move(inputs), buffers),
        saved_(std::move(saved)),
        backward_(std::move(backward)) {}
  std::span<const SavedTensor> saved_tensors() const override {
    return backward_ ? std::span<const SavedTensor>(saved_) : std::span<const SavedTensor>();
  }

 private:
  void backward(const Tensor& grad_output, std::span<Tensor> grad_inputs) override {
    std::apply([&](const auto&... s) { (*backward_)(grad_output, grad_inputs, s.tensor...); },
               saved_);
  }
  void drop_saved() override {
    backward_.reset();
    for (SavedTensor& s : saved_) s.tensor = Tensor();
  }
  std::array<SavedTensor, N> saved_;
  std::optional<F> backward_;
};

/// True while ops record the graph (the default). Thread-local.
bool grad_enabled();

/// Turns graph recording off for its lifetime (evaluation, sampling, optimizer updates), as
/// torch.no_grad(). Nests.
class NoGradGuard {
 public:
  NoGradGuard();
  ~NoGradGuard();
  NoGradGuard(const NoGradGuard&) = delete;
  NoGradGuard& operator=(const NoGradGuard&) = delete;

 private:
  bool previous_;
};

namespace detail {
/// Attaches node as output's grad_fn and marks output as requiring grad.
void attach_node(const Tensor& output, std::shared_ptr<Node> node);
/// True when grad mode is on and any of inputs requires grad: when record keeps a node.
bool needs_node(const TensorList& inputs);
/// The slot of one saved tensor: detached, with its version now.
SavedTensor save(const Save& s);
}  // namespace detail

/// Records `output = name(inputs)` in the graph when grad mode is on and any input requires
/// grad, with `backward` (see ClosureNode) as its VJP, which reads the tensors of `saved`
/// (`{{"x", x}, {"output", y}}`) as its parameters after g and gi, in that order; backward()
/// throws if one of them was changed in place in between. `buffers`: whether the VJP adds into
/// its gradient buffers or may write the first gradient (GradBuffers). Otherwise returns output
/// untouched (and backward and saved are dropped unused). Returns output.
template <class F, size_t N>
Tensor record(Tensor output, const char* name, TensorList inputs, const Save (&saved)[N],
              F&& backward, GradBuffers buffers = GradBuffers::accumulate) {
  if (!detail::needs_node(inputs)) return output;
  using NodeType = ClosureNode<std::decay_t<F>, N>;
  std::array<SavedTensor, N> slots;
  for (size_t i = 0; i < N; ++i) slots[i] = detail::save(saved[i]);
  detail::attach_node(
      output, std::allocate_shared<NodeType>(PoolAllocator<NodeType>(), name, std::move(inputs),
                                             std::move(slots), std::forward<F>(backward), buffers));
  return output;
}

/// record() for a VJP that reads no tensor back (add, reshape, sum, ...): F(g, gi).
template <class F>
Tensor record(Tensor output, const char* name, TensorList inputs, F&& backward,
              GradBuffers buffers = GradBuffers::accumulate) {
  if (!detail::needs_node(inputs)) return output;
  using NodeType = ClosureNode<std::decay_t<F>, 0>;
  detail::attach_node(
      output, std::allocate_shared<NodeType>(PoolAllocator<NodeType>(), name, std::move(inputs),
                                             std::array<SavedTensor, 0>{},
                                             std::forward<F>(backward), buffers));
  return output;
}

/// For a VJP of one's own (see record()): adds `value` into `grad_input`, the buffer gi[i] the
/// engine hands the VJP for input i, summing `value` over the dimensions the input was
/// broadcast along when value's shape is the broadcast one (torch's sum_to_size), so that an op
/// broadcasting (3,) against (2, 3) adds a (2, 3) gradient into a (3,) buffer. A no-op when
/// grad_input is undefined (the input needs no gradient: skip computing value then). Adds,
/// never overwrites: an input used twice gets both contributions. Throws std::invalid_argument
/// for an undefined value, another dtype, or a shape that does not broadcast to value's.
void accumulate_grad(const Tensor& grad_input, const Tensor& value);

namespace detail {
/// For tests: false makes the engine hand every VJP zero-filled buffers, as if each op were
/// recorded with GradBuffers::accumulate (first_gradient then always says false), so that a
/// test can check that writing the first gradient gives the gradients of adding it. Per thread.
void set_first_write_enabled(bool enabled);
}  // namespace detail

/// Runs reverse mode from root with upstream gradient grad_output (see Tensor::backward).
void run_backward(const Tensor& root, const Tensor& grad_output, bool retain_graph);

/// torch.autograd.grad(output, inputs): the gradient of `output` with respect to each of
/// `inputs` (leaves or intermediate tensors), returned in their order instead of added into
/// grad(): no tensor's grad() changes, and retain_grad() tensors keep theirs. grad_output and
/// retain_graph as Tensor::backward's; hooks run as in backward, on the gradients computed.
/// Only the VJPs on a path from output to an input run, and each VJP is handed buffers for the
/// inputs on such a path only (undefined for the rest, as for an input that needs no gradient):
/// other trainable leaves in the graph get nothing and cost nothing, as in torch.autograd.grad.
/// An input given twice gets its gradient twice. Throws
/// std::invalid_argument for an empty `inputs` or naming the position of an input that does not
/// require grad or that output was not computed from (torch's allow_unused=False), and what
/// backward throws: std::logic_error when an earlier pass without retain_graph freed the graph.
/// create_graph=true (torch's, for a gradient of a gradient) throws std::invalid_argument: the
/// VJPs are not themselves recorded.
std::vector<Tensor> grad(const Tensor& output, const std::vector<Tensor>& inputs,
                         const Tensor& grad_output = Tensor(), bool retain_graph = false,
                         bool create_graph = false);

}  // namespace attograd
