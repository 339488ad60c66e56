// The student track's checks: see checks.h. Each check is a sequence of steps; the first step
// that fails ends it with one sentence for the student (fail()). Where a result is wrong, the
// check runs the student's function on random inputs and compares it with the known mistakes
// of that exercise, each computed here from the library's ops, so that the message can name
// the mistake rather than only show two numbers.
#include "tests/examples/student/checks.h"

#include <cmath>
#include <cstdio>
#include <limits>
#include <optional>
#include <span>
#include <stdexcept>
#include <utility>

#include "autograd/engine.h"
#include "autograd/gradcheck.h"
#include "autograd/ops.h"
#include "gpt/model/perplexity.h"
#include "gpt/text/dataset.h"

namespace attograd::student::checks {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// ----- how a check fails, and how it calls the student's code -----

// Thrown by fail(): the first problem ends the check. Not a std::exception, so that the
// student's exceptions and the check's own stay apart.
struct Failure {
  std::string problem;
};

[[noreturn]] void fail(const std::string& problem) { throw Failure{problem}; }

// Runs the student's code; an exception it throws becomes the problem, "not implemented yet"
// as the stub words it.
template <class F>
auto call(const std::string& what, F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const std::exception& e) {
    const std::string message = e.what();
    if (message.starts_with("not implemented yet")) fail(what + ": " + message);
    fail(what + " threw an exception: " + message);
  }
}

Verdict run(const std::function<void(std::vector<std::string>&)>& steps) {
  Verdict v;
  try {
    steps(v.passed);
  } catch (const Failure& f) {
    v.problem = f.problem;
  } catch (const std::exception& e) {
    v.problem = std::string("the check could not go on: ") + e.what();
  }
  return v;
}

// ----- numbers as the messages print them -----

std::string num(double v) {
  if (std::isnan(v)) return "nan";  // never "-nan"
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.7g", v);
  return buf;
}

std::string nums(const std::vector<double>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + num(v[i]);
  return s + "]";
}

// Row r of a 2-D tensor's values (cols wide).
std::vector<double> row(const std::vector<double>& values, int64_t cols, int64_t r) {
  return {values.begin() + r * cols, values.begin() + (r + 1) * cols};
}

bool close(double a, double b, double tol) {
  if (std::isinf(b)) return a == b;
  return std::abs(a - b) <= tol * (1 + std::abs(b));  // false for a NaN
}

bool all_close(const std::vector<double>& a, const std::vector<double>& b, double tol) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (!close(a[i], b[i], tol)) return false;
  return true;
}

bool all_finite(const std::vector<double>& v) {
  for (double x : v)
    if (!std::isfinite(x)) return false;
  return true;
}

Tensor f64(const std::vector<double>& values, const Shape& shape) {
  return Tensor::from_vector(values, shape, DType::f64);
}

// A leaf copy of t that requires grad.
Tensor leaf(const Tensor& t) { return t.clone().set_requires_grad(); }

void expect_shape(const Tensor& got, const Shape& want, const std::string& what,
                  const std::string& hint) {
  if (!got.defined())
    fail(what + " returned an empty (undefined) Tensor: return the result" + hint);
  if (got.shape() != want)
    fail(what + " has shape " + shape_str(got.shape()) + ", expected " + shape_str(want) + hint);
}

void expect_dtype(const Tensor& got, DType want, const std::string& what) {
  if (got.dtype() != want)
    fail(what + " is " + dtype_name(got.dtype()) + " for " + dtype_name(want) +
         " inputs: keep the input's dtype (e.g. Tensor::from_vector(values, shape, x.dtype()))");
}

// ----- mistakes: the wrong answers a check recognises -----

// One known mistake: what to tell the student, and what the mistake computes on the inputs of
// the diagnosis.
struct Mistake {
  std::string says;
  std::vector<double> gives;
};

// The first mistake whose result `got` matches; nullopt when none does.
std::optional<std::string> diagnose(const std::vector<double>& got,
                                    const std::vector<Mistake>& mistakes) {
  for (const Mistake& m : mistakes)
    if (all_close(got, m.gives, 1e-9)) return m.says;
  return std::nullopt;
}

// `problem`, preceded by the named mistake when the diagnosis found one.
[[noreturn]] void fail_with(const std::optional<std::string>& mistake, const std::string& problem) {
  fail(mistake ? *mistake + " (" + problem + ")" : problem);
}

// The student's call `what` must refuse its arguments with std::invalid_argument, `why`; f runs
// it and describes what it returned instead.
template <class F>
void expect_invalid_argument(const std::string& what, const std::string& why, F&& f) {
  std::string returned;
  try {
    returned = f();
  } catch (const std::invalid_argument&) {
    return;
  } catch (const std::exception& e) {
    fail(what + " threw, but not std::invalid_argument: " + e.what());
  }
  fail(what + " returned " + returned + " instead of throwing std::invalid_argument: " + why);
}

// ----- gradients through the student's code -----

// Runs backward from a random read-out of `out` and fails, naming them, when the gradient does
// not reach every input (the student's code left the graph somewhere).
void expect_gradient_reaches(const std::string& what, const Tensor& out,
                             const std::vector<std::pair<std::string, Tensor>>& inputs) {
  std::string missing;
  if (out.requires_grad()) {
    Generator gen(7);
    call("backward() through " + what, [&] {
      sum(mul(out, Tensor::randn(out.shape(), gen, out.dtype()))).backward();
      return 0;
    });
  }
  size_t reached = 0;
  for (const auto& [name, t] : inputs) {
    if (out.requires_grad() && t.grad().defined()) {
      ++reached;
      continue;
    }
    missing += (missing.empty() ? "" : ", ") + name;
  }
  if (missing.empty()) return;
  fail(what + ": no gradient reaches " + missing + (reached ? " (the others get one)" : "") +
       ": the result left the graph, e.g. through to_vector() and Tensor::from_vector; build it "
       "with the engine's ops (autograd/ops.h) so that backward() can run through it, as it "
       "must when the model trains");
}

void gradcheck(const std::string& what, const GradcheckFn& f, const std::vector<Tensor>& inputs) {
  const GradcheckResult r =
      call("the gradient check of " + what, [&] { return run_gradcheck(f, inputs); });
  if (!r.passed)
    fail(what +
         ": the gradient backward() computes through your code disagrees with finite "
         "differences (gradcheck in f64): " +
         r.message);
}

// ----- the library's answers and their classic mistakes -----

// Which keys a query may see.
enum class MaskKind { causal, none, one_late, one_early, transposed };

bool visible(MaskKind kind, int64_t t, int64_t j) {
  switch (kind) {
    case MaskKind::causal:
      return j <= t;
    case MaskKind::none:
      return true;
    case MaskKind::one_late:
      return j <= t + 1;
    case MaskKind::one_early:
      return j < t;
    case MaskKind::transposed:
      return j >= t;
  }
  return false;
}

