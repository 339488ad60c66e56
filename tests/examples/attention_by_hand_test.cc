// The lecture's worked attention examples: the numbers the course companion quotes.
#define BOOST_TEST_MODULE attention_by_hand
#include <boost/test/unit_test.hpp>
#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "autograd/ops.h"
#include "lecture/attention_by_hand.h"
#include "nn/layers.h"
#include "tests/cli/cli_run.h"
#include "tests/test_util.h"

using namespace attograd;
using attograd::testing::allclose;
using attograd::testing::expect_tensor;

// docs/03-attention.md, "Averaging the context": the running mean, whose last row is the
// lecture's mean of the whole sequence, v' = (1/T) sum_t v_t.
BOOST_AUTO_TEST_CASE(averaging_context_vectors) {
  const Tensor x = Tensor::from_vector({1, 10, 2, 20, 3, 30}, {3, 2}, DType::f64);
  const Tensor y = lecture::causal_average(x);
  expect_tensor(y, {3, 2}, {1, 10, 1.5, 15, 2, 20}, 1e-15);
  expect_tensor(slice(y, 0, 2, 3), {1, 2}, mean(x, {0}).to_vector(), 1e-15);
  BOOST_TEST(allclose(mean(x, {0}).to_vector(), {2, 20}, 1e-15, 0));
}

BOOST_AUTO_TEST_CASE(d_k_1_two_tokens) {
  for (DType dt : {DType::f32, DType::f64}) {
    const double tol = dt == DType::f32 ? 1e-6 : 1e-7;
    const auto s = lecture::causal_attention_steps(Tensor::from_vector({1, 2}, {2, 1}, dt),
                                                   Tensor::from_vector({1, 3}, {2, 1}, dt),
                                                   Tensor::from_vector({10, 20}, {2, 1}, dt));
    expect_tensor(s.scores, {2, 2}, {1, 3, 2, 6}, 0);
    BOOST_TEST(s.masked.at({0, 1}) == -std::numeric_limits<double>::infinity());
    expect_tensor(s.weights, {2, 2}, {1, 0, 0.0179862, 0.9820138}, tol);
    BOOST_TEST(s.weights.at({0, 1}) == 0.0);  // exactly: query 0 cannot see key 1
    expect_tensor(s.out, {2, 1}, {10, 19.820138}, dt == DType::f32 ? 2e-5 : 1e-6);
  }
}

BOOST_AUTO_TEST_CASE(t3_dk2_rows_sum_to_one_and_column_softmax_breaks_it) {
  const Tensor Q = Tensor::from_vector({1, 0, 0, 1, 1, 1}, {3, 2}, DType::f64);
  const Tensor V = Tensor::from_vector({1, 2, 3, 4, 5, 6}, {3, 2}, DType::f64);
  const auto s = lecture::causal_attention_steps(Q, Q, V);
  const double r = 1 / std::sqrt(2.0);
  expect_tensor(s.scores, {3, 3}, {r, 0, r, 0, r, r, r, r, 2 * r}, 1e-15);
  BOOST_TEST((s.weights.shape() == Shape{3, 3}));
  BOOST_TEST((s.out.shape() == Shape{3, 2}));
  BOOST_TEST(allclose(sum(s.weights, {-1}).to_vector(), {1, 1, 1}, 1e-15, 0));
  // Row 1 sees keys 0 and 1 with equal scores (0 and 1/sqrt2): weights 1/(1+e^r), e^r/(1+e^r).
  const double w11 = std::exp(r) / (1 + std::exp(r));
  BOOST_TEST(allclose(slice(s.weights, 0, 1, 2).to_vector(), {1 - w11, w11, 0}, 1e-15, 0));
  BOOST_TEST(allclose(slice(s.out, 0, 1, 2).to_vector(),
                      {(1 - w11) * 1 + w11 * 3, (1 - w11) * 2 + w11 * 4}, 1e-14, 0));
  // Softmax over the wrong axis: columns sum to one, rows do not.
  const Tensor wrong = lecture::column_softmax(s.masked);
  BOOST_TEST(allclose(sum(wrong, {0}).to_vector(), {1, 1, 1}, 1e-15, 0));
  const std::vector<double> rows = sum(wrong, {1}).to_vector();
  BOOST_TEST(std::abs(rows[0] - 1) > 0.1);
  BOOST_TEST(std::abs(rows[2] - 1) > 0.1);
  // The figures docs/03-attention.md quotes.
  BOOST_TEST(allclose(rows, {0.4011121, 0.6977758, 1.9011121}, 1e-7, 0));
  BOOST_TEST(
      allclose(slice(s.weights, 0, 2, 3).to_vector(), {0.2482551, 0.2482551, 0.5034898}, 1e-7, 0));
  BOOST_TEST(allclose(slice(s.out, 0, 2, 3).to_vector(), {3.5104695, 4.5104695}, 1e-7, 0));
}

