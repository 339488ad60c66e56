// The lecture's worked examples of causal self-attention, printed step by step
// (docs/03-attention.md; every number is asserted in tests/examples/attention_by_hand_test.cc).
//   0. Averaging the context, no learned weights.
//   1. d_k = 1, T = 2: Q = [1, 2]ᵀ, K = [1, 3]ᵀ, V = [10, 20]ᵀ.
//   2. T = 3, d_k = 2: every step with its shape; rows of the weights sum to one, and a
//      column-wise softmax (the classic mistake) breaks that.
//   3. Order: the mean ignores it, positions restore it, attention is permutation-equivariant.
//   4. Why sqrt(d_k): the variance of q·k and the peak of the softmax, measured.
//   5. Attention is not explanation: a weight of 0.9 on a zero value contributes nothing.
//   6. The cost of attention: the T×T scores and weights per head.
// With --Q, --K and --V it walks the reader's own matrices through example 2's steps instead.
// With --json it prints those steps (example 2's without --Q, --K, --V) as one JSON object
// instead of text, for programs (lecture::attention_steps_json; the NumPy exercise's
// examples/student/compare_attention.py).
// Bad input: one line on stderr, exit code 2.
#include <CLI/CLI.hpp>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <stdexcept>

#include "autograd/ops.h"
#include "lecture/attention_by_hand.h"
#include "nn/layers.h"
#include "options/option_checks.h"

using namespace attograd;