// (Tq, Tk) of `like`'s dtype: `shown` where `kind` lets query t see key j, `hidden` elsewhere.
Tensor visibility(const Tensor& like, MaskKind kind, double shown, double hidden) {
  const int64_t Tq = like.size(0), Tk = like.size(1);
  std::vector<double> values(static_cast<size_t>(Tq * Tk));
  for (int64_t t = 0; t < Tq; ++t)
    for (int64_t j = 0; j < Tk; ++j)
      values[static_cast<size_t>(t * Tk + j)] = visible(kind, t, j) ? shown : hidden;
  return Tensor::from_vector(values, {Tq, Tk}, like.dtype());
}

// scores (Tq, Tk) with -inf where `kind` hides key j from query t.
Tensor masked(const Tensor& scores, MaskKind kind) {
  return add(scores, visibility(scores, kind, 0.0, -kInf));
}

// The softmax over each column of a 2-D tensor (over the queries): the classic mistake.
Tensor column_softmax(const Tensor& x) {
  return transpose(attograd::softmax(transpose(x, 0, 1)), 0, 1);
}

// Single-head attention, right (the defaults) or with one of the lecture's mistakes.
struct AttentionVariant {
  double scale_power = 0.5;      // the scores are divided by d_k^scale_power
  bool scale_by_sqrt_T = false;  // ... or by √T, the number of tokens
  MaskKind mask = MaskKind::causal;
  bool column_softmax = false;
  bool scores_transposed = false;   // K Qᵀ instead of Q Kᵀ
  bool mask_after_softmax = false;  // softmax over every key, then the hidden weights set to 0
};

Tensor reference_attention(const Tensor& Q, const Tensor& K, const Tensor& V,
                           const AttentionVariant& v = {}) {
  const double d_k = static_cast<double>(Q.size(1)), T = static_cast<double>(Q.size(0));
  const Tensor qk =
      v.scores_transposed ? matmul(K, transpose(Q, 0, 1)) : matmul(Q, transpose(K, 0, 1));
  const Tensor scaled =
      mul_scalar(qk, v.scale_by_sqrt_T ? 1 / std::sqrt(T) : std::pow(d_k, -v.scale_power));
  if (v.mask_after_softmax) {
    // The softmax normalised over every key, hidden ones too, so zeroing their weights leaves
    // each row summing to less than 1 (masking with -inf first gives them exp(-inf) = 0 before
    // the normalisation).
    return matmul(mul(attograd::softmax(scaled), visibility(qk, v.mask, 1.0, 0.0)), V);
  }
  const Tensor m = masked(scaled, v.mask);
  return matmul(v.column_softmax ? column_softmax(m) : attograd::softmax(m), V);
}

// ----- the worked examples -----

// docs/03-attention.md, worked example 2 (and docs/exercises.md, exercise 2).
const std::vector<double> kExampleQ{1, 0, 0, 1, 1, 1}, kExampleV{1, 2, 3, 4, 5, 6};

}  // namespace

// ===== S1. The causal mask =====

Verdict check_causal_mask(const UnaryFn& causal_mask) {
  return run([&](std::vector<std::string>& passed) {
    const auto apply = [&](const Tensor& scores) {
      const Tensor before = scores.clone();
      const Tensor out = call("causal_mask(scores " + shape_str(scores.shape()) + ")",
                              [&] { return causal_mask(scores); });
      expect_shape(out, scores.shape(), "causal_mask(scores " + shape_str(scores.shape()) + ")",
                   ": the mask keeps the scores' shape (T, T)");
      if (scores.to_vector() != before.to_vector())
        fail("causal_mask changed its input: return a new tensor and leave the scores as they are");
      return out;
    };
    Generator gen(1);
    for (const int64_t T : {3, 1, 6}) {
      const Tensor scores = Tensor::randn({T, T}, gen, DType::f64);
      const std::vector<double> in = scores.to_vector(), out = apply(scores).to_vector();
      // Which positions the student hid (with -inf or a large negative number), and which not.
      int64_t masked_above = 0, masked_below = 0;
      for (int64_t t = 0; t < T; ++t)
        for (int64_t j = 0; j < T; ++j)
          if (out[static_cast<size_t>(t * T + j)] < -1e8) ++(j > t ? masked_above : masked_below);
      const auto at = [&](int64_t t, int64_t j) {
        return "position (" + std::to_string(t) + ", " + std::to_string(j) + ")";
      };
      for (int64_t t = 0; t < T; ++t) {
        for (int64_t j = 0; j < T; ++j) {
          const double got = out[static_cast<size_t>(t * T + j)],
                       was = in[static_cast<size_t>(t * T + j)];
          if (j > t && got != -kInf) {
            if (got < -1e8)
              fail(at(t, j) + " holds " + num(got) +
                   ", not -inf: a large negative number leaves a tiny weight where the softmax "
                   "must give exactly 0; use -std::numeric_limits<double>::infinity()");
            if (got == 0 && was != 0)
              fail(at(t, j) +
                   " holds 0, not -inf: a score of 0 still gets the weight e^0 / Σ "
                   "in the softmax; only -inf gives exactly 0");
            if (masked_above == 0 && masked_below == 0)
              fail(
                  "nothing is masked: put -inf at every position (t, j) with key j > t, above "
                  "the diagonal");
            if (masked_above == 0 && masked_below > 0)
              fail(at(t, j) + " is not masked, but " + at(j, t) +
                   " is: the mask is transposed. Row t is query t, column j key j; hide the "
                   "keys after the query, j > t (above the diagonal)");
            if (j == t + 1)
              fail(at(t, j) + " is not masked: is the mask one token late? Query " +
                   std::to_string(t) + " must not see key " + std::to_string(j) +
                   ", the next token (mask every key j > t)");
            fail(at(t, j) + " is not masked: query " + std::to_string(t) + " must not see key " +
                 std::to_string(j) + ", which comes after it (mask every key j > t)");
          }
          if (j <= t && got != was) {
            if (got == -kInf && j == t)
              fail(at(t, j) +
                   " is masked: a token must see itself (is the mask one token early? "
                   "Keep every key j <= t)");
            if (got == -kInf)
              fail(at(t, j) + " is masked: query " + std::to_string(t) + " may see key " +
                   std::to_string(j) + ", which comes before it (keep every key j <= t)");
            fail(at(t, j) + " is " + num(got) + " but the score there was " + num(was) +
                 ": the mask leaves the scores it does not hide unchanged");
          }
        }
      }
      passed.push_back("T = " + std::to_string(T) +
                       ": -inf exactly above the diagonal, the other scores unchanged");
    }
    const Tensor scores = Tensor::randn({5, 5}, gen, DType::f64);
    if (apply(scores).to_vector() != attograd::causal_mask(scores).to_vector())
      fail(
          "causal_mask differs from the library's causal_mask (autograd/ops.h) on random (5, 5) "
          "scores");
    passed.push_back("equals the library's causal_mask on random (5, 5) scores");
    // S3 builds attention on this mask and trains through it: the scores must stay in the graph.
    const Tensor leaf = Tensor::randn({3, 3}, gen, DType::f64).requires_grad_();
    expect_gradient_reaches("causal_mask(scores (3, 3))",
                            call("causal_mask(scores (3, 3))", [&] { return causal_mask(leaf); }),
                            {{"scores", leaf}});
    passed.push_back("keeps the scores in the graph: backward reaches them (S3 trains through it)");
    expect_dtype(apply(Tensor::randn({3, 3}, gen, DType::f32)), DType::f32,
                 "causal_mask(scores (3, 3))");
    passed.push_back("keeps f32 scores f32");
  });
}

