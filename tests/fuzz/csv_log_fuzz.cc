// Fuzz target: what a resumed run keeps of its CSV logs (gpt/train/run_logs.h, resume_log), on
// any bytes a crash, an editor or a spreadsheet may leave in train_log.csv or eval_log.csv.
//
// The input is "<log><step>\n<the log's bytes>": <log> 'e' for eval_log.csv, anything else
// for train_log.csv, then the step resumed at (a decimal integer; -1 is a fresh run; none or an
// unreadable one keeps every step). The log's first line is its header, which names its columns:
// when it lacks one of the trainer's or names one twice (and the run is resumed, the log not
// empty), resume_log throws std::runtime_error naming the file and leaves it as it was.
// Otherwise, properties of the rewritten file:
// - the header of its log, then rows each ending in LF, with no CR or NUL anywhere;
// - each row complete: one field per column, the step a decimal integer <= the step resumed
//   at, every other field a number strtod reads whole (grad_norm alone may be empty);
// - each row one of the input's own lines (ended by LF or CRLF) with the trainer's columns taken
//   from it by the header's names, steps strictly increasing; and exactly the complete rows that
//   no later complete row (step <= the step resumed at) replaces with a step <= their own
//   (run_logs.h: a restart replaces the abandoned steps);
// - resuming the rewritten log at the same step changes nothing.
// resume_log may throw otherwise only when the file cannot be written, which a scratch file
// always can.
#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "gpt/train/run_dir.h"
#include "gpt/train/run_logs.h"
#include "tests/fuzz/fuzz_support.h"

using namespace attograd::gpt;

