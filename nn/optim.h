// Optimizers as torch.optim has them: over any list of tensors, in parameter groups with their
// own learning rate and weight decay; and the learning-rate schedule of GPT-2 / nanoGPT.
//
// Layout: an optimizer's state (AdamW's moments, SGD's momentum) is one flat buffer per kind,
// group after group, tensor after tensor, in the parameters' dtype. A group whose tensors lie
// back to back in one buffer, with their gradients back to back in another, as a
// ParameterArena lays them out, is one range: one kernel call updates it. That is the training
// hot path: GPT::param_groups() gives two groups, the decayed weights and the rest, each one
// range of the model's arena, so the moments are in arena order (what checkpoints store) and a
// step allocates nothing. Any other tensors are updated one range each.
//
// A step changes the parameters in place, and zero_grad the gradients: each bumps their version
// (Tensor::version()), as torch's in-place updates under no_grad do. After backward() that is
// the training loop (the next forward saves the new versions); a graph recorded before a step
// and backpropagated after it is refused by backward() (engine.h), since its gradient would mix
// old activations with new weights.
#pragma once

#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "autograd/tensor.h"
#include "nn/module.h"  // clip_scale, ParameterArena

namespace attograd::nn {

/// Parameters that share hyper-parameters, as one of torch.optim's param groups; an unset lr or
/// weight_decay takes the optimizer's default. E.g.
///   nn::AdamW opt({nn::ParamGroup{.params = weights, .weight_decay = 0.1},
///                  nn::ParamGroup{.params = biases, .weight_decay = 0.0}});
struct ParamGroup {
  std::vector<Tensor> params;  // leaves that require grad, contiguous, all of one floating dtype
  std::optional<double> lr = std::nullopt;
  std::optional<double> weight_decay = std::nullopt;
};

/// A group's hyper-parameters as the optimizer uses them; change them between steps (a
/// schedule sets lr), as torch's optimizer.param_groups[i]["lr"].
struct GroupOptions {
  double lr;
  double weight_decay;
};

/// What the optimizers share: the groups resolved into ranges, zero_grad and the groups' options.
class Optimizer {
 public:
  virtual ~Optimizer() = default;
  Optimizer(const Optimizer&) = delete;
  Optimizer& operator=(const Optimizer&) = delete;

  /// Sets every parameter's gradient to zero and keeps the buffers (torch's
  /// zero_grad(set_to_none=False)): one fill per range.
  void zero_grad();
  /// Sets every group's learning rate (what a schedule does before each step).
  void set_lr(double lr);
  /// The groups' options, in the order the groups were given.
  std::vector<GroupOptions>& param_groups() { return groups_; }
  const std::vector<GroupOptions>& param_groups() const { return groups_; }
  /// Number of scalars optimized: the length of each flat state buffer.
  int64_t numel() const { return numel_; }
  /// Number of ranges a step walks: one per arena-laid-out group, else one per tensor.
  size_t num_ranges() const { return ranges_.size(); }

 protected:
  /// Resolves groups (unset options from the defaults) into ranges. Throws
  /// std::invalid_argument naming the group and tensor for: no parameters at all; an undefined,
  /// integer, non-leaf, non-contiguous or not-requiring-grad tensor; mixed dtypes; a tensor
  /// given twice (or overlapping another).
  Optimizer(std::vector<ParamGroup> groups, double default_lr, double default_weight_decay,
            const char* name);

  // n parameters starting at first.data(), their gradients starting at first.grad().data(),
  // and their state at `offset` of the flat state buffers.
  struct Range {
    Tensor first;
    int64_t n = 0;
    int64_t offset = 0;
    size_t group = 0;
    std::vector<Tensor> rest;  // the tensors after `first` that the range runs on into
  };
  // Calls f(range, param, grad) in T = the parameters' type for each range whose gradient
  // exists (a tensor that backward never reached is skipped, as torch skips grad None). f writes
  // through one of the pointers: `writes` says which, and that tensor's version is bumped (for an
  // arena range, the one counter of the arena), so that a graph recorded before a step (a
  // forward, then step(), then backward: the old weights' gradient) is refused by backward()
  // instead of silently differentiating the new weights. One integer per range.
  enum class Writes { params, grads };
  template <typename T, typename F>
  void for_each_range(Writes writes, F&& f) const {
    for (const Range& r : ranges_) {
      const Tensor g = r.first.grad();
      if (!g.defined()) continue;
      // Each tensor's grad() writes the zeros a deferred zero_grad left unwritten (a parameter
      // that this step's backward did not reach), before f reads the range's gradients as one.
      for (const Tensor& t : r.rest) t.grad();
      f(r, r.first.data<T>(), g.data<T>());  // both T*: zero_grad writes g
      (writes == Writes::params ? r.first : g).bump_version();
    }
  }

  const char* name_;
  std::vector<Range> ranges_;
  std::vector<GroupOptions> groups_;
  DType dtype_ = DType::f32;
  int64_t numel_ = 0;
};

/// Hyper-parameters of SGD, as torch.optim.SGD's (momentum without dampening or Nesterov),
/// written as libtorch writes them, in any order: SGDOptions(0.05).momentum(0.9). Each setter
/// returns the options; the getter of the same name reads the value. lr and weight_decay are
/// the defaults of the groups that set none; weight_decay is L2, added to the gradient (g + wd p).
class SGDOptions {
 public:
  SGDOptions() = default;
  explicit SGDOptions(double lr) : lr_(lr) {}
  SGDOptions& lr(double v) { return lr_ = v, *this; }
  SGDOptions& momentum(double v) { return momentum_ = v, *this; }
  SGDOptions& weight_decay(double v) { return weight_decay_ = v, *this; }
  double lr() const { return lr_; }
  double momentum() const { return momentum_; }
  double weight_decay() const { return weight_decay_; }

