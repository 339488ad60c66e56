// Elementwise ops: forward and VJP side by side, one section per op.
// Binary ops broadcast like NumPy; their VJPs sum the gradient back to each operand's shape.
#include <cmath>
#include <limits>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "autograd/gradcheck_inputs.h"
#include "autograd/kernels/elementwise.h"
#include "autograd/kernels/gelu.h"
#include "autograd/op_registry.h"
#include "autograd/ops.h"
#include "autograd/ops_internal.h"

namespace attograd {

using gradcheck_inputs::Inputs;
using gradcheck_inputs::param;
using gradcheck_inputs::param_away_from_zero;
using gradcheck_inputs::param_distinct;
using gradcheck_inputs::Sizes;
using gradcheck_inputs::unary_case;
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

// Calls f.template operator()<S>() with S the element type of any dtype (i64 too).
template <typename F>
decltype(auto) dispatch_any(DType dtype, F&& f) {
  if (dtype == DType::i64) return f.template operator()<int64_t>();
  if (dtype == DType::f32) return f.template operator()<float>();
  return f.template operator()<double>();
}

// A value as an error message shows it: 2, 0.5, nan, 1e+20.
template <typename S>
std::string value_str(S v) {
  std::ostringstream os;
  os << v;
  return os.str();
}

// A binary op's gradcheck cases: same shapes, b broadcast, both broadcast. A divisor (b of
// div) stays away from 0.
std::vector<GradcheckCase> binary_cases(Tensor (*f)(const Tensor&, const Tensor&),
                                        bool b_is_divisor = false) {
  const auto second = [b_is_divisor](const Shape& shape, Generator& g, DType d) {
    return b_is_divisor ? param_away_from_zero(shape, g, d) : param(shape, g, d);
  };
  const auto apply = [f](const Inputs& in) { return f(in[0], in[1]); };
  return {{"(B, T, C) and (B, T, C)",
           [second](Generator& g, DType d, const Sizes& s) {
             return Inputs{param({s.B, s.T, s.C}, g, d), second({s.B, s.T, s.C}, g, d)};
           },
           apply},
          {"(B, T, C) and (C,) broadcast",
           [second](Generator& g, DType d, const Sizes& s) {
             return Inputs{param({s.B, s.T, s.C}, g, d), second({s.C}, g, d)};
           },
           apply},
          {"(B, 1, C) and (T, 1) broadcast both ways",
           [second](Generator& g, DType d, const Sizes& s) {
             return Inputs{param({s.B, 1, s.C}, g, d), second({s.T, 1}, g, d)};
           },
           apply}};
}

}  // namespace

// ----- add -----
static void register_add(OpRegistry& r) {
  r.add({.name = "add",
         .forward = "`a + b` (broadcast)",
         .vjp = "`da = sum_to(dy)`, `db = sum_to(dy)`",
         .kernel = "kernels/elementwise",
         .tests = "ops_test: broadcasting",
         .cases = binary_cases(add)});
}

Tensor add(const Tensor& a, const Tensor& b) {
  detail::check_floating_pair("add", a, b);
  return record(
      detail::binary_raw(BinaryOp::add, a, b), "add", {a, b},
      [](const Tensor& g, std::span<Tensor> gi) {
        for (Tensor& dgrad : gi.first(2)) {
          if (!dgrad.defined()) continue;
          // The first gradient of an input of the output's shape is dy itself: copied, not added
          // to a zero fill (the residual stream's gradient, twice per GPT block).
          if (first_gradient(dgrad)) {
            if (dgrad.shape() == g.shape()) {
              detail::copy_into(dgrad, g);
              continue;
            }
            dgrad.fill_(0.0);
          }
          accumulate_broadcast(dgrad, g);
        }
      },
      GradBuffers::first_write);
}

// ----- sub -----
static void register_sub(OpRegistry& r) {
  r.add({.name = "sub",
         .forward = "`a − b` (broadcast)",
         .vjp = "`da = sum_to(dy)`, `db = −sum_to(dy)`",
         .kernel = "kernels/elementwise",
         .cases = binary_cases(sub)});
}

Tensor sub(const Tensor& a, const Tensor& b) {
  detail::check_floating_pair("sub", a, b);
  return record(detail::binary_raw(BinaryOp::sub, a, b), "sub", {a, b},
                [](const Tensor& g, std::span<Tensor> gi) {
                  if (gi[0].defined()) accumulate_broadcast(gi[0], g);
                  if (gi[1].defined()) accumulate_broadcast(gi[1], g, -1.0);
                });
}

