// The files of a run directory, named once: what a run writes there, which of them its sweep of
// stale temporaries may remove, and which a run refuses to find as anything but a regular file.
//
//   .lock              held (flock) by the run writing the directory (run.cc's RunDirLock)
//   ckpt.safetensors   the checkpoint (checkpoint.h), best.safetensors the best one
//   run.json           the effective config (run_config.h)
//   train_log.csv, eval_log.csv   the CSV logs (run_logs.h)
//   baselines.csv      the baselines' reference lines (plot.h)
//   loss.png/.svg, perplexity.png/.svg   the plots (plot.h)
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace attograd::gpt {

/// The lock file of a run directory.
inline constexpr char kLockFile[] = ".lock";

/// Every file a run writes in its directory, the lock excepted, as listed above. run_test checks
/// that a finished run's directory holds these and nothing else.
std::vector<std::string> run_files();

/// Throws std::invalid_argument when one of run_files() (or the lock) exists in `dir` and is not
/// a regular file: a FIFO there made `train --resume` wait for ever on its open, and a
/// directory or device would fail later with a worse message. A symlink to a regular file is
/// accepted as before. "<dir>/run.json is a FIFO, not a regular file: a run reads and writes
/// it; remove it (or choose another --out)".
void refuse_special_run_files(const std::filesystem::path& dir);

}  // namespace attograd::gpt