 private:
  double lr_ = 1e-3, momentum_ = 0.0, weight_decay_ = 0.0;
};

/// Stochastic gradient descent, as torch.optim.SGD computes it, per element in the parameters'
/// dtype:  g = grad + wd p;  buf = momentum buf + g (buf = g at the first step);  p -= lr buf.
class SGD : public Optimizer {
 public:
  explicit SGD(std::vector<ParamGroup> groups, const SGDOptions& options = {});
  /// One group of params with the options' lr and weight decay (torch's SGD(model.parameters())).
  explicit SGD(std::vector<Tensor> params, const SGDOptions& options = {});
  /// One update of every group with its own lr and weight decay.
  void step();
  /// set_lr(lr), then step().
  void step(double lr);

 private:
  SGDOptions options_;
  Tensor momentum_buffer_;  // (numel(),), zero until the first step
};

/// Hyper-parameters of AdamW, written as libtorch writes them, in any order:
/// AdamWOptions(3e-4).betas({0.9, 0.99}).weight_decay(0.1). Each setter returns the options; the
/// getter of the same name reads the value. The defaults are torch.optim.AdamW's: lr 1e-3, betas
/// (0.9, 0.999), eps 1e-8, weight_decay 0.01 (nanoGPT's for GPT-2, which the trainer sets: betas
/// (0.9, 0.95), weight_decay 0.1). lr and weight_decay are the defaults of the groups that set
/// none.
class AdamWOptions {
 public:
  AdamWOptions() = default;
  explicit AdamWOptions(double lr) : lr_(lr) {}
  AdamWOptions& lr(double v) { return lr_ = v, *this; }
  AdamWOptions& betas(std::pair<double, double> v) { return betas_ = v, *this; }
  AdamWOptions& eps(double v) { return eps_ = v, *this; }
  AdamWOptions& weight_decay(double v) { return weight_decay_ = v, *this; }
  double lr() const { return lr_; }
  std::pair<double, double> betas() const { return betas_; }
  double eps() const { return eps_; }
  double weight_decay() const { return weight_decay_; }

 private:
  // torch.optim.AdamW's defaults, so that the same line builds the same optimizer; nanoGPT's
  // (betas 0.9/0.95, weight decay 0.1) are the GPT trainer's own (TrainOptions), not these.
  double lr_ = 1e-3;
  std::pair<double, double> betas_{0.9, 0.999};
  double eps_ = 1e-8, weight_decay_ = 0.01;
};

/// Adam with decoupled weight decay (Loshchilov & Hutter 2019, algorithm 2), computed as
/// torch.optim.AdamW computes it (kernels/optimizer.h), with each group's lr and wd:
///   p = p (1 - lr wd);  m = b1 m + (1 - b1) g;  v = b2 v + (1 - b2) g²
///   p -= lr / (1 - b1^t) * m / (sqrt(v) / sqrt(1 - b2^t) + eps)
/// The moments are kept in the parameters' dtype (f32 when training, as PyTorch keeps them); each
/// range is one SIMD pass, split over threads. betas and eps are shared by all groups.
class AdamW : public Optimizer {
 public:
  explicit AdamW(std::vector<ParamGroup> groups, const AdamWOptions& options = {});
  /// One group of params with the options' lr and weight decay (torch's AdamW(model.parameters())).
  explicit AdamW(std::vector<Tensor> params, const AdamWOptions& options = {});
  /// One update of every group with its own lr and weight decay.
  void step();
  /// The training loop's step: set_lr(lr), then one update from the gradients each multiplied
  /// by grad_scale first: clip_scale()'s factor, so that clipping needs no pass of its own.
  void step(double lr, double grad_scale = 1.0);
  /// Number of steps taken (t in the bias corrections).
  int64_t steps() const { return t_; }
  /// First and second moments: flat (numel(),) tensors in the parameters' dtype, group after
  /// group (for a GPT's param_groups(), the arena's order).
  const Tensor& m() const { return m_; }
  const Tensor& v() const { return v_; }
  /// Restores the moments and the step count saved by a checkpoint (bit-exact resume); m and v
  /// are converted to the parameters' dtype. Throws std::invalid_argument unless both are
  /// floating tensors of numel() elements, naming what was found.
  void load_state(const Tensor& m, const Tensor& v, int64_t t);
  const AdamWOptions& options() const { return options_; }

 private:
  void update(double grad_scale);

  AdamWOptions options_;
  Tensor m_, v_;
  int64_t t_ = 0;
};

/// Linear warmup then cosine decay (GPT-2 / nanoGPT):
///   it < warmup:            lr = max_lr (it + 1) / (warmup + 1)
///   it >= decay_steps:      lr = min_lr
///   otherwise:              lr = min_lr + (max_lr - min_lr) (1 + cos(pi r)) / 2,
///                           r = (it - warmup) / (decay_steps - warmup)
/// warmup == decay_steps never divides by zero (the cosine branch is then empty).
double cosine_lr(int64_t it, int64_t warmup, int64_t decay_steps, double max_lr, double min_lr);

}  // namespace attograd::nn