namespace {

std::vector<std::string_view> split(std::string_view s, char sep) {
  std::vector<std::string_view> parts;
  for (size_t start = 0;;) {
    const size_t at = s.find(sep, start);
    parts.push_back(s.substr(start, at == std::string_view::npos ? at : at - start));
    if (at == std::string_view::npos) return parts;
    start = at + 1;
  }
}

// Where the log's header puts each of the spec's columns (by name), and how many it has; nullopt
// when it lacks one or names one twice.
struct Layout {
  std::vector<size_t> at;
  size_t width = 0;
};

std::optional<Layout> layout_of(std::string_view header, const CsvSpec& spec) {
  const std::vector<std::string_view> names = split(header, ',');
  Layout layout{{}, names.size()};
  for (const std::string_view column : split(spec.header, ',')) {
    if (std::count(names.begin(), names.end(), column) != 1) return std::nullopt;
    layout.at.push_back(
        static_cast<size_t>(std::find(names.begin(), names.end(), column) - names.begin()));
  }
  return layout;
}

// The step of `line` if it is a complete row of `spec` laid out as `layout` (the definition in
// run_logs.h, read with strtoll and strtod), else -1; *row is then its fields in the spec's order.
int64_t complete_step(std::string_view line, const CsvSpec& spec, const Layout& layout,
                      std::string* row) {
  const std::vector<std::string_view> columns = split(spec.header, ','), fields = split(line, ',');
  if (fields.size() != layout.width) return -1;
  const std::string step_text(fields[layout.at[0]]);
  if (step_text.empty() || step_text.find_first_not_of("0123456789") != std::string::npos)
    return -1;
  errno = 0;
  const long long step = std::strtoll(step_text.c_str(), nullptr, 10);
  if (errno == ERANGE) return -1;
  for (size_t i = 1; i < columns.size(); ++i) {
    const std::string f(fields[layout.at[i]]);
    if (f.empty()) {
      if (columns[i] != "grad_norm") return -1;
      continue;
    }
    char* end = nullptr;
    std::strtod(f.c_str(), &end);
    if (std::isspace(static_cast<unsigned char>(f[0])) || end != f.c_str() + f.size()) return -1;
  }
  row->clear();
  for (size_t i = 0; i < columns.size(); ++i)
    (i == 0 ? * row : * row += ',') += fields[layout.at[i]];
  return step;
}

std::string read_all(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input = attograd::fuzz::as_text(data, size);
  const size_t newline = input.find('\n');
  const std::string_view first = input.substr(0, newline);
  const std::string_view log = newline == std::string_view::npos ? "" : input.substr(newline + 1);
  const bool eval = !first.empty() && first[0] == 'e';
  const CsvSpec& spec = eval ? kEvalLog : kTrainLog;
  const char* file = eval ? RunDir::kEvalLog : RunDir::kTrainLog;
  int64_t step = std::numeric_limits<int64_t>::max();
  if (!first.empty()) {
    int64_t parsed = 0;
    const auto [end, ec] = std::from_chars(first.data() + 1, first.data() + first.size(), parsed);
    if (ec == std::errc() && end == first.data() + first.size()) step = parsed;
  }

  const std::filesystem::path path = attograd::fuzz::write_scratch(file, log);
  std::string_view header = log.substr(0, log.find('\n'));
  if (header.ends_with('\r')) header.remove_suffix(1);
  const std::optional<Layout> layout =
      step < 0 || log.empty() ? std::optional<Layout>(Layout{}) : layout_of(header, spec);
  if (!layout) {
    bool refused = false;
    try {
      resume_log(path, spec, step);
    } catch (const std::runtime_error& e) {
      refused = std::string_view(e.what()).starts_with("cannot resume the log " + path.string());
    }
    FUZZ_CHECK(refused, "a header without the trainer's columns was not refused by name");
    FUZZ_CHECK(read_all(path) == log, "a refused log was changed");
    attograd::fuzz::remove_scratch(file);
    return 0;
  }
  resume_log(path, spec, step);
  const std::string out = read_all(path);

  // What the rewrite should keep: each complete row <= step, unless a later one replaces it.
  std::vector<std::pair<int64_t, std::string>> rows;
  const std::vector<std::string_view> in_lines = split(log, '\n');
  for (size_t i = 1; step >= 0 && i + 1 < in_lines.size(); ++i) {  // the header, then rows; the
    std::string_view line = in_lines[i];                           // last part has no newline
    if (line.ends_with('\r')) line.remove_suffix(1);
    std::string row;
    const int64_t s = complete_step(line, spec, *layout, &row);
    if (s >= 0 && s <= step) rows.emplace_back(s, row);
  }
  std::string expected = std::string(spec.header) + "\n";
  std::optional<int64_t> later_min;  // the least step of the rows after this one, if any
  std::vector<std::string_view> kept;
  for (size_t i = rows.size(); i-- > 0;) {
    if (!later_min || rows[i].first < *later_min) kept.push_back(rows[i].second);
    later_min = std::min(later_min.value_or(rows[i].first), rows[i].first);
  }
  for (size_t i = kept.size(); i-- > 0;) expected.append(kept[i]) += '\n';

  FUZZ_CHECK(out.starts_with(std::string(spec.header) + "\n"), "the header is not intact");
  FUZZ_CHECK(out.find('\r') == std::string::npos && out.find('\0') == std::string::npos,
             "a CR or NUL survived");
  const std::vector<std::string_view> lines = split(std::string_view(out), '\n');
  FUZZ_CHECK(lines.back().empty(), "the last row does not end in a newline");
  int64_t previous = -1;
  for (size_t i = 1; i + 1 < lines.size(); ++i) {
    std::string row;
    const int64_t s = complete_step(lines[i], spec, *layout_of(spec.header, spec), &row);
    FUZZ_CHECK(s >= 0, "an incomplete row was kept: " + std::string(lines[i]));
    FUZZ_CHECK(s <= step, "a row past the step was kept");
    FUZZ_CHECK(s > previous, "the steps are not strictly increasing");
    previous = s;
  }
  FUZZ_CHECK(out == expected, "the rows kept are not the complete ones no restart replaced");

  resume_log(path, spec, step);
  FUZZ_CHECK(read_all(path) == out, "resuming the rewritten log again changed it");
  attograd::fuzz::remove_scratch(file);
  return 0;
}