// The column-softmax mistake's output: each "weighted average" uses weights that do not sum
// to 1, so the last row overshoots every value (6.9 > 5, 8.8 > 6).
BOOST_AUTO_TEST_CASE(column_softmax_wrong_z) {
  const Tensor Q = Tensor::from_vector({1, 0, 0, 1, 1, 1}, {3, 2}, DType::f64);
  const Tensor V = Tensor::from_vector({1, 2, 3, 4, 5, 6}, {3, 2}, DType::f64);
  const auto s = lecture::causal_attention_steps(Q, Q, V);
  expect_tensor(s.qk, {3, 3}, {1, 0, 1, 0, 1, 1, 1, 1, 2}, 0);
  expect_tensor(matmul(lecture::column_softmax(s.masked), V), {3, 2},
                {0.4011121, 0.8022242, 1.6977758, 2.3955516, 6.9011121, 8.8022242}, 1e-7);
}

// docs/03-attention.md, worked example 3: with Q != K the scores S = Q Kᵀ are not symmetric,
// and K Qᵀ (what code that swaps the operands computes) is their transpose, with a different
// A. Z alone cannot tell them apart here: only row 2 differs after the mask, both versions weigh
// V's rows 0 and 2 alike, and V's rows are evenly spaced, so both average to [3, 4].
BOOST_AUTO_TEST_CASE(q_different_from_k_transposed_scores) {
  const Tensor Q = Tensor::from_vector({1, 0, 0, 1, 1, 1}, {3, 2}, DType::f64);
  const Tensor K = Tensor::from_vector({0, 1, 1, 1, 1, 0}, {3, 2}, DType::f64);
  const Tensor V = Tensor::from_vector({1, 2, 3, 4, 5, 6}, {3, 2}, DType::f64);
  const auto right = lecture::causal_attention_steps(Q, K, V);
  const auto swapped = lecture::causal_attention_steps(K, Q, V);  // its "S" is K Qᵀ
  expect_tensor(right.qk, {3, 3}, {0, 1, 1, 1, 1, 0, 1, 2, 1}, 0);
  expect_tensor(swapped.qk, {3, 3}, {0, 1, 1, 1, 1, 2, 1, 0, 1}, 0);
  BOOST_TEST(right.qk.at({1, 2}) == 0.0);  // query 1 [0, 1] against key 2 [1, 0]
  BOOST_TEST(right.qk.at({2, 1}) == 2.0);  // query 2 [1, 1] against key 1 [1, 1]
  expect_tensor(swapped.qk, {3, 3}, transpose(right.qk, 0, 1).contiguous().to_vector(), 0);
  // With Q = K (worked example 2) the same check cannot fail: S is its own transpose.
  const Tensor S_equal = lecture::causal_attention_steps(Q, Q, V).qk;
  expect_tensor(S_equal, {3, 3}, transpose(S_equal, 0, 1).contiguous().to_vector(), 0);
  // The last rows of A the chapter quotes: key 1 gets the most weight from Q Kᵀ, the least
  // from K Qᵀ; rows 0 and 1 agree.
  BOOST_TEST(allclose(slice(right.weights, 0, 2, 3).to_vector(), {0.2482551, 0.5034898, 0.2482551},
                      1e-7, 0));
  BOOST_TEST(allclose(slice(swapped.weights, 0, 2, 3).to_vector(),
                      {0.4011121, 0.1977758, 0.4011121}, 1e-7, 0));
  BOOST_TEST(
      slice(right.weights, 0, 0, 2).to_vector() == slice(swapped.weights, 0, 0, 2).to_vector(),
      boost::test_tools::per_element());
  expect_tensor(right.out, {3, 2}, {1, 2, 2, 3, 3, 4}, 1e-14);
  expect_tensor(swapped.out, {3, 2}, {1, 2, 2, 3, 3, 4}, 1e-14);
}

