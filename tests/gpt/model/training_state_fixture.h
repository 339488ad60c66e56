// A checkpoint's training state for tests that write one by hand (save_checkpoint's `training`).
#pragma once

#include <cstdint>
#include <string>

#include "autograd/random.h"
#include "gpt/model/checkpoint.h"

namespace attograd::testing {

/// The training state of a run at `step` whose model has n parameters: AdamW's moments (n,)
/// filled with m and v, the batch sampler at seed 1, and `train_options` (JSON) as given.
inline gpt::TrainingState training_state(int64_t n, int64_t step, float m = 0, float v = 0,
                                         const std::string& train_options = "{}") {
  gpt::TrainingState state;
  state.step = step;
  state.batch_rng = Generator(1).state();
  state.adam_m = Tensor::full({n}, m);
  state.adam_v = Tensor::full({n}, v);
  state.adam_t = step;
  state.train_options = train_options;
  return state;
}

}  // namespace attograd::testing