// ===== S2. Softmax and its backward =====

Verdict check_softmax(const UnaryFn& softmax) {
  return run([&](std::vector<std::string>& passed) {
    const auto apply = [&](const Tensor& x) {
      const Tensor y =
          call("softmax(x " + shape_str(x.shape()) + ")", [&] { return softmax(x.clone()); });
      expect_shape(y, x.shape(), "softmax(x " + shape_str(x.shape()) + ")",
                   ": the softmax keeps the shape; every row becomes weights");
      return y;
    };
    // The lecture's T = 3, d_k = 2 exercise: the masked scores, whose softmax is A.
    const Tensor Q = f64(kExampleQ, {3, 2});
    const Tensor scores =
        attograd::causal_mask(mul_scalar(matmul(Q, transpose(Q, 0, 1)), 1 / std::sqrt(2.0)));
    const std::vector<double> s = scores.to_vector(), a = apply(scores).to_vector();
    for (int64_t t = 0; t < 3; ++t)
      if (!all_finite(row(a, 3, t)))
        fail("row " + std::to_string(t) + " of the masked scores, " + nums(row(s, 3, t)) +
             ", gives " + nums(row(a, 3, t)) +
             ": a masked entry (-inf) must give exactly 0, since e^-inf = 0; nan comes from "
             "-inf - (-inf) or 0/0: subtract the row's max, which is finite");
    for (int64_t t = 0; t < 3; ++t)
      for (int64_t j = t + 1; j < 3; ++j)
        if (a[static_cast<size_t>(t * 3 + j)] != 0)
          fail("A[" + std::to_string(t) + "][" + std::to_string(j) + "] is " +
               num(a[static_cast<size_t>(t * 3 + j)]) +
               " where the score is -inf: a masked key must get exactly 0");
    std::vector<double> row_sums(3, 0.0), column_sums(3, 0.0);
    for (size_t t = 0; t < 3; ++t)
      for (size_t j = 0; j < 3; ++j) {
        row_sums[t] += a[t * 3 + j];
        column_sums[j] += a[t * 3 + j];
      }
    for (size_t t = 0; t < 3; ++t)
      if (!close(row_sums[t], 1, 1e-12)) {
        const bool columns = all_close(column_sums, {1, 1, 1}, 1e-12);
        fail("row " + std::to_string(t) + " of A sums to " + num(row_sums[t]) +
             ": is the softmax over the right axis? " +
             (columns ? "Every column of A sums to 1: you normalised over axis 0 (the queries). "
                      : "") +
             "Each row (the last axis) must sum to 1 (the T = 3, d_k = 2 exercise's masked "
             "scores)");
      }
    passed.push_back("every row of A sums to 1 and the masked entries are exactly 0");
    const std::vector<double> expected = attograd::softmax(scores).to_vector();
    for (int64_t t = 0; t < 3; ++t)
      if (!all_close(row(a, 3, t), row(expected, 3, t), 1e-12))
        fail("row " + std::to_string(t) + " of A is " + nums(row(a, 3, t)) + ", expected " +
             nums(row(expected, 3, t)) + " (the T = 3, d_k = 2 exercise's masked scores " +
             nums(row(s, 3, t)) + ")");
    passed.push_back(
        "A of the T = 3, d_k = 2 exercise: last row [0.2482551, 0.2482551, 0.5034898]");

    const Tensor big = f64({1000, 1001, 1002, -1000, -1001, -1002}, {2, 3});
    const std::vector<double> b = apply(big).to_vector(),
                              b_expected = attograd::softmax(big).to_vector();
    for (int64_t t = 0; t < 2; ++t)
      if (!all_close(row(b, 3, t), row(b_expected, 3, t), 1e-12))
        fail(
            "the row " + nums(row(big.to_vector(), 3, t)) + " gives " + nums(row(b, 3, t)) +
            ", expected " + nums(row(b_expected, 3, t)) +
            (t == 0 ? ": e^1000 overflows a double" : ": e^-1000 underflows to 0, and 0/0 is nan") +
            "; subtract the row's max before exp (the weights do not change: e^-max cancels)");
    passed.push_back("rows of ±1000 do not overflow");

    Generator gen(2);
    for (const Shape& shape : {Shape{4, 7}, Shape{2, 3, 5}}) {
      const Tensor x = Tensor::randn(shape, gen, DType::f64);
      if (!all_close(apply(x).to_vector(), attograd::softmax(x).to_vector(), 1e-12))
        fail("softmax(x " + shape_str(shape) +
             ") differs from the library's softmax on random "
             "inputs" +
             (shape.size() == 3 ? ": every leading dimension makes more rows; normalise over the "
                                  "last axis only"
                                : ""));
      passed.push_back("equals the library's softmax on random " + shape_str(shape) + " inputs");
    }
    expect_dtype(apply(Tensor::randn({2, 3}, gen, DType::f32)), DType::f32, "softmax(x (2, 3))");
    passed.push_back("keeps f32 inputs f32");
  });
}

namespace {

// An op whose forward is the library's softmax and whose VJP is `vjp`: gradcheck then checks
// the student's backward against finite differences of the forward.
Tensor softmax_with_vjp(const Tensor& x, const BinaryFn& vjp) {
  Tensor y;
  {
    NoGradGuard no_grad;
    y = attograd::softmax(x);
  }
  return record(y, "student_softmax", {x}, {Save{"output", y}},
                [vjp](const Tensor& g, std::span<Tensor> gi, const Tensor& out) {
                  if (!gi[0].defined()) return;
                  NoGradGuard no_grad;
                  const Tensor dx = vjp(out, g);
                  if (!dx.defined() || dx.shape() != gi[0].shape())
                    throw std::invalid_argument("softmax_backward returned the wrong shape");
                  gi[0].copy_from(add(gi[0], dx));  // VJPs accumulate
                });
}

}  // namespace