// ----- mul -----
static void register_mul(OpRegistry& r) {
  r.add({.name = "mul",
         .forward = "`a ⊙ b` (broadcast)",
         .vjp = "`da = sum_to(dy ⊙ b)`, `db = sum_to(dy ⊙ a)`",
         .kernel = "kernels/elementwise",
         .tests = "engine_test",
         .cases = binary_cases(mul)});
}

Tensor mul(const Tensor& a, const Tensor& b) {
  detail::check_floating_pair("mul", a, b);
  return record(detail::binary_raw(BinaryOp::mul, a, b), "mul", {a, b},
                {{"a", detail::saved_if_grad(b, a)}, {"b", detail::saved_if_grad(a, b)}},
                [](const Tensor& g, std::span<Tensor> gi, const Tensor& a, const Tensor& b) {
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
                  if (gi[0].defined() && b.defined()) vjp(gi[0], b);
                  if (gi[1].defined() && a.defined()) vjp(gi[1], a);
                });
}

// ----- div -----
static void register_div(OpRegistry& r) {
  r.add({.name = "div",
         .forward = "`a / b` (broadcast)",
         .vjp = "`da = sum_to(dy / b)`, `db = −sum_to(dy ⊙ y / b)`",
         .kernel = "kernels/elementwise",
         .tests = "ops_test: broadcasting",
         .cases = binary_cases(div, /*b_is_divisor=*/true)});
}

Tensor div(const Tensor& a, const Tensor& b) {
  detail::check_floating_pair("div", a, b);
  Tensor y = detail::binary_raw(BinaryOp::div, a, b);
  // da reads b; db reads b and y.
  return record(
      y, "div", {a, b}, {{"b", b}, {"output", detail::saved_if_grad(b, y)}},
      [](const Tensor& g, std::span<Tensor> gi, const Tensor& b, const Tensor& y) {
        const Tensor& db = y.defined() ? gi[1] : Tensor();
        if (same_shape_contiguous(g, b) && (!gi[0].defined() || gi[0].shape() == g.shape()) &&
            (!db.defined() || db.shape() == g.shape())) {
          dispatch_floating(g.dtype(), "div", [&]<typename T>() {
            kernels::div_backward<T>(detail::data_or_null<T>(gi[0]), detail::data_or_null<T>(db),
                                     b.data<T>(), detail::data_or_null<T>(y), g.data<T>(),
                                     g.numel());
          });
          return;
        }
        if (gi[0].defined()) accumulate_broadcast(gi[0], detail::binary_raw(BinaryOp::div, g, b));
        if (db.defined())
          accumulate_broadcast(
              db, detail::binary_raw(BinaryOp::div, detail::binary_raw(BinaryOp::mul, g, y), b),
              -1.0);
      });
}

// ----- add_scalar -----
static void register_add_scalar(OpRegistry& r) {
  r.add({.name = "add_scalar",
         .forward = "`x + s`",
         .vjp = "`dx = dy`",
         .kernel = "kernels/elementwise",
         .tests = "engine_test: deep chains",
         .cases = {unary_case([](const Tensor& x) { return add_scalar(x, 0.7); })}});
}

Tensor add_scalar(const Tensor& x, double s) {
  const Tensor xc = detail::contiguous_data(x);
  Tensor y = Tensor::empty(x.shape(), x.dtype());
  dispatch_floating(x.dtype(), "add_scalar", [&]<typename T>() {
    kernels::binary_scalar_right<T>(BinaryOp::add, y.data<T>(), xc.data<T>(), static_cast<T>(s),
                                    y.numel());
  });
  return record(y, "add_scalar", {x},
                [](const Tensor& g, std::span<Tensor> gi) { detail::accumulate(gi[0], g); });
}

// ----- mul_scalar -----
static void register_mul_scalar(OpRegistry& r) {
  r.add({.name = "mul_scalar",
         .forward = "`s x`",
         .vjp = "`dx = s dy`",
         .kernel = "kernels/elementwise",
         .tests = "engine_test: deep chains",
         .cases = {unary_case([](const Tensor& x) { return mul_scalar(x, -1.3); })}});
}

Tensor mul_scalar(const Tensor& x, double s) {
  const Tensor xc = detail::contiguous_data(x);
  Tensor y = Tensor::empty(x.shape(), x.dtype());
  dispatch_floating(x.dtype(), "mul_scalar", [&]<typename T>() {
    kernels::binary_scalar_right<T>(BinaryOp::mul, y.data<T>(), xc.data<T>(), static_cast<T>(s),
                                    y.numel());
  });
  return record(y, "mul_scalar", {x},
                [s](const Tensor& g, std::span<Tensor> gi) { detail::accumulate(gi[0], g, s); });
}

