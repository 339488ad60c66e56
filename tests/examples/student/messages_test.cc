// The student track's messages cannot rot: each exercise's check (checks.h), given a
// deliberately wrong answer (the column softmax, a mask one token late, a missing √d_k, ...),
// fails with the sentence the student should read. The right answers pass the same checks in
// student_track_answers. Also: the stubs' pointers into docs/exercises.md lead to a heading.
#define BOOST_TEST_MODULE student_track_messages
#include <boost/test/unit_test.hpp>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <limits>
#include <regex>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "autograd/ops.h"
#include "examples/student/exercises.h"
#include "tests/cli/cli_run.h"
#include "tests/examples/student/checks.h"
#include "tests/examples/student/numpy_python.h"
#include "tests/files.h"

namespace {

namespace checks = attograd::student::checks;
namespace student = attograd::student;
using attograd::Tensor;
using attograd::testing::contains;

constexpr double kInf = std::numeric_limits<double>::infinity();

// The check failed, and its problem says `needle`.
void expect_problem(const checks::Verdict& v, const std::string& needle) {
  BOOST_TEST(!v.ok(), "the check passed a wrong answer; expected a problem saying: " << needle);
  BOOST_TEST(contains(v.problem, needle),
             "the problem is: " << v.problem << "\nexpected it to say: " << needle);
}

// A mask that hides key j from query t when hide(t, j), as a student might write it.
template <class Hide>
Tensor mask_where(const Tensor& scores, Hide hide, double value = -kInf) {
  const int64_t T = scores.size(0);
  std::vector<double> v = scores.to_vector();
  for (int64_t t = 0; t < T; ++t)
    for (int64_t j = 0; j < T; ++j)
      if (hide(t, j)) v[static_cast<size_t>(t * T + j)] = value;
  return Tensor::from_vector(v, scores.shape(), scores.dtype());
}

Tensor column_softmax(const Tensor& x) {
  return transpose(attograd::softmax(transpose(x, -2, -1)), -2, -1);
}

// Attention as the answer writes it, with the scale and the softmax's axis as parameters, and
// the mask a student's.
template <class Hide>
Tensor attention_with(const Tensor& Q, const Tensor& K, const Tensor& V, double scale, Hide hide,
                      bool columns = false) {
  const int64_t T = Q.size(0);
  std::vector<double> add_mask(static_cast<size_t>(T * T), 0.0);
  for (int64_t t = 0; t < T; ++t)
    for (int64_t j = 0; j < T; ++j)
      if (hide(t, j)) add_mask[static_cast<size_t>(t * T + j)] = -kInf;
  const Tensor S = add(mul_scalar(matmul(Q, transpose(K, 0, 1)), scale),
                       Tensor::from_vector(add_mask, {T, T}, Q.dtype()));
  return matmul(columns ? column_softmax(S) : attograd::softmax(S), V);
}

double inv_sqrt_dk(const Tensor& Q) { return 1 / std::sqrt(static_cast<double>(Q.size(1))); }
bool causal(int64_t t, int64_t j) { return j > t; }

}  // namespace

// ----- S1 -----

