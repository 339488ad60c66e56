#include "autograd/gradcheck.h"

#include <algorithm>
#include <cmath>
#include <sstream>
#include <stdexcept>

#include "autograd/engine.h"
#include "autograd/random.h"

namespace attograd {

namespace {

// Reads and writes element i of a contiguous floating tensor as double.
double get(const Tensor& t, int64_t i) {
  return t.dtype() == DType::f64 ? t.data<double>()[i] : t.data<float>()[i];
}
void set(const Tensor& t, int64_t i, double v) {
  if (t.dtype() == DType::f64)
    t.data<double>()[i] = v;
  else
    t.data<float>()[i] = static_cast<float>(v);
}

// s(x) = <u, f(x)>, accumulated in double.
double project(const Tensor& y, const Tensor& u) {
  const std::vector<double> yv = y.to_vector(), uv = u.to_vector();
  double s = 0;
  for (size_t i = 0; i < yv.size(); ++i) s += yv[i] * uv[i];
  return s;
}

// Runs f, then one backward with grad_output u; returns a copy of each checked input's grad.
std::vector<Tensor> analytical(const GradcheckFn& f, const std::vector<Tensor>& inputs,
                               const std::vector<size_t>& checked, const Tensor& u) {
  for (size_t i : checked) inputs[i].zero_grad();  // keeps a buffer (e.g. a parameter arena's)
  Tensor y = f(inputs);
  if (!y.requires_grad())
    throw std::invalid_argument(
        "gradcheck: the output does not depend on any input that requires grad");
  y.backward(u);
  std::vector<Tensor> grads;
  for (size_t i : checked) {
    Tensor g = inputs[i].grad();
    grads.push_back(g.defined() ? g.clone() : Tensor::zeros(inputs[i].shape(), inputs[i].dtype()));
  }
  return grads;
}

}  // namespace

GradcheckResult run_gradcheck(const GradcheckFn& f, const std::vector<Tensor>& inputs,
                              const GradcheckOptions& opt) {
  std::vector<size_t> checked;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i].requires_grad()) continue;
    if (!inputs[i].is_contiguous())
      throw std::invalid_argument("gradcheck: input " + std::to_string(i) + " must be contiguous");
    if (inputs[i].dtype() == DType::f32 && opt.eps < 1e-3)
      throw std::invalid_argument(
          "gradcheck: float32 input " + std::to_string(i) + " with eps " + std::to_string(opt.eps) +
          ": in f32, f(x ± eps) is rounded to ~1e-7 relative, so with a tiny eps the difference "
          "quotient measures rounding, not the derivative (x³ at 1.1 with eps 1e-6 gives ~3.46, "
          "not 3.63). Use f64 inputs, or eps >= 1e-3 with looser tolerances");
    checked.push_back(i);
  }
  if (checked.empty()) throw std::invalid_argument("gradcheck: no input requires grad");

  Generator gen(opt.seed);
  Tensor y0;
  {
    NoGradGuard no_grad;
    y0 = f(inputs);
  }
  const Tensor u = Tensor::randn(y0.shape(), gen, y0.dtype());
  const std::vector<Tensor> grads = analytical(f, inputs, checked, u);

  auto s_at = [&]() {
    NoGradGuard no_grad;
    return project(f(inputs), u);
  };

  GradcheckResult result;
  for (size_t c = 0; c < checked.size(); ++c) {
    const Tensor& x = inputs[checked[c]];
    GradcheckInputReport rep;
    rep.index = checked[c];
    rep.shape = x.shape();
    double worst = -1;  // worst (err - allowed), to report the most failing element
    auto compare = [&](double a, double n, const std::string& where) {
      const double err = std::abs(a - n);
      rep.max_abs_err = std::max(rep.max_abs_err, err);
      rep.max_rel_err = std::max(rep.max_rel_err, err / std::max(std::abs(n), 1e-12));
      const double excess = err - (opt.atol + opt.rtol * std::abs(n));
      if (excess > 0) rep.passed = false;
      if (excess > worst) {
        worst = excess;
        std::ostringstream os;
        os.precision(10);
        os << where << ": analytical " << a << " vs numerical " << n;
        rep.detail = os.str();
      }
    };
    if (!opt.fast_mode) {
      for (int64_t k = 0; k < x.numel(); ++k) {
        const double orig = get(x, k);
        set(x, k, orig + opt.eps);
        const double plus = s_at();
        set(x, k, orig - opt.eps);
        const double minus = s_at();
        set(x, k, orig);
        compare(get(grads[c], k), (plus - minus) / (2 * opt.eps), "element " + std::to_string(k));
      }
    } else {
      // Directional derivative along a random v: (s(x + eps v) - s(x - eps v)) / 2eps = <g, v>.
      const Tensor v = Tensor::randn(x.shape(), gen, x.dtype());
      const Tensor orig = x.clone();
      auto shift = [&](double h) {
        for (int64_t k = 0; k < x.numel(); ++k) set(x, k, get(orig, k) + h * get(v, k));
      };
      shift(opt.eps);
      const double plus = s_at();
      shift(-opt.eps);
      const double minus = s_at();
      shift(0);
      double dot = 0;
      for (int64_t k = 0; k < x.numel(); ++k) dot += get(grads[c], k) * get(v, k);
      compare(dot, (plus - minus) / (2 * opt.eps), "direction v");
    }
    if (!rep.passed) {
      result.passed = false;
      result.message += "input " + std::to_string(rep.index) + " " + shape_str(rep.shape) +
                        ": gradient mismatch at " + rep.detail + "; ";
    }
    result.inputs.push_back(rep);
  }

  if (opt.check_repeat) {
    const std::vector<Tensor> again = analytical(f, inputs, checked, u);
    for (size_t c = 0; c < checked.size(); ++c)
      if (again[c].to_vector() != grads[c].to_vector()) result.repeat_ok = false;
    if (!result.repeat_ok) {
      result.passed = false;
      result.message += "two backward passes gave different gradients (nondeterministic VJP); ";
    }
  }
  return result;  // each input's grad() holds one backward pass's gradient
}

}  // namespace attograd