// ----- the pointwise functions: y = f(x), dx = dy ⊙ f′(x), on kernels/elementwise.h -----
static void register_pointwise(OpRegistry& r) {
  const auto pointwise = [&r](const char* name, const char* forward, const char* vjp,
                              GradcheckCase c, const char* file = __builtin_FILE(),
                              int line = __builtin_LINE()) {
    r.add({.name = name,
           .forward = forward,
           .vjp = vjp,
           .kernel = "kernels/elementwise",
           .tests = "elementwise_test",
           .cases = {std::move(c)}},
          file, line);
  };
  pointwise("neg", "`−x`", "`dx = −dy`", unary_case([](const Tensor& x) { return neg(x); }));
  pointwise("exp", "`exp(x)`", "`dx = dy ⊙ y`", unary_case([](const Tensor& x) { return exp(x); }));
  pointwise("log", "`log(x)`, `x > 0`", "`dx = dy / x`",
            unary_case([](const Tensor& x) { return log(x); }, 0.2, 3));
  pointwise("tanh", "`tanh(x)`", "`dx = dy (1 − y²)`",
            unary_case([](const Tensor& x) { return tanh(x); }));
  pointwise("sqrt", "`√x`", "`dx = dy / (2y)`",
            unary_case([](const Tensor& x) { return sqrt(x); }, 0.2, 3));
  pointwise("relu", "`max(x, 0)`", "`dx = dy ⊙ [x > 0]`",
            {"(B, T, C), |x| >= 0.2",
             [](Generator& g, DType d, const Sizes& s) {
               return Inputs{param_away_from_zero({s.B, s.T, s.C}, g, d)};
             },
             [](const Inputs& in) { return relu(in[0]); }});
  pointwise("sigmoid", "`1 / (1 + exp(−x))`", "`dx = dy ⊙ y (1 − y)`",
            unary_case([](const Tensor& x) { return sigmoid(x); }, -4, 4));
  pointwise("abs", "`|x|`", "`dx = dy ⊙ sign(x)`, 0 at 0",
            {"(B, T, C), |x| >= 0.2",
             [](Generator& g, DType d, const Sizes& s) {
               return Inputs{param_away_from_zero({s.B, s.T, s.C}, g, d)};
             },
             [](const Inputs& in) { return abs(in[0]); }});
  pointwise("sin", "`sin(x)`", "`dx = dy ⊙ cos(x)`",
            unary_case([](const Tensor& x) { return sin(x); }, -4, 4));
  pointwise("cos", "`cos(x)`", "`dx = −dy ⊙ sin(x)`",
            unary_case([](const Tensor& x) { return cos(x); }, -4, 4));
}

