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
#include <unistd.h>

#include "nn/io/atomic_file.h"

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

// The step of a complete row of `spec`, or -1 for anything else (a row cut off by a crash).
int64_t complete_row_step(std::string_view line, const CsvSpec& spec) {
  const std::vector<std::string_view> columns = split_fields(spec.header),
                                      fields = split_fields(line);
  if (fields.size() != columns.size()) return -1;
  // Digits only, as the trainer writes a step: from_chars alone would also take "-0".
  if (fields[0].empty() || fields[0].find_first_not_of("0123456789") != std::string_view::npos)
    return -1;
  int64_t step = -1;
  const auto [end, ec] =
      std::from_chars(fields[0].data(), fields[0].data() + fields[0].size(), step);
  if (ec != std::errc() || end != fields[0].data() + fields[0].size()) return -1;
  for (size_t i = 1; i < fields.size(); ++i) {
    if (fields[i].empty()) {
      if (columns[i] != "grad_norm") return -1;
      continue;
    }
    const std::string field(fields[i]);  // strtod reads "nan" and "inf" as the writer wrote them
    char* parsed = nullptr;
    std::strtod(field.c_str(), &parsed);
    if (parsed != field.c_str() + field.size() ||
        std::isspace(static_cast<unsigned char>(field[0])))
      return -1;
  }
  return step;
}

}  // namespace

void resume_log(const std::filesystem::path& path, const CsvSpec& spec, int64_t step) {
  // Without this, reading a directory fails inside the stream with "basic_filebuf::underflow".
  if (std::error_code ec;
      std::filesystem::exists(path, ec) && !std::filesystem::is_regular_file(path, ec))
    throw std::runtime_error("cannot write the log " + path.string() +
                             ": it exists but is not a regular file (a directory?); move it away "
                             "or choose another --out");
  std::ifstream in(path, std::ios::binary);
  const std::string text((std::istreambuf_iterator<char>(in)), {});
  std::vector<std::pair<int64_t, std::string_view>> kept;  // (step, row), steps increasing
  for (size_t start = 0, end; (end = text.find('\n', start)) != std::string::npos;
       start = end + 1) {
    std::string_view line(text.data() + start, end - start);
    // A log saved again by a Windows tool or a spreadsheet ends its lines in CRLF: the rows are
    // the same (and are written back with LF), not torn.
    if (line.ends_with('\r')) line.remove_suffix(1);
    const int64_t row_step = complete_row_step(line, spec);
    if (row_step < 0 || row_step > step) continue;
    while (!kept.empty() && kept.back().first >= row_step) kept.pop_back();
    kept.emplace_back(row_step, line);
  }
  std::string out = std::string(spec.header) + "\n";
  for (const auto& [row_step, line] : kept) out.append(line) += '\n';
  nn::write_file_atomically(path, out);
}

std::optional<size_t> csv_column(std::string_view header, std::string_view name) {
  const std::vector<std::string_view> columns = split_fields(header);
  const auto it = std::find(columns.begin(), columns.end(), name);
  if (it == columns.end()) return std::nullopt;
  return static_cast<size_t>(it - columns.begin());
}

std::optional<double> lowest_val_loss(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  const std::string text((std::istreambuf_iterator<char>(in)), {});
  const size_t val = *csv_column(kEvalLog.header, "val_loss");
  std::optional<double> lowest;
  for (size_t start = 0, end; (end = text.find('\n', start)) != std::string::npos;
       start = end + 1) {
    std::string_view line(text.data() + start, end - start);
    if (line.ends_with('\r')) line.remove_suffix(1);
    if (complete_row_step(line, kEvalLog) <= 0) continue;  // the header, torn rows, step 0
    const double loss = std::strtod(std::string(split_fields(line)[val]).c_str(), nullptr);
    if (std::isfinite(loss) && (!lowest || loss < *lowest)) lowest = loss;
  }
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
  explicit CsvLog(const std::filesystem::path& path) : path_(path.string()) {
    // The log was just rewritten as a regular file (resume_log). O_NOFOLLOW: a symlink put in
    // its place since is refused, never written through (into a file outside the run).
    fd_ = ::open(path_.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (fd_ < 0)
      throw std::runtime_error(
          "cannot write the log " + path_ + ": " +
          (errno == ELOOP ? std::string("it became a symbolic link while the run started; remove "
                                        "it, or choose another --out")
                          : std::string(std::strerror(errno))));
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

  std::string& pending() { return pending_; }
  void flush() {
    size_t done = 0;
    while (done < pending_.size()) {
      const ssize_t n = ::write(fd_, pending_.data() + done, pending_.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        const int err = n == 0 ? ENOSPC : errno;
        pending_.erase(0, done);
        throw std::runtime_error("cannot write the log " + path_ + ": " + std::strerror(err) +
                                 "; the checkpoint was not updated");
      }
      done += static_cast<size_t>(n);
    }
    pending_.clear();
  }
  void sync() {
    flush();
    if (::fdatasync(fd_) != 0)
      throw std::runtime_error("cannot write the log " + path_ + " (fdatasync): " +
                               std::strerror(errno) + "; the checkpoint was not updated");
  }

 private:
  std::string path_, pending_;
  int fd_ = -1;
};

RunLogs::RunLogs(const RunDir& dir, int64_t step) {
  const int64_t keep_through = step > 0 ? step : -1;
  resume_log(dir.train_log(), kTrainLog, keep_through);
  resume_log(dir.eval_log(), kEvalLog, keep_through);
  train_ = std::make_unique<CsvLog>(dir.train_log());
  eval_ = std::make_unique<CsvLog>(dir.eval_log());
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
