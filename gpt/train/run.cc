#include "gpt/train/run.h"

#include <filesystem>
#include <stdexcept>

namespace attograd::gpt {

ResumedRun resume_run(const std::string& out_dir) {
  const std::string path = (std::filesystem::path(out_dir) / kCheckpointFile).string();
  if (!std::filesystem::exists(path))
    throw std::invalid_argument("nothing to resume: " + path + " does not exist");
  const SafetensorsFile file = SafetensorsFile::read(path);
  CheckpointInfo info = read_checkpoint_info(file, Moments::load);
  if (!info.training) throw std::invalid_argument(path + " holds no training state to resume");
  ResumedRun r{open_checkpoint_file(file), std::move(*info.training), {}};
  r.options = TrainOptions::from_json(r.state.train_options);
  return r;
}

}  // namespace attograd::gpt