namespace {

// What the derivative of each pointwise function reads back: x, y = f(x), or neither. Only that
// is saved, so exp's input may be changed in place after the forward and its output may not, as
// in PyTorch. No default: -Wswitch names a new UnaryOp left out here.
struct UnaryReads {
  bool x, y;
};
UnaryReads unary_reads(UnaryOp op) {
  switch (op) {
    case UnaryOp::neg:
      return {false, false};
    case UnaryOp::log:
    case UnaryOp::relu:
    case UnaryOp::abs:
    case UnaryOp::sin:
    case UnaryOp::cos:
      return {true, false};
    case UnaryOp::exp:
    case UnaryOp::tanh:
    case UnaryOp::sqrt:
    case UnaryOp::sigmoid:
      return {false, true};
  }
  return {true, true};
}

Tensor unary(UnaryOp op, const char* name, const Tensor& x) {
  if (!x.defined()) throw std::invalid_argument(std::string(name) + ": undefined tensor");
  const Tensor xc = detail::contiguous_data(x);
  Tensor y = Tensor::empty(x.shape(), x.dtype());
  dispatch_floating(x.dtype(), name, [&]<typename T>() {
    kernels::unary_forward<T>(op, y.data<T>(), xc.data<T>(), y.numel());
  });
  const UnaryReads reads = unary_reads(op);
  return record(
      y, name, {x}, {{"x", reads.x ? xc : Tensor()}, {"output", reads.y ? y : Tensor()}},
      [op, name](const Tensor& g, std::span<Tensor> gi, const Tensor& xc, const Tensor& y) {
        dispatch_floating(g.dtype(), name, [&]<typename T>() {
          kernels::unary_backward<T>(op, gi[0].data<T>(), detail::data_or_null<T>(xc),
                                     detail::data_or_null<T>(y), g.data<T>(), g.numel());
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
Tensor sigmoid(const Tensor& x) { return unary(UnaryOp::sigmoid, "sigmoid", x); }
Tensor abs(const Tensor& x) { return unary(UnaryOp::abs, "abs", x); }
Tensor sin(const Tensor& x) { return unary(UnaryOp::sin, "sin", x); }
Tensor cos(const Tensor& x) { return unary(UnaryOp::cos, "cos", x); }

// ----- pow -----
static void register_pow(OpRegistry& r) {
  r.add({.name = "pow",
         .forward = "`x^p`",
         .vjp = "`dx = p dy ⊙ x^(p−1)`",
         .kernel = "kernels/elementwise",
         .tests = "gradcheck_test: x³ at 1.1",
         .cases = {unary_case([](const Tensor& x) { return pow(x, 2.5); }, 0.2, 2),
                   unary_case([](const Tensor& x) { return pow(x, 3.0); })}});
}

Tensor pow(const Tensor& x, double p) {
  const Tensor xc = detail::contiguous_data(x);
  Tensor y = Tensor::empty(x.shape(), x.dtype());
  dispatch_floating(x.dtype(), "pow", [&]<typename T>() {
    kernels::pow_forward<T>(y.data<T>(), xc.data<T>(), static_cast<T>(p), y.numel());
  });
  return record(y, "pow", {x}, {{"x", xc}},
                [p](const Tensor& g, std::span<Tensor> gi, const Tensor& xc) {
                  dispatch_floating(g.dtype(), "pow", [&]<typename T>() {
                    kernels::pow_backward<T>(gi[0].data<T>(), xc.data<T>(), static_cast<T>(p),
                                             g.data<T>(), g.numel());
                  });
                });
}

// ----- gelu -----
static void register_gelu(OpRegistry& r) {
  r.add({.name = "gelu",
         .forward = "`½x(1 + tanh(√(2/π)(x + 0.044715x³)))`",
         .vjp = "`dx = dy ⊙ gelu′(x)`",
         .kernel = "kernels/gelu",
         .tests = "gelu_test; fused vs primitives",
         .cases = {unary_case([](const Tensor& x) { return gelu(x); }, -4, 4)}});
}

Tensor gelu(const Tensor& x) {
  const Tensor xc = detail::contiguous_data(x);
  Tensor y = Tensor::empty(x.shape(), x.dtype());
  dispatch_floating(x.dtype(), "gelu", [&]<typename T>() {
    kernels::gelu_forward<T>(y.data<T>(), xc.data<T>(), y.numel());
  });
  return record(
      y, "gelu", {x}, {{"x", xc}},
      [](const Tensor& g, std::span<Tensor> gi, const Tensor& xc) {
        dispatch_floating(g.dtype(), "gelu", [&]<typename T>() {
          kernels::gelu_backward<T>(gi[0].data<T>(), xc.data<T>(), g.data<T>(), g.numel(),
                                    !first_gradient(gi[0]));
        });
      },
      GradBuffers::first_write);
}

// ----- clamp -----
namespace {

// A differentiable input uniform in [-2, 2) with every value at least 0.05 from each bound, so
// that no finite-difference step (5e-3 at most) crosses a kink of clamp.
Tensor param_off_bounds(const Shape& shape, Generator& g, DType d, std::vector<double> bounds) {
  std::vector<double> v = Tensor::uniform(shape, g, -2, 2, d).to_vector();
  for (double& x : v)
    for (const double b : bounds)
      if (std::abs(x - b) < 0.05) x = b + (x < b ? -0.1 : 0.1);
  return Tensor::from_vector(v, shape, d).set_requires_grad();
}

GradcheckCase clamp_case(const char* label, std::optional<double> lo, std::optional<double> hi) {
  std::vector<double> bounds;
  if (lo) bounds.push_back(*lo);
  if (hi) bounds.push_back(*hi);
  return {label,
          [bounds](Generator& g, DType d, const Sizes& s) {
            return Inputs{param_off_bounds({s.B, s.T, s.C}, g, d, bounds)};
          },
          [lo, hi](const Inputs& in) { return clamp(in[0], lo, hi); }};
}

}  // namespace

static void register_clamp(OpRegistry& r) {
  r.add({.name = "clamp",
         .forward = "`min(max(x, lo), hi)`; `lo > hi` gives `hi`",
         .vjp = "`dx = dy ⊙ [lo ≤ x ≤ hi]`",
         .kernel = "kernels/elementwise",
         .tests = "elementwise_test; ops_test: vs torch.clamp",
         .cases = {clamp_case("(B, T, C), min −0.5, max 1", -0.5, 1.0),
                   clamp_case("(B, T, C), min 0.3 only", 0.3, std::nullopt),
                   clamp_case("(B, T, C), max −0.2 only", std::nullopt, -0.2)}});
}

Tensor clamp(const Tensor& x, std::optional<double> min, std::optional<double> max) {
  if (!x.defined()) throw std::invalid_argument("clamp: undefined tensor");
  if (!min && !max)
    throw std::invalid_argument(
        "clamp: no bound given; give min, max or both (clamp(x, 0.0) for min only, clamp(x, "
        "std::nullopt, 1.0) for max only)");
  if ((min && std::isnan(*min)) || (max && std::isnan(*max)))
    throw std::invalid_argument(std::string("clamp: the ") +
                                (min && std::isnan(*min) ? "min" : "max") +
                                " bound is NaN; give a number, or std::nullopt for no bound");
  const double inf = std::numeric_limits<double>::infinity();
  const double lo = min.value_or(-inf), hi = max.value_or(inf);
  const Tensor xc = detail::contiguous_data(x);
  Tensor y = Tensor::empty(x.shape(), x.dtype());
  dispatch_floating(x.dtype(), "clamp", [&]<typename T>() {
    kernels::clamp_forward<T>(y.data<T>(), xc.data<T>(), static_cast<T>(lo), static_cast<T>(hi),
                              y.numel());
  });
  // y = clamp(x, lo, hi);  dx = dy where lo <= x <= hi
  return record(y, "clamp", {x}, {{"x", xc}},
                [lo, hi](const Tensor& g, std::span<Tensor> gi, const Tensor& xc) {
                  dispatch_floating(g.dtype(), "clamp", [&]<typename T>() {
                    kernels::clamp_backward<T>(gi[0].data<T>(), xc.data<T>(), static_cast<T>(lo),
                                               static_cast<T>(hi), g.data<T>(), g.numel());
                  });
                });
}

// ----- where -----
namespace {

// cond as a contiguous mask of `dtype` (cond itself when it already is one), after checking that
// it holds only 0 and 1: attograd has no bool dtype, and a 0.5 or a 2 is a bug to name, not a
// value to round.
Tensor mask_of(const char* op, const char* what, const Tensor& cond, DType dtype) {
  if (!cond.defined()) throw std::invalid_argument(std::string(op) + ": undefined " + what);
  const Tensor c = detail::contiguous_data(cond);
  Tensor mask = c.dtype() == dtype ? c : Tensor::empty(c.shape(), dtype);
  dispatch_any(c.dtype(), [&]<typename S>() {
    dispatch_floating(dtype, op, [&]<typename T>() {
      const S* src = c.data<S>();
      const int64_t n = c.numel();
      for (int64_t i = 0; i < n; ++i)
        if (src[i] != S(0) && src[i] != S(1))
          throw std::invalid_argument(
              std::string(op) + ": " + what + " must hold only 0 and 1 (a mask; attograd has no " +
              "bool dtype), got " + value_str(src[i]) + " at position " + std::to_string(i) +
              " of " + shape_str(c.shape()) + " " + dtype_name(c.dtype()) +
              (std::string(op) == "masked_fill"
                   ? "; make it 1 where the value is to be filled in and 0 elsewhere"
                   : "; make it 1 where the first choice is wanted and 0 elsewhere"));
      if constexpr (!std::is_same_v<S, T>) {  // else mask is cond: nothing to write
        T* dst = mask.data<T>();
        for (int64_t i = 0; i < n; ++i) dst[i] = static_cast<T>(src[i]);
      }
    });
  });
  return mask;
}

// y (shape) = mask ? a : b, each of the three broadcast to shape; mask holds 0 and 1 in a's
// dtype. A select, never mask * a + (1 - mask) * b: an inf or NaN on the side not chosen must not
// leak into y. No graph.
Tensor select_raw(const Tensor& mask, const Tensor& a, const Tensor& b, const Shape& shape) {
  Tensor y = Tensor::empty(shape, a.dtype());
  const Tensor em = detail::expand_view(mask, shape), ea = detail::expand_view(a, shape),
               eb = detail::expand_view(b, shape);
  dispatch_floating(a.dtype(), "where", [&]<typename T>() {
    T* py = y.data<T>();
    const T* pm = em.data<T>();
    const T* pa = ea.data<T>();
    const T* pb = eb.data<T>();
    detail::for_each_row<4>(shape, {y.strides(), em.strides(), ea.strides(), eb.strides()},
                            [&](auto off, int64_t n, auto inner) {
                              T* yr = py + off[0];
                              const T* mr = pm + off[1];
                              const T* ar = pa + off[2];
                              const T* br = pb + off[3];
                              for (int64_t i = 0; i < n; ++i)
                                yr[i * inner[0]] =
                                    mr[i * inner[1]] != T(0) ? ar[i * inner[2]] : br[i * inner[3]];
                            });
  });
  return y;
}

// where, with the op's and the mask's names for its errors (masked_fill calls it too).
Tensor where_named(const char* op, const char* cond_name, const Tensor& cond, const Tensor& a,
                   const Tensor& b) {
  detail::check_floating_pair(op, a, b);
  const Tensor mask = mask_of(op, cond_name, cond, a.dtype());
  const Shape shape = detail::broadcast_shapes(
      cond.shape(), detail::broadcast_shapes(a.shape(), b.shape(), op), op);
  // y = cond ? a : b;  da = sum_to(cond ? dy : 0), db = sum_to(cond ? 0 : dy)
  return record(select_raw(mask, a, b, shape), "where", {a, b}, {{"cond", mask}},
                [](const Tensor& g, std::span<Tensor> gi, const Tensor& mask) {
                  const Tensor zero = Tensor::zeros({}, g.dtype());
                  if (gi[0].defined())
                    accumulate_broadcast(gi[0], select_raw(mask, g, zero, g.shape()));
                  if (gi[1].defined())
                    accumulate_broadcast(gi[1], select_raw(mask, zero, g, g.shape()));
                });
}

// A 0/1 mask of shape with 1 at every third element, as an i64 or a floating tensor.
Tensor every_third(const Shape& shape, DType dtype) {
  std::vector<double> v(static_cast<size_t>(shape_numel(shape)));
  for (size_t i = 0; i < v.size(); ++i) v[i] = i % 3 == 0 ? 1 : 0;
  if (dtype != DType::i64) return Tensor::from_vector(v, shape, dtype);
  return Tensor::from_ids(std::vector<int64_t>(v.begin(), v.end()), shape);
}

}  // namespace

static void register_where(OpRegistry& r) {
  r.add({.name = "where",
         .forward = "`cond ? a : b` (broadcast; cond a 0/1 mask)",
         .vjp = "`da = sum_to(dy ⊙ cond)`, `db = sum_to(dy ⊙ (1 − cond))`",
         .tests = "ops_test: vs torch.where",
         .cases = {{"cond i64 (B, T, 1), a (B, T, C), b (C,) broadcast",
                    [](Generator& g, DType d, const Sizes& s) {
                      return Inputs{every_third({s.B, s.T, 1}, DType::i64),
                                    param({s.B, s.T, s.C}, g, d), param({s.C}, g, d)};
                    },
                    [](const Inputs& in) { return where(in[0], in[1], in[2]); }},
                   {"cond (T, C) in the dtype, a (B, 1, C), b (B, T, C)",
                    [](Generator& g, DType d, const Sizes& s) {
                      return Inputs{every_third({s.T, s.C}, d), param({s.B, 1, s.C}, g, d),
                                    param({s.B, s.T, s.C}, g, d)};
                    },
                    [](const Inputs& in) { return where(in[0], in[1], in[2]); }}}});
}

Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b) {
  return where_named("where", "cond", cond, a, b);
}

// ----- cast -----
static void register_cast(OpRegistry& r) {
  r.add({.name = "cast",
         .forward = "`x` in another dtype (f32 ↔ f64; i64 ↔ either, no gradient)",
         .vjp = "`dx = cast(dy, x.dtype)`",
         .tests = "ops_test: values, gradient dtypes, i64 range",
         // In float64 mode both casts are the identity (a cast to f32 and back would round the
         // finite differences away); float32 mode runs the f32 -> f64 -> f32 chain, both VJPs.
         .cases = {unary_case([](const Tensor& x) {
           const DType wide = DType::f64;
           return cast(mul(exp(cast(x, wide)), cast(x, wide)), x.dtype());
         })}});
}

namespace {

// dst = src converted element by element, both contiguous of one shape; a floating value that
// i64 cannot hold (NaN, ±inf, beyond [-2^63, 2^63)) throws, naming it and its position.
void convert_into(const Tensor& dst, const Tensor& src) {
  dispatch_any(src.dtype(), [&]<typename S>() {
    dispatch_any(dst.dtype(), [&]<typename D>() {
      const S* s = src.data<S>();
      D* d = dst.data<D>();
      const int64_t n = src.numel();
      if constexpr (std::is_same_v<D, int64_t> && !std::is_same_v<S, int64_t>) {
        constexpr double kTwo63 = 9223372036854775808.0;
        for (int64_t i = 0; i < n; ++i) {
          const double v = static_cast<double>(s[i]);
          if (!(v >= -kTwo63 && v < kTwo63))  // NaN fails both
            throw std::out_of_range("cast: " + std::string(dtype_name(src.dtype())) + " value " +
                                    value_str(s[i]) + " at position " + std::to_string(i) + " of " +
                                    shape_str(src.shape()) +
                                    " does not fit i64 (integers in [-2^63, 2^63)); replace "
                                    "NaN and infinities first, e.g. with where or clamp");
          d[i] = static_cast<int64_t>(s[i]);  // toward zero, as torch
        }
      } else {
        for (int64_t i = 0; i < n; ++i) d[i] = static_cast<D>(s[i]);
      }
    });
  });
}

}  // namespace

Tensor cast(const Tensor& x, DType dtype) {
  if (!x.defined()) throw std::invalid_argument("cast: undefined tensor");
  if (x.dtype() == dtype) return x;
  Tensor y = Tensor::empty(x.shape(), dtype);
  convert_into(y, detail::contiguous_data(x));
  if (dtype == DType::i64) return y;  // integers carry no gradient (x's stops here, as in torch)
  // y = cast(x, dtype);  dx = cast(dy, x.dtype)
  return record(y, "cast", {x}, [](const Tensor& g, std::span<Tensor> gi) {
    Tensor back = Tensor::empty(g.shape(), gi[0].dtype());
    convert_into(back, g);
    detail::accumulate(gi[0], back);
  });
}

// ----- derived ops: compositions of the primitives above, no VJP of their own -----
static void register_derived(OpRegistry& r) {
  r.add({.name = "sub_scalar",
         .forward = "`x − s`",
         .vjp = "derived: `add_scalar(x, −s)`",
         .cases = {unary_case([](const Tensor& x) { return sub_scalar(x, 0.5); })}});
  r.add({.name = "div_scalar",
         .forward = "`x / s`",
         .vjp = "derived: `mul_scalar(x, 1/s)`",
         .cases = {unary_case([](const Tensor& x) { return div_scalar(x, 4.0); })}});
  r.add({.name = "rsub_scalar",
         .forward = "`s − x`",
         .vjp = "derived: `add_scalar(neg(x), s)`",
         .cases = {unary_case([](const Tensor& x) { return rsub_scalar(2.0, x); })}});
  r.add({.name = "rdiv_scalar",
         .forward = "`s / x`",
         .vjp = "derived: `mul_scalar(pow(x, −1), s)`",
         .cases = {unary_case([](const Tensor& x) { return rdiv_scalar(2.0, x); }, 0.3, 2)}});
  r.add(
      {.name = "masked_fill",
       .forward = "`value` where mask, `x` elsewhere (broadcast)",
       .vjp = "derived: `where(mask, value, x)`",
       .tests = "ops_test: vs torch.masked_fill",
       .cases = {{"x (B, T, C), mask i64 (T, 1), value 2.5",
                  [](Generator& g, DType d, const Sizes& s) {
                    return Inputs{param({s.B, s.T, s.C}, g, d), every_third({s.T, 1}, DType::i64)};
                  },
                  [](const Inputs& in) { return masked_fill(in[0], in[1], 2.5); }}}});
}

Tensor sub_scalar(const Tensor& x, double s) { return add_scalar(x, -s); }
Tensor div_scalar(const Tensor& x, double s) { return mul_scalar(x, 1.0 / s); }
Tensor rsub_scalar(double s, const Tensor& x) { return add_scalar(neg(x), s); }
Tensor rdiv_scalar(double s, const Tensor& x) { return mul_scalar(pow(x, -1.0), s); }
Tensor masked_fill(const Tensor& x, const Tensor& mask, double value) {
  if (!x.defined()) throw std::invalid_argument("masked_fill: undefined tensor");
  if (x.dtype() == DType::i64) throw_not_floating("masked_fill", x.dtype());
  return where_named("masked_fill", "mask", mask, Tensor::scalar(value, x.dtype()), x);
}

// ----- comparisons: 0/1 masks, no gradient -----
// Each case picks with the mask through where, whose gradient goes to the side picked: the mask
// decides which, so a wrong mask fails the check against the picks it should have made.
static void register_comparisons(OpRegistry& r) {
  using F = Tensor (*)(const Tensor&, const Tensor&);
  const auto comparison = [&r](const char* name, const char* forward, const char* label, F pick,
                               const char* file = __builtin_FILE(), int line = __builtin_LINE()) {
    r.add(
        {.name = name,
         .forward = forward,
         .vjp = "none (a 0/1 mask)",
         .kernel = "kernels/elementwise",
         .tests = "elementwise_test; ops_test: vs torch",
         .cases = {{label,
                    [](Generator& g, DType d, const Sizes& s) {
                      return Inputs{param_distinct({s.B, s.T, s.C}, g, d, 0.05),
                                    param_distinct({s.C}, g, d, 0.05)};
                    },
                    // b moved off a's lattice: every |a − b| >= 0.0125, beyond f32's step
                    [pick](const Inputs& in) { return pick(in[0], add_scalar(in[1], 0.0125)); }}}},
        file, line);
  };
  comparison("gt", "`a > b` as 0/1", "where(gt(a, b), a, b), b (C,) broadcast",
             [](const Tensor& a, const Tensor& b) { return where(gt(a, b), a, b); });
  comparison("lt", "`a < b` as 0/1", "where(lt(a, b), a, b), b (C,) broadcast",
             [](const Tensor& a, const Tensor& b) { return where(lt(a, b), a, b); });
  comparison("ge", "`a ≥ b` as 0/1", "where(ge(b, a), b, a), b (C,) broadcast",
             [](const Tensor& a, const Tensor& b) { return where(ge(b, a), b, a); });
  comparison("le", "`a ≤ b` as 0/1", "where(le(b, a), b, a), b (C,) broadcast",
             [](const Tensor& a, const Tensor& b) { return where(le(b, a), b, a); });
  comparison("eq", "`a = b` as 0/1", "where(eq(a, a), a, b): all equal",
             [](const Tensor& a, const Tensor& b) { return where(eq(a, a), a, b); });
  comparison("ne", "`a ≠ b` as 0/1", "where(ne(a, b), a, b): none equal",
             [](const Tensor& a, const Tensor& b) { return where(ne(a, b), a, b); });
}

namespace {
Tensor compare(kernels::CompareOp op, const char* name, const Tensor& a, const Tensor& b) {
  detail::check_floating_pair(name, a, b);
  const Shape shape = detail::broadcast_shapes(a.shape(), b.shape(), name);
  const Tensor ea = detail::contiguous_data(detail::expand_view(a, shape));
  const Tensor eb = detail::contiguous_data(detail::expand_view(b, shape));
  Tensor mask = Tensor::empty(shape, a.dtype());
  dispatch_floating(a.dtype(), name, [&]<typename T>() {
    kernels::compare<T>(op, mask.data<T>(), ea.data<T>(), eb.data<T>(), mask.numel());
  });
  return mask;  // not recorded: a mask has no gradient
}
Tensor compare(kernels::CompareOp op, const char* name, const Tensor& x, double s) {
  if (!x.defined()) throw std::invalid_argument(std::string(name) + ": undefined tensor");
  if (x.dtype() == DType::i64) throw_not_floating(name, x.dtype());
  return compare(op, name, x, Tensor::scalar(s, x.dtype()));
}
}  // namespace

using kernels::CompareOp;
Tensor gt(const Tensor& a, const Tensor& b) { return compare(CompareOp::gt, "gt", a, b); }
Tensor lt(const Tensor& a, const Tensor& b) { return compare(CompareOp::lt, "lt", a, b); }
Tensor ge(const Tensor& a, const Tensor& b) { return compare(CompareOp::ge, "ge", a, b); }
Tensor le(const Tensor& a, const Tensor& b) { return compare(CompareOp::le, "le", a, b); }
Tensor eq(const Tensor& a, const Tensor& b) { return compare(CompareOp::eq, "eq", a, b); }
Tensor ne(const Tensor& a, const Tensor& b) { return compare(CompareOp::ne, "ne", a, b); }
Tensor gt(const Tensor& x, double s) { return compare(CompareOp::gt, "gt", x, s); }
Tensor lt(const Tensor& x, double s) { return compare(CompareOp::lt, "lt", x, s); }
Tensor ge(const Tensor& x, double s) { return compare(CompareOp::ge, "ge", x, s); }
Tensor le(const Tensor& x, double s) { return compare(CompareOp::le, "le", x, s); }
Tensor eq(const Tensor& x, double s) { return compare(CompareOp::eq, "eq", x, s); }
Tensor ne(const Tensor& x, double s) { return compare(CompareOp::ne, "ne", x, s); }

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

void detail::register_elementwise_ops(OpRegistry& r) {
  for (auto* section :
       {register_add, register_sub, register_mul, register_div, register_add_scalar,
        register_mul_scalar, register_pointwise, register_pow, register_gelu, register_clamp,
        register_where, register_cast, register_derived, register_comparisons})
    section(r);
}

}  // namespace attograd
