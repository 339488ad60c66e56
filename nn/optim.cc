#include "nn/optim.h"

#include <cmath>
#include <numbers>

namespace attograd::nn {

namespace {
// Applies f(p, g, i) to every element of the arena in the arena's dtype.
template <typename F>
void for_each_element(ParameterArena& arena, F&& f) {
  dispatch_floating(arena.params().dtype(), "optimizer", [&]<typename T>() {
    T* p = arena.params().data<T>();
    const T* g = arena.grads().data<T>();
    for (int64_t i = 0; i < arena.params().numel(); ++i) f(p[i], g[i], i);
  });
}
}  // namespace

SGD::SGD(ParameterArena& arena, double momentum)
    : arena_(arena), momentum_(momentum), velocity_(static_cast<size_t>(arena.params().numel()), 0.0) {}

void SGD::step(double lr) {
  for_each_element(arena_, [&](auto& p, auto g, int64_t i) {
    velocity_[i] = momentum_ * velocity_[i] + g;
    p -= static_cast<std::remove_reference_t<decltype(p)>>(lr * velocity_[i]);
  });
}

AdamW::AdamW(ParameterArena& arena, const AdamWOptions& options)
    : arena_(arena),
      options_(options),
      m_(static_cast<size_t>(arena.params().numel()), 0.0),
      v_(static_cast<size_t>(arena.params().numel()), 0.0) {}

void AdamW::step(double lr) {
  ++t_;
  const auto& o = options_;
  const double bc1 = 1 - std::pow(o.beta1, static_cast<double>(t_));
  const double bc2 = 1 - std::pow(o.beta2, static_cast<double>(t_));
  const int64_t num_decay = arena_.num_decay();
  for_each_element(arena_, [&](auto& p, auto g, int64_t i) {
    const double gd = g;
    m_[i] = o.beta1 * m_[i] + (1 - o.beta1) * gd;
    v_[i] = o.beta2 * v_[i] + (1 - o.beta2) * gd * gd;
    const double m_hat = m_[i] / bc1, v_hat = v_[i] / bc2;
    double pd = p;
    if (i < num_decay) pd -= lr * o.weight_decay * pd;  // decoupled: not through the moments
    pd -= lr * m_hat / (std::sqrt(v_hat) + o.eps);
    p = static_cast<std::remove_reference_t<decltype(p)>>(pd);
  });
}

double cosine_lr(int64_t it, int64_t warmup, int64_t decay_steps, double max_lr, double min_lr) {
  if (it < warmup) return max_lr * static_cast<double>(it + 1) / static_cast<double>(warmup + 1);
  if (it >= decay_steps) return min_lr;
  const double r = static_cast<double>(it - warmup) / static_cast<double>(decay_steps - warmup);
  return min_lr + (max_lr - min_lr) * 0.5 * (1.0 + std::cos(std::numbers::pi * r));
}

}  // namespace attograd::nn
