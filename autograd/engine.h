// The dynamic graph and the reverse-mode engine.
//
// Every op that has an input requiring grad records a Node on its output: the inputs (the
// graph's edges) and a backward function, the op's vector-Jacobian product. Tensor::backward()
// orders the nodes topologically with an explicit stack (never the call stack), then calls each
// node's VJP once, in reverse order. VJPs ACCUMULATE (+=) into gradient buffers the engine
// allocates (zero-filled, contiguous, in each input's shape), so fan-out and tied weights need
// no special case.
//
// Ownership rule: a node owns its inputs (and whatever its backward saved), never its own
// output. A VJP that needs the forward's output saves output.detach(), which shares the data
// but not the graph, so there is no shared_ptr cycle.
#pragma once

#include <functional>
#include <span>
#include <string>
#include <vector>

#include "autograd/tensor.h"

namespace attograd {

/// The VJP of one op: given dL/d(output) (contiguous, the output's shape), add dL/d(input_i)
/// into grad_inputs[i]. grad_inputs[i] is undefined when input i needs no gradient: computing
/// only what is needed is the per-input needs-grad mask.
using BackwardFn = std::function<void(const Tensor& grad_output, std::span<Tensor> grad_inputs)>;

/// One recorded op application.
class Node {
 public:
  Node(const char* name, std::vector<Tensor> inputs, BackwardFn backward)
      : name_(name), inputs_(std::move(inputs)), backward_(std::move(backward)) {}

  /// The op's name, as in ops.h ("matmul", "softmax", ...).
  const char* name() const { return name_; }
  const std::vector<Tensor>& inputs() const { return inputs_; }
  /// False once backward ran without retain_graph (the saved tensors are gone).
  bool has_saved() const { return static_cast<bool>(backward_); }
  /// Runs the VJP; throws std::logic_error if the graph was already freed.
  void apply(const Tensor& grad_output, std::span<Tensor> grad_inputs);
  /// Drops the inputs and everything the VJP saved.
  void release();

 private:
  const char* name_;
  std::vector<Tensor> inputs_;
  BackwardFn backward_;
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

/// Records `output = name(inputs)` in the graph when grad mode is on and any input requires
/// grad; otherwise returns output untouched (and backward is dropped unused). Returns output.
Tensor record(Tensor output, const char* name, std::vector<Tensor> inputs, BackwardFn backward);

/// Runs reverse mode from root with upstream gradient grad_output (see Tensor::backward).
void run_backward(const Tensor& root, const Tensor& grad_output, bool retain_graph);

}  // namespace attograd