namespace {

// Example 2, the lecture's T = 3, d_k = 2 exercise: Q = K (3, 2) and V (3, 2).
Tensor example2_Q() { return Tensor::from_vector({1, 0, 0, 1, 1, 1}, {3, 2}, DType::f64); }
Tensor example2_V() { return Tensor::from_vector({1, 2, 3, 4, 5, 6}, {3, 2}, DType::f64); }

void show(const std::string& what, const Tensor& t) {
  std::cout << what << "  shape " << shape_str(t.shape()) << "\n" << t << "\n\n";
}

void print_row_sums(const char* what, const Tensor& w) {
  std::cout << what << ":";
  for (double s : sum(w, {-1}).to_vector()) std::printf(" %.7f", s);
  std::cout << "\n\n";
}

// Example 2's walk-through, for any Q (T, d_k), K (T, d_k), V (T, d_v).
void walk_through(const Tensor& Q, const Tensor& K, const Tensor& V) {
  show("Q", Q);
  show("K", K);
  show("V", V);
  const lecture::AttentionSteps s = lecture::causal_attention_steps(Q, K, V);
  const std::string root = "sqrt(" + std::to_string(Q.size(1)) + ")";
  show("S = Q K^T", s.qk);
  show("S / " + root, s.scores);
  show("causal mask applied (-inf above the diagonal)", s.masked);
  show("A = row softmax (attention weights)", s.weights);
  print_row_sums("row sums of A", s.weights);
  show("Z = A V (output)", s.out);
  show("the mistake: softmax over each column (over queries)", s.column_weights);
  print_row_sums("its row sums (not 1: outputs are no longer averages)", s.column_weights);
  show("its wrong Z = (column softmax) V", s.column_out);
}

void order_example() {
  std::cout << "== Example 3: order ==\n\n";
  const Tensor a = lecture::embed_words({"dog", "bites", "man"});
  const Tensor b = lecture::embed_words({"man", "bites", "dog"});
  show("\"dog bites man\" (one 2-d embedding per word)", a);
  show("plain mean of \"dog bites man\"", mean(a, {0}));
  show("plain mean of \"man bites dog\" (the same: the mean is permutation-invariant)",
       mean(b, {0}));
  const Tensor pe = nn::sinusoidal_table(3, 2, DType::f64);
  show("sinusoidal positions PE (row t = [sin t, cos t])", pe);
  show("plain mean of \"dog bites man\" + PE", mean(add(a, pe), {0}));
  show("plain mean of \"man bites dog\" + PE (still the same: the mean adds mean(PE) to both)",
       mean(add(b, pe), {0}));
  const Tensor za = lecture::self_attention(a, false), zb = lecture::self_attention(b, false);
  show("self-attention, no mask, no positions: \"dog bites man\"", za);
  show("the same for \"man bites dog\" (rows permuted the same way: equivariant)", zb);
  show("mean of the attention outputs, \"dog bites man\"", mean(za, {0}));
  show("mean of the attention outputs, \"man bites dog\" (the same)", mean(zb, {0}));
  const Tensor pa = lecture::self_attention(add(a, pe), false),
               pb = lecture::self_attention(add(b, pe), false);
  show("self-attention, no mask, with positions: \"dog bites man\" + PE", pa);
  show("the same for \"man bites dog\" + PE (no longer a permutation)", pb);
  show("mean of the attention outputs with positions, \"dog bites man\"", mean(pa, {0}));
  show("mean of the attention outputs with positions, \"man bites dog\" (differs: order is seen)",
       mean(pb, {0}));
  const Tensor c = lecture::embed_words({"bites", "dog", "man"});
  show("causal, no positions: \"dog bites man\"", lecture::self_attention(a, true));
  show("causal, no positions: \"bites dog man\" (man: same output, it sees the same set of words)",
       lecture::self_attention(c, true));
}

void scaling_example() {
  const lecture::ScalingExperiment experiment;
  std::cout << "== Example 4: why divide by sqrt(d_k) ==\n\n"
            << "q, k ~ N(0, I), " << experiment.draws << " queries against T = " << experiment.T
            << " keys each, Generator(" << experiment.seed << ")\n"
            << "   d_k   var(q.k)   var/d_k   mean max weight: softmax(q.k)   "
               "softmax(q.k/sqrt(d_k))\n";
  for (const lecture::ScalingRow& r : experiment.measure())
    std::printf("%6lld %10.3f %9.4f %32.4f %24.4f\n", static_cast<long long>(r.d_k),
                r.score_variance, r.score_variance / static_cast<double>(r.d_k),
                r.mean_max_unscaled, r.mean_max_scaled);
  std::cout << "\n";
}

void explanation_example() {
  std::cout << "== Example 5: attention is not explanation ==\n\n";
  const Tensor q = Tensor::from_vector({1}, {1, 1}, DType::f64);
  const Tensor K = Tensor::from_vector({std::log(9.0), 0}, {2, 1}, DType::f64);
  const Tensor V = Tensor::from_vector({0, 0, 1, 2}, {2, 2}, DType::f64);
  show("q", q);
  show("K (scores ln 9 and 0: weights 0.9 and 0.1)", K);
  show("V (key 0's value is zero)", V);
  show("output", lecture::causal_attention_steps(q, K, V).out);
  std::cout
      << "L = sum of the output. Per key:\n"
         "   key   weight   grad x input   L change if v_j = 0   L change if key j is left out\n";
  const std::vector<lecture::KeyAttribution> a = lecture::attribute_keys(q, K, V);
  for (size_t j = 0; j < a.size(); ++j)
    std::printf("%6zu %8.4f %14.4f %21.4f %30.4f\n", j, a[j].weight, a[j].grad_x_input,
                a[j].zero_value_change, a[j].remove_key_change);
  std::cout << "\n";
}

void cost_example(int64_t head_dim) {
  std::cout << "== Example 6: the cost of attention, per head, head_dim " << head_dim
            << ", float32 ==\n\n"
               "      T   scores + weights (bytes)   FLOPs of QK^T and AV\n";
  for (int64_t T = 8; T <= 1024; T *= 2) {
    const lecture::AttentionCost c = lecture::attention_cost(T, head_dim, 4);
    std::printf("%7lld %26lld %22lld\n", static_cast<long long>(c.T),
                static_cast<long long>(c.bytes), static_cast<long long>(c.flops));
  }
  std::cout << "\n";
}

void lecture_examples(int64_t head_dim) {
  std::cout << "== Example 0: averaging the context, no learned weights ==\n\n";
  const Tensor x = Tensor::from_vector({1, 10, 2, 20, 3, 30}, {3, 2}, DType::f64);
  show("x (three tokens, two channels)", x);
  show("causal average: y_t = mean of x_0 .. x_t", lecture::causal_average(x));

  std::cout << "== Example 1: d_k = 1, T = 2 ==\n\n";
  const Tensor Q1 = Tensor::from_vector({1, 2}, {2, 1}, DType::f64);
  const Tensor K1 = Tensor::from_vector({1, 3}, {2, 1}, DType::f64);
  const Tensor V1 = Tensor::from_vector({10, 20}, {2, 1}, DType::f64);
  const lecture::AttentionSteps a = lecture::causal_attention_steps(Q1, K1, V1);
  show("Q K^T / sqrt(1)", a.scores);
  show("causal mask applied", a.masked);
  show("row softmax (attention weights)", a.weights);
  show("output = weights V", a.out);

  std::cout << "== Example 2: T = 3, d_k = 2 ==\n\n";
  walk_through(example2_Q(), example2_Q(), example2_V());
  order_example();
  scaling_example();
  explanation_example();
  cost_example(head_dim);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "attention_by_hand: the lecture's causal self-attention, printed step by step.\n"
      "Without options it prints the worked examples of docs/03-attention.md; with --Q, --K and\n"
      "--V it prints every step for your own matrices."};
  std::string q_text, k_text, v_text;
  int64_t head_dim = 64;
  CLI::Option* q_opt = app.add_option(
      "--Q", q_text,
      "queries (T, d_k): rows separated by ';', numbers by ',', e.g. \"1,0;0,1;1,1\"");
  CLI::Option* k_opt = app.add_option("--K", k_text, "keys (T, d_k), same format");
  CLI::Option* v_opt = app.add_option("--V", v_text, "values (T, d_v), same format");
  q_opt->needs(k_opt, v_opt);
  k_opt->needs(q_opt, v_opt);
  v_opt->needs(q_opt, k_opt);
  // The same checks as the attograd CLI's: "010" is refused, not read as octal 8.
  app.add_option("--head-dim", head_dim, "head_dim for the cost table (example 6)")
      ->check(cli::integer_in(gpt::IntRange{1, int64_t{1} << 20}));
  bool json = false;
  app.add_flag("--json", json,
               "print the steps (of --Q, --K, --V, or else of example 2, T = 3, d_k = 2) as one "
               "JSON object: d_k, Q, K, V, S, S_scaled, masked (null for -inf), A, Z, column_A, "
               "column_Z");
  cli::refuse_empty_values(app);
  try {
    app.parse(argc, argv);
    if (q_opt->count() > 0 || json) {
      const bool given = q_opt->count() > 0;
      const Tensor Q = given ? lecture::parse_matrix(q_text, "--Q") : example2_Q();
      const Tensor K = given ? lecture::parse_matrix(k_text, "--K") : example2_Q();
      const Tensor V = given ? lecture::parse_matrix(v_text, "--V") : example2_V();
      lecture::check_attention_shapes(Q, K, V);
      if (json)
        std::cout << lecture::attention_steps_json(Q, K, V);
      else
        walk_through(Q, K, V);
    } else {
      lecture_examples(head_dim);
    }
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;  // --help exits 0; every usage error exits 2
  } catch (const std::exception& e) {
    std::cerr << "attention_by_hand: error: " << e.what() << "\n";
    return 2;
  }
  return 0;
}
