#include "autograd/engine.h"

#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "autograd/detail/tensor_impl.h"
#include "autograd/kernels/elementwise.h"

namespace attograd {

using detail::TensorImpl;

void Node::apply(const Tensor& grad_output, std::span<Tensor> grad_inputs) {
  if (!saved_)
    throw std::logic_error(std::string("backward: the graph through '") + name_ +
                           "' was already freed by an earlier backward(); pass retain_graph=true "
                           "to the first call to backpropagate through it twice");
  backward(grad_output, grad_inputs);
}

void Node::check_saved_versions() const {
  for (const SavedTensor& s : saved_tensors()) {
    if (!s.tensor.defined()) continue;
    const uint64_t now = s.tensor.version();
    if (now == s.version) continue;
    throw std::logic_error(
        std::string("backward: '") + name_ + "' saved its tensor '" + s.name + "' " +
        shape_str(s.tensor.shape()) + " " + dtype_name(s.tensor.dtype()) +
        " for the gradient at version " + std::to_string(s.version) +
        ", and it was changed in place since (version " + std::to_string(now) +
        " now: fill_, copy_from, normal_, an optimizer step, ...), so the gradient would be "
        "silently wrong; clone() the tensor before changing it, or change it after backward() "
        "(PyTorch: one of the variables needed for gradient computation has been modified by an "
        "inplace operation)");
  }
}

void Node::release() {
  saved_ = false;
  drop_saved();  // frees the tensors the VJP saved
  inputs_.clear();
  grad_ = Tensor();
  retained_.reset();
}

namespace {
thread_local bool g_grad_enabled = true;
}  // namespace

bool grad_enabled() { return g_grad_enabled; }

NoGradGuard::NoGradGuard() : previous_(g_grad_enabled) { g_grad_enabled = false; }
NoGradGuard::~NoGradGuard() { g_grad_enabled = previous_; }

namespace detail {

bool needs_node(const TensorList& inputs) {
  if (!g_grad_enabled) return false;
  for (const Tensor& t : inputs)
    if (t.requires_grad()) return true;
  return false;
}

SavedTensor save(const Save& s) {
  if (!s.tensor.defined()) return SavedTensor{s.name, Tensor(), 0};
  return SavedTensor{s.name, s.tensor.detach(), s.tensor.version()};
}

void attach_node(const Tensor& output, std::shared_ptr<Node> node) {
  TensorImpl* impl = detail::impl(output);
  impl->grad_fn = std::move(node);
  impl->requires_grad = true;
}

}  // namespace detail

namespace {

// The work lists of a backward pass, kept per thread and reused (cleared, not freed), so that a
// training step's backward allocates nothing for them after the first.
struct BackwardLists {
  std::vector<std::shared_ptr<Node>> order;                     // topological order
  std::vector<std::pair<std::shared_ptr<Node>, size_t>> stack;  // (node, next input to visit)
  uint64_t pass = 0;                                            // marks the nodes this pass visited
  bool running = false;  // a pass is under way on this thread
};

BackwardLists& backward_lists() {
  thread_local BackwardLists lists;
  return lists;
}

}  // namespace

// The backward pass. A class so that Node can name it a friend: the pass keeps its marks and
// pending gradients on the nodes.
class Engine {
 public:
  // Fills lists.order with the nodes reachable from root through inputs that require grad, in
  // topological order (every node after all nodes it consumes). Iterative post-order DFS: the
  // graph may be a million-node chain. A node is visited once per pass: it carries the pass
  // number.
  static void topological_order(const std::shared_ptr<Node>& root, BackwardLists& lists) {
    const uint64_t pass = ++lists.pass;
    lists.order.clear();
    lists.stack.clear();
    lists.stack.emplace_back(root, 0);
    root->visited_in_pass_ = pass;
    while (!lists.stack.empty()) {
      auto& [node, next] = lists.stack.back();
      const TensorList& inputs = node->inputs();
      if (next < inputs.size()) {
        const Tensor& in = inputs[next++];
        const std::shared_ptr<Node>& child = in.defined() ? detail::impl(in)->grad_fn : nullptr;
        if (child && in.requires_grad() && child->visited_in_pass_ != pass) {
          child->visited_in_pass_ = pass;
          lists.stack.emplace_back(child, 0);
        }
      } else {
        lists.order.push_back(std::move(node));
        lists.stack.pop_back();
      }
    }
  }

