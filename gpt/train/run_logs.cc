#include "gpt/train/run_logs.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "nn/io/atomic_file.h"
#include "nn/io/utf8.h"

namespace attograd::gpt {

namespace {

std::vector<std::string_view> split_fields(std::string_view line) {
  std::vector<std::string_view> fields;
  for (size_t start = 0;;) {
    const size_t comma = line.find(',', start);
    fields.push_back(line.substr(
        start, comma == std::string_view::npos ? std::string_view::npos : comma - start));
    if (comma == std::string_view::npos) return fields;
    start = comma + 1;
  }
}

// Where a log file keeps the columns of its spec, by the names of its header.
struct LogLayout {
  size_t width = 0;                // the file's columns
  std::vector<size_t> at;          // the file's column of the spec's i-th
  std::vector<std::string> extra;  // the file's columns that the spec does not have
  std::string header;              // the file's header line, as it is (CR removed)
  bool as_spec() const { return extra.empty() && std::is_sorted(at.begin(), at.end()); }
};

// The first line of `text`, without its CR.
std::string_view header_line(std::string_view text) {
  std::string_view line = text.substr(0, text.find('\n'));
  if (line.ends_with('\r')) line.remove_suffix(1);
  return line;
}

// The layout of a log whose header line is `header`, or nullopt with the reason in *why ("which
// has no column 'lr'").
std::optional<LogLayout> layout_of(std::string_view header, const CsvSpec& spec, std::string* why) {
  LogLayout layout;
  layout.header = header;
  const std::vector<std::string_view> names = split_fields(header),
                                      columns = split_fields(spec.header);
  layout.width = names.size();
  std::vector<std::string> missing, twice;
  for (const std::string_view column : columns) {
    const auto first = std::find(names.begin(), names.end(), column);
    if (first == names.end()) {
      missing.emplace_back(column);
      continue;
    }
    if (std::find(first + 1, names.end(), column) != names.end()) twice.emplace_back(column);
    layout.at.push_back(static_cast<size_t>(first - names.begin()));
  }
  const auto quoted = [](const std::vector<std::string>& list) {
    std::string text;
    for (size_t i = 0; i < list.size(); ++i)
      text += (i == 0 ? "" : i + 1 == list.size() ? " or " : ", ") + ("'" + list[i] + "'");
    return text;
  };
  if (!missing.empty() || !twice.empty()) {
    *why = !missing.empty() ? "which has no column " + quoted(missing)
                            : "which names the column " + quoted(twice) + " twice";
    return std::nullopt;
  }
  for (const std::string_view name : names)
    if (std::find(columns.begin(), columns.end(), name) == columns.end())
      layout.extra.emplace_back(name);
  return layout;
}

// "cannot resume the log <path>: its header (first line) is '...', <why>; <fix>".
std::runtime_error unresumable(const std::filesystem::path& path, std::string_view header,
                               const std::string& why, const CsvSpec& spec) {
  const std::string shown = nn::escape_controls(header.substr(0, 200)) +
                            (header.size() > 200 ? std::string("...") : std::string());
  return std::runtime_error(
      "cannot resume the log " + nn::escape_bytes(path.string()) +
      ": its header (first line) is '" + shown + "', " + why + "; restore the header '" +
      spec.header +
      "' (the columns in the order of its rows), or move the log away to resume with a new one");
}

void refuse_non_regular(const std::filesystem::path& path) {
  // Without this, reading a directory fails inside the stream with "basic_filebuf::underflow".
  if (std::error_code ec;
      std::filesystem::exists(path, ec) && !std::filesystem::is_regular_file(path, ec))
    throw std::runtime_error("cannot write the log " + path.string() +
                             ": it exists but is not a regular file (a directory?); move it away "
                             "or choose another --out");
}

// The step of a complete row of a log laid out as `layout` (see CsvSpec), or -1 for anything else
// (a row cut off by a crash, the header).
int64_t complete_row_step(const std::vector<std::string_view>& fields, const LogLayout& layout,
                          const CsvSpec& spec) {
  if (fields.size() != layout.width) return -1;
  // Digits only, as the trainer writes a step: from_chars alone would also take "-0".
  const std::string_view step_field = fields[layout.at[0]];
  if (step_field.empty() || step_field.find_first_not_of("0123456789") != std::string_view::npos)
    return -1;
  int64_t step = -1;
  const auto [end, ec] =
      std::from_chars(step_field.data(), step_field.data() + step_field.size(), step);
  if (ec != std::errc() || end != step_field.data() + step_field.size()) return -1;
  const std::vector<std::string_view> columns = split_fields(spec.header);
  for (size_t i = 1; i < columns.size(); ++i) {
    const std::string_view field = fields[layout.at[i]];
    if (field.empty()) {
      if (columns[i] != "grad_norm") return -1;
      continue;
    }
    const std::string text(field);  // strtod reads "nan" and "inf" as the writer wrote them
    char* parsed = nullptr;
    std::strtod(text.c_str(), &parsed);
    if (parsed != text.c_str() + text.size() || std::isspace(static_cast<unsigned char>(text[0])))
      return -1;
  }
  return step;
}

// A log's bytes and its layout: nullopt for a missing or empty file (nothing to keep); throws
// unresumable() for a header resume_log cannot read rows by.
struct LogText {
  std::string text;
  LogLayout layout;
};

std::optional<LogText> read_log(const std::filesystem::path& path, const CsvSpec& spec) {
  refuse_non_regular(path);
  std::ifstream in(path, std::ios::binary);
  LogText log{std::string((std::istreambuf_iterator<char>(in)), {}), {}};
  if (log.text.empty()) return std::nullopt;
  std::string why;
  const std::string_view header = header_line(log.text);
  std::optional<LogLayout> layout = layout_of(header, spec, &why);
  if (!layout) throw unresumable(path, header, why, spec);
  log.layout = std::move(*layout);
  return log;
}

// The complete rows of `log` after its header (see CsvSpec), each line with its fields.
template <class F>
void for_each_complete_row(const LogText& log, const CsvSpec& spec, F&& f) {
  const std::string& text = log.text;
  for (size_t start = text.find('\n') + 1, end;
       start != 0 && (end = text.find('\n', start)) != std::string::npos; start = end + 1) {
    std::string_view line(text.data() + start, end - start);
    // A log saved again by a Windows tool or a spreadsheet ends its lines in CRLF: the rows are
    // the same (and are written back with LF), not torn.
    if (line.ends_with('\r')) line.remove_suffix(1);
    const std::vector<std::string_view> fields = split_fields(line);
    const int64_t step = complete_row_step(fields, log.layout, spec);
    if (step >= 0) f(step, line, fields);
  }
}

}  // namespace

void require_log_columns(const std::filesystem::path& path, const CsvSpec& spec) {
  refuse_non_regular(path);
  std::ifstream in(path, std::ios::binary);
  std::string header;
  if (!std::getline(in, header) && header.empty()) return;  // missing or empty: nothing to keep
  if (header.ends_with('\r')) header.pop_back();
  std::string why;
  if (!layout_of(header, spec, &why)) throw unresumable(path, header, why, spec);
}

std::string resume_log(const std::filesystem::path& path, const CsvSpec& spec, int64_t step) {
  refuse_non_regular(path);
  std::string out = std::string(spec.header) + "\n", note;
  const std::optional<LogText> log = step < 0 ? std::nullopt : read_log(path, spec);
  if (log) {
    std::vector<std::pair<int64_t, std::string>> kept;  // (step, row), steps increasing
    for_each_complete_row(
        *log, spec,
        [&](int64_t row_step, std::string_view line, const std::vector<std::string_view>& fields) {
          if (row_step > step) return;
          while (!kept.empty() && kept.back().first >= row_step) kept.pop_back();
          std::string row;
          if (log->layout.as_spec()) {
            row = line;
          } else {  // the spec's columns in the spec's order, by the file's names
            for (size_t i = 0; i < log->layout.at.size(); ++i)
              (i == 0 ? row : row += ',') += fields[log->layout.at[i]];
          }
          kept.emplace_back(row_step, std::move(row));
        });
    for (const auto& [row_step, row] : kept) out.append(row) += '\n';
    if (!log->layout.as_spec()) {
      note = path.filename().string() + " had the columns '" +
             nn::escape_controls(log->layout.header) +
             "': its rows are kept in the trainer's order, '" + spec.header + "'";
      if (!log->layout.extra.empty()) {
        note += ", without the file's own column";
        for (size_t i = 0; i < log->layout.extra.size(); ++i)
          note += std::string(i == 0 ? (log->layout.extra.size() > 1 ? "s '" : " '") : ", '") +
                  nn::escape_controls(log->layout.extra[i]) + "'";
      }
    }
  }
  nn::write_file_atomically(path, out);
  return note;
}

std::optional<size_t> csv_column(std::string_view header, std::string_view name) {
  const std::vector<std::string_view> columns = split_fields(header);
  const auto it = std::find(columns.begin(), columns.end(), name);
  if (it == columns.end()) return std::nullopt;
  return static_cast<size_t>(it - columns.begin());
}

std::optional<double> lowest_val_loss(const std::filesystem::path& path) {
  std::optional<LogText> log;
  try {
    log = read_log(path, kEvalLog);
  } catch (const std::runtime_error&) {
    return std::nullopt;  // a log whose rows cannot be read by name tells nothing
  }
  if (!log) return std::nullopt;
  const size_t val = log->layout.at[*csv_column(kEvalLog.header, "val_loss")];
  std::optional<double> lowest;
  for_each_complete_row(
      *log, kEvalLog,
      [&](int64_t step, std::string_view, const std::vector<std::string_view>& fields) {
        if (step == 0) return;  // step 0 has no checkpoint
        const double loss = std::strtod(std::string(fields[val]).c_str(), nullptr);
        if (std::isfinite(loss) && (!lowest || loss < *lowest)) lowest = loss;
      });
  return lowest;
}

void append_csv_field(std::string& row, double v) {
  std::ostringstream s;
  s << unsigned_nan(v);  // "nan", as the lines printed, not "-nan"
  row += s.str();
}

// An append-only CSV log: RunLogs' two files.
class RunLogs::CsvLog {
 public:
  CsvLog(const std::filesystem::path& path, const CsvSpec& spec)
      : path_(path.string()), spec_(spec) {
    // The log was just rewritten as a regular file (resume_log).
    fd_ = open_for_append("it became a symbolic link while the run started");
  }
  ~CsvLog() {
    try {
      flush();  // an exception (a diverged run) still leaves the rows so far in the log
    } catch (const std::runtime_error&) {
      // the exception on its way out already says what went wrong
    }
    ::close(fd_);
  }
  CsvLog(const CsvLog&) = delete;
  CsvLog& operator=(const CsvLog&) = delete;

