#include "autograd/engine.h"

#include <stdexcept>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include "autograd/kernels/elementwise.h"

namespace attograd {

void Node::apply(const Tensor& grad_output, std::span<Tensor> grad_inputs) {
  if (!backward_)
    throw std::logic_error(std::string("backward: the graph through '") + name_ +
                           "' was already freed by an earlier backward(); pass retain_graph=true "
                           "to the first call to backpropagate through it twice");
  backward_(grad_output, grad_inputs);
}

void Node::release() {
  backward_ = nullptr;  // frees the tensors the VJP saved
  inputs_.clear();
}

namespace {
thread_local bool g_grad_enabled = true;
}  // namespace

bool grad_enabled() { return g_grad_enabled; }

NoGradGuard::NoGradGuard() : previous_(g_grad_enabled) { g_grad_enabled = false; }
NoGradGuard::~NoGradGuard() { g_grad_enabled = previous_; }

Tensor record(Tensor output, const char* name, std::vector<Tensor> inputs, BackwardFn backward) {
  if (!g_grad_enabled) return output;
  bool any = false;
  for (const Tensor& t : inputs) any = any || t.requires_grad();
  if (!any) return output;
  TensorImpl* impl = output.impl();
  impl->grad_fn = std::make_shared<Node>(name, std::move(inputs), std::move(backward));
  impl->requires_grad = true;
  return output;
}

namespace {

// Nodes reachable from root through inputs that require grad, in topological order (every
// node after all nodes it consumes). Iterative post-order DFS: the graph may be a
// million-node chain.
std::vector<std::shared_ptr<Node>> topological_order(const std::shared_ptr<Node>& root) {
  std::vector<std::shared_ptr<Node>> order;
  std::unordered_set<Node*> visited;
  // (node, index of the next input to visit)
  std::vector<std::pair<std::shared_ptr<Node>, size_t>> stack;
  stack.emplace_back(root, 0);
  visited.insert(root.get());
  while (!stack.empty()) {
    auto& [node, next] = stack.back();
    const auto& inputs = node->inputs();
    if (next < inputs.size()) {
      const Tensor& in = inputs[next++];
      const std::shared_ptr<Node>& child = in.defined() ? in.impl()->grad_fn : nullptr;
      if (child && in.requires_grad() && visited.insert(child.get()).second) stack.emplace_back(child, 0);
    } else {
      order.push_back(std::move(node));
      stack.pop_back();
    }
  }
  return order;
}

}  // namespace

void run_backward(const Tensor& root, const Tensor& grad_output, bool retain_graph) {
  if (!root.requires_grad())
    throw std::logic_error("backward: the tensor does not require grad and has no grad_fn "
                           "(mark a leaf with set_requires_grad() before computing from it)");
  Tensor seed = grad_output;
  if (!seed.defined()) {
    if (root.numel() != 1)
      throw std::invalid_argument("backward: grad_output can be omitted only for a one-element "
                                  "output; this output has shape " + shape_str(root.shape()));
    seed = Tensor::ones(root.shape(), root.dtype());
  } else if (seed.shape() != root.shape() || seed.dtype() != root.dtype()) {
    throw std::invalid_argument("backward: grad_output must match the output, expected " +
                                shape_str(root.shape()) + " " + dtype_name(root.dtype()) + ", got " +
                                shape_str(seed.shape()) + " " + dtype_name(seed.dtype()));
  } else {
    seed = seed.clone();  // VJPs read it; never alias the caller's buffer
  }

  NoGradGuard no_grad;  // VJPs are not themselves recorded
  auto add_into_leaf = [](const Tensor& leaf, const Tensor& g) {
    TensorImpl* impl = leaf.impl();
    if (!impl->grad) {
      impl->grad = g.impl_ptr();
      return;
    }
    Tensor acc(impl->grad);
    dispatch_floating(acc.dtype(), "backward", [&]<typename T>() {
      kernels::axpy<T>(acc.data<T>(), T(1), g.data<T>(), acc.numel());
    });
  };

  if (root.is_leaf()) {
    add_into_leaf(root, seed);
    return;
  }

  std::vector<std::shared_ptr<Node>> order = topological_order(root.grad_fn());
  // dL/d(output) of each node still to run; erased as soon as the node has run.
  std::unordered_map<Node*, Tensor> grads;
  grads.emplace(root.grad_fn().get(), seed);

  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    Node* node = it->get();
    auto found = grads.find(node);
    Tensor grad_out = std::move(found->second);
    grads.erase(found);

    const auto& inputs = node->inputs();
    std::vector<Tensor> grad_inputs(inputs.size());
    for (size_t i = 0; i < inputs.size(); ++i) {
      const Tensor& in = inputs[i];
      if (!in.requires_grad()) continue;
      if (in.is_leaf()) {
        // Accumulate straight into the leaf's buffer: backward twice without zero_grad sums.
        TensorImpl* impl = in.impl();
        if (!impl->grad) impl->grad = Tensor::zeros(in.shape(), in.dtype()).impl_ptr();
        grad_inputs[i] = Tensor(impl->grad);
      } else {
        auto [slot, fresh] = grads.try_emplace(in.grad_fn().get());
        if (fresh) slot->second = Tensor::zeros(in.shape(), in.dtype());
        grad_inputs[i] = slot->second;
      }
    }
    node->apply(grad_out, grad_inputs);
    if (!retain_graph) node->release();
  }
}

}  // namespace attograd
