#include "autograd/engine.h"

#include <algorithm>
#include <atomic>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "autograd/detail/tensor_impl.h"
#include "autograd/kernels/elementwise.h"

namespace attograd {

using detail::TensorImpl;

namespace {
// What backward() and grad() say of a graph that an earlier pass freed.
std::string freed_message(const char* who, const char* node) {
  return std::string(who) + ": the graph through '" + node +
         "' was already freed by an earlier backward() or grad(); pass retain_graph=true to the "
         "first call to backpropagate through it twice";
}
}  // namespace

void Node::apply(const Tensor& grad_output, std::span<Tensor> grad_inputs) {
  if (!saved_) throw std::logic_error(freed_message("backward", name_));
  backward(grad_output, grad_inputs);
}

void Node::check_saved_versions(const char* who) const {
  for (const SavedTensor& s : saved_tensors()) {
    if (!s.tensor.defined()) continue;
    const uint64_t now = s.tensor.version();
    if (now == s.version) continue;
    throw std::logic_error(
        std::string(who) + ": '" + name_ + "' saved its tensor '" + s.name + "' " +
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
  // The fresh buffers (GradBuffers::first_write) handed to the VJP now running and not claimed
  // by first_gradient yet: zero-filled when it returns.
  boost::container::small_vector<Tensor, 4> fresh;
  bool running = false;     // a pass is under way on this thread
  bool first_write = true;  // detail::set_first_write_enabled
};

BackwardLists& backward_lists() {
  thread_local BackwardLists lists;
  return lists;
}

// The number of the next backward pass, which marks the nodes it visits. One count for the whole
// process, not one per thread: with per-thread counts, a graph walked by one thread at its pass 1
// and then by another at its own pass 1 looked visited already, and the second backward ran
// only the root (a helper's finding, 2026-12-06).
std::atomic<uint64_t> next_pass{1};

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
    const uint64_t pass = next_pass.fetch_add(1, std::memory_order_relaxed);
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

  // grad(): marks which nodes of lists.order must run their VJP, and which must have the
  // gradient of their output, for the gradients of `wanted` and nothing else. A node's VJP runs
  // when one of its inputs needs a gradient: a wanted leaf, or a tensor whose node needs its
  // gradient; a node needs its output's gradient when that output is wanted or its VJP runs.
  // lists.order puts every node after the nodes it consumes, so one forward sweep settles it.
  // Deciding this here, once, is what keeps every VJP's contract: a buffer is undefined only for
  // an input that needs no gradient, never for one the op cannot tell apart from a needed one.
  static void mark_needed(const BackwardLists& lists, const std::vector<Tensor>& wanted) {
    for (const std::shared_ptr<Node>& node : lists.order) {
      bool vjp = false;
      for (const Tensor& in : node->inputs()) {
        if (in.defined() && in.requires_grad() && input_needed(wanted, in)) {
          vjp = true;
          break;
        }
      }
      node->vjp_needed_ = vjp;
      node->grad_needed_ = vjp;
      for (const Tensor& w : wanted)
        if (!w.is_leaf() && w.grad_fn() == node) node->grad_needed_ = true;
    }
  }

  // Whether grad() needs the gradient of `in`, an input that requires grad: a wanted leaf, or
  // a tensor whose node needs its gradient (mark_needed set it, the producer coming first).
  static bool input_needed(const std::vector<Tensor>& wanted, const Tensor& in) {
    return in.is_leaf() ? is_wanted(wanted, in) : in.grad_fn()->grad_needed_;
  }

  static bool is_wanted(const std::vector<Tensor>& wanted, const Tensor& leaf) {
    for (const Tensor& w : wanted)
      if (detail::impl(w) == detail::impl(leaf)) return true;
    return false;
  }

  // The pass. With `wanted` (grad()), the gradients of those tensors go into *found, in
  // their order, and nothing is added into any grad() or retained gradient.
  static void run(const Tensor& root, const Tensor& grad_output, bool retain_graph,
                  const std::vector<Tensor>* wanted = nullptr,
                  std::vector<Tensor>* found = nullptr);
};

namespace {

// g after `hooks` (register_hook), each given the previous one's result; a replacement must
// have g's shape and dtype, and is copied, so that no gradient buffer aliases a hook's tensor.
Tensor apply_hooks(const std::vector<GradHook>& hooks, Tensor g) {
  for (const GradHook& hook : hooks) {
    const Tensor r = hook(g);
    if (!r.defined()) continue;
    if (r.shape() != g.shape() || r.dtype() != g.dtype())
      throw std::invalid_argument("register_hook: a hook returned a gradient of shape " +
                                  shape_str(r.shape()) + " " + dtype_name(r.dtype()) +
                                  ", expected " + shape_str(g.shape()) + " " +
                                  dtype_name(g.dtype()) +
                                  " (return an undefined Tensor to keep "
                                  "the gradient unchanged)");
    g = r.clone();
  }
  return g;
}

// Puts g at every position of t's impl among `wanted` (an input given twice gets it twice),
// each a tensor of its own.
void put_found(const std::vector<Tensor>& wanted, const detail::TensorImpl* t, const Tensor& g,
               std::vector<Tensor>& found) {
  bool first = true;
  for (size_t i = 0; i < wanted.size(); ++i) {
    if (detail::impl(wanted[i]) != t) continue;
    found[i] = first ? g : g.clone();
    first = false;
  }
}

}  // namespace

void Engine::run(const Tensor& root, const Tensor& grad_output, bool retain_graph,
                 const std::vector<Tensor>* wanted, std::vector<Tensor>* found) {
  const char* const who = wanted ? "grad" : "backward";  // the caller, for the messages
  if (!root.requires_grad())
    throw std::logic_error(
        std::string(who) + ": the output does not require grad and has no grad_fn " +
        (grad_enabled()
             ? "(mark a leaf with requires_grad_() before computing from it; a detach()ed "
               "tensor has no graph)"
             : "(grad mode was off when it was computed: under a NoGradGuard, or inside a "
               "backward pass, as in a hook, nothing is recorded)"));
  Tensor seed = grad_output;
  if (!seed.defined()) {
    if (root.numel() != 1)
      throw std::invalid_argument(std::string(who) +
                                  ": grad_output can be omitted only for a one-element "
                                  "output; this output has shape " +
                                  shape_str(root.shape()) + " (pass grad_output, as torch's)");
    seed = Tensor::ones(root.shape(), root.dtype());
  } else if (seed.shape() != root.shape() || seed.dtype() != root.dtype()) {
    throw std::invalid_argument(
        std::string(who) + ": grad_output must match the output, expected " +
        shape_str(root.shape()) + " " + dtype_name(root.dtype()) + ", got " +
        shape_str(seed.shape()) + " " + dtype_name(seed.dtype()));
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
      if (impl.grad_void)  // zero_grad_deferred: g is the first gradient
        std::copy_n(g.data<T>(), acc.numel(), acc.data<T>());
      else
        kernels::axpy<T>(acc.data<T>(), T(1), g.data<T>(), acc.numel());
    });
    impl.grad_void = false;
    acc.bump_version();
  };

