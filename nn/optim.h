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

/// Adam with decoupled weight decay (Loshchilov & Hutter 2019, algorithm 2):
///   m = b1 m + (1 - b1) g;  v = b2 v + (1 - b2) g²
///   p -= lr (m / (1 - b1^t)) / (sqrt(v / (1 - b2^t)) + eps) + lr wd p   (wd on 2-D weights)
/// Moments are kept in double whatever the parameter dtype.
class AdamW {
 public:
  AdamW(ParameterArena& arena, const AdamWOptions& options = {});
  /// One update with learning rate lr.
  void step(double lr);
  /// Number of steps taken (t in the bias corrections).
  int64_t steps() const { return t_; }
  /// Moment buffers and step count, for checkpoints (bit-exact resume).
  std::vector<double>& m() { return m_; }
  std::vector<double>& v() { return v_; }
  void set_steps(int64_t t) { t_ = t; }
  const AdamWOptions& options() const { return options_; }

 private:
  ParameterArena& arena_;
  AdamWOptions options_;
  std::vector<double> m_, v_;
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