// docs/03-attention.md, "Order". Mean: invariant, with or without added positions (the mean
// of x + PE is mean(x) + mean(PE) for every order). Attention without positions or mask:
// equivariant, so the mean of its outputs is invariant too; with positions it is not.
// Causal: position t's output depends on its word and the set of words before it.
BOOST_AUTO_TEST_CASE(order_mean_invariant_attention_equivariant_positions_break_both) {
  const Tensor a = lecture::embed_words({"dog", "bites", "man"});
  const Tensor b = lecture::embed_words({"man", "bites", "dog"});
  const Tensor c = lecture::embed_words({"bites", "dog", "man"});
  BOOST_TEST(allclose(mean(a, {0}).to_vector(), {0.4, -1.0 / 30}, 1e-15, 0));
  BOOST_TEST(allclose(mean(b, {0}).to_vector(), {0.4, -1.0 / 30}, 1e-15, 0));
  const Tensor pe = nn::sinusoidal_table(3, 2, DType::f64);
  BOOST_TEST(
      allclose(mean(add(b, pe), {0}).to_vector(), mean(add(a, pe), {0}).to_vector(), 1e-15, 0));

  const std::vector<double> za = lecture::self_attention(a, false).to_vector();
  const std::vector<double> zb = lecture::self_attention(b, false).to_vector();
  for (int t = 0; t < 3; ++t)  // b's row t is a's row 2 - t, and so are the outputs
    BOOST_TEST(
        allclose({zb[2 * t], zb[2 * t + 1]}, {za[2 * (2 - t)], za[2 * (2 - t) + 1]}, 1e-15, 0));
  BOOST_TEST(allclose(mean(lecture::self_attention(b, false), {0}).to_vector(),
                      {0.4451597, -0.0897148}, 1e-7, 0));
  BOOST_TEST(allclose(mean(lecture::self_attention(a, false), {0}).to_vector(),
                      {0.4451597, -0.0897148}, 1e-7, 0));

  BOOST_TEST(allclose(mean(lecture::self_attention(add(a, pe), false), {0}).to_vector(),
                      {1.0061867, 0.2834633}, 1e-7, 0));
  BOOST_TEST(allclose(mean(lecture::self_attention(add(b, pe), false), {0}).to_vector(),
                      {1.2117542, 0.3056506}, 1e-7, 0));

  const std::vector<double> ca = lecture::self_attention(a, true).to_vector();
  const std::vector<double> cc = lecture::self_attention(c, true).to_vector();
  BOOST_TEST(allclose({cc[4], cc[5]}, {ca[4], ca[5]}, 1e-15, 0));  // man, last in both
  BOOST_TEST(allclose({ca[4], ca[5]}, {0.5495187, -0.5452027}, 1e-7, 0));
  BOOST_TEST(std::abs(cc[2] - ca[0]) >
             0.1);  // dog second sees bites too; dog first sees only itself
  attograd::testing::expect_throw_with<std::invalid_argument>([] { lecture::embed_words({"cat"}); },
                                                              "'cat' is not in the toy vocabulary");
}

// docs/03-attention.md, "Why divide by sqrt(d_k)": the printed table's numbers, and the
// claims: var(q·k) ≈ d_k, the unscaled softmax peaks toward one-hot, the scaled one stays put.
BOOST_AUTO_TEST_CASE(sqrt_dk_variance_and_peakedness) {
  const auto rows = lecture::ScalingExperiment().measure();  // d_k 2 ... 512, T = 8, 2000 draws
  BOOST_REQUIRE_EQUAL(rows.size(), 9u);
  for (size_t i = 0; i < rows.size(); ++i) {
    BOOST_TEST_INFO("d_k " << rows[i].d_k);
    BOOST_TEST(std::abs(rows[i].score_variance / static_cast<double>(rows[i].d_k) - 1) < 0.05);
    BOOST_TEST(rows[i].mean_max_scaled > 0.32);
    BOOST_TEST(rows[i].mean_max_scaled < 0.37);
    if (i > 0) BOOST_TEST(rows[i].mean_max_unscaled > rows[i - 1].mean_max_unscaled);
  }
  BOOST_TEST(rows.back().mean_max_unscaled > 0.95);
  // The figures the chapter quotes (d_k = 2, 64, 512).
  const auto quoted = [](const lecture::ScalingRow& r, double var, double unscaled, double scaled) {
    BOOST_TEST_INFO("d_k " << r.d_k);
    BOOST_TEST(allclose({r.score_variance, r.mean_max_unscaled, r.mean_max_scaled},
                        {var, unscaled, scaled}, 5e-4, 0));
  };
  quoted(rows[0], 1.969, 0.4058, 0.3280);
  quoted(rows[5], 63.437, 0.8768, 0.3633);
  quoted(rows[8], 512.386, 0.9575, 0.3619);
  attograd::testing::expect_throw_with<std::invalid_argument>(
      [] { lecture::measure_scaling({4}, 1, 10, 1); }, "need T >= 2 keys");
}