  if (root.is_leaf()) {
    TensorImpl& impl = *detail::impl(root);
    seed = apply_hooks(impl.hooks, seed);
    if (!wanted)
      add_into_grad(impl, seed);
    else
      put_found(*wanted, &impl, seed, *found);
    return;
  }

  BackwardLists& lists = backward_lists();
  if (lists.running)
    throw std::logic_error(
        std::string(who) +
        ": called from inside a backward pass (higher-order gradients are not supported)");
  lists.running = true;
  topological_order(root.grad_fn(), lists);
  if (wanted) mark_needed(lists, *wanted);
  // dL/d(output) of each node still to run lives on the node (Node::grad_), dropped as soon as
  // the node has run.
  root.grad_fn()->grad_ = seed;
  // However the pass ends, no node keeps a pending gradient and the lists keep no node alive.
  struct EndOfPass {
    BackwardLists& lists;
    ~EndOfPass() {
      // A VJP that threw leaves its unclaimed buffers: a leaf's among them must read zeros.
      for (Tensor& unclaimed : lists.fresh) unclaimed.fill_(0.0);
      for (const std::shared_ptr<Node>& n : lists.order) n->grad_ = Tensor();
      lists.order.clear();
      lists.fresh.clear();
      lists.running = false;
    }
  } end_of_pass{lists};
  // Every saved tensor is checked before the first VJP runs, so a refused backward has added
  // nothing to any gradient. One integer comparison per saved tensor.
  for (const std::shared_ptr<Node>& n : lists.order) n->check_saved_versions(who);
  // A node freed by an earlier pass (no retain_graph) has lost its inputs too, so the walk above
  // stopped at it, and whether a path to the wanted tensors runs through it can no longer be told:
  // refused now, before anything is added, by backward() and grad() alike. (torch keeps a freed
  // node's edges and refuses only a needed one; a freed branch grad() does not need is refused
  // here too, never silently dropped from a gradient.)
  for (const std::shared_ptr<Node>& n : lists.order)
    if (!n->saved_) throw std::logic_error(freed_message(who, n->name_));
  // Leaves with hooks, or (grad()) wanted leaves: their gradient of this pass is summed apart,
  // then hooked, then added into grad() or returned. Held by the pass only.
  std::vector<std::pair<TensorImpl*, Tensor>> apart;
  auto apart_buffer = [&](const Tensor& leaf) -> Tensor& {
    TensorImpl* impl = detail::impl(leaf);
    for (auto& [owner, g] : apart)
      if (owner == impl) return g;
    return apart.emplace_back(impl, Tensor::zeros(leaf.shape(), leaf.dtype())).second;
  };
  for (auto it = lists.order.rbegin(); it != lists.order.rend(); ++it) {
    Node* node = it->get();
    Tensor grad_out = std::move(node->grad_);
    node->grad_ = Tensor();
    // grad_out is complete here (every consumer of the output has run): the output's hooks,
    // then retain_grad(), which keeps a copy, since the VJP below may still read grad_out.
    // grad(): a node off every path to the wanted tensors received no gradient and runs
    // nothing; its graph is kept, as torch frees only the nodes a pass runs.
    if (wanted && !node->grad_needed_) continue;  // not run, so not freed (as torch)
    if (!node->hooks_.empty()) grad_out = apply_hooks(node->hooks_, std::move(grad_out));
    if (wanted) {
      for (size_t i = 0; i < wanted->size(); ++i)
        if (!(*wanted)[i].is_leaf() && (*wanted)[i].grad_fn().get() == node)
          (*found)[i] = grad_out.clone();
    } else if (const std::shared_ptr<TensorImpl> out = node->retained_.lock()) {
      add_into_grad(*out, out->grad ? grad_out : grad_out.clone());
    }
    if (wanted && !node->vjp_needed_) continue;  // the output was wanted, nothing below it is

    const TensorList& inputs = node->inputs();
    const bool first_write = lists.first_write && node->grad_buffers() == GradBuffers::first_write;
    TensorList grad_inputs(inputs.size());
    for (size_t i = 0; i < inputs.size(); ++i) {
      const Tensor& in = inputs[i];
      if (!in.requires_grad()) continue;
      if (wanted && !input_needed(*wanted, in)) {
        continue;  // grad(): this input leads to no wanted tensor
      } else if (in.is_leaf() && wanted) {
        grad_inputs[i] = apart_buffer(in);  // grad(): a wanted leaf's gradient, summed apart
      } else if (in.is_leaf() && !detail::impl(in)->hooks.empty()) {
        grad_inputs[i] = apart_buffer(in);
      } else if (in.is_leaf()) {
        // Accumulate straight into the leaf's buffer: backward twice without zero_grad sums.
        TensorImpl* impl = detail::impl(in);
        if (!impl->grad) impl->grad = detail::impl_ptr(Tensor::zeros(in.shape(), in.dtype()));
        grad_inputs[i] = detail::wrap(impl->grad);
        if (impl->grad_void && first_write) {
          // zero_grad_deferred: the buffer's zeros were never written. An op that may write its
          // first gradient gets it as fresh (written, or filled with zeros after it if unclaimed,
          // as an intermediate tensor's) ...
          impl->grad_void = false;
          lists.fresh.push_back(grad_inputs[i]);
        } else if (impl->grad_void) {
          in.grad();  // ... any other gets the zeros now, written where grad() writes them
        }
        grad_inputs[i].bump_version();  // the VJP below adds into the leaf's gradient
      } else {
        // An intermediate tensor: its first gradient this pass makes the buffer, which the
        // producing node's VJP reads when its turn comes.
        Tensor& slot = in.grad_fn()->grad_;
        if (!slot.defined() && first_write) {
          slot = Tensor::empty(in.shape(), in.dtype());
          lists.fresh.push_back(slot);
        } else if (!slot.defined()) {
          slot = Tensor::zeros(in.shape(), in.dtype());
        }
        grad_inputs[i] = slot;
      }
    }
    node->apply(grad_out, std::span<Tensor>(grad_inputs.data(), grad_inputs.size()));
    for (Tensor& unclaimed : lists.fresh) unclaimed.fill_(0.0);
    lists.fresh.clear();
    if (!retain_graph) node->release();
  }
  for (auto& [impl, g] : apart) {
    Tensor hooked = apply_hooks(impl->hooks, std::move(g));
    if (wanted)
      put_found(*wanted, impl, hooked, *found);
    else
      add_into_grad(*impl, hooked);
  }
}