  static void run(const Tensor& root, const Tensor& grad_output, bool retain_graph);
};

void Engine::run(const Tensor& root, const Tensor& grad_output, bool retain_graph) {
  if (!root.requires_grad())
    throw std::logic_error(
        "backward: the tensor does not require grad and has no grad_fn "
        "(mark a leaf with set_requires_grad() before computing from it)");
  Tensor seed = grad_output;
  if (!seed.defined()) {
    if (root.numel() != 1)
      throw std::invalid_argument(
          "backward: grad_output can be omitted only for a one-element "
          "output; this output has shape " +
          shape_str(root.shape()));
    seed = Tensor::ones(root.shape(), root.dtype());
  } else if (seed.shape() != root.shape() || seed.dtype() != root.dtype()) {
    throw std::invalid_argument("backward: grad_output must match the output, expected " +
                                shape_str(root.shape()) + " " + dtype_name(root.dtype()) +
                                ", got " + shape_str(seed.shape()) + " " +
                                dtype_name(seed.dtype()));
  } else {
    seed = seed.clone();  // VJPs read it; never alias the caller's buffer
  }

  NoGradGuard no_grad;  // VJPs are not themselves recorded
  // Adds g into a tensor's kept gradient (a leaf's, or a retain_grad() tensor's); the first time,
  // g itself becomes the buffer, so it must be a tensor nobody else holds.
  auto add_into_grad = [](TensorImpl& impl, const Tensor& g) {
    if (!impl.grad) {
      impl.grad = detail::impl_ptr(g);
      return;
    }
    Tensor acc = detail::wrap(impl.grad);
    dispatch_floating(acc.dtype(), "backward", [&]<typename T>() {
      kernels::axpy<T>(acc.data<T>(), T(1), g.data<T>(), acc.numel());
    });
    acc.bump_version();
  };

  if (root.is_leaf()) {
    add_into_grad(*detail::impl(root), seed);
    return;
  }

  BackwardLists& lists = backward_lists();
  if (lists.running)
    throw std::logic_error(
        "backward: called from inside a backward pass (higher-order gradients are not supported)");
  lists.running = true;
  topological_order(root.grad_fn(), lists);
  // dL/d(output) of each node still to run lives on the node (Node::grad_), dropped as soon as
  // the node has run.
  root.grad_fn()->grad_ = seed;
  // However the pass ends, no node keeps a pending gradient and the lists keep no node alive.
  struct EndOfPass {
    BackwardLists& lists;
    ~EndOfPass() {
      for (const std::shared_ptr<Node>& n : lists.order) n->grad_ = Tensor();
      lists.order.clear();
      lists.running = false;
    }
  } end_of_pass{lists};
  // Every saved tensor is checked before the first VJP runs, so a refused backward has added
  // nothing to any gradient. One integer comparison per saved tensor.
  for (const std::shared_ptr<Node>& n : lists.order) n->check_saved_versions();
  for (auto it = lists.order.rbegin(); it != lists.order.rend(); ++it) {
    Node* node = it->get();
    Tensor grad_out = std::move(node->grad_);
    node->grad_ = Tensor();
    // retain_grad(): grad_out is complete here (every consumer of the output has run); the
    // tensor keeps a copy, since the VJP below may still read grad_out.
    if (const std::shared_ptr<TensorImpl> out = node->retained_.lock())
      add_into_grad(*out, out->grad ? grad_out : grad_out.clone());

    const TensorList& inputs = node->inputs();
    TensorList grad_inputs(inputs.size());
    for (size_t i = 0; i < inputs.size(); ++i) {
      const Tensor& in = inputs[i];
      if (!in.requires_grad()) continue;
      if (in.is_leaf()) {
        // Accumulate straight into the leaf's buffer: backward twice without zero_grad sums.
        TensorImpl* impl = detail::impl(in);
        if (!impl->grad) impl->grad = detail::impl_ptr(Tensor::zeros(in.shape(), in.dtype()));
        grad_inputs[i] = detail::wrap(impl->grad);
        grad_inputs[i].bump_version();  // the VJP below adds into the leaf's gradient
      } else {
        Tensor& slot = in.grad_fn()->grad_;
        if (!slot.defined()) slot = Tensor::zeros(in.shape(), in.dtype());
        grad_inputs[i] = slot;
      }
    }
    node->apply(grad_out, std::span<Tensor>(grad_inputs.data(), grad_inputs.size()));
    if (!retain_graph) node->release();
  }
}

void run_backward(const Tensor& root, const Tensor& grad_output, bool retain_graph) {
  Engine::run(root, grad_output, retain_graph);
}

}  // namespace attograd
