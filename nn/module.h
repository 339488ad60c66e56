// Module: the nn building block (as torch.nn.Module). A module owns named parameters and named
// child modules; parameters are leaf Tensors with requires_grad set.
//
// A ParameterArena holds every parameter of a model in ONE aligned buffer (and every gradient in
// a second one), so optimizer updates, zero_grad, gradient-norm clipping and checkpoint writes
// are single loops over contiguous memory. As llm.c's malloc_and_point_parameters, it is laid out
// first and allocated once: modules built while an arena is open register their parameters
// unallocated, then allocate() makes the two buffers, points each parameter into them and runs
// the initialisers in registration order (so a seed draws the same numbers as without an arena).
// A tensor that already has storage is never re-pointed, since views taken of it would keep the
// old data. The parameters lie in the order given to allocate(); a model that puts each optimizer
// group's parameters side by side (GPT: the decayed weights first) gets each group updated as one
// range (optim.h).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "autograd/tensor.h"

namespace attograd::nn {

/// Base class of every layer and model.
class Module {
 public:
  virtual ~Module() = default;
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;

  /// Every parameter, recursively, in registration order, with dotted names as in PyTorch's
  /// state_dict ("h.0.attn.c_attn.weight").
  std::vector<std::pair<std::string, Tensor>> named_parameters() const;
  /// The same tensors without names.
  std::vector<Tensor> parameters() const;
  /// Total number of scalars in all parameters.
  int64_t num_parameters() const;

  /// Training mode (dropout active) or evaluation mode, recursively.
  void train(bool on = true);
  void eval() { train(false); }
  bool is_training() const { return training_; }

  /// Sets every parameter's gradient to zero (keeps the buffers).
  void zero_grad();

  /// Adds a parameter (marked requires_grad) of `shape` and `dtype` and returns it; `init`
  /// writes its values once it has storage: at once, or, while a ParameterArena is open on this
  /// thread, when that arena is allocated (so whatever init reads, a Generator say, must live
  /// until then). Until then the parameter is unallocated and reading it throws.
  Tensor register_parameter(const std::string& name, const Shape& shape, DType dtype,
                            std::function<void(Tensor&)> init);
  /// Adds a parameter holding value's values. Without an open arena that is `value` itself (now
  /// requiring grad); with one, a new parameter that gets a copy when the arena is allocated.
  Tensor register_parameter(const std::string& name, Tensor value);

 protected:
  Module() = default;
  /// Adds a child module and returns it.
  template <typename M>
  std::shared_ptr<M> register_module(const std::string& name, std::shared_ptr<M> module) {
    children_.emplace_back(name, module);
    return module;
  }

 private:
  void collect(const std::string& prefix, std::vector<std::pair<std::string, Tensor>>& out) const;

  std::vector<std::pair<std::string, Tensor>> params_;
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> children_;
  bool training_ = true;
};

/// One contiguous buffer holding all of a model's parameters, and one for their gradients:
///
///     nn::ParameterArena arena;   // open: parameters registered on this thread are laid out here
///     Net net(gen);               // registers its parameters, unallocated
///     arena.allocate(net);        // one buffer each for values and gradients; inits run; closed
///
/// Every parameter is a view into params(), its gradient (zeroed) a view into grads(). The arena
/// only holds tensors: it need not outlive the module, nor the module it. Not movable: modules
/// find the open arena through a per-thread pointer to it.
class ParameterArena {
 public:
  /// Opens the arena on this thread (arenas nest: the innermost open one takes the parameters).
  ParameterArena();
  /// Closes the arena if allocate() was never called (e.g. a model constructor threw).
  ~ParameterArena();
  ParameterArena(const ParameterArena&) = delete;
  ParameterArena& operator=(const ParameterArena&) = delete;

  /// Allocates module's parameters in registration order; see the other overload.
  void allocate(const Module& module) { allocate(module.named_parameters()); }
  /// Allocates the two buffers, places the given parameters in the given order (a model's own
  /// grouping), runs every registered initialiser in registration order, and closes the arena.
  /// Throws std::logic_error when the arena is not open or a parameter was not registered while
  /// it was (one that already has storage names the fix: build the module after opening the
  /// arena), or when a parameter registered here is missing from the list;
  /// std::invalid_argument when they mix dtypes or there are none.
  void allocate(std::vector<std::pair<std::string, Tensor>> named_parameters);

  /// All parameters as one flat (N,) tensor, in the order they were given.
  const Tensor& params() const { return params_; }
  /// All gradients, same layout.
  const Tensor& grads() const { return grads_; }
  /// The parameters in arena order, with their names.
  const std::vector<std::pair<std::string, Tensor>>& named_parameters() const { return named_; }

  /// Zeroes all gradients: one fill.
  void zero_grad();
  /// L2 norm of all gradients together, accumulated in double (one SIMD pass).
  double grad_norm() const;
  /// How many parameters are NaN or infinite: 0 for a model fit to save. (A sum of squares
  /// would also flag finite f64 values above 1e154, so each value is tested.)
  int64_t num_non_finite() const;
  /// Scales all gradients by clip_scale(norm, max_norm), so their global L2 norm is at most
  /// max_norm (torch's clip_grad_norm_); returns the norm before clipping. max_norm <= 0
  /// disables clipping. (A training step instead hands clip_scale's factor to AdamW::step,
  /// which applies it as it reads each gradient: one pass less.)
  double clip_grad_norm(double max_norm);

 private:
  friend class Module;  // register_parameter lays parameters out in the open arena
  /// The innermost arena open on this thread, or null.
  static ParameterArena*& open_arena();
  void close();

  Tensor params_, grads_;
  std::vector<std::pair<std::string, Tensor>> named_;
  // Registered while open: each parameter and its initialiser, in registration order.
  std::vector<std::pair<Tensor, std::function<void(Tensor&)>>> pending_;
  ParameterArena* enclosing_ = nullptr;  // the arena open before this one
  bool open_ = true;
};

/// The factor torch.nn.utils.clip_grad_norm_ multiplies every gradient by: min(1, max_norm /
/// (norm + 1e-6)) (the 1e-6 keeps a zero norm finite); 1 when max_norm <= 0 (no clipping).
double clip_scale(double norm, double max_norm);

/// torch.nn.utils.clip_grad_norm_(params, max_norm) for any list of tensors, no ParameterArena
/// needed: the L2 norm of all their gradients together (accumulated in double), then every
/// gradient scaled in place by clip_scale(norm, max_norm); returns the norm before clipping.
/// A tensor without a gradient yet is skipped (torch skips a None grad); f32 and f64 may mix.
/// Throws std::invalid_argument naming the position of a tensor that does not require grad
/// (it can never have one: a list of the wrong tensors). A model's arena does the same in one
/// pass over its flat buffer (ParameterArena::clip_grad_norm), the fast path for training.
double clip_grad_norm(const std::vector<Tensor>& params, double max_norm);

}  // namespace attograd::nn
