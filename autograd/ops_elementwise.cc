// Elementwise ops: forward and VJP side by side, one section per op.
// Binary ops broadcast like NumPy; their VJPs sum the gradient back to each operand's shape.
#include <cmath>
#include <stdexcept>

#include "autograd/kernels/elementwise.h"
#include "autograd/kernels/gelu.h"
#include "autograd/ops.h"
#include "autograd/ops_internal.h"

namespace attograd {

using kernels::BinaryOp;
using kernels::UnaryOp;

namespace {

// dgrad (an operand's gradient buffer, in the operand's shape) += alpha * sum_to(g).
void accumulate_broadcast(const Tensor& dgrad, const Tensor& g, double alpha = 1.0) {
  detail::accumulate(detail::expand_view(dgrad, g.shape()), g, alpha);
}

bool same_shape_contiguous(const Tensor& a, const Tensor& b) {
  return a.shape() == b.shape() && a.is_contiguous() && b.is_contiguous();
}

}  // namespace

// ----- add:  y = a + b;  da = sum_to(dy), db = sum_to(dy) -----
Tensor add(const Tensor& a, const Tensor& b) {
  detail::check_floating_pair("add", a, b);
  return record(detail::binary_raw(BinaryOp::add, a, b), "add", {a, b},
                [](const Tensor& g, std::span<Tensor> gi) {
                  if (gi[0].defined()) accumulate_broadcast(gi[0], g);
                  if (gi[1].defined()) accumulate_broadcast(gi[1], g);
                });
}

// ----- sub:  y = a - b;  da = sum_to(dy), db = -sum_to(dy) -----
Tensor sub(const Tensor& a, const Tensor& b) {
  detail::check_floating_pair("sub", a, b);
  return record(detail::binary_raw(BinaryOp::sub, a, b), "sub", {a, b},
                [](const Tensor& g, std::span<Tensor> gi) {
                  if (gi[0].defined()) accumulate_broadcast(gi[0], g);
                  if (gi[1].defined()) accumulate_broadcast(gi[1], g, -1.0);
                });
}

// ----- mul:  y = a * b;  da = sum_to(dy * b), db = sum_to(dy * a) -----
Tensor mul(const Tensor& a, const Tensor& b) {
  detail::check_floating_pair("mul", a, b);
  return record(detail::binary_raw(BinaryOp::mul, a, b), "mul", {a, b},
                [a = a.detach(), b = b.detach()](const Tensor& g, std::span<Tensor> gi) {
                  // da += dy * b, fused when no broadcasting is involved.
                  auto vjp = [&](const Tensor& da, const Tensor& other) {
                    if (same_shape_contiguous(g, other) && da.shape() == g.shape()) {
                      dispatch_floating(g.dtype(), "mul", [&]<typename T>() {
                        kernels::mul_acc<T>(da.data<T>(), g.data<T>(), other.data<T>(), g.numel());
                      });
                    } else {
                      accumulate_broadcast(da, detail::binary_raw(BinaryOp::mul, g, other));
                    }
                  };
                  if (gi[0].defined()) vjp(gi[0], b);
                  if (gi[1].defined()) vjp(gi[1], a);
                });
}

// ----- div:  y = a / b;  da = sum_to(dy / b), db = -sum_to(dy * y / b) -----
Tensor div(const Tensor& a, const Tensor& b) {
  detail::check_floating_pair("div", a, b);
  Tensor y = detail::binary_raw(BinaryOp::div, a, b);
  return record(y, "div", {a, b}, [b = b.detach(), y = y.detach()](const Tensor& g, std::span<Tensor> gi) {
    if (same_shape_contiguous(g, b) && (!gi[0].defined() || gi[0].shape() == g.shape()) &&
        (!gi[1].defined() || gi[1].shape() == g.shape())) {
      dispatch_floating(g.dtype(), "div", [&]<typename T>() {
        kernels::div_backward<T>(gi[0].defined() ? gi[0].data<T>() : nullptr,
                                 gi[1].defined() ? gi[1].data<T>() : nullptr, b.data<T>(),
                                 y.data<T>(), g.data<T>(), g.numel());
      });
      return;
    }
    if (gi[0].defined()) accumulate_broadcast(gi[0], detail::binary_raw(BinaryOp::div, g, b));
    if (gi[1].defined())
      accumulate_broadcast(gi[1], detail::binary_raw(BinaryOp::div, detail::binary_raw(BinaryOp::mul, g, y), b), -1.0);
  });
}

// ----- add_scalar:  y = x + s;  dx = dy -----
Tensor add_scalar(const Tensor& x, double s) {
  const Tensor xc = detail::contiguous_data(x);
  Tensor y = Tensor::empty(x.shape(), x.dtype());
  dispatch_floating(x.dtype(), "add_scalar", [&]<typename T>() {
    kernels::binary_scalar_right<T>(BinaryOp::add, y.data<T>(), xc.data<T>(), static_cast<T>(s), y.numel());
  });
  return record(y, "add_scalar", {x}, [](const Tensor& g, std::span<Tensor> gi) {
    detail::accumulate(gi[0], g);
  });
}

// ----- mul_scalar:  y = s x;  dx = s dy -----
Tensor mul_scalar(const Tensor& x, double s) {
  const Tensor xc = detail::contiguous_data(x);
  Tensor y = Tensor::empty(x.shape(), x.dtype());
  dispatch_floating(x.dtype(), "mul_scalar", [&]<typename T>() {
    kernels::binary_scalar_right<T>(BinaryOp::mul, y.data<T>(), xc.data<T>(), static_cast<T>(s), y.numel());
  });
  return record(y, "mul_scalar", {x}, [s](const Tensor& g, std::span<Tensor> gi) {
    detail::accumulate(gi[0], g, s);
  });
}

// ----- the pointwise functions: y = f(x);  dx = dy * f'(x) (kernels/elementwise.h) -----
namespace {

Tensor unary(UnaryOp op, const char* name, const Tensor& x) {
  if (!x.defined()) throw std::invalid_argument(std::string(name) + ": undefined tensor");
  const Tensor xc = detail::contiguous_data(x);
  Tensor y = Tensor::empty(x.shape(), x.dtype());
  dispatch_floating(x.dtype(), name, [&]<typename T>() {
    kernels::unary_forward<T>(op, y.data<T>(), xc.data<T>(), y.numel());
  });
  return record(y, name, {x}, [op, name, xc = xc.detach(), y = y.detach()](const Tensor& g, std::span<Tensor> gi) {
    dispatch_floating(g.dtype(), name, [&]<typename T>() {
      kernels::unary_backward<T>(op, gi[0].data<T>(), xc.data<T>(), y.data<T>(), g.data<T>(), g.numel());
    });
  });
}

}  // namespace

Tensor neg(const Tensor& x) { return unary(UnaryOp::neg, "neg", x); }
Tensor exp(const Tensor& x) { return unary(UnaryOp::exp, "exp", x); }
Tensor log(const Tensor& x) { return unary(UnaryOp::log, "log", x); }
Tensor tanh(const Tensor& x) { return unary(UnaryOp::tanh, "tanh", x); }
Tensor sqrt(const Tensor& x) { return unary(UnaryOp::sqrt, "sqrt", x); }
Tensor relu(const Tensor& x) { return unary(UnaryOp::relu, "relu", x); }

// ----- pow:  y = x^p;  dx = dy * p * x^(p-1) -----
Tensor pow(const Tensor& x, double p) {
  const Tensor xc = detail::contiguous_data(x);
  Tensor y = Tensor::empty(x.shape(), x.dtype());
  dispatch_floating(x.dtype(), "pow", [&]<typename T>() {
    kernels::pow_forward<T>(y.data<T>(), xc.data<T>(), static_cast<T>(p), y.numel());
  });
  return record(y, "pow", {x}, [p, xc = xc.detach()](const Tensor& g, std::span<Tensor> gi) {
    dispatch_floating(g.dtype(), "pow", [&]<typename T>() {
      kernels::pow_backward<T>(gi[0].data<T>(), xc.data<T>(), static_cast<T>(p), g.data<T>(), g.numel());
    });
  });
}

// ----- gelu:  y = gelu(x);  dx = dy * gelu'(x) (kernels/gelu.h) -----
Tensor gelu(const Tensor& x) {
  const Tensor xc = detail::contiguous_data(x);
  Tensor y = Tensor::empty(x.shape(), x.dtype());
  dispatch_floating(x.dtype(), "gelu", [&]<typename T>() {
    kernels::gelu_forward<T>(y.data<T>(), xc.data<T>(), y.numel());
  });
  return record(y, "gelu", {x}, [xc = xc.detach()](const Tensor& g, std::span<Tensor> gi) {
    dispatch_floating(g.dtype(), "gelu", [&]<typename T>() {
      kernels::gelu_backward<T>(gi[0].data<T>(), xc.data<T>(), g.data<T>(), g.numel());
    });
  });
}

// ----- derived ops: compositions of the primitives above, no VJP of their own -----
Tensor sub_scalar(const Tensor& x, double s) { return add_scalar(x, -s); }
Tensor div_scalar(const Tensor& x, double s) { return mul_scalar(x, 1.0 / s); }
Tensor rsub_scalar(double s, const Tensor& x) { return add_scalar(neg(x), s); }
Tensor rdiv_scalar(double s, const Tensor& x) { return mul_scalar(pow(x, -1.0), s); }

Tensor operator+(const Tensor& a, const Tensor& b) { return add(a, b); }
Tensor operator-(const Tensor& a, const Tensor& b) { return sub(a, b); }
Tensor operator*(const Tensor& a, const Tensor& b) { return mul(a, b); }
Tensor operator/(const Tensor& a, const Tensor& b) { return div(a, b); }
Tensor operator-(const Tensor& x) { return neg(x); }
Tensor operator+(const Tensor& x, double s) { return add_scalar(x, s); }
Tensor operator-(const Tensor& x, double s) { return sub_scalar(x, s); }
Tensor operator*(const Tensor& x, double s) { return mul_scalar(x, s); }
Tensor operator/(const Tensor& x, double s) { return div_scalar(x, s); }
Tensor operator+(double s, const Tensor& x) { return add_scalar(x, s); }
Tensor operator-(double s, const Tensor& x) { return rsub_scalar(s, x); }
Tensor operator*(double s, const Tensor& x) { return mul_scalar(x, s); }
Tensor operator/(double s, const Tensor& x) { return rdiv_scalar(s, x); }

}  // namespace attograd
