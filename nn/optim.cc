#include "nn/optim.h"

#include <cmath>
#include <cstring>
#include <numbers>
#include <stdexcept>
#include <string>

#include "autograd/kernels/optimizer.h"

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
      m_(Tensor::zeros(arena.params().shape(), arena.params().dtype())),
      v_(Tensor::zeros(arena.params().shape(), arena.params().dtype())) {}

void AdamW::step(double lr, double grad_scale) {
  ++t_;
  const AdamWOptions& o = options_;
  const kernels::AdamWStep s{.lr = lr,
                             .beta1 = o.beta1,
                             .beta2 = o.beta2,
                             .eps = o.eps,
                             .weight_decay = o.weight_decay,
                             .bias_correction1 = 1 - std::pow(o.beta1, static_cast<double>(t_)),
                             .bias_correction2 = 1 - std::pow(o.beta2, static_cast<double>(t_)),
                             .grad_scale = grad_scale};
  dispatch_floating(arena_.params().dtype(), "AdamW", [&]<typename T>() {
    kernels::adamw_step<T>(arena_.params().data<T>(), arena_.grads().data<T>(), m_.data<T>(), v_.data<T>(),
                           arena_.params().numel(), arena_.num_decay(), s);
  });
}

namespace {
// dst (n,) = src (n,) converted to dst's dtype.
void convert_into(const Tensor& dst, const Tensor& src) {
  const Tensor s = src.is_contiguous() ? src : src.clone();
  dispatch_floating(dst.dtype(), "AdamW", [&]<typename D>() {
    dispatch_floating(s.dtype(), "AdamW", [&]<typename S>() {
      D* d = dst.data<D>();
      const S* x = s.data<S>();
      for (int64_t i = 0; i < dst.numel(); ++i) d[i] = static_cast<D>(x[i]);
    });
  });
}
}  // namespace

void AdamW::load_state(const Tensor& m, const Tensor& v, int64_t t) {
  const int64_t n = arena_.params().numel();
  for (const Tensor* moment : {&m, &v}) {
    if (!moment->defined() || moment->dtype() == DType::i64 || moment->numel() != n)
      throw std::invalid_argument("AdamW: the saved optimizer state has " +
                                  (moment->defined() ? std::to_string(moment->numel()) : std::string("no")) +
                                  " moments but the model has " + std::to_string(n) + " parameters");
  }
  if (t < 0) throw std::invalid_argument("AdamW: negative step count " + std::to_string(t));
  convert_into(m_, m);
  convert_into(v_, v);
  t_ = t;
}

double cosine_lr(int64_t it, int64_t warmup, int64_t decay_steps, double max_lr, double min_lr) {
  if (it < warmup) return max_lr * static_cast<double>(it + 1) / static_cast<double>(warmup + 1);
  if (it >= decay_steps) return min_lr;
  const double r = static_cast<double>(it - warmup) / static_cast<double>(decay_steps - warmup);
  return min_lr + (max_lr - min_lr) * 0.5 * (1.0 + std::cos(std::numbers::pi * r));
}

}  // namespace attograd::nn
