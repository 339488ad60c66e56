// Module: the nn building block (as torch.nn.Module). A module owns named parameters and named
// child modules; parameters are leaf Tensors with requires_grad set.
//
// ParameterArena then moves every parameter of a model into ONE aligned buffer (and every
// gradient into a second one), so optimizer updates, zero_grad, gradient-norm clipping and
// checkpoint writes are single loops over contiguous memory (as llm.c does). The parameters lie
// in the order given; a model that puts each optimizer group's parameters side by side (GPT:
// the decayed weights first) gets each group updated as one range (optim.h).
#pragma once

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

  /// Adds a parameter (marked requires_grad) and returns it. Register before packing the
  /// module into a ParameterArena: a later parameter is not in the arena.
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

/// One contiguous buffer holding all of a module's parameters, and one for their gradients.
/// Construction moves the parameters in place (every Tensor handle to a parameter sees the
/// new storage) and gives each a zeroed gradient view; the module must outlive nothing here:
/// the arena only holds tensors.
class ParameterArena {
 public:
  /// Packs module's parameters in registration order. Throws std::invalid_argument if they
  /// mix dtypes or there are none.
  explicit ParameterArena(const Module& module);
  /// Packs the given named parameters in the given order (a model's own grouping). Same errors.
  explicit ParameterArena(std::vector<std::pair<std::string, Tensor>> named_parameters);

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
  Tensor params_, grads_;
  std::vector<std::pair<std::string, Tensor>> named_;
};

/// The factor torch.nn.utils.clip_grad_norm_ multiplies every gradient by: min(1, max_norm /
/// (norm + 1e-6)) (the 1e-6 keeps a zero norm finite); 1 when max_norm <= 0 (no clipping).
double clip_scale(double norm, double max_norm);

}  // namespace attograd::nn
