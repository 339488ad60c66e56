// Markdown tables of the docs read by the tests that run them (docs/errors.md's rows are
// commands, calls and requests whose messages the tests check): a row's cells and a cell's code
// span, as CommonMark reads them. No engine headers.
#pragma once

#include <cstddef>
#include <fstream>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace attograd::testing {

/// s without its leading and trailing spaces.
inline std::string trim_spaces(const std::string& s) {
  const size_t b = s.find_first_not_of(' '), e = s.find_last_not_of(' ');
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

/// The cells of a table line "| a | b \| c |": split at unescaped pipes, trimmed, "\|" -> "|".
inline std::vector<std::string> markdown_cells(const std::string& line) {
  std::vector<std::string> out;
  std::string cell;
  for (size_t i = 1; i < line.size(); ++i) {  // line[0] is the leading pipe
    if (line[i] == '\\' && i + 1 < line.size() && line[i + 1] == '|') {
      cell += '|';
      ++i;
    } else if (line[i] == '|') {
      out.push_back(trim_spaces(cell));
      cell.clear();
    } else {
      cell += line[i];
    }
  }
  if (!trim_spaces(cell).empty()) out.push_back(trim_spaces(cell));  // no closing pipe
  return out;
}

/// The text of a cell that is one code span (`x`, or ``x`` around a backtick), as CommonMark
/// reads it: one space of padding on each side is dropped. nullopt for any other cell.
inline std::optional<std::string> markdown_code_span(const std::string& cell) {
  const size_t ticks = cell.find_first_not_of('`');
  if (ticks == 0 || ticks == std::string::npos || cell.size() < 2 * ticks + 1) return std::nullopt;
  const std::string fence(ticks, '`');
  if (cell.compare(cell.size() - ticks, ticks, fence) != 0 || cell[cell.size() - ticks - 1] == '`')
    return std::nullopt;
  std::string text = cell.substr(ticks, cell.size() - 2 * ticks);
  if (text.size() >= 2 && text.front() == ' ' && text.back() == ' ' && !trim_spaces(text).empty())
    text = text.substr(1, text.size() - 2);
  return text;
}

/// One row of a table: its cells and its line in the file (1-based).
struct TableRow {
  std::vector<std::string> cells;
  size_t line = 0;
};

/// The rows of every table under the heading `section` (a whole line, "## Library calls") of
/// the Markdown file at `path`, up to the next "## " heading. Each table's header must be
/// `header` and each row must have as many cells. Throws std::runtime_error naming the line
/// otherwise, or when the file cannot be read.
inline std::vector<TableRow> section_table(const std::string& path, const std::string& section,
                                           const std::vector<std::string>& header) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot open " + path);
  std::vector<TableRow> rows;
  std::string line;
  bool in_section = false, in_table = false;
  for (size_t n = 1; std::getline(in, line); ++n) {
    if (line.rfind("## ", 0) == 0) in_section = line == section;
    if (!in_section || line.empty() || line[0] != '|') {
      in_table = false;
      continue;
    }
    const std::vector<std::string> c = markdown_cells(line);
    const std::string where = path + ":" + std::to_string(n) + ": ";
    if (!in_table) {  // the header, then the separator line
      if (c != header) throw std::runtime_error(where + "a table of another kind in " + section);
      in_table = true;
      std::getline(in, line);
      ++n;
      continue;
    }
    if (c.size() != header.size())
      throw std::runtime_error(where + std::to_string(c.size()) + " cells, not " +
                               std::to_string(header.size()));
    rows.push_back({c, n});
  }
  return rows;
}

}  // namespace attograd::testing
