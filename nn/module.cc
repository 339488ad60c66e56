#include "nn/module.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "autograd/kernels/elementwise.h"
#include "autograd/kernels/optimizer.h"

namespace attograd::nn {

std::vector<std::pair<std::string, Tensor>> Module::named_parameters() const {
  std::vector<std::pair<std::string, Tensor>> out;
  collect("", out);
  return out;
}

void Module::collect(const std::string& prefix,
                     std::vector<std::pair<std::string, Tensor>>& out) const {
  for (const auto& [name, t] : params_) out.emplace_back(prefix + name, t);
  for (const auto& [name, child] : children_) child->collect(prefix + name + ".", out);
}

std::vector<Tensor> Module::parameters() const {
  std::vector<Tensor> out;
  for (auto& [name, t] : named_parameters()) out.push_back(t);
  return out;
}

int64_t Module::num_parameters() const {
  int64_t n = 0;
  for (const Tensor& t : parameters()) n += t.numel();
  return n;
}

void Module::train(bool on) {
  training_ = on;
  for (auto& [name, child] : children_) child->train(on);
}

void Module::zero_grad() {
  for (const Tensor& t : parameters()) t.zero_grad();
}

Tensor Module::register_parameter(const std::string& name, const Shape& shape, DType dtype,
                                  std::function<void(Tensor&)> init) {
  ParameterArena* arena = ParameterArena::open_arena();
  Tensor p = arena != nullptr ? Tensor::unallocated(shape, dtype) : Tensor::empty(shape, dtype);
  p.set_requires_grad(true);
  if (arena != nullptr) {
    arena->pending_.emplace_back(p, std::move(init));
  } else {
    init(p);
  }
  params_.emplace_back(name, p);
  return p;
}

Tensor Module::register_parameter(const std::string& name, Tensor value) {
  if (ParameterArena::open_arena() != nullptr)
    return register_parameter(name, value.shape(), value.dtype(),
                              [value](Tensor& p) { p.copy_from(value); });
  value.set_requires_grad(true);
  params_.emplace_back(name, value);
  return value;
}

ParameterArena*& ParameterArena::open_arena() {
  thread_local ParameterArena* innermost = nullptr;
  return innermost;
}

ParameterArena::ParameterArena() : enclosing_(open_arena()) { open_arena() = this; }

ParameterArena::~ParameterArena() { close(); }

void ParameterArena::close() {
  if (!open_) return;
  open_ = false;
  // Unlink this arena from the chain of open ones (it is the innermost unless arenas were
  // allocated out of order).
  for (ParameterArena** a = &open_arena(); *a != nullptr; a = &(*a)->enclosing_) {
    if (*a == this) {
      *a = enclosing_;
      break;
    }
  }
}

void ParameterArena::allocate(std::vector<std::pair<std::string, Tensor>> named_parameters) {
  if (!open_)
    throw std::logic_error("ParameterArena: already allocated; an arena is allocated once");
  close();  // also when this fails: later modules must not register into a broken arena
  named_ = std::move(named_parameters);
  if (named_.empty()) throw std::invalid_argument("ParameterArena: the module has no parameters");
  const DType dtype = named_.front().second.dtype();
  int64_t total = 0;
  for (auto& [name, t] : named_) {
    if (t.dtype() != dtype)
      throw std::invalid_argument("ParameterArena: parameter '" + name + "' is " +
                                  dtype_name(t.dtype()) + " but the first is " + dtype_name(dtype) +
                                  "; a model has one dtype");
    total += t.numel();
  }
  params_ = Tensor::empty({total}, dtype);
  grads_ = Tensor::zeros({total}, dtype);
  int64_t offset = 0;
  for (auto& [name, t] : named_) {
    try {
      t.allocate_in(params_, offset);
    } catch (const std::logic_error&) {
      throw std::logic_error(
          "ParameterArena: parameter '" + name +
          "' already has its own storage; build the "
          "module after opening the arena (ParameterArena arena; then the module; then "
          "arena.allocate(module)), so that its parameters are allocated inside it");
    }
    Tensor g = Tensor::unallocated(t.shape(), dtype);
    g.allocate_in(grads_, offset);
    t.set_grad(g);
    offset += t.numel();
  }
  for (auto& [p, init] : pending_) {
    if (!p.shares_storage(params_))
      throw std::logic_error("ParameterArena: a " + shape_str(p.shape()) +
                             " parameter registered while the arena "
                             "was open is missing from the parameters given to allocate()");
    init(p);
  }
  pending_.clear();
}

void ParameterArena::zero_grad() {
  dispatch_floating(grads_.dtype(), "zero_grad", [&]<typename T>() {
    kernels::fill<T>(grads_.data<T>(), T(0), grads_.numel());
  });
  grads_.bump_version();
}

double ParameterArena::grad_norm() const {
  return dispatch_floating(grads_.dtype(), "grad_norm", [&]<typename T>() {
    return std::sqrt(kernels::sum_squares_double<T>(grads_.data<T>(), grads_.numel()));
  });
}

int64_t ParameterArena::num_non_finite() const {
  return dispatch_floating(params_.dtype(), "num_non_finite", [&]<typename T>() {
    const T* p = params_.data<T>();
    return static_cast<int64_t>(
        std::count_if(p, p + params_.numel(), [](T v) { return !std::isfinite(v); }));
  });
}

namespace {

// g *= scale, in place (one SIMD pass over a contiguous gradient), as a new version of g.
void scale_in_place(const Tensor& g, double scale) {
  dispatch_floating(g.dtype(), "clip_grad_norm", [&]<typename T>() {
    T* data = g.data<T>();
    kernels::binary_scalar_right<T>(kernels::BinaryOp::mul, data, data, static_cast<T>(scale),
                                    g.numel());
  });
  g.bump_version();
}

}  // namespace

double clip_scale(double norm, double max_norm) {
  return max_norm > 0 ? std::min(1.0, max_norm / (norm + 1e-6)) : 1.0;
}

double ParameterArena::clip_grad_norm(double max_norm) {
  const double norm = grad_norm();
  const double scale = clip_scale(norm, max_norm);
  if (scale < 1) scale_in_place(grads_, scale);
  return norm;
}

double clip_grad_norm(const std::vector<Tensor>& params, double max_norm) {
  std::vector<Tensor> grads;
  double sum_squares = 0;
  for (size_t i = 0; i < params.size(); ++i) {
    if (!params[i].requires_grad())
      throw std::invalid_argument("clip_grad_norm: tensor " + std::to_string(i) +
                                  " of the list does not require grad, so it has no gradient to "
                                  "clip; pass the parameters (module.parameters())");
    const Tensor g = params[i].grad();
    if (!g.defined()) continue;
    // The engine allocates gradients whole (or as slices of an arena's flat buffer); one set
    // by hand may be a view, which one pass over numel() elements would misread.
    if (!g.is_contiguous())
      throw std::invalid_argument("clip_grad_norm: the gradient of tensor " + std::to_string(i) +
                                  " is a strided view; set_grad() a contiguous tensor");
    sum_squares += dispatch_floating(g.dtype(), "clip_grad_norm", [&]<typename T>() {
      return kernels::sum_squares_double<T>(g.data<T>(), g.numel());
    });
    grads.push_back(g);
  }
  const double norm = std::sqrt(sum_squares);
  const double scale = clip_scale(norm, max_norm);
  if (scale < 1)
    for (const Tensor& g : grads) scale_in_place(g, scale);
  return norm;
}

}  // namespace attograd::nn
