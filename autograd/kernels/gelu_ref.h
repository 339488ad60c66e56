// Scalar reference twins of gelu.h (GELU, tanh approximation): the specification, and the
// oracle for tests/kernels/gelu_test.cc.
#pragma once

#include <cmath>
#include <cstdint>

namespace attograd::kernels::reference {

/// sqrt(2/pi) and the cubic coefficient of the tanh approximation.
template <typename T>
constexpr T kGeluScale = static_cast<T>(0.7978845608028654);
template <typename T>
constexpr T kGeluCubic = static_cast<T>(0.044715);

/// t = tanh(s (x + 0.044715 x^3)), the one transcendental of gelu and gelu'.
template <typename T>
T gelu_tanh(T x) {
  return std::tanh(kGeluScale<T> * (x + kGeluCubic<T> * x * x * x));
}

/// gelu'(x) = 0.5 (1 + t) + 0.5 x (1 - t^2) s (1 + 3 * 0.044715 x^2), t = gelu_tanh(x)
template <typename T>
T gelu_slope(T x) {
  const T t = gelu_tanh(x);
  const T du_dx = kGeluScale<T> * (T(1) + T(3) * kGeluCubic<T> * x * x);
  return T(0.5) * (T(1) + t) + T(0.5) * x * (T(1) - t * t) * du_dx;
}

/// y = 0.5 x (1 + tanh(s (x + 0.044715 x^3)))
template <typename T>
void gelu_forward(T* y, const T* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = T(0.5) * x[i] * (T(1) + gelu_tanh(x[i]));
}

/// dx (+)= dy * (0.5 (1 + t) + 0.5 x (1 - t^2) s (1 + 3 * 0.044715 x^2)): added when
/// accumulate, else written
template <typename T>
void gelu_backward(T* dx, const T* x, const T* dy, int64_t n, bool accumulate = true) {
  for (int64_t i = 0; i < n; ++i) {
    const T grad = dy[i] * gelu_slope(x[i]);
    dx[i] = accumulate ? dx[i] + grad : grad;
  }
}

}  // namespace attograd::kernels::reference
