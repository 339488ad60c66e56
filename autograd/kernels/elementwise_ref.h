// Scalar reference twins of elementwise.h: the specification of every elementwise kernel as the
// plainest loop, and the oracle the SIMD kernels are tested against (tests/kernels/).
// Header-only; nothing on a hot path calls these.
#pragma once

#include <cmath>
#include <cstdint>

#include "autograd/kernels/elementwise.h"

namespace attograd::kernels::reference {

/// a op b for one pair of scalars.
template <typename T>
T apply(BinaryOp op, T a, T b) {
  switch (op) {
    case BinaryOp::add:
      return a + b;
    case BinaryOp::sub:
      return a - b;
    case BinaryOp::mul:
      return a * b;
    case BinaryOp::div:
      return a / b;
  }
  return T(0);  // unreachable: every enumerator is handled above
}

/// f(x) for one scalar. relu keeps NaN (NaN < 0 is false), as PyTorch's clamp_min does.
template <typename T>
T apply(UnaryOp op, T x) {
  switch (op) {
    case UnaryOp::neg:
      return -x;
    case UnaryOp::exp:
      return std::exp(x);
    case UnaryOp::log:
      return std::log(x);
    case UnaryOp::tanh:
      return std::tanh(x);
    case UnaryOp::sqrt:
      return std::sqrt(x);
    case UnaryOp::relu:
      return x < T(0) ? T(0) : x;
    case UnaryOp::sigmoid:  // exp(-x) = inf for x << 0 gives exactly 0
      return T(1) / (T(1) + std::exp(-x));
    case UnaryOp::abs:
      return std::abs(x);
    case UnaryOp::sin:
      return std::sin(x);
    case UnaryOp::cos:
      return std::cos(x);
  }
  return T(0);  // unreachable
}

template <typename T>
void compare(CompareOp op, T* out, const T* a, const T* b, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    bool holds = false;
    switch (op) {
      case CompareOp::gt:
        holds = a[i] > b[i];
        break;
      case CompareOp::lt:
        holds = a[i] < b[i];
        break;
      case CompareOp::ge:
        holds = a[i] >= b[i];
        break;
      case CompareOp::le:
        holds = a[i] <= b[i];
        break;
      case CompareOp::eq:
        holds = a[i] == b[i];
        break;
      case CompareOp::ne:
        holds = a[i] != b[i];
        break;
    }
    out[i] = holds ? T(1) : T(0);
  }
}

template <typename T>
void binary_forward(BinaryOp op, T* out, const T* a, const T* b, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = apply(op, a[i], b[i]);
}

template <typename T>
void binary_scalar_right(BinaryOp op, T* out, const T* a, T s, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = apply(op, a[i], s);
}

template <typename T>
void binary_scalar_left(BinaryOp op, T* out, T s, const T* b, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = apply(op, s, b[i]);
}

template <typename T>
void unary_forward(UnaryOp op, T* y, const T* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = apply(op, x[i]);
}

/// dx += dy * f'(x), each derivative written from whichever of x and y = f(x) is cheaper.
template <typename T>
void unary_backward(UnaryOp op, T* dx, const T* x, const T* y, const T* dy, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    switch (op) {
      case UnaryOp::neg:
        dx[i] += -dy[i];
        break;  // d(-x) = -1
      case UnaryOp::exp:
        dx[i] += dy[i] * y[i];
        break;  // exp' = exp = y
      case UnaryOp::log:
        dx[i] += dy[i] / x[i];
        break;  // log' = 1/x
      case UnaryOp::tanh:
        dx[i] += dy[i] * (T(1) - y[i] * y[i]);
        break;  // tanh' = 1 - y^2
      case UnaryOp::sqrt:
        dx[i] += dy[i] / (T(2) * y[i]);
        break;  // sqrt' = 1/(2 sqrt x)
      case UnaryOp::relu:
        dx[i] += x[i] > T(0) ? dy[i] : T(0);
        break;  // relu'(0) = 0
      case UnaryOp::sigmoid:
        dx[i] += dy[i] * y[i] * (T(1) - y[i]);
        break;  // sigmoid' = y (1 - y)
      case UnaryOp::abs:
        dx[i] += x[i] > T(0) ? dy[i] : x[i] < T(0) ? -dy[i] : T(0);
        break;  // abs' = sign(x), 0 at 0 and NaN
      case UnaryOp::sin:
        dx[i] += dy[i] * std::cos(x[i]);
        break;  // sin' = cos x
      case UnaryOp::cos:
        dx[i] += -(dy[i] * std::sin(x[i]));
        break;  // cos' = -sin x
    }
  }
}

template <typename T>
void pow_forward(T* y, const T* x, T p, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = std::pow(x[i], p);
}

/// dx += dy * p * x^(p-1). For p = 0 the gradient is 0 everywhere (as in PyTorch), not
/// 0 * x^-1, which would be NaN at x = 0.
template <typename T>
void pow_backward(T* dx, const T* x, T p, const T* dy, int64_t n) {
  if (p == T(0)) return;
  for (int64_t i = 0; i < n; ++i) dx[i] += dy[i] * p * std::pow(x[i], p - T(1));
}

/// torch.clamp: the lower bound first, then the upper, so lo > hi gives hi; NaN fails both
/// comparisons and stays NaN.
template <typename T>
void clamp_forward(T* y, const T* x, T lo, T hi, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const T v = x[i] < lo ? lo : x[i];
    y[i] = v > hi ? hi : v;
  }
}

/// The gradient passes where lo <= x <= hi, bounds included (PyTorch's clamp_backward).
template <typename T>
void clamp_backward(T* dx, const T* x, T lo, T hi, const T* dy, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    if (x[i] >= lo && x[i] <= hi) dx[i] += dy[i];
}

template <typename T>
void axpy(T* out, T alpha, const T* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] += alpha * x[i];
}

template <typename T>
void mul_acc(T* out, const T* x, const T* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] += x[i] * y[i];
}

/// c = a / b:  dc/da = 1/b,  dc/db = -a/b^2 = -c/b.
template <typename T>
void div_backward(T* da, T* db, const T* b, const T* c, const T* dc, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    if (da) da[i] += dc[i] / b[i];
    if (db) db[i] -= dc[i] * c[i] / b[i];
  }
}

template <typename T>
void fill(T* out, T value, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = value;
}

}  // namespace attograd::kernels::reference