Verdict check_softmax_backward(const BinaryFn& softmax_backward) {
  return run([&](std::vector<std::string>& passed) {
    const auto apply = [&](const Tensor& y, const Tensor& dy) {
      const Tensor dx = call("softmax_backward(y " + shape_str(y.shape()) + ", dy)",
                             [&] { return softmax_backward(y.clone(), dy.clone()); });
      expect_shape(dx, y.shape(), "softmax_backward(y " + shape_str(y.shape()) + ", dy)",
                   ": dx has the shape of x, which is y's");
      return dx.to_vector();
    };
    // The mistakes, on random rows.
    Generator gen(3);
    const Tensor ry = attograd::softmax(Tensor::randn({3, 4}, gen, DType::f64)),
                 rdy = Tensor::randn({3, 4}, gen, DType::f64);
    const auto mistake = [&](const std::vector<double>& got) {
      const Tensor dot = sum(mul(rdy, ry), {-1}, true);
      return diagnose(
          got,
          {{"dx is y ⊙ (1 − y) ⊙ dy: that is only the diagonal of the Jacobian diag(y) − y yᵀ; "
            "its other entries, −y_i y_j, add −y_j Σ_i dy_i y_i to dx_j",
            mul(mul(ry, rsub_scalar(1, ry)), rdy).to_vector()},
           {"dx is y ⊙ dy: subtract each row's dot product dy · y from dy first, "
            "dx = y ⊙ (dy − dy · y)",
            mul(ry, rdy).to_vector()},
           {"dx is dy − dy · y: multiply by y, dx = y ⊙ (dy − dy · y)", sub(rdy, dot).to_vector()},
           {"the dot product is Σ_i dy_i, not Σ_i dy_i y_i: weight each dy_i by its y_i",
            mul(ry, sub(rdy, sum(rdy, {-1}, true))).to_vector()},
           {"dy · y is summed over the whole tensor: take one dot product per row (sum over "
            "the last axis, keepdim)",
            mul(ry, sub(rdy, sum(mul(rdy, ry)))).to_vector()},
           {"dy · y is summed over each column (axis 0): take it over each row, the last axis",
            mul(ry, sub(rdy, sum(mul(rdy, ry), {0}, true))).to_vector()}});
    };
    // By hand: y = [0.2, 0.3, 0.5], dy = [1, 0, 0]: dy · y = 0.2, dx = y ⊙ (dy − 0.2).
    const std::vector<double> hand = apply(f64({0.2, 0.3, 0.5}, {1, 3}), f64({1, 0, 0}, {1, 3}));
    if (!all_close(hand, {0.16, -0.06, -0.1}, 1e-12))
      fail_with(mistake(apply(ry, rdy)), "for y = [0.2, 0.3, 0.5] and dy = [1, 0, 0], dx is " +
                                             nums(hand) + ", expected [0.16, -0.06, -0.1]");
    passed.push_back("y = [0.2, 0.3, 0.5], dy = [1, 0, 0] gives dx = [0.16, -0.06, -0.1]");

    for (const Shape& shape : {Shape{3, 5}, Shape{2, 2, 4}}) {
      const Tensor x = leaf(Tensor::randn(shape, gen, DType::f64)),
                   dy = Tensor::randn(shape, gen, DType::f64);
      const Tensor y = attograd::softmax(x);
      y.backward(dy);
      const std::vector<double> got = apply(y.detach(), dy);
      if (!all_close(got, x.grad().to_vector(), 1e-12))
        fail_with(mistake(apply(ry, rdy)),
                  "softmax_backward differs from the library's softmax "
                  "VJP on random " +
                      shape_str(shape) + " inputs");
      passed.push_back("equals the library's VJP on random " + shape_str(shape) + " inputs");
    }
    // The masked row [0.7, -inf, -inf] has y = [1, 0, 0]: a masked score gets no gradient.
    const std::vector<double> masked_dx = apply(f64({1, 0, 0}, {1, 3}), f64({0.5, -2, 3}, {1, 3}));
    if (masked_dx[1] != 0 || masked_dx[2] != 0)
      fail("for y = [1, 0, 0] (a row whose last two scores were masked), dx is " + nums(masked_dx) +
           ": an entry with y_j = 0 must get exactly 0");
    passed.push_back("a masked entry (y = 0) gets exactly 0");

    const Tensor x = leaf(Tensor::randn({3, 5}, gen, DType::f64));
    gradcheck(
        "softmax_backward",
        [&](const std::vector<Tensor>& in) { return softmax_with_vjp(in[0], softmax_backward); },
        {x});
    passed.push_back("gradcheck in f64: your VJP of softmax matches its finite differences");
    const Tensor y32 = attograd::softmax(Tensor::randn({2, 3}, gen, DType::f32));
    const Tensor dx32 = call("softmax_backward(y (2, 3) f32, dy)", [&] {
      return softmax_backward(y32, Tensor::randn({2, 3}, gen, DType::f32));
    });
    expect_shape(dx32, {2, 3}, "softmax_backward(y (2, 3), dy)", "");
    expect_dtype(dx32, DType::f32, "softmax_backward(y (2, 3), dy)");
    passed.push_back("keeps f32 inputs f32");
  });
}

// ===== S3. Scaled dot-product attention =====