BOOST_AUTO_TEST_CASE(causal_mask_mistakes) {
  expect_problem(checks::check_causal_mask([](const Tensor& s) {
                   return mask_where(s, [](int64_t t, int64_t j) { return j > t + 1; });
                 }),
                 "position (0, 1) is not masked: is the mask one token late?");
  expect_problem(
      checks::check_causal_mask([](const Tensor& s) {
        return mask_where(s, [](int64_t t, int64_t j) { return j >= t; });
      }),
      "position (0, 0) is masked: a token must see itself (is the mask one token early?");
  expect_problem(checks::check_causal_mask([](const Tensor& s) {
                   return mask_where(s, [](int64_t t, int64_t j) { return j < t; });
                 }),
                 "position (0, 1) is not masked, but position (1, 0) is: the mask is transposed");
  expect_problem(
      checks::check_causal_mask([](const Tensor& s) { return mask_where(s, causal, -1e9); }),
      "position (0, 1) holds -1e+09, not -inf");
  expect_problem(checks::check_causal_mask([](const Tensor& s) { return s; }),
                 "nothing is masked: put -inf at every position (t, j) with key j > t");
  expect_problem(
      checks::check_causal_mask([](const Tensor& s) { return mask_where(s, causal, 0.0); }),
      "position (0, 1) holds 0, not -inf: a score of 0 still gets the weight e^0");
  // The right numbers through to_vector(): correct values, but out of the graph (S3 would fail).
  expect_problem(checks::check_causal_mask([](const Tensor& s) { return mask_where(s, causal); }),
                 "causal_mask(scores (3, 3)): no gradient reaches scores: the result left the "
                 "graph, e.g. through to_vector() and Tensor::from_vector");
  expect_problem(checks::check_causal_mask([](const Tensor& s) {
                   s.data<double>()[1] = -kInf;  // writes into the caller's scores
                   return mask_where(s, causal);
                 }),
                 "causal_mask changed its input: return a new tensor");
  expect_problem(checks::check_causal_mask(
                     [](const Tensor& s) { return mask_where(mul_scalar(s, 2), causal); }),
                 "but the score there was");
  expect_problem(
      checks::check_causal_mask([](const Tensor&) -> Tensor {
        throw std::logic_error("not implemented yet: see docs/exercises.md#s1-the-causal-mask");
      }),
      "causal_mask(scores (3, 3)): not implemented yet: see "
      "docs/exercises.md#s1-the-causal-mask");
  expect_problem(checks::check_causal_mask(
                     [](const Tensor&) -> Tensor { throw std::invalid_argument("no (T, T)"); }),
                 "causal_mask(scores (3, 3)) threw an exception: no (T, T)");
}

// ----- S2 -----

BOOST_AUTO_TEST_CASE(softmax_mistakes) {
  expect_problem(checks::check_softmax(column_softmax),
                 "row 0 of A sums to 0.4011121: is the softmax over the right axis? Every column "
                 "of A sums to 1: you normalised over axis 0 (the queries)");
  expect_problem(checks::check_softmax([](const Tensor& x) {  // no max subtracted
                   const Tensor e = exp(x);
                   return div(e, sum(e, {-1}, true));
                 }),
                 "the row [1000, 1001, 1002] gives [nan, nan, nan], expected [0.09003057, "
                 "0.2447285, 0.665241]: e^1000 overflows a double; subtract the row's max");
  expect_problem(checks::check_softmax([](const Tensor& x) {  // normalised by the whole tensor
                   const Tensor e = exp(sub(x, max(x, -1, true)));
                   return div(e, sum(e));
                 }),
                 "row 0 of A sums to 0.2232538: is the softmax over the right axis? Each row (the "
                 "last axis) must sum to 1");
  expect_problem(checks::check_softmax([](const Tensor& x) {  // the masked entries become nan
                   const Tensor e = exp(sub(x, neg(max(neg(x), -1, true))));  // minus the min
                   return div(e, sum(e, {-1}, true));
                 }),
                 "a masked entry (-inf) must give exactly 0");
  expect_problem(checks::check_softmax([](const Tensor& x) {  // 2-D only: rows of the first axis
                   if (x.dim() == 2) return student::softmax(x);
                   const Tensor flat = reshape(x, {x.size(0), -1});
                   return reshape(student::softmax(flat), x.shape());
                 }),
                 "softmax(x (2, 3, 5)) differs from the library's softmax on random inputs: every "
                 "leading dimension makes more rows");
}