bool first_gradient(const Tensor& grad_input) {
  if (!grad_input.defined()) return false;
  auto& fresh = backward_lists().fresh;
  const auto it = std::find_if(fresh.begin(), fresh.end(), [&](const Tensor& t) {
    return detail::impl(t) == detail::impl(grad_input);
  });
  if (it == fresh.end()) return false;
  fresh.erase(it);
  return true;
}

void detail::set_first_write_enabled(bool enabled) { backward_lists().first_write = enabled; }

void run_backward(const Tensor& root, const Tensor& grad_output, bool retain_graph) {
  Engine::run(root, grad_output, retain_graph);
}

std::vector<Tensor> grad(const Tensor& output, const std::vector<Tensor>& inputs,
                         const Tensor& grad_output, bool retain_graph, bool create_graph) {
  if (create_graph)
    throw std::invalid_argument(
        "grad: create_graph=true (double backward, a gradient of a gradient) is not supported: "
        "the VJPs are not recorded, so the gradients returned have no graph; compute a second "
        "derivative by finite differences of grad() (autograd/gradcheck.h) instead");
  if (inputs.empty())
    throw std::invalid_argument(
        "grad: no inputs given; name the tensors whose gradients you want (torch.autograd.grad "
        "refuses an empty list too)");
  for (size_t i = 0; i < inputs.size(); ++i)
    if (!inputs[i].defined() || !inputs[i].requires_grad())
      throw std::invalid_argument("grad: input " + std::to_string(i) +
                                  " does not require grad, so it has no gradient (mark a leaf "
                                  "with requires_grad_() before computing from it)");
  if (!output.defined()) throw std::invalid_argument("grad: the output is an undefined tensor");
  std::vector<Tensor> found(inputs.size());
  Engine::run(output, grad_output, retain_graph, &inputs, &found);
  for (size_t i = 0; i < found.size(); ++i)
    if (!found[i].defined())
      throw std::invalid_argument("grad: input " + std::to_string(i) +
                                  " was not used to compute the output, so it has no gradient "
                                  "(torch's allow_unused=False)");
  return found;
}

}  // namespace attograd