Verdict check_attention(const AttentionFn& attention) {
  return run([&](std::vector<std::string>& passed) {
    const auto apply = [&](const Tensor& Q, const Tensor& K, const Tensor& V) {
      const std::string what = "attention(Q " + shape_str(Q.shape()) + ", K " +
                               shape_str(K.shape()) + ", V " + shape_str(V.shape()) + ")";
      const Tensor Z = call(what, [&] { return attention(Q.clone(), K.clone(), V.clone()); });
      expect_shape(Z, {Q.size(0), V.size(1)}, what, ": Z = A V is (T, d_v)");
      return Z;
    };
    // Random inputs that tell the mistakes apart: Q != K, T = 5, d_k = 2 (so that a missing
    // scale is the lecture's √2 = 1.41, and √T = 2.24 is neither √d_k nor d_k: with T = 4,
    // dividing by √T was named as dividing by d_k), d_v = 3.
    Generator gen(4);
    const Tensor rQ = Tensor::randn({5, 2}, gen, DType::f64),
                 rK = Tensor::randn({5, 2}, gen, DType::f64),
                 rV = Tensor::randn({5, 3}, gen, DType::f64);
    const auto mistake = [&]() -> std::optional<std::string> {
      const std::vector<double> got = apply(rQ, rK, rV).to_vector();
      if (!all_finite(row(got, 3, 0)))
        return "row 0 of Z is " + nums(row(got, 3, 0)) +
               ": every score of query 0 is masked, its own too: is the mask one token early? A "
               "token must see itself (keep every key j <= t)";
      const auto variant = [&](AttentionVariant v) {
        return reference_attention(rQ, rK, rV, v).to_vector();
      };
      AttentionVariant unscaled, by_d_k, by_sqrt_T, columns, no_mask, late, transposed, kq,
          after_softmax;
      unscaled.scale_power = 0;
      by_d_k.scale_power = 1;
      by_sqrt_T.scale_by_sqrt_T = true;
      after_softmax.mask_after_softmax = true;
      columns.column_softmax = true;
      no_mask.mask = MaskKind::none;
      late.mask = MaskKind::one_late;
      transposed.mask = MaskKind::transposed;
      kq.scores_transposed = true;
      return diagnose(
          got,
          {{"scores are 1.41x the expected (Z matches attention with Q Kᵀ not scaled, and "
            "√d_k = 1.41 for d_k = 2): did you divide Q Kᵀ by √d_k?",
            variant(unscaled)},
           {"scores are 0.71x the expected (Z matches Q Kᵀ / d_k for d_k = 2): divide by √d_k, "
            "not by d_k",
            variant(by_d_k)},
           {"Z matches scores divided by √T, the number of tokens (T = 5 here), not by √d_k, "
            "the width of a query and a key (d_k = 2): scale by 1/√d_k",
            variant(by_sqrt_T)},
           {"Z matches the mask applied after the softmax: the hidden keys' weights were set to "
            "0 after normalising, so A's rows sum to less than 1; mask the scores with −∞ "
            "before the softmax",
            variant(after_softmax)},
           {"Z matches a softmax over each column of the scores (over the queries): the rows of "
            "A then do not sum to 1 and Z is no weighted average of V's rows; take the softmax "
            "over each row (the last axis)",
            variant(columns)},
           {"Z matches attention without the causal mask: query t sees the keys after it; mask "
            "every key j > t",
            variant(no_mask)},
           {"position (0, 1) is not masked: is the mask one token late? (Z matches attention "
            "where query t also sees key t + 1)",
            variant(late)},
           {"the mask is transposed: Z matches attention where query t sees the keys from t on "
            "and not those before it; row t is query t, mask the columns j > t",
            variant(transposed)},
           {"Z matches softmax(K Qᵀ) V: the scores are transposed; S[t][j] = q_t · k_j, which is "
            "Q Kᵀ",
            variant(kq)}});
    };

    // The lecture's 2-token example (docs/03-attention.md, worked example 1).
    const std::vector<double> z1 =
        apply(f64({1, 2}, {2, 1}), f64({1, 3}, {2, 1}), f64({10, 20}, {2, 1})).to_vector();
    if (!all_close(z1, {10, 19.820137900379084}, 1e-12))
      fail_with(mistake(),
                "the lecture's 2-token example, Q = [1, 2], K = [1, 3], V = [10, 20], "
                "gives Z = " +
                    nums(z1) + "; expected [10, 19.82014]");
    passed.push_back("the lecture's 2-token example: Z = [10, 19.82014]");

    // The T = 3, d_k = 2 exercise (docs/03-attention.md, worked example 2).
    const Tensor Q = f64(kExampleQ, {3, 2}), V = f64(kExampleV, {3, 2});
    const std::vector<double> z2 = apply(Q, Q, V).to_vector(),
                              z2_expected = reference_attention(Q, Q, V).to_vector();
    for (int64_t t = 0; t < 3; ++t)
      if (!all_close(row(z2, 2, t), row(z2_expected, 2, t), 1e-12))
        fail_with(mistake(), "row " + std::to_string(t) +
                                 " of Z in the T = 3, d_k = 2 exercise is " + nums(row(z2, 2, t)) +
                                 "; expected " + nums(row(z2_expected, 2, t)));
    passed.push_back("the T = 3, d_k = 2 exercise: last row of Z [3.51047, 4.51047]");

    // Random inputs against the library: its ops, and the fused causal_attention (d_v = d_k).
    const std::vector<double> zr = apply(rQ, rK, rV).to_vector(),
                              zr_expected = reference_attention(rQ, rK, rV).to_vector();
    if (!all_close(zr, zr_expected, 1e-12)) {
      // No catalogued mistake found: the first wrong number tells where to look.
      const auto d_v = static_cast<size_t>(rV.size(1));
      size_t i = 0;
      while (i < zr.size() && close(zr[i], zr_expected[i], 1e-12)) ++i;
      fail_with(mistake(),
                "Z differs from the library's ops on random Q, K (5, 2), V (5, 3), "
                "first at row " +
                    std::to_string(i / d_v) + ", column " + std::to_string(i % d_v) + ": " +
                    num(zr[i]) + ", expected " + num(zr_expected[i]));
    }
    const Tensor q = Tensor::randn({6, 4}, gen, DType::f64),
                 k = Tensor::randn({6, 4}, gen, DType::f64),
                 v = Tensor::randn({6, 4}, gen, DType::f64);
    const Tensor fused =
        reshape(causal_attention(reshape(q, {1, 1, 6, 4}), reshape(k, {1, 1, 6, 4}),
                                 reshape(v, {1, 1, 6, 4})),
                {6, 4});
    if (!all_close(apply(q, k, v).to_vector(), fused.to_vector(), 1e-10))
      fail_with(mistake(),
                "Z differs from the library's fused causal_attention on random Q, K, V "
                "(6, 4)");
    passed.push_back("equals the library's ops and its fused causal_attention on random inputs");

    // Trainable: the gradient reaches Q, K and V, and agrees with finite differences.
    const Tensor gQ = leaf(rQ), gK = leaf(rK), gV = leaf(rV);
    const Tensor Z = call("attention(Q, K, V) with inputs that require grad",
                          [&] { return attention(gQ, gK, gV); });
    expect_gradient_reaches("attention", Z, {{"Q", gQ}, {"K", gK}, {"V", gV}});
    gradcheck("attention",
              [&](const std::vector<Tensor>& in) { return attention(in[0], in[1], in[2]); },
              {leaf(rQ), leaf(rK), leaf(rV)});
    passed.push_back(
        "gradcheck in f64: the gradient reaches Q, K and V, as finite differences say");
    const Tensor Z32 =
        apply(Tensor::randn({3, 2}, gen, DType::f32), Tensor::randn({3, 2}, gen, DType::f32),
              Tensor::randn({3, 2}, gen, DType::f32));
    expect_dtype(Z32, DType::f32, "attention(Q (3, 2), K (3, 2), V (3, 2))");
    passed.push_back("keeps f32 inputs f32");
  });
}

// ===== S4. Splitting and merging heads =====