BOOST_AUTO_TEST_CASE(softmax_backward_mistakes) {
  expect_problem(checks::check_softmax_backward([](const Tensor& y, const Tensor& dy) {
                   return mul(mul(y, rsub_scalar(1, y)), dy);
                 }),
                 "dx is y ⊙ (1 − y) ⊙ dy: that is only the diagonal of the Jacobian");
  expect_problem(checks::check_softmax_backward([](const Tensor& y, const Tensor& dy) {
                   return mul(y, sub(dy, sum(mul(dy, y))));
                 }),
                 "dy · y is summed over the whole tensor: take one dot product per row");
  expect_problem(checks::check_softmax_backward([](const Tensor& y, const Tensor& dy) {
                   return sub(dy, sum(mul(dy, y), {-1}, true));
                 }),
                 "dx is dy − dy · y: multiply by y");
  expect_problem(
      checks::check_softmax_backward([](const Tensor& y, const Tensor& dy) { return mul(y, dy); }),
      "dx is y ⊙ dy: subtract each row's dot product dy · y");
  // Right on one row, wrong with a batch: only the gradient check and the library can tell.
  expect_problem(checks::check_softmax_backward([](const Tensor& y, const Tensor& dy) {
                   return mul_scalar(student::softmax_backward(y, dy), y.numel() > 3 ? 1.01 : 1.0);
                 }),
                 "softmax_backward differs from the library's softmax VJP on random (3, 5) inputs");
}

// ----- S3 -----

