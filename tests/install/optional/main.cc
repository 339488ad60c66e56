// Built against an installed attograd with nn required and gpt optional (tests/install/optional):
// a Linear layer's output, and femto's untrained loss when gpt was found (as tests/install/gpt).
#include <cstdio>

#include "autograd/ops.h"
#include "nn/layers.h"
#ifdef CONSUMER_WITH_GPT
#include "gpt/model/gpt2.h"
#endif

int main() {
  using namespace attograd;
  // x Wᵀ + b = [1 + 4 + 9 + 0.5, 4 + 10 + 18 - 0.5] (tests/install/nn).
  nn::Linear fc(3, 2);
  fc.weight.copy_from(Tensor::from_vector({1, 2, 3, 4, 5, 6}, {2, 3}));
  fc.bias.copy_from(Tensor::from_vector({0.5, -0.5}, {2}));
  const Tensor y = fc.forward(Tensor::from_vector({1, 2, 3}, {1, 3}));
  std::printf("linear %g %g\n", y.at({0, 0}), y.at({0, 1}));
#ifdef CONSUMER_WITH_GPT
  const gpt::GPT model(gpt::preset("femto"), /*seed=*/1);
  const Tensor loss = model
                          .forward(Tensor::from_ids({0, 1, 2, 3, 4, 5, 6, 7}, {1, 8}),
                                   Tensor::from_ids({1, 2, 3, 4, 5, 6, 7, 8}, {1, 8}))
                          .loss;
  std::printf("gpt found: femto loss %.6f\n", loss.item());
#else
  std::printf("gpt not found\n");
#endif
}
