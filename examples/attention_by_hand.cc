// The lecture's worked examples of causal self-attention, printed step by step.
//   1. d_k = 1, T = 2: Q = [1, 2]ᵀ, K = [1, 3]ᵀ, V = [10, 20]ᵀ.
//   2. T = 3, d_k = 2: every step with its shape; rows of the weights sum to one, and a
//      column-wise softmax (the classic mistake) breaks that.
#include <cstdio>
#include <iostream>

#include "autograd/ops.h"
#include "examples/lecture/attention_by_hand.h"

using namespace attograd;

namespace {

void show(const char* what, const Tensor& t) {
  std::cout << what << "  shape " << shape_str(t.shape()) << "\n" << t << "\n\n";
}

void print_row_sums(const char* what, const Tensor& w) {
  std::cout << what << ":";
  for (double s : sum(w, {-1}).to_vector()) std::printf(" %.7f", s);
  std::cout << "\n";
}

}  // namespace

int main() {
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
  const Tensor Q = Tensor::from_vector({1, 0, 0, 1, 1, 1}, {3, 2}, DType::f64);
  const Tensor K = Tensor::from_vector({1, 0, 0, 1, 1, 1}, {3, 2}, DType::f64);
  const Tensor V = Tensor::from_vector({1, 2, 3, 4, 5, 6}, {3, 2}, DType::f64);
  show("Q", Q);
  show("K", K);
  show("V", V);
  const lecture::AttentionSteps b = lecture::causal_attention_steps(Q, K, V);
  show("Q K^T / sqrt(2)", b.scores);
  show("causal mask applied", b.masked);
  show("row softmax (attention weights)", b.weights);
  print_row_sums("row sums of the weights", b.weights);
  show("\noutput = weights V", b.out);
  const Tensor wrong = lecture::column_softmax(b.masked);
  show("column softmax (wrong axis)", wrong);
  print_row_sums("row sums of the column softmax (not 1: outputs are no longer averages)", wrong);
  return 0;
}