BOOST_AUTO_TEST_CASE(attention_mistakes) {
  using QKV = const Tensor&;
  // The whole message, which docs/exercises.md shows as the example of a failing check.
  const checks::Verdict unscaled = checks::check_attention(
      [](QKV Q, QKV K, QKV V) { return attention_with(Q, K, V, 1.0, causal); });
  const std::string said =
      "scores are 1.41x the expected (Z matches attention with Q Kᵀ not scaled, and √d_k = 1.41 "
      "for d_k = 2): did you divide Q Kᵀ by √d_k? (row 1 of Z in the T = 3, d_k = 2 exercise is "
      "[2.462117, 3.462117]; expected [2.339523, 3.339523])";
  BOOST_TEST(unscaled.problem == said);
  const std::string doc = attograd::testing::read_file(std::filesystem::path(ATTOGRAD_SOURCE_DIR) /
                                                       "docs/exercises.md");
  BOOST_TEST(contains(doc, "\nerror: in \"attention\": " + said + "\n"));
  expect_problem(checks::check_attention([](QKV Q, QKV K, QKV V) {
                   return attention_with(Q, K, V, 1.0 / static_cast<double>(Q.size(1)), causal);
                 }),
                 "scores are 0.71x the expected");
  expect_problem(checks::check_attention([](QKV Q, QKV K, QKV V) {
                   return attention_with(Q, K, V, inv_sqrt_dk(Q), causal, true);
                 }),
                 "Z matches a softmax over each column of the scores (over the queries)");
  expect_problem(checks::check_attention([](QKV Q, QKV K, QKV V) {
                   return attention_with(Q, K, V, inv_sqrt_dk(Q),
                                         [](int64_t t, int64_t j) { return j > t + 1; });
                 }),
                 "position (0, 1) is not masked: is the mask one token late?");
  expect_problem(checks::check_attention([](QKV Q, QKV K, QKV V) {
                   return attention_with(Q, K, V, inv_sqrt_dk(Q),
                                         [](int64_t, int64_t) { return false; });
                 }),
                 "Z matches attention without the causal mask");
  expect_problem(checks::check_attention([](QKV Q, QKV K, QKV V) {
                   return attention_with(Q, K, V, inv_sqrt_dk(Q),
                                         [](int64_t t, int64_t j) { return j >= t; });
                 }),
                 "is the mask one token early?");
  expect_problem(checks::check_attention([](QKV Q, QKV K, QKV V) {
                   return attention_with(Q, K, V, inv_sqrt_dk(Q),
                                         [](int64_t t, int64_t j) { return j < t; });
                 }),
                 "the mask is transposed");
  expect_problem(
      checks::check_attention([](QKV Q, QKV K, QKV V) { return student::attention(K, Q, V); }),
      "the scores are transposed");
  // Right numbers, but out of the graph: a model built on it would not train.
  expect_problem(checks::check_attention([](QKV Q, QKV K, QKV V) {
                   const Tensor Z = student::attention(Q, K, V);
                   return Tensor::from_vector(Z.to_vector(), Z.shape(), Z.dtype());
                 }),
                 "attention: no gradient reaches Q, K, V: the result left the graph");
  // Only the values in the graph: the scores left it through a student's mask.
  expect_problem(checks::check_attention([](QKV Q, QKV K, QKV V) {
                   const Tensor S = mul_scalar(matmul(Q, transpose(K, 0, 1)), inv_sqrt_dk(Q));
                   return matmul(attograd::softmax(mask_where(S, causal)), V);
                 }),
                 "attention: no gradient reaches Q, K (the others get one)");
  // Divided by √T: with T = 4 random rows and d_k = 2 this was named "divide by √d_k, not by
  // d_k" (issue 34).
  expect_problem(checks::check_attention([](QKV Q, QKV K, QKV V) {
                   return attention_with(Q, K, V, 1 / std::sqrt(static_cast<double>(Q.size(0))),
                                         causal);
                 }),
                 "Z matches scores divided by √T, the number of tokens (T = 5 here), not by √d_k");
  expect_problem(checks::check_attention([](QKV Q, QKV K, QKV V) {
                   const Tensor A =
                       attograd::softmax(mul_scalar(matmul(Q, transpose(K, 0, 1)), inv_sqrt_dk(Q)));
                   return matmul(mask_where(A, causal, 0.0), V);  // the weights zeroed afterwards
                 }),
                 "Z matches the mask applied after the softmax");
  // No catalogued mistake: the message is the first wrong numbers of Z alone.
  BOOST_TEST(checks::check_attention([](QKV Q, QKV K, QKV V) {
               return attention_with(Q, K, V, 0.3, causal);
             }).problem ==
             "the lecture's 2-token example, Q = [1, 2], K = [1, 3], V = [10, 20], "
             "gives Z = [10, 17.68525]; expected [10, 19.82014]");
  expect_problem(checks::check_attention([](QKV Q, QKV K, QKV V) {
                   const Tensor Z = student::attention(Q, K, V);
                   return Q.size(0) == 5 ? add_scalar(Z, 1e-3)
                                         : Z;  // wrong on the random rows only
                 }),
                 "Z differs from the library's ops on random Q, K (5, 2), V (5, 3), first at row "
                 "0, column 0: ");
  expect_problem(checks::check_attention([](QKV Q, QKV, QKV) { return Q; }),
                 "attention(Q (5, 2), K (5, 2), V (5, 3)) has shape (5, 2), expected (5, 3): "
                 "Z = A V is (T, d_v)");
}

// ----- S4 -----

