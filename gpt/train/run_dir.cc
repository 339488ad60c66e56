#include "gpt/train/run_dir.h"

#include <sstream>
#include <stdexcept>
#include <system_error>

#include <unistd.h>

#include "gpt/train/run_logs.h"
#include "nn/io/utf8.h"

namespace attograd::gpt {

std::vector<std::string> RunDir::files() {
  std::vector<std::string> names{kCheckpoint, kBestCheckpoint, kConfig,
                                 kTrainLog,   kEvalLog,        kBaselines};
  for (const char* stem : kPlotStems)
    for (const FigureFormat& format : kFigureFormats)
      names.push_back(std::string(stem) + "." + format.extension);
  return names;
}

namespace {

const char* kind_of(std::filesystem::file_type type) {
  switch (type) {
    case std::filesystem::file_type::fifo:
      return "a FIFO";
    case std::filesystem::file_type::directory:
      return "a directory";
    case std::filesystem::file_type::socket:
      return "a socket";
    case std::filesystem::file_type::block:
      return "a block device";
    case std::filesystem::file_type::character:
      return "a character device";
    default:
      return "not a regular file";
  }
}

}  // namespace

void RunDir::refuse_special_files() const {
  std::vector<std::string> names = files();
  names.push_back(kLock);
  for (const std::string& name : names) {
    std::error_code ec;
    const std::filesystem::path path = path_ / name;
    const std::filesystem::file_status s = std::filesystem::status(path, ec);  // follows links
    if (ec || s.type() == std::filesystem::file_type::not_found ||
        s.type() == std::filesystem::file_type::regular)
      continue;
    const char* kind = kind_of(s.type());
    throw std::invalid_argument(nn::escape_bytes(path.string()) + " is " + kind +
                                (s.type() == std::filesystem::file_type::fifo ||
                                         s.type() == std::filesystem::file_type::directory
                                     ? ", not a regular file"
                                     : "") +
                                ": a run reads and writes it; remove it, or choose another --out");
  }
}

void RunDir::remove_previous_run() const {
  // The checkpoint first: once it is gone, nothing is left for --resume to continue.
  std::filesystem::remove(checkpoint());
  std::filesystem::remove(best_checkpoint());
  for (const char* stem : kPlotStems)
    for (const FigureFormat& format : kFigureFormats)
      std::filesystem::remove(plot(stem, format.extension));
}

BestCheckpoint::BestCheckpoint(const RunDir& dir, int64_t step) : dir_(dir) {
  if (step == 0 || !std::filesystem::exists(dir.best_checkpoint())) return;
  const std::string best = nn::escape_bytes(dir.best_checkpoint().string()),
                    log = nn::escape_bytes(dir.eval_log().string());
  std::string unread;
  try {
    const CheckpointInfo info = read_checkpoint_info(
        nn::SafetensorsFile::read(dir.best_checkpoint().string()), Moments::skip);
    if (info.training && info.training->val_loss) {
      best_val_ = info.training->val_loss;
      return;
    }
  } catch (const std::runtime_error& e) {
    unread = e.what();
  }
  // A file written before checkpoints recorded their val loss: the log's lowest is its own.
  best_val_ = lowest_val_loss(dir.eval_log());
  if (!unread.empty())
    note_ = "cannot read the val loss of " + best + " (" + unread + "); ";
  else if (!best_val_)
    note_ = best + " records no val loss (an older attograd wrote it); ";
  if (note_.empty()) return;
  if (best_val_) {
    std::ostringstream lowest;
    lowest << *best_val_;
    note_ +=
        "it stays the best until an evaluation goes below " + log + "'s lowest, " + lowest.str();
  } else {
    note_ += log + " has no evaluation after step 0 either, so the next evaluation replaces it";
  }
}

void BestCheckpoint::offer(double val_loss) {
  if (best_val_ && !(val_loss < *best_val_)) return;
  best_val_ = val_loss;
  // The temporary is named as AtomicFile's, so a crash leaves nothing that the next run would
  // not remove.
  const std::filesystem::path tmp = dir_.path() / (std::string(RunDir::kBestCheckpoint) + ".tmp." +
                                                   std::to_string(::getpid()) + ".linked");
  std::error_code error;
  std::filesystem::remove(tmp, error);
  std::filesystem::create_hard_link(dir_.checkpoint(), tmp, error);
  if (error) std::filesystem::copy_file(dir_.checkpoint(), tmp);
  std::filesystem::rename(tmp, dir_.best_checkpoint());
}

}  // namespace attograd::gpt
