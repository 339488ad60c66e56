// The CSV logs of a run directory (train_log.csv, eval_log.csv): their headers, what a resumed
// run keeps of them, and their writer. The trainer appends rows as it goes (RunLogs); a crash
// can cut the last row short and leaves rows logged after the last checkpoint, so a resumed run
// first rewrites each log to its complete rows up to its step.
#pragma once

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gpt/train/run_dir.h"

namespace attograd::gpt {

/// One CSV log of a run (its file named by RunDir: kTrainLog, kEvalLog): its header, the columns
/// the trainer writes, in its order. A log file is read by the names of its own header (its first
/// line): each of these columns once, in any order, among others of the file's own. A row is
/// complete when it has one field per column of the file's header, the step in decimal digits
/// (no sign) and every other field of these columns a number as strtod reads it ("nan" and "inf"
/// included: the writer prints them so); only a grad_norm column may be empty (it is not computed
/// without clipping).
struct CsvSpec {
  const char* header;
};
/// One row per optimizer step.
inline constexpr CsvSpec kTrainLog{"step,loss,lr,grad_norm,tokens_per_s"};
/// One row per evaluation (step 0 of a fresh run too).
inline constexpr CsvSpec kEvalLog{"step,train_loss,val_loss,train_ppl,val_ppl"};

/// Throws std::runtime_error when the log at `path` cannot be resumed: it exists but is not a
/// regular file, or its header (its first line) lacks one of `spec`'s columns or names one
/// twice (a column renamed or deleted, the header deleted), so its rows cannot be told apart by
/// name. The message names the file, its header, the column and the fix: "cannot resume the log
/// <path>: its header (first line) is 'step,loss,LR,grad_norm,tokens_per_s', which has no column
/// 'lr'; restore the header 'step,loss,lr,grad_norm,tokens_per_s' (the columns in the order of
/// its rows), or move the log away to resume with a new one". A missing or empty file passes.
/// Reads the first line only.
void require_log_columns(const std::filesystem::path& path, const CsvSpec& spec);

/// Rewrites the log at `path` (atomically: a crash during it leaves the old log) for a run
/// resumed at `step`: the header of `spec`, then the complete rows with steps <= `step`, each
/// with `spec`'s columns in `spec`'s order (taken by the names of the file's header: a log whose
/// columns were moved is kept right, columns of the file's own are dropped), with LF line ends,
/// in strictly increasing order of step (a resumed run writes the later ones again). Only rows
/// ending in a newline (LF or CRLF) count: a crash can cut the last one short. A row whose step
/// is not above those kept before it was written by a run that started again from an earlier
/// checkpoint (attograd before the rewrite existed appended to the old rows), so it replaces the
/// rows of the abandoned steps: every step is logged once. A missing or empty file is written
/// with the header alone; step -1 keeps no row (a fresh run) and reads nothing. Returns a
/// sentence for the run when the file's columns were moved or some dropped, else "". Throws as
/// require_log_columns (before anything is written) and std::runtime_error naming the file when
/// it cannot be written.
std::string resume_log(const std::filesystem::path& path, const CsvSpec& spec, int64_t step);

/// The lowest val_loss of the complete rows of the eval log at `path` after step 0 (step 0 has
/// no checkpoint), read by its header's names, or nullopt when it has none, does not exist or
/// has a header resume_log would refuse: the bar of a best checkpoint that does not record its
/// own (RunDir::kBestCheckpoint, written before checkpoints recorded their val loss).
std::optional<double> lowest_val_loss(const std::filesystem::path& path);

/// The index (0 for the first) of column `name` in a CSV header line ("step,loss,..."), or
/// nullopt when it has none: how the logs' readers (lowest_val_loss, the plots) find a column.
std::optional<size_t> csv_column(std::string_view header, std::string_view name);

/// v for printf and the CSV logs: a NaN without its sign bit, which printf writes as "-nan" (an
/// eval line read "val loss -nan" beside the divergence message's "nan"; issue 31, kind 14).
inline double unsigned_nan(double v) { return std::isnan(v) ? std::fabs(v) : v; }

/// Appends `v` to a CSV row the way the logs always wrote numbers (an ostream's default %g, 6
/// significant digits; NaN as "nan").
void append_csv_field(std::string& row, double v);

/// The CSV logs of the run being trained in a directory (RunDir::kTrainLog, kEvalLog). Rows
/// collect in memory and reach the files on flush; sync() also makes them durable. The trainer
/// syncs before every checkpoint, so after a crash the logs hold every row up to the
/// checkpoint's step (rows past it are dropped on resume). Write errors (a full disk) throw
/// std::runtime_error naming the file, before the checkpoint is touched. Each write follows
/// the log's path: a log replaced during the run (an editor's save: a new file renamed over it)
/// or deleted is opened again by its name, so the later rows go where the user sees them; a
/// file made anew gets the header first, and one whose header names the columns in another
/// order gets its rows in that order (a symbolic link put there is refused, as at the start).
class RunLogs {
 public:
  /// Opens the logs in `dir` for a run at `step`: first rewritten by resume_log to their rows up
  /// to that step (a run from step 0, a fresh one, keeps no row of an earlier run). A resumed
  /// run checks both logs (check_resumable) before it rewrites either.
  RunLogs(const RunDir& dir, int64_t step);
  ~RunLogs();
  RunLogs(const RunLogs&) = delete;
  RunLogs& operator=(const RunLogs&) = delete;

  /// A train_log.csv row, kept until the next flush(); grad_norm NaN leaves its field empty (not
  /// computed without clipping).
  void train_row(int64_t step, double loss, double lr, double grad_norm, double tokens_per_s);
  /// An eval_log.csv row, written at once.
  void eval_row(int64_t step, double train_loss, double val_loss, double train_ppl, double val_ppl);
  /// Writes the train rows kept so far: the file keeps up with the progress lines.
  void flush();
  /// Writes and fdatasyncs both logs (before a checkpoint, and at the end).
  void sync();
  /// What resume_log said of the logs (columns moved or dropped), a sentence each.
  const std::vector<std::string>& notes() const { return notes_; }

  /// require_log_columns on both logs of `dir`: start() calls it for a resumed run before it
  /// reads the corpus, so that a log it cannot resume is refused before any work is done.
  static void check_resumable(const RunDir& dir);

 private:
  class CsvLog;
  std::unique_ptr<CsvLog> train_, eval_;
  std::vector<std::string> notes_;
};

}  // namespace attograd::gpt