BOOST_AUTO_TEST_CASE(heads_mistakes) {
  const auto merge = [](const Tensor& y) { return student::merge_heads(y); };
  expect_problem(checks::check_heads(
                     [](const Tensor& x, int64_t nh) {
                       return reshape(x, {x.size(0), x.size(1), nh, x.size(2) / nh});
                     },
                     merge),
                 "split_heads(x (2, 4, 6), 3) has shape (2, 4, 3, 2), which is (B, T, NH, HS): "
                 "transpose T and NH");
  expect_problem(checks::check_heads(
                     [](const Tensor& x, int64_t nh) {
                       return reshape(x, {x.size(0), nh, x.size(1), x.size(2) / nh});
                     },
                     merge),
                 "you reshaped (B, T, C) straight into (B, NH, T, HS)");
  expect_problem(
      checks::check_heads(
          [](const Tensor& x, int64_t nh) {
            return permute(reshape(x, {x.size(0), x.size(1), x.size(2) / nh, nh}), {0, 3, 1, 2});
          },
          merge),
      "each head takes every NH-th channel");
  expect_problem(
      checks::check_heads(student::split_heads,
                          [](const Tensor& y) {
                            return reshape(y, {y.size(0), y.size(2), y.size(1) * y.size(3)});
                          }),
      "merge_heads(y (2, 3, 4, 2)) reshaped (B, NH, T, HS) straight into (B, T, C)");
  expect_problem(checks::check_heads(
                     [](const Tensor& x, int64_t nh) {
                       const Tensor y = student::split_heads(x, nh);
                       return Tensor::from_vector(y.to_vector(), y.shape(), y.dtype());
                     },
                     merge),
                 "split_heads and merge_heads: no gradient reaches q, k, v");
  expect_problem(checks::check_heads(
                     [](const Tensor& x, int64_t nh) {
                       const int64_t hs = x.size(2) / nh;  // rounds down instead of refusing
                       return student::split_heads(slice(x, 2, 0, nh * hs), nh);
                     },
                     merge),
                 "split_heads(x (1, 2, 5), 2) returned (1, 2, 2, 2) instead of throwing "
                 "std::invalid_argument");
}

// ----- S5 -----

BOOST_AUTO_TEST_CASE(layer_norm_mistakes) {
  using T = const Tensor&;
  // The answer's steps, with each mistake's step changed.
  const auto norm = [](T x, T g, T b, double eps, double var_scale, bool eps_outside) {
    const Tensor c = sub(x, mean(x, {-1}, true));
    const Tensor var = mul_scalar(mean(mul(c, c), {-1}, true), var_scale);
    const Tensor x_hat =
        div(c, eps_outside ? add_scalar(sqrt(var), eps) : sqrt(add_scalar(var, eps)));
    return add(mul(x_hat, g), b);
  };
  expect_problem(checks::check_layer_norm([&](T x, T g, T b, double eps) {
                   const double C = static_cast<double>(x.size(-1));
                   return norm(x, g, b, eps, C / (C - 1), false);
                 }),
                 "the variance divides by C − 1 (the unbiased estimate)");
  expect_problem(checks::check_layer_norm(
                     [&](T x, T g, T b, double eps) { return norm(x, g, b, eps, 1, true); }),
                 "eps is added to the standard deviation");
  expect_problem(checks::check_layer_norm(
                     [&](T x, T g, T b, double) { return norm(x, g, b, 1e-5, 1, false); }),
                 "differs from the library's layer_norm: use the eps argument, not a fixed 1e-5");
  expect_problem(checks::check_layer_norm(
                     [&](T x, T g, T b, double eps) { return norm(x, b, g, eps, 1, false); }),
                 "gamma and beta are swapped");
  expect_problem(checks::check_layer_norm([](T x, T g, T b, double eps) {
                   if (x.dim() != 2) return student::layer_norm(x, g, b, eps);
                   const Tensor xt = transpose(x, 0, 1);  // rows of the transposed: columns
                   const Tensor c = sub(xt, mean(xt, {-1}, true));
                   const Tensor x_hat =
                       transpose(div(c, sqrt(add_scalar(mean(mul(c, c), {-1}, true), eps))), 0, 1);
                   return add(mul(x_hat, g), b);
                 }),
                 "each column was normalised (over axis 0, across the rows)");
}

// ----- S6 -----

