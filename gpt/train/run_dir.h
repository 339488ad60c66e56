// A run directory and the files a run keeps there, each named once, here:
//
//   .lock              held (flock) by the run writing the directory (run.cc's RunDirLock)
//   ckpt.safetensors   the checkpoint (checkpoint.h's kCheckpointFile: the model floor opens a
//                      run directory by it), best.safetensors the one at the lowest val loss
//   run.json           the effective config (run_config.h)
//   train_log.csv, eval_log.csv   the CSV logs (run_logs.h)
//   baselines.csv      the baselines' reference lines (plot.h)
//   loss.png/.svg, perplexity.png/.svg   the plots (plot.h)
//
// A run's sweep of stale temporaries may remove those of exactly these files, and a run refuses
// to find any of them as anything but a regular file.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "gpt/io/figures.h"
#include "gpt/model/checkpoint.h"

namespace attograd::gpt {

/// The files of one run directory (`attograd train --out`): what a run writes, by role.
class RunDir {
 public:
  static constexpr const char* kLock = ".lock";
  static constexpr const char* kCheckpoint = kCheckpointFile;
  /// The run's checkpoint at its lowest val loss so far (nanoGPT's always_save_checkpoint =
  /// False keeps only that one; attograd keeps both): a hard link to kCheckpoint as it was
  /// written at that evaluation, so it costs no space until the next save replaces kCheckpoint.
  static constexpr const char* kBestCheckpoint = "best.safetensors";
  /// The effective config: `attograd train --config <dir>/run.json` repeats the run.
  static constexpr const char* kConfig = "run.json";
  static constexpr const char* kTrainLog = "train_log.csv";  // a row per step
  static constexpr const char* kEvalLog = "eval_log.csv";    // a row per evaluation
  /// The loss plot's horizontal reference lines: "name,val_loss", a row per baseline.
  static constexpr const char* kBaselines = "baselines.csv";
  /// The plots' stems: write_plots draws each as <stem>.<extension> in every one of
  /// gpt/io/figures.h's kFigureFormats.
  static constexpr const char* kPlotStems[] = {"loss", "perplexity"};

  explicit RunDir(std::filesystem::path path) : path_(std::move(path)) {}

  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path lock() const { return path_ / kLock; }
  std::filesystem::path checkpoint() const { return path_ / kCheckpoint; }
  std::filesystem::path best_checkpoint() const { return path_ / kBestCheckpoint; }
  std::filesystem::path config() const { return path_ / kConfig; }
  std::filesystem::path train_log() const { return path_ / kTrainLog; }
  std::filesystem::path eval_log() const { return path_ / kEvalLog; }
  std::filesystem::path baselines() const { return path_ / kBaselines; }
  /// <dir>/<stem>.<extension>, e.g. plot("loss", "png").
  std::filesystem::path plot(const char* stem, const char* extension) const {
    return path_ / (std::string(stem) + "." + extension);
  }

  /// Every file a run writes in its directory, the lock excepted, as listed above. run_test
  /// checks that a finished run's directory holds these and nothing else.
  static std::vector<std::string> files();

  /// Throws std::invalid_argument when one of files() (or the lock) exists here and is not a
  /// regular file: a FIFO there made `train --resume` wait for ever on its open, and a
  /// directory or device would fail later with a worse message. A symlink to a regular file is
  /// accepted as before. "<dir>/run.json is a FIFO, not a regular file: a run reads and writes
  /// it; remove it (or choose another --out)".
  void refuse_special_files() const;

  /// For a fresh run in this directory (`train --overwrite`), before it writes anything: removes
  /// the checkpoints of the run it replaces, kCheckpoint first and then kBestCheckpoint, and that
  /// run's plots. Its logs, run.json and baselines.csv are written again at once by the new run;
  /// its checkpoint was left until the new run's first save, so a new run killed before that
  /// left the old checkpoint under its own run.json and logs, and `--resume` continued the old
  /// run into them. Now a kill at any moment leaves the old run whole (before this) or no
  /// checkpoint to resume. Files of other names stay. Throws std::filesystem::filesystem_error
  /// naming the file when one cannot be removed.
  void remove_previous_run() const;

 private:
  std::filesystem::path path_;
};

/// best.safetensors of a run being trained: the checkpoint at the lowest val loss so far.
class BestCheckpoint {
 public:
  /// For a run at `step`: a fresh run (step 0) has none (RunDir::remove_previous_run removed
  /// the one of the run it replaces). A resumed run goes on from the val loss the file records
  /// (TrainingState::val_loss), so a deleted or edited eval log cannot make a worse evaluation
  /// replace it; from the lowest val loss of the eval log for a file written before checkpoints
  /// recorded theirs (or one that cannot be read, which note() then says); and with neither,
  /// the next evaluation replaces it, which note() says too.
  BestCheckpoint(const RunDir& dir, int64_t step);
  /// What the run should be told about where its bar came from; empty when all is as usual.
  const std::string& note() const { return note_; }
  /// After the checkpoint of an evaluation with `val_loss` was written: when it is the lowest
  /// so far, makes RunDir::kBestCheckpoint that checkpoint, a hard link (no copy; the next save
  /// replaces kCheckpoint by a rename and leaves the linked file alone) renamed into place, so
  /// the previous best stays until the new one is whole; a copy where the file system has no
  /// hard links.
  void offer(double val_loss);

 private:
  RunDir dir_;
  std::optional<double> best_val_;
  std::string note_;
};

}  // namespace attograd::gpt
