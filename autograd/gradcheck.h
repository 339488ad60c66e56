// Finite-difference gradient checking, in the manner of torch.autograd.gradcheck.
//
// For f: inputs -> y and a random upstream u (seeded), the scalar s(x) = <u, f(x)> has
// gradient J(x)ᵀ u, which is exactly what one backward pass with grad_output = u computes.
// The check compares it with central differences of s:
//     ds/dx_k ≈ (s(x + eps e_k) - s(x - eps e_k)) / (2 eps)            (error O(eps²))
// element by element, passing when |analytical - numerical| <= atol + rtol * |numerical|.
// Fast mode compares one directional derivative per input instead, vᵀ Jᵀ u for a random v,
// which costs two forward passes per input rather than two per element.
//
// Central differences need float64: in f32 the rounding error of s(x ± eps) divided by
// 2 eps swamps the truncation error unless eps is near the cube root of f32's epsilon
// (~5e-3); run_gradcheck refuses f32 inputs with eps < 1e-3 and says why.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "autograd/tensor.h"

namespace attograd {

/// Tolerances and mode. The defaults are PyTorch's for float64.
struct GradcheckOptions {
  double eps = 1e-6;         // finite-difference step
  double atol = 1e-5;        // absolute tolerance
  double rtol = 1e-3;        // relative tolerance, times |numerical|
  bool fast_mode = false;    // compare vᵀ Jᵀ u per input instead of every element
  uint64_t seed = 0;         // for u (and v in fast mode)
  bool check_repeat = true;  // a second backward must give bit-identical gradients

  /// Settings for float32 inputs: eps near the cube root of f32's machine epsilon
  /// (1.2e-7^(1/3) ~ 4.9e-3) balances truncation error (~eps²) against rounding error
  /// (~1e-7 / eps), and both end up near 1e-4 relative, hence the 1e-2 tolerances.
  static GradcheckOptions float32() {
    GradcheckOptions o;
    o.eps = 5e-3;
    o.atol = 1e-2;
    o.rtol = 1e-2;
    return o;
  }
};

/// Per differentiable input: the worst errors found.
struct GradcheckInputReport {
  size_t index = 0;
  Shape shape;
  double max_abs_err = 0;  // max |analytical - numerical|
  double max_rel_err = 0;  // max |analytical - numerical| / max(|numerical|, tiny)
  bool passed = true;
  std::string detail;  // the worst element, e.g. "element 3: analytical 0.99 vs numerical 1"
};

/// The verdict of one check.
struct GradcheckResult {
  bool passed = true;
  std::vector<GradcheckInputReport> inputs;  // one per input that requires grad
  bool repeat_ok = true;                     // the two backward passes agreed bit for bit
  std::string message;                       // empty when passed; else what failed
};

/// A function under test: a graph from `inputs` to one output tensor (any shape).
using GradcheckFn = std::function<Tensor(const std::vector<Tensor>& inputs)>;

/// Checks f's VJPs at `inputs` (the tensors marked requires_grad are checked; others are held
/// constant). Inputs are perturbed in place and restored. Throws std::invalid_argument for
/// f32 inputs with eps < 1e-3, or when no input requires grad.
GradcheckResult run_gradcheck(const GradcheckFn& f, const std::vector<Tensor>& inputs,
                              const GradcheckOptions& options = {});

}  // namespace attograd