// docs/03-attention.md, "Why divide by sqrt(d_k)": a nearly one-hot softmax passes almost no
// gradient to any score, the winner's included (its Jacobian diag(y) - y y^T tends to 0), where a
// softmax far from one-hot passes an order-one gradient.
BOOST_AUTO_TEST_CASE(a_saturated_softmax_passes_no_gradient) {
  const std::vector<double> dy{1, -1, 0.5};  // any upstream gradient of size <= 1
  auto score_gradient = [&](std::vector<double> scores) {
    Tensor s = Tensor::from_vector(scores, {1, 3}, DType::f64);
    s.set_requires_grad();
    sum(mul(softmax(s), Tensor::from_vector(dy, {1, 3}, DType::f64))).backward();
    return s.grad().to_vector();
  };
  const std::vector<double> saturated = score_gradient({20, 0, 0}),
                            soft = score_gradient({1, 0, 0});
  BOOST_TEST_MESSAGE("gradient to the scores [20, 0, 0]: " << saturated[0] << " " << saturated[1]
                                                           << " " << saturated[2]);
  for (double g : saturated) BOOST_TEST(std::abs(g) < 1e-8);
  BOOST_TEST(std::abs(soft[0]) > 0.1);
}

// docs/03-attention.md, "Attention is not explanation": weights 0.9 and 0.1, key 0's value 0.
BOOST_AUTO_TEST_CASE(weight_is_not_contribution) {
  const Tensor q = Tensor::from_vector({1}, {1, 1}, DType::f64);
  const Tensor K = Tensor::from_vector({std::log(9.0), 0}, {2, 1}, DType::f64);
  const Tensor V = Tensor::from_vector({0, 0, 1, 2}, {2, 2}, DType::f64);
  expect_tensor(lecture::causal_attention_steps(q, K, V).out, {1, 2}, {0.1, 0.2}, 1e-15);
  const auto a = lecture::attribute_keys(q, K, V);
  BOOST_REQUIRE_EQUAL(a.size(), 2u);
  BOOST_TEST(
      allclose({a[0].weight, a[0].grad_x_input, a[0].zero_value_change, a[0].remove_key_change},
               {0.9, 0, 0, 2.7}, 1e-14, 0));
  BOOST_TEST(
      allclose({a[1].weight, a[1].grad_x_input, a[1].zero_value_change, a[1].remove_key_change},
               {0.1, 0.3, -0.3, -0.3}, 1e-14, 0));
}

// docs/03-attention.md, "The cost of attention": 2·T²·4 bytes and 4·T²·head_dim FLOPs.
BOOST_AUTO_TEST_CASE(attention_cost_is_quadratic_in_T) {
  const auto c8 = lecture::attention_cost(8, 64, 4), c1024 = lecture::attention_cost(1024, 64, 4);
  BOOST_TEST(c8.bytes == 512);
  BOOST_TEST(c8.flops == 16384);
  BOOST_TEST(c1024.bytes == 8388608);  // 8 MiB per head, per sequence
  BOOST_TEST(c1024.flops == 268435456);
  // GPT-2 small's 12 layers x 12 heads at T = 1024: the weights alone (half of scores + weights)
  // are 4 MiB per head, 576 MiB per sequence.
  BOOST_TEST(c1024.bytes / 2 == int64_t{4} << 20);
  BOOST_TEST(12 * 12 * c1024.bytes / 2 == int64_t{576} << 20);
  attograd::testing::expect_throw_with<std::invalid_argument>(
      [] { lecture::attention_cost(0, 64, 4); }, "must be >= 1");
  attograd::testing::expect_throw_with<std::overflow_error>(
      [] { lecture::attention_cost(int64_t{1} << 32, 64, 4); }, "attention_cost");
}