BOOST_AUTO_TEST_CASE(perplexity_mistakes) {
  using Log = const std::vector<student::BatchLoss>&;
  expect_problem(checks::check_perplexity([](Log log) {
                   double s = 0;
                   for (const auto& b : log) s += b.mean_loss;
                   return std::exp(s / static_cast<double>(log.size()));
                 }),
                 "you took the mean of the batch means (e^2 = 7.389)");
  expect_problem(checks::check_perplexity([](Log log) {
                   double s = 0;
                   for (const auto& b : log) s += std::exp(b.mean_loss);
                   return s / static_cast<double>(log.size());
                 }),
                 "you averaged the batches' perplexities ((e^1 + e^3) / 2 = 11.40)");
  expect_problem(
      checks::check_perplexity([](Log log) { return std::log(student::perplexity(log)); }),
      "1.5 is the mean loss per token: the perplexity is its exponential");
  expect_problem(checks::check_perplexity([](Log log) {
                   double s = 0, n = 0;
                   for (const auto& b : log) {
                     s += b.mean_loss * static_cast<double>(b.tokens);
                     n += static_cast<double>(b.tokens);
                   }
                   return n > 0 ? std::exp(s / n) : 1.0;
                 }),
                 "perplexity of an empty log returned 1 instead of throwing std::invalid_argument");
}

// ----- S7 -----

namespace {

// The answer's counting, with each mistake's step changed.
struct BigramVariant {
  double add = 1;            // added to each pair's count
  bool add_V = true;         // V added to each row's total
  bool count_last = false;   // count(a, ·) counts every a of train, the last one too
  bool mean_over_m = false;  // divide by m instead of m − 1
  bool log2 = false;
};

double bigram(const std::vector<int64_t>& train, const std::vector<int64_t>& val, int64_t V,
              const BigramVariant& v) {
  if (val.size() < 2) throw std::invalid_argument("no pair");
  const size_t n = static_cast<size_t>(V);
  std::vector<double> pairs(n * n, 0.0), starts(n, 0.0);
  for (size_t i = 1; i < train.size(); ++i) {
    pairs[static_cast<size_t>(train[i - 1]) * n + static_cast<size_t>(train[i])] += 1;
    starts[static_cast<size_t>(train[i - 1])] += 1;
  }
  if (v.count_last) starts[static_cast<size_t>(train.back())] += 1;
  double loss = 0;
  for (size_t i = 1; i < val.size(); ++i) {
    const size_t a = static_cast<size_t>(val[i - 1]), b = static_cast<size_t>(val[i]);
    const double p =
        (pairs[a * n + b] + v.add) / (starts[a] + (v.add_V ? static_cast<double>(V) : 0));
    loss -= v.log2 ? std::log2(p) : std::log(p);
  }
  return loss / static_cast<double>(v.mean_over_m ? val.size() : val.size() - 1);
}

checks::Verdict check_bigram_variant(const BigramVariant& v) {
  return checks::check_bigram([v](const std::vector<int64_t>& train,
                                  const std::vector<int64_t>& val,
                                  int64_t V) { return bigram(train, val, V, v); });
}

}  // namespace

BOOST_AUTO_TEST_CASE(bigram_mistakes) {
  BOOST_TEST(check_bigram_variant({}).ok(), check_bigram_variant({}).problem);  // the control
  // The answer with the fields `change` sets changed, and the message that mistake gets.
  const auto mistake = [](void (*change)(BigramVariant&)) {
    BigramVariant v;
    change(v);
    return check_bigram_variant(v);
  };
  expect_problem(mistake([](BigramVariant& v) {
                   v.add = 0;
                   v.add_V = false;
                 }),
                 "the loss is infinite: the pair (2, 2) of val never occurs in train");
  expect_problem(mistake([](BigramVariant& v) { v.add_V = false; }),
                 "each P(· | a) must sum to 1 over the V next tokens");
  expect_problem(mistake([](BigramVariant& v) { v.mean_over_m = true; }),
                 "val's 4 tokens make 3 pairs: divide by m − 1");
  expect_problem(mistake([](BigramVariant& v) { v.count_last = true; }),
                 "the last token of train starts none");
  expect_problem(mistake([](BigramVariant& v) { v.log2 = true; }),
                 "use the natural log (std::log), not log2");
}

// ----- S8 and the stubs -----

