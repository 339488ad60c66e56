#include "nn/module.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>

#include "autograd/allocator.h"
#include "autograd/kernels/elementwise.h"
#include "autograd/kernels/optimizer.h"

namespace attograd::nn {

std::vector<std::pair<std::string, Tensor>> Module::named_parameters() const {
  std::vector<std::pair<std::string, Tensor>> out;
  collect("", out);
  return out;
}

void Module::collect(const std::string& prefix, std::vector<std::pair<std::string, Tensor>>& out) const {
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

Tensor Module::register_parameter(const std::string& name, Tensor value) {
  value.set_requires_grad(true);
  params_.emplace_back(name, value);
  return value;
}

ParameterArena::ParameterArena(const Module& module) : ParameterArena(module.named_parameters()) {}

ParameterArena::ParameterArena(std::vector<std::pair<std::string, Tensor>> named_parameters)
    : named_(std::move(named_parameters)) {
  if (named_.empty()) throw std::invalid_argument("ParameterArena: the module has no parameters");
  const DType dtype = named_.front().second.dtype();
  int64_t total = 0;
  for (auto& [name, t] : named_) {
    if (t.dtype() != dtype)
      throw std::invalid_argument("ParameterArena: parameter '" + name + "' is " + dtype_name(t.dtype()) +
                                  " but the first is " + dtype_name(dtype) + "; a model has one dtype");
    total += t.numel();
  }
  params_ = Tensor::empty({total}, dtype);
  grads_ = Tensor::zeros({total}, dtype);
  const size_t esize = dtype_size(dtype);
  int64_t offset = 0;
  for (auto& [name, t] : named_) {
    // Copy the values in, then re-point the parameter's shared TensorImpl at the arena, so
    // every handle to it (module members, optimizer, user code) now reads the arena.
    const Tensor values = t.clone();
    TensorImpl* impl = t.impl();
    std::memcpy(static_cast<char*>(params_.impl()->storage->data) + offset * esize,
                values.impl()->storage->data, static_cast<size_t>(t.numel()) * esize);
    impl->storage = params_.impl()->storage;
    impl->offset = offset;
    impl->strides = contiguous_strides(impl->shape);
    auto g = TensorImpl::make();
    g->storage = grads_.impl()->storage;
    g->offset = offset;
    g->shape = impl->shape;
    g->strides = impl->strides;
    g->dtype = dtype;
    impl->grad = g;
    offset += t.numel();
  }
  // The parameters' old buffers (and the copies made above) are free now, and the storage cache
  // would keep them for reuse: no later tensor has their sizes, so for GPT-2 small that is a dead
  // gigabyte of RSS. Hand them back to the system.
  empty_storage_cache();
}

void ParameterArena::zero_grad() {
  dispatch_floating(grads_.dtype(), "zero_grad", [&]<typename T>() {
    kernels::fill<T>(grads_.data<T>(), T(0), grads_.numel());
  });
}

double ParameterArena::grad_norm() const {
  return dispatch_floating(grads_.dtype(), "grad_norm", [&]<typename T>() {
    return std::sqrt(kernels::sum_squares_double<T>(grads_.data<T>(), grads_.numel()));
  });
}

int64_t ParameterArena::num_non_finite() const {
  return dispatch_floating(params_.dtype(), "num_non_finite", [&]<typename T>() {
    const T* p = params_.data<T>();
    return static_cast<int64_t>(std::count_if(p, p + params_.numel(), [](T v) { return !std::isfinite(v); }));
  });
}

double clip_scale(double norm, double max_norm) {
  return max_norm > 0 ? std::min(1.0, max_norm / (norm + 1e-6)) : 1.0;
}

double ParameterArena::clip_grad_norm(double max_norm) {
  const double norm = grad_norm();
  const double scale = clip_scale(norm, max_norm);
  if (scale < 1) {
    dispatch_floating(grads_.dtype(), "clip_grad_norm", [&]<typename T>() {
      T* g = grads_.data<T>();
      kernels::binary_scalar_right<T>(kernels::BinaryOp::mul, g, g, static_cast<T>(scale), grads_.numel());
    });
  }
  return norm;
}

}  // namespace attograd::nn