BOOST_AUTO_TEST_CASE(parse_matrix_reads_rows_and_refuses_bad_text) {
  using attograd::testing::expect_throw_with;
  expect_tensor(lecture::parse_matrix("1,0; 0, 1 ;+1,-2.5e0", "--Q"), {3, 2}, {1, 0, 0, 1, 1, -2.5},
                0);
  // One row a line, as a student types a matrix in the page's boxes: the same (3, 2), with a
  // ';' before a break, a blank line, Windows line ends and a trailing break read alike.
  for (const char* lines : {"1,0\n 0, 1\n+1,-2.5e0", "1,0;\n0,1;\r\n\n+1,-2.5e0\n"})
    expect_tensor(lecture::parse_matrix(lines, "--Q"), {3, 2}, {1, 0, 0, 1, 1, -2.5}, 0);
  expect_throw_with<std::invalid_argument>([] { lecture::parse_matrix("1,0\n0", "--Q"); },
                                           "--Q: row 2 has 1 number but row 1 has 2");
  expect_throw_with<std::invalid_argument>(
      [] { lecture::parse_matrix("1,0;0", "--Q"); },
      "--Q: row 2 has 1 number but row 1 has 2; every row needs the same count");
  expect_throw_with<std::invalid_argument>([] { lecture::parse_matrix("1,x", "--K"); },
                                           "--K: row 1: 'x' is not a finite number");
  expect_throw_with<std::invalid_argument>([] { lecture::parse_matrix("1,,2", "--K"); },
                                           "row 1: '' is not a finite number");
  // The field is echoed with its control characters escaped (U+0085, NEL, breaks a terminal's
  // line; issue 31, kind 14).
  expect_throw_with<std::invalid_argument>([] { lecture::parse_matrix("1,\xc2\x85", "--K"); },
                                           "--K: row 1: '\\u0085' is not a finite number");
  // A separator typed at the end, as a trailing line break: "1;2;" is (2, 1), "1,0,;0,1," (2, 2).
  expect_tensor(lecture::parse_matrix("1;2; ", "--V"), {2, 1}, {1, 2}, 0);
  expect_tensor(lecture::parse_matrix("1,0,;0,1,\n", "--V"), {2, 2}, {1, 0, 0, 1}, 0);
  expect_throw_with<std::invalid_argument>([] { lecture::parse_matrix("1;2;;", "--V"); },
                                           "row 3: '' is not a finite number");
  expect_throw_with<std::invalid_argument>([] { lecture::parse_matrix("1,0,,", "--V"); },
                                           "row 1: '' is not a finite number");
  expect_throw_with<std::invalid_argument>([] { lecture::parse_matrix("nan", "--V"); },
                                           "'nan' is not a finite number");
  expect_throw_with<std::invalid_argument>([] { lecture::parse_matrix("1e400", "--V"); },
                                           "'1e400' is not a finite number");
  expect_throw_with<std::invalid_argument>([] { lecture::parse_matrix(" ", "--V"); },
                                           "--V is empty");
  // At most 64 rows (T) and 64 numbers a row (d_k, d_v), refused before a number is read: 2,000
  // rows made 570 MB of tables (issue 31, kind 12).
  std::string side = "0";
  for (int i = 1; i < 64; ++i) side += ",0";
  std::string square = side;
  for (int i = 1; i < 64; ++i) square += ";" + side;
  BOOST_TEST(lecture::parse_matrix(square, "--Q").size(0) == 64);
  BOOST_TEST(lecture::parse_matrix(square, "--Q").size(1) == 64);
  expect_throw_with<std::invalid_argument>(
      [&] { lecture::parse_matrix(square + ";" + side, "--Q"); },
      "--Q has 65 rows: at most 64 are read (T <= 64), so that every T x T table of the steps "
      "stays readable; remove rows");
  expect_throw_with<std::invalid_argument>(
      [&] { lecture::parse_matrix(std::string(3000, 'x') + std::string(3000, ';'), "--Q"); },
      "--Q has 3000 rows");
  expect_throw_with<std::invalid_argument>(
      [&] { lecture::parse_matrix("1;" + side + ",x", "--K"); },
      "--K: row 2 has 65 numbers: at most 64 are read (d_k and d_v <= 64); remove columns");
  const Tensor m32 = lecture::parse_matrix("1,0;0,1;1,1", "--Q");
  expect_throw_with<std::invalid_argument>(
      [&] { lecture::check_attention_shapes(m32, lecture::parse_matrix("1;2;3", "--K"), m32); },
      "Q is 3x2 and K is 3x1: q·k needs queries and keys of the same length d_k");
  expect_throw_with<std::invalid_argument>(
      [&] { lecture::check_attention_shapes(m32, m32, lecture::parse_matrix("1;2", "--V")); },
      "Q is 3x2, K is 3x2 and V is 2x1: self-attention has one query, key and value per token");
}