Verdict check_heads(const SplitHeadsFn& split_heads, const UnaryFn& merge_heads) {
  return run([&](std::vector<std::string>& passed) {
    // x[b, t, c] = 100 b + 10 t + c, so that every number says where it came from.
    const int64_t B = 2, T = 4, C = 6, NH = 3, HS = 2;
    std::vector<double> xv;
    for (int64_t b = 0; b < B; ++b)
      for (int64_t t = 0; t < T; ++t)
        for (int64_t c = 0; c < C; ++c) xv.push_back(static_cast<double>(100 * b + 10 * t + c));
    const Tensor x = f64(xv, {B, T, C});
    const std::string split_what = "split_heads(x (2, 4, 6), 3)";
    const Tensor y = call(split_what, [&] { return split_heads(x.clone(), NH); });
    if (y.defined() && y.shape() == Shape{B, T, NH, HS})
      fail(split_what +
           " has shape (2, 4, 3, 2), which is (B, T, NH, HS): transpose T and NH "
           "to get (B, NH, T, HS), each head holding all T tokens");
    expect_shape(y, {B, NH, T, HS}, split_what, " = (B, NH, T, HS)");
    const std::vector<double> yv = y.to_vector();
    const auto mistake = [&]() -> std::optional<std::string> {
      const std::vector<double> straight = reshape(x, {B, NH, T, HS}).to_vector();
      const std::vector<double> interleaved =
          permute(reshape(x, {B, T, HS, NH}), {0, 3, 1, 2}).to_vector();
      return diagnose(
          yv, {{"you reshaped (B, T, C) straight into (B, NH, T, HS), which cuts each sequence's "
                "numbers into blocks of whole tokens, not into heads; reshape into (B, T, NH, HS), "
                "then transpose T and NH",
                straight},
               {"each head takes every NH-th channel (0, 3 for head 0): head h is the block of HS "
                "consecutive channels h·HS … (h+1)·HS − 1",
                interleaved}});
    };
    for (int64_t b = 0; b < B; ++b)
      for (int64_t h = 0; h < NH; ++h)
        for (int64_t t = 0; t < T; ++t) {
          const size_t at = static_cast<size_t>(((b * NH + h) * T + t) * HS);
          const std::vector<double> got(yv.begin() + at, yv.begin() + at + HS);
          const size_t from = static_cast<size_t>((b * T + t) * C + h * HS);
          const std::vector<double> want(xv.begin() + from, xv.begin() + from + HS);
          if (got != want)
            fail_with(mistake(),
                      "head " + std::to_string(h) + " of token " + std::to_string(t) + " (batch " +
                          std::to_string(b) + ") holds " + nums(got) + ", expected channels " +
                          std::to_string(h * HS) + " … " + std::to_string(h * HS + HS - 1) +
                          " of that token: " + nums(want) + " (x[b, t, c] = 100 b + 10 t + c)");
        }
    passed.push_back("split_heads: head h of token t holds channels h·HS … (h+1)·HS − 1");

    const Tensor heads = transpose(reshape(x, {B, T, NH, HS}), 1, 2);  // the library's split
    const std::string merge_what = "merge_heads(y (2, 3, 4, 2))";
    const Tensor merged = call(merge_what, [&] { return merge_heads(heads.clone()); });
    expect_shape(merged, {B, T, C}, merge_what, " = (B, T, NH·HS)");
    if (merged.to_vector() != xv)
      fail(reshape(heads.clone(), {B, T, C}).to_vector() == merged.to_vector()
               ? merge_what +
                     " reshaped (B, NH, T, HS) straight into (B, T, C), which puts "
                     "tokens where heads belong; transpose NH and T back first"
               : merge_what + " does not put the heads side by side again: token 0 of batch 0 is " +
                     nums(row(merged.to_vector(), C, 0)) + ", expected " + nums(row(xv, C, 0)));
    const Tensor round = call("merge_heads(split_heads(x, 3))",
                              [&] { return merge_heads(split_heads(x.clone(), NH)); });
    expect_shape(round, {B, T, C}, "merge_heads(split_heads(x, 3))", "");
    if (round.to_vector() != xv) fail("merge_heads(split_heads(x, 3)) is not x");
    passed.push_back("merge_heads puts the heads side by side again; merge(split(x)) = x");

    // Between them, the library's causal_attention per head, against causal_attention_qkv.
    Generator gen(5);
    const auto multi_head = [&](const Tensor& q, const Tensor& k, const Tensor& v) {
      return merge_heads(
          causal_attention(split_heads(q, NH), split_heads(k, NH), split_heads(v, NH)));
    };
    const Tensor q = Tensor::randn({2, 5, 6}, gen, DType::f64),
                 k = Tensor::randn({2, 5, 6}, gen, DType::f64),
                 v = Tensor::randn({2, 5, 6}, gen, DType::f64);
    const Tensor ours = call("merge_heads(causal_attention(split_heads(q, 3), ...))",
                             [&] { return multi_head(q, k, v); });
    if (!all_close(ours.to_vector(), causal_attention_qkv(concat({q, k, v}, -1), NH).to_vector(),
                   1e-10))
      fail(
          "merge_heads(causal_attention(split_heads(q), split_heads(k), split_heads(v))) differs "
          "from the library's causal_attention_qkv on random (2, 5, 6) inputs");
    passed.push_back(
        "with causal_attention between them, equals the library's "
        "causal_attention_qkv");
    const Tensor gq = leaf(slice(q, 0, 0, 1)), gk = leaf(slice(k, 0, 0, 1)),
                 gv = leaf(slice(v, 0, 0, 1));
    expect_gradient_reaches("split_heads and merge_heads",
                            call("multi-head attention with inputs that require grad",
                                 [&] { return multi_head(gq, gk, gv); }),
                            {{"q", gq}, {"k", gk}, {"v", gv}});
    gradcheck("split_heads and merge_heads",
              [&](const std::vector<Tensor>& in) { return multi_head(in[0], in[1], in[2]); },
              {leaf(slice(q, 0, 0, 1)), leaf(slice(k, 0, 0, 1)), leaf(slice(v, 0, 0, 1))});
    passed.push_back("gradcheck in f64 through split, attention and merge");

    const Tensor odd = Tensor::zeros({1, 2, 5}, DType::f64);
    expect_invalid_argument("split_heads(x (1, 2, 5), 2)",
                            "5 channels do not make 2 heads of equal width", [&] {
                              const Tensor got = split_heads(odd, 2);
                              return got.defined() ? shape_str(got.shape()) : std::string("?");
                            });
    passed.push_back("refuses 5 channels in 2 heads (std::invalid_argument)");
  });
}

// ===== S5. Layer norm =====

