// Built against the nn component of an installed attograd: a Linear layer, its gradients and
// one step of SGD.
#include <cstdio>

#include "autograd/ops.h"
#include "nn/layers.h"
#include "nn/optim.h"

int main() {
  using namespace attograd;
  // y = x Wᵀ + b with x = [1, 2, 3], W = [[1, 2, 3], [4, 5, 6]], b = [0.5, -0.5]:
  // [1 + 4 + 9 + 0.5, 4 + 10 + 18 - 0.5] = [14.5, 31.5].
  nn::Linear fc(3, 2);
  fc.weight.copy_from(Tensor::from_vector({1, 2, 3, 4, 5, 6}, {2, 3}));
  fc.bias.copy_from(Tensor::from_vector({0.5, -0.5}, {2}));
  const Tensor x = Tensor::from_vector({1, 2, 3}, {1, 3});
  const Tensor y = fc.forward(x);
  // d sum(y) / dW = each row x, d sum(y) / db = 1; SGD with lr 0.5 takes half of each:
  // W = [[0.5, 1, 1.5], [3.5, 4, 4.5]], b = [0, -1], and y = [0.5 + 2 + 4.5, 3.5 + 8 + 13.5 - 1].
  sum(y).backward();
  nn::SGD sgd(fc.parameters(), nn::SGDOptions(0.5));
  sgd.step();
  const Tensor after = fc.forward(x);
  std::printf("linear %g %g\nafter sgd %g %g\n", y.at({0, 0}), y.at({0, 1}), after.at({0, 0}),
              after.at({0, 1}));
}
