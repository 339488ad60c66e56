// A training run to continue: what `attograd train --resume` reads from a run directory.
#pragma once

#include <string>

#include "gpt/model/checkpoint.h"
#include "gpt/model/session.h"
#include "gpt/train/trainer.h"

namespace attograd::gpt {

/// A run to continue: its model and tokenizer, its training state (AdamW moments included)
/// and the options it was trained with.
struct ResumedRun {
  Session session;
  TrainingState state;
  TrainOptions options;
};

/// Reads <out_dir>/kCheckpointFile for `attograd train --resume`. Throws std::invalid_argument
/// when it does not exist ("nothing to resume") or holds no training state (written by
/// save_checkpoint without one), std::runtime_error as open_checkpoint and
/// TrainOptions::from_json for a damaged file.
ResumedRun resume_run(const std::string& out_dir);

}  // namespace attograd::gpt