Verdict check_layer_norm(const LayerNormFn& layer_norm) {
  return run([&](std::vector<std::string>& passed) {
    const auto apply = [&](const Tensor& x, const Tensor& g, const Tensor& b, double eps) {
      const std::string what =
          "layer_norm(x " + shape_str(x.shape()) + ", gamma, beta, " + num(eps) + ")";
      const Tensor y = call(what, [&] { return layer_norm(x.clone(), g.clone(), b.clone(), eps); });
      expect_shape(y, x.shape(), what, ": layer norm keeps the shape of x");
      return y.to_vector();
    };
    Generator gen(6);
    const Tensor rx = add_scalar(Tensor::randn({3, 5}, gen, DType::f64), 2),
                 rg = Tensor::randn({5}, gen, DType::f64), rb = Tensor::randn({5}, gen, DType::f64);
    const auto mistake = [&]() -> std::optional<std::string> {
      const double eps = 1e-5;
      const Tensor mu = mean(rx, {-1}, true), centred = sub(rx, mu);
      const Tensor var = mean(mul(centred, centred), {-1}, true);
      const Tensor unbiased = mul_scalar(var, 5.0 / 4);
      const auto out = [&](const Tensor& x_hat) { return add(mul(x_hat, rg), rb).to_vector(); };
      const Tensor x_hat = div(centred, sqrt(add_scalar(var, eps)));
      const Tensor col_centred = sub(rx, mean(rx, {0}, true));
      const Tensor col_hat =
          div(col_centred, sqrt(add_scalar(mean(mul(col_centred, col_centred), {0}, true), eps)));
      return diagnose(
          apply(rx, rg, rb, eps),
          {{"the variance divides by C − 1 (the unbiased estimate): layer norm uses the biased "
            "variance, the mean of (x − μ)² over the row's C channels",
            out(div(centred, sqrt(add_scalar(unbiased, eps))))},
           {"eps is added to the standard deviation: it goes inside the square root, "
            "(x − μ) / √(σ² + eps)",
            out(div(centred, add_scalar(sqrt(var), eps)))},
           {"eps is missing: divide by √(σ² + eps), which stays finite for a constant row",
            out(div(centred, sqrt(var)))},
           {"you divided by σ² + eps: divide by its square root, √(σ² + eps)",
            out(div(centred, add_scalar(var, eps)))},
           {"the mean is not subtracted: x̂ = (x − μ) / √(σ² + eps)",
            out(div(rx, sqrt(add_scalar(var, eps))))},
           {"each column was normalised (over axis 0, across the rows): normalise each row over "
            "its own C channels, the last axis",
            out(col_hat)},
           {"gamma and beta are swapped: y = gamma ⊙ x̂ + beta",
            add(mul(x_hat, rb), rg).to_vector()},
           {"gamma and beta are not applied: y = gamma ⊙ x̂ + beta", x_hat.to_vector()}});
    };
    // By hand, gamma = 1 and beta = 0: rows of mean 0 and variance σ² / (σ² + eps).
    const Tensor x = f64({1, 2, 3, 4, -2, 0, 2, 4, 10, 10, 10, 13}, {3, 4});
    const Tensor ones = Tensor::ones({4}, DType::f64), zeros = Tensor::zeros({4}, DType::f64);
    const std::vector<double> y = apply(x, ones, zeros, 1e-5);
    const std::vector<double> expected = attograd::layer_norm(x, ones, zeros, 1e-5).to_vector();
    for (int64_t r = 0; r < 3; ++r) {
      const std::vector<double> got = row(y, 4, r);
      double m = 0, v = 0;
      for (double e : got) m += e / 4;
      for (double e : got) v += (e - m) * (e - m) / 4;
      if (!close(m, 0, 1e-12))
        fail_with(mistake(), "row " + std::to_string(r) + " of layer_norm(x, 1, 0) has mean " +
                                 num(m) +
                                 ", not 0: subtract each row's mean μ (over its C channels)");
      if (!all_close(got, row(expected, 4, r), 1e-12))
        fail_with(mistake(), "row " + std::to_string(r) + " of layer_norm(x, 1, 0), for x = " +
                                 nums(row(x.to_vector(), 4, r)) + ", is " + nums(got) +
                                 " (variance " + num(v) + "); expected " +
                                 nums(row(expected, 4, r)) + " (variance ≈ 1)");
    }
    passed.push_back("gamma = 1, beta = 0: each row has mean 0 and variance σ² / (σ² + eps)");

    for (const double eps : {1e-5, 0.5}) {
      const Tensor x3 = Tensor::randn({2, 3, 5}, gen, DType::f64);
      if (!all_close(apply(x3, rg, rb, eps), attograd::layer_norm(x3, rg, rb, eps).to_vector(),
                     1e-10))
        fail_with(eps == 1e-5 ? mistake() : std::nullopt,
                  "layer_norm(x (2, 3, 5), gamma, beta, eps = " + num(eps) +
                      ") differs from the library's layer_norm" +
                      (eps == 0.5 ? ": use the eps argument, not a fixed 1e-5" : ""));
    }
    passed.push_back(
        "equals the library's layer_norm on random (2, 3, 5) inputs, eps 1e-5 and 0.5");

    const Tensor gx = leaf(rx), gg = leaf(rg), gb = leaf(rb);
    expect_gradient_reaches("layer_norm",
                            call("layer_norm with inputs that require grad",
                                 [&] { return layer_norm(gx, gg, gb, 1e-5); }),
                            {{"x", gx}, {"gamma", gg}, {"beta", gb}});
    gradcheck("layer_norm",
              [&](const std::vector<Tensor>& in) { return layer_norm(in[0], in[1], in[2], 1e-5); },
              {leaf(rx), leaf(rg), leaf(rb)});
    passed.push_back("gradcheck in f64: the gradient reaches x, gamma and beta");
    const Tensor y32 = call("layer_norm(x (2, 5) f32, ...)", [&] {
      return layer_norm(Tensor::randn({2, 5}, gen, DType::f32), Tensor::ones({5}, DType::f32),
                        Tensor::zeros({5}, DType::f32), 1e-5);
    });
    expect_shape(y32, {2, 5}, "layer_norm(x (2, 5), gamma, beta)", "");
    expect_dtype(y32, DType::f32, "layer_norm(x (2, 5), gamma, beta)");
    passed.push_back("keeps f32 inputs f32");
  });
}

// ===== S6. Perplexity =====

