// Scalar reference twins of optimizer.h: the specification, and the oracle for
// tests/kernels/optimizer_test.cc.
#pragma once

#include <cmath>
#include <cstdint>

#include "autograd/kernels/optimizer.h"

namespace attograd::kernels::reference {

/// One AdamW step, element by element, in T arithmetic (optimizer.h).
template <typename T>
void adamw_step(T* param, const T* grad, T* m, T* v, int64_t n, int64_t n_decay,
                const AdamWStep& s) {
  const T decay = static_cast<T>(1 - s.lr * s.weight_decay), scale = static_cast<T>(s.grad_scale);
  const T w1 = static_cast<T>(1 - s.beta1), b2 = static_cast<T>(s.beta2),
          w2 = static_cast<T>(1 - s.beta2);
  const T step_size = static_cast<T>(s.lr / s.bias_correction1);
  const T sqrt_bc2 = static_cast<T>(std::sqrt(s.bias_correction2)), eps = static_cast<T>(s.eps);
  for (int64_t i = 0; i < n; ++i) {
    const T g = grad[i] * scale;
    T p = param[i];
    if (i < n_decay) p = p * decay;
    m[i] = m[i] + w1 * (g - m[i]);
    v[i] = b2 * v[i] + w2 * g * g;
    const T denom = std::sqrt(v[i]) / sqrt_bc2 + eps;
    param[i] = p - step_size * m[i] / denom;
  }
}

/// sum of x[i]² in double, in index order.
template <typename T>
double sum_squares_double(const T* x, int64_t n) {
  double s = 0;
  for (int64_t i = 0; i < n; ++i) s += static_cast<double>(x[i]) * static_cast<double>(x[i]);
  return s;
}

}  // namespace attograd::kernels::reference