// compare_attention.py names the NumPy exercise's mistakes too. Skipped without NumPy.
BOOST_AUTO_TEST_CASE(numpy_mistakes_are_named) {
  using attograd::testing::run_program;
  const std::string python = attograd::testing::numpy_python();
  if (python.empty()) {
    attograd::testing::skip_case(
        "python3 with NumPy is not installed (apt-get install python3-numpy)");
    return;
  }
  const attograd::testing::TempDir dir("student_numpy_mistakes");
  // The answer with one line changed: the scores, `scale`, the mask's diagonal offset and the
  // softmax's axis.
  const auto script = [&](const std::string& name, const std::string& scale, int offset, int axis,
                          const std::string& scores = "Q @ K.T") {
    return dir.file(name,
                    "import numpy as np\n"
                    "def attention_steps(Q, K, V):\n"
                    "    T, d_k = Q.shape\n"
                    "    S = " +
                        scores +
                        "\n"
                        "    S_scaled = S" +
                        scale +
                        "\n"
                        "    masked = np.where(np.triu(np.ones((T, T), dtype=bool), k=" +
                        std::to_string(offset) +
                        "), -np.inf, S_scaled)\n"
                        "    e = np.exp(masked - masked.max(axis=" +
                        std::to_string(axis) +
                        ", keepdims=True))\n"
                        "    A = e / e.sum(axis=" +
                        std::to_string(axis) +
                        ", keepdims=True)\n"
                        "    return {'S': S, 'S_scaled': S_scaled, 'masked': masked, 'A': A,"
                        " 'Z': A @ V}\n");
  };
  const auto compare = [&](const std::string& path) {
    return run_program(ATTENTION_BY_HAND, std::string(attograd::testing::kNumpyExerciseArgs) +
                                              " | " + python + " " COMPARE_SCRIPT " " + path +
                                              " -");
  };
  const std::pair<std::string, std::string> cases[] = {
      {script("right.py", " / np.sqrt(d_k)", 1, -1), "every step agrees with attograd to 1e-9"},
      {script("unscaled.py", "", 1, -1),
       "your S_scaled is 1.41x attograd's: did you divide by sqrt(d_k) = 1.41?"},
      {script("late.py", " / np.sqrt(d_k)", 2, -1),
       "position (0, 1) is not masked: is the mask one token late?"},
      {script("columns.py", " / np.sqrt(d_k)", 1, 0),
       "row 0 of A sums to 0.20: is the softmax over the right axis?"},
      // With Q = K (the worked example's input) this script agreed at every step.
      {script("transposed.py", " / np.sqrt(d_k)", 1, -1, "K @ Q.T"),
       "your S is attograd's transposed: row t of S is query t against every key, S = Q Kᵀ"},
      {ATTOGRAD_SOURCE_DIR "/examples/student/attention_numpy.py",
       "not implemented yet: see docs/exercises.md#s8-attention-in-numpy"}};
  for (const auto& [path, says] : cases) {
    const auto r = compare(path);
    BOOST_TEST_INFO(path << ":\n" << r.out);
    BOOST_TEST(contains(r.out, says));
    BOOST_TEST(r.exit_code == (says.starts_with("every step") ? 0 : 1));
  }
  // An input with Q = K says that a transposed S would pass on it.
  const auto same =
      run_program(ATTENTION_BY_HAND, "--json | " + python + " " COMPARE_SCRIPT " " +
                                         script("same.py", " / np.sqrt(d_k)", 1, -1) + " -");
  BOOST_TEST(contains(same.out, "this input has Q = K, so S is symmetric"), same.out);
  // The command the student is given, in each place it is written, has the tests' input.
  for (const char* file :
       {"docs/exercises.md", "examples/student/attention_numpy.py",
        "examples/student/answers/attention_numpy.py", "examples/student/compare_attention.py"}) {
    BOOST_TEST_INFO(file);
    BOOST_TEST(contains(attograd::testing::read_file(std::string(ATTOGRAD_SOURCE_DIR "/") + file),
                        attograd::testing::kNumpyExerciseArgs));
  }
}

