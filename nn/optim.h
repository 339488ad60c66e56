// Optimizers over a ParameterArena, and the learning-rate schedule of GPT-2 / nanoGPT.
// Each update is one loop over the arena's contiguous buffer (two for AdamW: the decayed
// weights, then the rest).
#pragma once

#include <cstdint>
#include <vector>

#include "nn/module.h"

namespace attograd::nn {

/// Plain stochastic gradient descent with optional momentum: v = mu v + g; p -= lr v.
class SGD {
 public:
  explicit SGD(ParameterArena& arena, double momentum = 0.0);
  /// One update with learning rate lr, from the gradients currently in the arena.
  void step(double lr);

 private:
  ParameterArena& arena_;
  double momentum_;
  std::vector<double> velocity_;
};

/// Hyper-parameters of AdamW; the defaults are nanoGPT's for GPT-2.
struct AdamWOptions {
  double beta1 = 0.9;
  double beta2 = 0.95;
  double eps = 1e-8;
  double weight_decay = 0.1;  // applied to the 2-D weights only, never biases or LayerNorm
};

/// Adam with decoupled weight decay (Loshchilov & Hutter 2019, algorithm 2), computed as
/// torch.optim.AdamW computes it (kernels/optimizer.h):
///   p = p (1 - lr wd)   (2-D weights only);  m = b1 m + (1 - b1) g;  v = b2 v + (1 - b2) g²
///   p -= lr / (1 - b1^t) * m / (sqrt(v) / sqrt(1 - b2^t) + eps)
/// The moments are kept in the parameters' dtype (f32 when training, as PyTorch keeps them), and
/// the whole update is one SIMD pass over the arena, split over threads.
class AdamW {
 public:
  AdamW(ParameterArena& arena, const AdamWOptions& options = {});
  /// One update with learning rate lr from the gradients in the arena, each multiplied by
  /// grad_scale first: clip_scale()'s factor, so that clipping needs no pass of its own.
  void step(double lr, double grad_scale = 1.0);
  /// Number of steps taken (t in the bias corrections).
  int64_t steps() const { return t_; }
  /// First and second moments: flat (N,) tensors in the parameters' dtype and arena order.
  const Tensor& m() const { return m_; }
  const Tensor& v() const { return v_; }
  /// Restores the moments and the step count saved by a checkpoint (bit-exact resume); m and v
  /// are converted to the parameters' dtype. Throws std::invalid_argument unless both are
  /// floating tensors of N elements, naming what was found.
  void load_state(const Tensor& m, const Tensor& v, int64_t t);
  const AdamWOptions& options() const { return options_; }

 private:
  ParameterArena& arena_;
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
