// Built against an installed attograd: a matmul and the loss of a femto GPT.
// [[1, 2], [3, 4]] @ [[5, 6], [7, 8]]; and the loss of femto (seed 1) on tokens 0..7 predicting
// 1..8 as the in-tree build computes it: near ln(65) = 4.1744, as an untrained model's should be.
#include <cstdio>

#include "autograd/ops.h"
#include "gpt/model/gpt2.h"

int main() {
  using namespace attograd;
  const Tensor c =
      matmul(Tensor::from_vector({1, 2, 3, 4}, {2, 2}), Tensor::from_vector({5, 6, 7, 8}, {2, 2}));
  const gpt::GPT model(gpt::preset("femto"), /*seed=*/1);
  const Tensor loss = model
                          .forward(Tensor::from_ids({0, 1, 2, 3, 4, 5, 6, 7}, {1, 8}),
                                   Tensor::from_ids({1, 2, 3, 4, 5, 6, 7, 8}, {1, 8}))
                          .loss;
  std::printf("matmul %g %g %g %g\nfemto loss %.6f\n", c.at({0, 0}), c.at({0, 1}), c.at({1, 0}),
              c.at({1, 1}), loss.item());
}
