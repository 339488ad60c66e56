#include "nn/optim.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numbers>
#include <stdexcept>
#include <string>
#include <utility>

#include "autograd/engine.h"
#include "autograd/kernels/elementwise.h"
#include "autograd/kernels/optimizer.h"
#include "autograd/ops.h"

namespace attograd::nn {

// ----- Optimizer: groups resolved into ranges -----

namespace {

// "parameter 2 of group 1": where a bad tensor was given.
std::string where(size_t group, size_t index) {
  return "parameter " + std::to_string(index) + " of group " + std::to_string(group);
}

// The address of a floating tensor's first element.
const char* first_byte(const Tensor& t) {
  return dispatch_floating(t.dtype(), "optimizer", [&]<typename T>() {
    return reinterpret_cast<const char*>(t.data<T>());
  });
}

// True when b starts right where the n elements of a end, in the same storage.
bool continues(const Tensor& a, int64_t n, const Tensor& b) {
  return a.defined() && b.defined() && a.dtype() == b.dtype() && a.shares_storage(b) &&
         first_byte(b) == first_byte(a) + n * static_cast<int64_t>(dtype_size(a.dtype()));
}

}  // namespace

Optimizer::Optimizer(std::vector<ParamGroup> groups, double default_lr, double default_weight_decay,
                     const char* name)
    : name_(name) {
  auto fail = [name](size_t group, size_t index, const std::string& what) {
    throw std::invalid_argument(std::string(name) + ": " + where(group, index) + " " + what);
  };
  struct Interval {  // a tensor's bytes, to find one given twice (torch refuses that too)
    const char* begin;
    const char* end;
    size_t group, index;
  };
  std::vector<Interval> intervals;
  for (size_t gi = 0; gi < groups.size(); ++gi) {
    const ParamGroup& group = groups[gi];
    groups_.push_back(
        {group.lr.value_or(default_lr), group.weight_decay.value_or(default_weight_decay)});
    for (size_t i = 0; i < group.params.size(); ++i) {
      const Tensor& p = group.params[i];
      if (!p.defined()) fail(gi, i, "is undefined");
      if (p.dtype() == DType::i64) fail(gi, i, "is i64; only f32 and f64 tensors train");
      if (!p.is_leaf())
        fail(gi, i,
             std::string("is not a leaf (the output of '") + p.grad_fn()->name() +
                 "'); optimize the leaves it is computed from");
      if (!p.requires_grad())
        fail(gi, i, "does not require grad; mark it with set_requires_grad()");
      if (!p.is_contiguous())
        fail(gi, i,
             "is a non-contiguous view " + shape_str(p.shape()) + "; give the tensor it views");
      if (intervals.empty()) dtype_ = p.dtype();
      if (p.dtype() != dtype_)
        fail(gi, i,
             std::string("is ") + dtype_name(p.dtype()) + " but the first is " +
                 dtype_name(dtype_) + "; one optimizer updates one dtype");
      const char* begin = first_byte(p);
      intervals.push_back(
          {begin, begin + p.numel() * static_cast<int64_t>(dtype_size(dtype_)), gi, i});
      // p joins the group's last range when it continues it in memory, and its gradient too.
      Range* last = !ranges_.empty() && ranges_.back().group == gi ? &ranges_.back() : nullptr;
      if (last && continues(last->first, last->n, p) &&
          continues(last->first.grad(), last->n, p.grad())) {
        last->n += p.numel();
        last->rest.push_back(p);
      } else {
        ranges_.push_back({p, p.numel(), numel_, gi, /*rest=*/{}});
      }
      numel_ += p.numel();
    }
  }
  if (intervals.empty())
    throw std::invalid_argument(std::string(name) + ": no parameters to optimize");
  std::sort(intervals.begin(), intervals.end(),
            [](const Interval& a, const Interval& b) { return a.begin < b.begin; });
  for (size_t k = 1; k < intervals.size(); ++k)
    if (intervals[k].begin < intervals[k - 1].end)
      fail(intervals[k].group, intervals[k].index,
           "shares memory with " + where(intervals[k - 1].group, intervals[k - 1].index) +
               " (a tensor given twice?)");
}

void Optimizer::zero_grad() {
  dispatch_floating(dtype_, "zero_grad", [&]<typename T>() {
    for_each_range<T>(Writes::grads,
                      [](const Range& r, T*, T* g) { kernels::fill<T>(g, T(0), r.n); });
  });
}

void Optimizer::set_lr(double lr) {
  for (GroupOptions& g : groups_) g.lr = lr;
}

// ----- SGD:  g = grad + wd p;  buf = momentum buf + g;  p -= lr buf -----

SGD::SGD(std::vector<ParamGroup> groups, const SGDOptions& options)
    : Optimizer(std::move(groups), options.lr(), options.weight_decay(), "SGD"), options_(options) {
  if (options.momentum() != 0) momentum_buffer_ = Tensor::zeros({numel_}, dtype_);
}

SGD::SGD(std::vector<Tensor> params, const SGDOptions& options)
    : SGD(std::vector<ParamGroup>{ParamGroup{.params = std::move(params)}}, options) {}

void SGD::step() {
  dispatch_floating(dtype_, "SGD", [&]<typename T>() {
    T* buffers = momentum_buffer_.defined() ? momentum_buffer_.data<T>() : nullptr;
    const T momentum = static_cast<T>(options_.momentum());
    for_each_range<T>(Writes::params, [&](const Range& r, T* p, const T* grad) {
      const T lr = static_cast<T>(groups_[r.group].lr),
              wd = static_cast<T>(groups_[r.group].weight_decay);
      for (int64_t i = 0; i < r.n; ++i) {
        T g = grad[i];
        if (wd != 0) g += wd * p[i];
        // torch starts the buffer as a copy of g; momentum * 0 + g is exactly that.
        if (buffers) g = buffers[r.offset + i] = momentum * buffers[r.offset + i] + g;
        p[i] -= lr * g;
      }
    });
  });
}

void SGD::step(double lr) {
  set_lr(lr);
  step();
}

// ----- AdamW: one kernel pass per range (kernels/optimizer.h) -----

AdamW::AdamW(std::vector<ParamGroup> groups, const AdamWOptions& options)
    : Optimizer(std::move(groups), options.lr(), options.weight_decay(), "AdamW"),
      options_(options),
      m_(Tensor::zeros({numel_}, dtype_)),
      v_(Tensor::zeros({numel_}, dtype_)) {}

AdamW::AdamW(std::vector<Tensor> params, const AdamWOptions& options)
    : AdamW(std::vector<ParamGroup>{ParamGroup{.params = std::move(params)}}, options) {}

void AdamW::step() { update(1.0); }

void AdamW::step(double lr, double grad_scale) {
  set_lr(lr);
  update(grad_scale);
}

void AdamW::update(double grad_scale) {
  ++t_;
  const AdamWOptions& o = options_;
  const double beta1 = o.betas().first, beta2 = o.betas().second;
  const double bias_correction1 = 1 - std::pow(beta1, static_cast<double>(t_));
  const double bias_correction2 = 1 - std::pow(beta2, static_cast<double>(t_));
  dispatch_floating(dtype_, "AdamW", [&]<typename T>() {
    T* m = m_.data<T>();
    T* v = v_.data<T>();
    for_each_range<T>(Writes::params, [&](const Range& r, T* p, const T* g) {
      const GroupOptions& group = groups_[r.group];
      const kernels::AdamWStep s{.lr = group.lr,
                                 .beta1 = beta1,
                                 .beta2 = beta2,
                                 .eps = o.eps(),
                                 .weight_decay = group.weight_decay,
                                 .bias_correction1 = bias_correction1,
                                 .bias_correction2 = bias_correction2,
                                 .grad_scale = grad_scale};
      // The decay multiply is skipped, not multiplied by 1, for groups without decay.
      kernels::adamw_step<T>(p, g, m + r.offset, v + r.offset, r.n,
                             group.weight_decay != 0 ? r.n : 0, s);
    });
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
  for (const Tensor* moment : {&m, &v}) {
    if (!moment->defined() || moment->dtype() == DType::i64 || moment->numel() != numel_)
      throw std::invalid_argument(
          "AdamW: the saved optimizer state has " +
          (moment->defined() ? std::to_string(moment->numel()) : std::string("no")) +
          " moments but the model has " + std::to_string(numel_) + " parameters");
  }
  if (t < 0) throw std::invalid_argument("AdamW: negative step count " + std::to_string(t));
  // Moments that no AdamW step can produce (non-finite, or a negative second moment, whose
  // square root is NaN) would make the resumed run diverge or silently freeze a weight.
  if (m.dtype() != v.dtype())
    throw std::invalid_argument("AdamW: the saved moments have different dtypes, " +
                                std::string(dtype_name(m.dtype())) + " and " +
                                dtype_name(v.dtype()));
  const int64_t bad = dispatch_floating(m.dtype(), "AdamW::load_state", [&]<typename T>() {
    const Tensor mc = contiguous(m), vc = contiguous(v);
    const T* mp = mc.data<T>();
    const T* vp = vc.data<T>();
    int64_t n = 0;
    for (int64_t i = 0; i < numel_; ++i)
      n += !std::isfinite(mp[i]) || !std::isfinite(vp[i]) || vp[i] < T(0);
    return n;
  });
  if (bad > 0)
    throw std::invalid_argument(
        "AdamW: the saved optimizer state has " + std::to_string(bad) + " of " +
        std::to_string(numel_) +
        " moments that no AdamW step produces (not finite, or a negative second moment)");
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
