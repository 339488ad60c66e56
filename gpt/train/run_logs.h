// The CSV logs of a run directory (train_log.csv, eval_log.csv): their names and headers, and
// what a resumed run keeps of them. The trainer appends rows as it goes (trainer.cc); a crash
// can cut the last row short and leaves rows logged after the last checkpoint, so a resumed run
// first rewrites each log to its complete rows up to its step.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

namespace attograd::gpt {

/// One CSV log of a run: its file name in the run directory and its header. A row is complete
/// when it has one field per column, the step in decimal digits (no sign) and every other field a
/// number as strtod reads it ("nan" and "inf" included: the writer prints them so); only a
/// grad_norm column may be empty (it is not computed without clipping).
struct CsvSpec {
  const char* file;
  const char* header;
};
/// One row per optimizer step.
inline constexpr CsvSpec kTrainLog{"train_log.csv", "step,loss,lr,grad_norm,tokens_per_s"};
/// One row per evaluation (step 0 of a fresh run too).
inline constexpr CsvSpec kEvalLog{"eval_log.csv", "step,train_loss,val_loss,train_ppl,val_ppl"};

/// Rewrites the log at `path` (atomically: a crash during it leaves the old log) for a run
/// resumed at `step`: the header of `spec`, then the complete rows with steps <= `step`, with
/// LF line ends, in strictly increasing order of step (a resumed run writes the later ones
/// again). Only rows ending in a newline (LF or CRLF) count: a crash can cut the last one
/// short. A row whose step is not above those kept before it was written by a run that
/// started again from an earlier checkpoint (attograd before the rewrite existed appended to
/// the old rows), so it replaces the rows of the abandoned steps: every step is logged once.
/// A missing file is written with the header alone; step -1 keeps no row (a fresh run).
/// Throws std::runtime_error naming the file when it exists but is not a regular file, or
/// cannot be written.
void resume_log(const std::filesystem::path& path, const CsvSpec& spec, int64_t step);

/// The lowest val_loss of the complete rows of the eval log at `path` after step 0 (step 0 has
/// no checkpoint), or nullopt when it has none or does not exist: where a resumed run's best
/// checkpoint (kBestCheckpointFile) stands.
std::optional<double> lowest_val_loss(const std::filesystem::path& path);

/// A duration for progress lines: "m:ss" below an hour, "h:mm:ss" from one hour, rounded to
/// the second (59.5 s is "1:00").
std::string format_duration(double seconds);

}  // namespace attograd::gpt