// The program itself: its options, the reader's own matrices, and clean failures (exit 2).
BOOST_AUTO_TEST_CASE(program_prints_every_step_and_refuses_bad_matrices) {
  using attograd::testing::contains;
  const auto run = [](const std::string& args) {
    return attograd::testing::run_program(ATTENTION_BY_HAND, args);
  };
  const auto help = run("--help");
  BOOST_TEST(help.exit_code == 0);
  BOOST_TEST(contains(help.out, "queries (T, d_k): rows separated by ';', numbers by ','"));

  const auto own = run("--Q '1,0;0,1;1,1' --K '1,0;0,1;1,1' --V '1,2;3,4;5,6'");
  BOOST_TEST(own.exit_code == 0);
  for (const char* step :
       {"S = Q K^T  shape (3, 3)", "S / sqrt(2)  shape (3, 3)",
        "causal mask applied (-inf above the diagonal)  shape (3, 3)",
        "A = row softmax (attention weights)  shape (3, 3)",
        "row sums of A: 1.0000000 1.0000000 1.0000000", "Z = A V (output)  shape (3, 2)",
        "[3.51046953045366, 4.51046953045366]",
        "its row sums (not 1: outputs are no longer averages): 0.4011121 0.6977758 1.9011121",
        "its wrong Z = (column softmax) V  shape (3, 2)", "[6.90111209267979, 8.80222418535957]"}) {
    BOOST_TEST_INFO(step);
    BOOST_TEST(contains(own.out, step));
  }
  BOOST_TEST(!contains(own.out, "Example"));  // only the reader's matrices

  const auto all = run("");
  BOOST_TEST(all.exit_code == 0);
  // The rows quoted in docs/03-attention.md, as printed.
  BOOST_TEST(contains(
      all.out,
      "   512    512.386    1.0008                           0.9575                   0.3619"));
  BOOST_TEST(contains(
      all.out,
      "     0   0.9000         0.0000                0.0000                         2.7000"));
  BOOST_TEST(contains(all.out, "   1024                    8388608              268435456"));
  BOOST_TEST(contains(run("--head-dim 128").out,
                      "   1024                    8388608              536870912"));

  const std::pair<const char*, const char*> bad[] = {
      {"--Q '1,0;0' --K 1 --V 1",
       "attention_by_hand: error: --Q: row 2 has 1 number but row 1 has 2"},
      {"--Q '1,x' --K 1 --V 1", "attention_by_hand: error: --Q: row 1: 'x' is not a finite number"},
      {"--Q '1,0' --K 1 --V 1", "attention_by_hand: error: Q is 1x2 and K is 1x1"},
      {"--Q '1;2' --K '1;2' --V 1", "attention_by_hand: error: Q is 2x1, K is 2x1 and V is 1x1"},
      {"--Q 1", "--Q requires --K"},
      {"--head-dim 0", "--head-dim: must be an integer in [1, 1048576], got 0"},
      // The attograd CLI's number rules: no octal, no empty value, no overflow printed as inf.
      {"--head-dim 010",
       "--head-dim: 010 has leading zeros, which would be read as octal; write 10"},
      {"--Q '' --K 1 --V 1", "--Q: is empty: give a value, or leave the option out"},
      {"--Q '0;0;0' --K '0;0;0' --V '1e308;1e308;1e308'",
       "attention_by_hand: error: (column softmax) V overflows"},
      {"--frobnicate", "The following argument was not expected: --frobnicate"},
  };
  for (const auto& [args, message] : bad) {
    BOOST_TEST_INFO(args);
    const auto r = run(args);
    BOOST_TEST(r.exit_code == 2);
    BOOST_TEST(contains(r.out, message));
  }
}