namespace {

// GitHub's anchor of a heading: lower case, spaces to '-', other punctuation dropped.
std::string anchor(const std::string& heading) {
  std::string out;
  for (const char c : heading) {
    if (std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_')
      out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    else if (c == ' ')
      out += '-';
  }
  return out;
}

}  // namespace

// Every "docs/exercises.md#..." that the stubs (and the answers, the header, the checks) name
// is a heading of docs/exercises.md, and each exercise's stub names its own.
BOOST_AUTO_TEST_CASE(stub_pointers_lead_to_a_heading) {
  namespace fs = std::filesystem;
  const fs::path root = ATTOGRAD_SOURCE_DIR;
  std::set<std::string> anchors;
  std::istringstream doc(attograd::testing::read_file(root / "docs/exercises.md"));
  for (std::string line; std::getline(doc, line);)
    if (line.starts_with("#")) anchors.insert(anchor(line.substr(line.find_first_not_of("# "))));
  BOOST_TEST(anchors.count("the-student-track") == 1u);
  const std::regex pointer(R"(docs/exercises\.md#([a-z0-9_-]+))");
  size_t named = 0;
  for (const fs::path& dir : {root / "examples/student", root / "examples/student/answers",
                              root / "tests/examples/student"})
    for (const auto& e : fs::directory_iterator(dir)) {
      if (!e.is_regular_file()) continue;
      const std::string text = attograd::testing::read_file(e.path());
      for (auto it = std::sregex_iterator(text.begin(), text.end(), pointer);
           it != std::sregex_iterator(); ++it, ++named) {
        BOOST_TEST_INFO(e.path().string() << " names docs/exercises.md#" << (*it)[1]);
        BOOST_TEST(anchors.count((*it)[1]) == 1u);
      }
    }
  BOOST_TEST(named >= 10u);
}

// docs/exercises.md's commands: each test case of student_track is a CTest test
// student.<case> under `-C student -L student`, and no other ctest command sees one.
BOOST_AUTO_TEST_CASE(documented_commands_run_the_track_and_only_them) {
  using attograd::testing::run_program;
  const std::string doc = attograd::testing::read_file(std::filesystem::path(ATTOGRAD_SOURCE_DIR) /
                                                       "docs/exercises.md");
  for (const char* line : {"cmake --build build -j2 --target student_track",
                           "ctest --test-dir build -C student -L student --output-on-failure",
                           "ctest --test-dir build -C student -L student -R causal_mask "
                           "--output-on-failure"}) {
    std::string shown = "\n";  // the line on its own, as a command block shows it
    shown.append(line).append("\n");
    BOOST_TEST_INFO(line);
    BOOST_TEST(contains(doc, shown));
  }
  std::vector<std::string> cases;  // `--list_content` prints "name*" per enabled case
  std::istringstream listed(run_program(STUDENT_TRACK, "--list_content").out);
  for (std::string line; std::getline(listed, line);)
    if (line.ends_with("*")) cases.push_back(line.substr(0, line.size() - 1));
  BOOST_TEST(cases.size() == 9u);  // S1-S8, S2 as two cases
  const std::string ctest = std::string(CTEST_COMMAND) + " --test-dir " ATTOGRAD_BINARY_DIR;
  const std::string track = run_program(ctest, "-C student -L student -N").out;
  BOOST_TEST_INFO(track);
  for (const std::string& c : cases) BOOST_TEST(contains(track, " student." + c + "\n"));
  BOOST_TEST(contains(track, "Total Tests: " + std::to_string(cases.size())));
  BOOST_TEST(contains(run_program(ctest, "-L student -N").out, "Total Tests: 0"));
  // The documented `-R attention` runs S3 alone (S8's case is `numpy`).
  BOOST_TEST(
      contains(run_program(ctest, "-C student -L student -R attention -N").out, "Total Tests: 1"));
  BOOST_TEST(!contains(run_program(ctest, "-N").out, " student."));
}
