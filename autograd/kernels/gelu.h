// GELU, tanh approximation, as GPT-2 uses it (Hendrycks & Gimpel 2016, eq. in section 2):
//   gelu(x) = 0.5 x (1 + tanh(s (x + 0.044715 x^3))),  s = sqrt(2/pi)
//   gelu'(x) = 0.5 (1 + t) + 0.5 x (1 - t^2) s (1 + 3 * 0.044715 x^2),  t = tanh(...)
// Scalar reference twins: gelu_ref.h.
#pragma once

#include <cstdint>

namespace attograd::kernels {

/// y[i] = gelu(x[i]). y may alias x.
template <typename T>
void gelu_forward(T* y, const T* x, int64_t n);

/// dx[i] += dy[i] * gelu'(x[i]), or dx[i] = dy[i] * gelu'(x[i]) when !accumulate (the first
/// gradient of dx: GradBuffers::first_write, engine.h; dx's old contents are then not read).
template <typename T>
void gelu_backward(T* dx, const T* x, const T* dy, int64_t n, bool accumulate = true);

}  // namespace attograd::kernels