  /// Rows in the trainer's column order, kept until flush().
  std::string& pending() { return pending_; }
  void flush() {
    if (pending_.empty() && unwritten_.empty()) return;
    follow_path();
    unwritten_ += layout_ ? in_file_order(pending_) : pending_;
    pending_.clear();
    size_t done = 0;
    while (done < unwritten_.size()) {
      const ssize_t n = ::write(fd_, unwritten_.data() + done, unwritten_.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        const int err = n == 0 ? ENOSPC : errno;
        unwritten_.erase(0, done);
        throw std::runtime_error("cannot write the log " + path_ + ": " + std::strerror(err) +
                                 "; the checkpoint was not updated");
      }
      done += static_cast<size_t>(n);
    }
    unwritten_.clear();
  }
  void sync() {
    flush();
    if (::fdatasync(fd_) != 0)
      throw std::runtime_error("cannot write the log " + path_ + " (fdatasync): " +
                               std::strerror(errno) + "; the checkpoint was not updated");
  }

 private:
  // O_NOFOLLOW: a symlink put in the log's place is refused (`symlink_reason` says when it
  // came), never written through (into a file outside the run).
  int open_for_append(const char* symlink_reason) const {
    const int fd =
        ::open(path_.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (fd < 0)
      throw std::runtime_error(
          "cannot write the log " + path_ + ": " +
          (errno == ELOOP ? std::string(symlink_reason) + "; remove it, or choose another --out"
                          : std::string(std::strerror(errno))));
    return fd;
  }

  // An editor that saves by writing a new file and renaming it over the log, or a user who
  // deletes it, leaves our descriptor on a file nobody sees, and every later row went there.
  // When the path no longer names the file we hold (fstat against stat), the path is opened
  // again for appending: the rows go where the user looks. A file made anew or emptied gets
  // the header first; one whose header names our columns in another order (a spreadsheet's
  // save) gets its rows in that order, by name, its own columns left empty.
  void follow_path() {
    struct stat held {
    }, named{};
    if (::fstat(fd_, &held) == 0 && ::stat(path_.c_str(), &named) == 0 &&
        held.st_dev == named.st_dev && held.st_ino == named.st_ino)
      return;
    const int fd = open_for_append("it was replaced by a symbolic link during the run");
    ::close(fd_);
    fd_ = fd;
    layout_.reset();
    struct stat now {};
    if (::fstat(fd_, &now) == 0 && now.st_size == 0) {
      unwritten_.insert(0, std::string(spec_.header) + "\n");
      return;
    }
    std::ifstream in(path_, std::ios::binary);
    std::string header, why;
    std::getline(in, header);
    if (header.ends_with('\r')) header.pop_back();
    // A header without one of our columns cannot place a row: the rows then go in our order,
    // and a resume names the header to restore (resume_log).
    if (std::optional<LogLayout> layout = layout_of(header, spec_, &why);
        layout && !layout->as_spec())
      layout_ = std::move(layout);
  }

  // `rows` (each ending in LF, our columns in our order) with each field in the column of
  // layout_ that bears its name; the file's other columns empty.
  std::string in_file_order(const std::string& rows) const {
    std::string out;
    for (size_t start = 0, end; (end = rows.find('\n', start)) != std::string::npos;
         start = end + 1) {
      const std::vector<std::string_view> fields =
          split_fields(std::string_view(rows).substr(start, end - start));
      std::vector<std::string_view> placed(layout_->width);
      for (size_t i = 0; i < fields.size() && i < layout_->at.size(); ++i)
        placed[layout_->at[i]] = fields[i];
      for (size_t i = 0; i < placed.size(); ++i) (i == 0 ? out : out += ',') += placed[i];
      out += '\n';
    }
    return out;
  }

  std::string path_;
  const CsvSpec& spec_;
  std::string pending_;              // rows in our order, not yet handed to flush()
  std::string unwritten_;            // bytes for the file, in its order, not yet written
  std::optional<LogLayout> layout_;  // the file's column order when it is not ours
  int fd_ = -1;
};

void RunLogs::check_resumable(const RunDir& dir) {
  require_log_columns(dir.train_log(), kTrainLog);
  require_log_columns(dir.eval_log(), kEvalLog);
}

RunLogs::RunLogs(const RunDir& dir, int64_t step) {
  const int64_t keep_through = step > 0 ? step : -1;
  if (keep_through >= 0) check_resumable(dir);  // both, before either is rewritten
  for (const auto& [path, spec] :
       {std::pair{dir.train_log(), kTrainLog}, std::pair{dir.eval_log(), kEvalLog}})
    if (std::string note = resume_log(path, spec, keep_through); !note.empty())
      notes_.push_back(std::move(note));
  train_ = std::make_unique<CsvLog>(dir.train_log(), kTrainLog);
  eval_ = std::make_unique<CsvLog>(dir.eval_log(), kEvalLog);
}

RunLogs::~RunLogs() = default;

void RunLogs::train_row(int64_t step, double loss, double lr, double grad_norm,
                        double tokens_per_s) {
  std::string& row = train_->pending();
  row += std::to_string(step);
  append_csv_field(row += ',', loss);
  append_csv_field(row += ',', lr);
  row += ',';
  if (std::isfinite(grad_norm)) append_csv_field(row, grad_norm);
  append_csv_field(row += ',', tokens_per_s);
  row += '\n';
}

void RunLogs::eval_row(int64_t step, double train_loss, double val_loss, double train_ppl,
                       double val_ppl) {
  std::string& row = eval_->pending();
  row += std::to_string(step);
  for (double v : {train_loss, val_loss, train_ppl, val_ppl}) append_csv_field(row += ',', v);
  row += '\n';
  eval_->flush();
}

void RunLogs::flush() { train_->flush(); }

void RunLogs::sync() {
  train_->sync();
  eval_->sync();
}

}  // namespace attograd::gpt