Verdict check_perplexity(const PerplexityFn& perplexity) {
  return run([&](std::vector<std::string>& passed) {
    const auto apply = [&](const std::vector<BatchLoss>& log) {
      return call("perplexity(log)", [&] { return perplexity(log); });
    };
    // docs/05-training.md: per-token losses [0.5, 1.0, 1.5] and [3.0], so means 1.0 and 3.0.
    const double got = apply({{1.0, 3}, {3.0, 1}});
    const std::optional<std::string> mistake = diagnose(
        {got},
        {{"you took the mean of the batch means (e^2 = 7.389): a batch of 1 token then weighs as "
          "much as one of 3; weight each batch's mean by its tokens",
          {std::exp(2.0)}},
         {"you averaged the batches' perplexities ((e^1 + e^3) / 2 = 11.40): exp is convex, so "
          "that overstates it; take exp of the mean loss over all tokens",
          {(std::exp(1.0) + std::exp(3.0)) / 2}},
         {"1.5 is the mean loss per token: the perplexity is its exponential, e^1.5", {1.5}},
         {"the loss is in nats (natural log): the perplexity is e^(mean loss), not 2^(mean loss)",
          {std::pow(2.0, 1.5)}},
         {"you added the batches' mean losses (e^4): divide the total loss by the number of "
          "tokens",
          {std::exp(4.0)}},
         {"you divided the total loss by the number of batches (e^(6/2) = e^3): divide by the "
          "number of tokens",
          {std::exp(3.0)}}});
    if (!close(got, std::exp(1.5), 1e-12))
      fail_with(mistake,
                "batches with per-token losses [0.5, 1.0, 1.5] and [3.0] (mean losses "
                "1.0 over 3 tokens and 3.0 over 1) give " +
                    num(got) + "; expected e^1.5 = 4.481689");
    passed.push_back("docs/05-training.md's two batches: e^1.5 = 4.481689");
    const double uniform = apply({{std::log(73.0), 20000}});
    if (!close(uniform, 73, 1e-12))
      fail("a log of loss ln 73 (a uniform guess among 73 characters) gives " + num(uniform) +
           "; expected 73");
    passed.push_back("a uniform guess over 73 characters has perplexity 73");

    Generator gen(8);
    std::vector<BatchLoss> log;
    gpt::PerplexityMeter meter;
    for (int i = 0; i < 20; ++i) {
      const BatchLoss batch{2 + 0.3 * gen.normal(), 1 + static_cast<int64_t>(gen.below(64))};
      log.push_back(batch);
      meter.add(batch.mean_loss * static_cast<double>(batch.tokens), batch.tokens);
    }
    const double many = apply(log);
    if (!close(many, meter.perplexity(), 1e-12))
      fail("a random log of 20 batches gives " + num(many) +
           "; the library's PerplexityMeter (gpt/model/perplexity.h) gives " +
           num(meter.perplexity()));
    passed.push_back("equals the library's PerplexityMeter on a random log of 20 batches");

    for (const std::vector<BatchLoss>& empty : {std::vector<BatchLoss>{}, {{2.0, 0}}})
      expect_invalid_argument(
          std::string("perplexity of ") + (empty.empty() ? "an empty log" : "a log of 0 tokens"),
          "no tokens, no mean loss", [&] { return num(perplexity(empty)); });
    passed.push_back("refuses a log with no tokens (std::invalid_argument)");
  });
}

// ===== S7. The counted bigram =====

Verdict check_bigram(const BigramFn& bigram_cross_entropy) {
  return run([&](std::vector<std::string>& passed) {
    const auto apply = [&](const std::vector<int64_t>& train, const std::vector<int64_t>& val,
                           int64_t V) {
      return call("bigram_cross_entropy(train, val, " + std::to_string(V) + ")",
                  [&] { return bigram_cross_entropy(train, val, V); });
    };
    // By hand: V = 3; train's pairs 01 10 01 12 20 (the last 0 starts none), so count(0, ·) = 2,
    // count(1, ·) = 2, count(2, ·) = 1; val's pairs 01, 12, 22 have P = 3/5, 2/5, 1/4.
    const std::vector<int64_t> train{0, 1, 0, 1, 2, 0}, val{0, 1, 2, 2};
    const double expected = -(std::log(0.6) + std::log(0.4) + std::log(0.25)) / 3;
    const double got = apply(train, val, 3);
    if (std::isinf(got))
      fail(
          "the loss is infinite: the pair (2, 2) of val never occurs in train, so without "
          "smoothing its P is 0; add one to every pair's count and V to each row's total "
          "(add-one smoothing)");
    const auto loss = [](const std::vector<double>& p, double pairs) {
      double s = 0;
      for (double x : p) s -= std::log(x);
      return s / pairs;
    };
    const std::optional<std::string> mistake = diagnose(
        {got},
        {{"each P(· | a) must sum to 1 over the V next tokens: with one added to each of the V "
          "counts, the denominator is count(a, ·) + V",
          {loss({3.0 / 2, 2.0 / 2, 1.0 / 1}, 3)}},
         {"the denominator gets + 1: with one added to each of the V counts, it is "
          "count(a, ·) + V",
          {loss({3.0 / 3, 2.0 / 3, 1.0 / 2}, 3)}},
         {"val's 4 tokens make 3 pairs: divide by m − 1, not by m", {expected * 3 / 4}},
         {"the loss is in nats: use the natural log (std::log), not log2",
          {expected / std::log(2.0)}},
         {"count(a, ·) counts the pairs of train that start with a: the last token of train "
          "starts none (you counted the 0 at its end)",
          {loss({3.0 / 6, 2.0 / 5, 1.0 / 4}, 3)}},
         {"only the pairs inside val count: the pair (last token of train, first of val) is "
          "neither train's nor val's",
          {(3 * expected - std::log(1.0 / 5)) / 4}},
         {"the counts come from train only: counting val's pairs too lets the model see the "
          "answers",
          {loss({4.0 / 6, 3.0 / 6, 2.0 / 5}, 3)}},
         {"the counts come from train only: counting the pairs of train and val joined lets the "
          "model see the answers",
          {loss({4.0 / 7, 3.0 / 6, 2.0 / 5}, 3)}}});
    if (!close(got, expected, 1e-12))
      fail_with(mistake, "train = [0, 1, 0, 1, 2, 0], val = [0, 1, 2, 2], V = 3 give " + num(got) +
                             "; expected −(ln 3/5 + ln 2/5 + ln 1/4) / 3 = " + num(expected));
    passed.push_back("the hand example: −(ln 3/5 + ln 2/5 + ln 1/4) / 3 = " + num(expected));

    Generator gen(9);
    const auto ids = [&](size_t n, int64_t V) {
      std::vector<int64_t> out;
      for (size_t i = 0; i < n; ++i) out.push_back(static_cast<int64_t>(gen.below(V)));
      return out;
    };
    const std::vector<int64_t> rtrain = ids(200, 7), rval = ids(40, 7);
    const double ours = apply(rtrain, rval, 7),
                 library = gpt::bigram_cross_entropy(rtrain, rval, 7);
    if (!close(ours, library, 1e-12))
      fail("random train (200 tokens) and val (40), V = 7, give " + num(ours) +
           "; the library's bigram_cross_entropy (gpt/text/dataset.h) gives " + num(library));
    passed.push_back("equals the library's bigram_cross_entropy on random ids");

    expect_invalid_argument("bigram_cross_entropy(train, val = [1], 3)", "one token makes no pair",
                            [&] { return num(bigram_cross_entropy(train, {1}, 3)); });
    passed.push_back("refuses a val of one token (std::invalid_argument)");
  });
}

}  // namespace attograd::student::checks