// What --json prints, for programs (the NumPy exercise's compare_attention.py): valid JSON with
// every step, -inf as null, and every number reads back to the same double.
BOOST_AUTO_TEST_CASE(json_gives_every_step_exactly) {
  const Tensor Q = Tensor::from_vector({1, 2}, {2, 1}, DType::f64);
  const Tensor K = Tensor::from_vector({1, 3}, {2, 1}, DType::f64);
  const Tensor V = Tensor::from_vector({10, 20}, {2, 1}, DType::f64);
  const nlohmann::json j = nlohmann::json::parse(lecture::attention_steps_json(Q, K, V));
  const auto s = lecture::causal_attention_steps(Q, K, V);
  const std::vector<std::string> expected_keys{
      "d_k", "Q", "K", "V", "S", "S_scaled", "masked", "A", "Z", "column_A", "column_Z"};
  BOOST_TEST(j.size() == expected_keys.size());
  for (const std::string& key : expected_keys) BOOST_TEST(j.contains(key), key);
  BOOST_TEST(j["d_k"] == 1);
  BOOST_TEST(j["masked"][0][1].is_null());  // -inf: JSON has no infinity
  BOOST_TEST(j["masked"][0][0] == 1.0);
  // Bit for bit: 19.820137900379084 is the shortest text of the double the library computed.
  const std::pair<const char*, const Tensor*> steps[] = {
      {"S", &s.qk}, {"A", &s.weights}, {"Z", &s.out}, {"column_Z", &s.column_out}};
  for (const auto& [key, t] : steps) {
    std::vector<double> read;
    for (const auto& row : j[key])
      for (const auto& x : row) read.push_back(x.get<double>());
    BOOST_TEST_INFO(key);
    BOOST_TEST(read == t->to_vector(), boost::test_tools::per_element());
  }
  BOOST_TEST(j["Z"][1].dump() == "[19.820137900379084]");
  BOOST_TEST(lecture::attention_steps_json(Q, K, V).find("\"Z\": [[10], [19.820137900379084]]") !=
             std::string::npos);
}

// The program's --json (not in the WebAssembly build, which has no programs to run).
BOOST_AUTO_TEST_CASE(program_prints_json) {
  const Tensor Q = Tensor::from_vector({1, 2}, {2, 1}, DType::f64);
  const Tensor K = Tensor::from_vector({1, 3}, {2, 1}, DType::f64);
  const Tensor V = Tensor::from_vector({10, 20}, {2, 1}, DType::f64);
  const nlohmann::json j = nlohmann::json::parse(lecture::attention_steps_json(Q, K, V));
  const auto run = [](const std::string& args) {
    return attograd::testing::run_program(ATTENTION_BY_HAND, args, false);
  };
  // Without matrices: example 2, the lecture's T = 3, d_k = 2 exercise.
  const auto example = run("--json");
  BOOST_TEST(example.exit_code == 0);
  const nlohmann::json e = nlohmann::json::parse(example.out);
  BOOST_TEST(e["d_k"] == 2);
  BOOST_TEST(e["V"].dump() == "[[1,2],[3,4],[5,6]]");
  BOOST_TEST(
      allclose(e["A"][2].get<std::vector<double>>(), {0.2482551, 0.2482551, 0.5034898}, 1e-7, 0));
  BOOST_TEST(allclose(e["Z"][2].get<std::vector<double>>(), {3.5104695, 4.5104695}, 1e-7, 0));
  const auto own = run("--json --Q '1;2' --K '1;3' --V '10;20'");
  BOOST_TEST(own.exit_code == 0);
  BOOST_TEST(nlohmann::json::parse(own.out) == j);
  const auto bad =
      attograd::testing::run_program(ATTENTION_BY_HAND, "--json --Q '1,0' --K 1 --V 1");
  BOOST_TEST(bad.exit_code == 2);
  BOOST_TEST(
      attograd::testing::contains(bad.out, "attention_by_hand: error: Q is 1x2 and K is 1x1"));
}

// Finite inputs whose products overflow are refused rather than printed as NaN weights.
BOOST_AUTO_TEST_CASE(overflowing_scores_are_refused) {
  const Tensor Q = Tensor::from_vector({1e300, 0, 0, 1}, {2, 2}, DType::f64);
  const Tensor V = Tensor::from_vector({1, 2}, {2, 1}, DType::f64);
  attograd::testing::expect_throw_with<std::invalid_argument>(
      [&] { lecture::causal_attention_steps(Q, Q, V); }, "Q Kᵀ overflows");
}
