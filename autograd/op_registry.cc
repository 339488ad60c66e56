#include "autograd/op_registry.h"

#include <stdexcept>
#include <utility>

#include "autograd/ops_internal.h"

namespace attograd {

void OpRegistry::add(OpEntry entry, const char* file, int line) {
  if (entry.name.empty() || entry.forward.empty() || entry.cases.empty())
    throw std::invalid_argument(std::string("op registry: the entry at ") + file + ":" +
                                std::to_string(line) + " needs a name, a forward and a case");
  if (find(entry.name) != nullptr)
    throw std::invalid_argument("op registry: '" + entry.name + "' is registered twice");
  const std::string_view path(file);
  entry.file = std::string(path.substr(path.find_last_of('/') + 1));  // npos + 1 == 0
  entry.line = line;
  entries_.push_back(std::move(entry));
}

const OpEntry* OpRegistry::find(std::string_view name) const {
  for (const OpEntry& e : entries_)
    if (e.name == name) return &e;
  return nullptr;
}

const OpRegistry& op_registry() {
  static const OpRegistry registry = [] {
    OpRegistry r;
    // ops.h's order: the order of `attograd gradcheck` and of the table.
    detail::register_elementwise_ops(r);
    detail::register_reduce_ops(r);
    detail::register_shape_ops(r);
    detail::register_matmul_ops(r);
    detail::register_nn_ops(r);
    detail::register_attention_ops(r);
    detail::register_loss_ops(r);
    return r;
  }();
  return registry;
}

namespace {

// A table cell: a `|` would end the cell early.
std::string cell(std::string_view text) {
  std::string out;
  for (char c : text) {
    if (c == '|') out += '\\';
    out += c;
  }
  return out;
}

// Whether document[at, at + marker.size()) is a whole line: a line start before it, and a line
// end (LF or CRLF) or the end of the document after it.
bool is_marker_line(std::string_view document, size_t at, size_t size) {
  const size_t end = at + size;
  const bool starts = at == 0 || document[at - 1] == '\n';
  const bool ends =
      end == document.size() || document[end] == '\n' || document.substr(end, 2) == "\r\n";
  return starts && ends;
}

// Where the one line that is exactly `marker` starts in document, or npos when there is none.
// Throws std::invalid_argument when there are two: which pair to fill would be a guess.
size_t line_start(std::string_view document, std::string_view marker, const char* which) {
  size_t found = std::string_view::npos;
  for (size_t at = document.find(marker); at != std::string_view::npos;
       at = document.find(marker, at + 1)) {
    if (!is_marker_line(document, at, marker.size())) continue;
    if (found != std::string_view::npos)
      throw std::invalid_argument("more than one " + std::string(which) + " marker line (" +
                                  std::string(marker) + "); keep one pair of markers");
    found = at;
  }
  return found;
}

// [begin, end) of the generated region: from the line after BEGIN to the start of END's line.
std::pair<size_t, size_t> region_bounds(std::string_view document) {
  const size_t begin_line = line_start(document, kDerivativesBegin, "BEGIN");
  const size_t end = line_start(document, kDerivativesEnd, "END");
  const auto missing = [](const char* which, std::string_view marker, const char* where) {
    return std::invalid_argument("no " + std::string(which) + " marker line; add the line " +
                                 std::string(marker) + " " + where);
  };
  if (begin_line == std::string_view::npos)
    throw missing("BEGIN", kDerivativesBegin, "above the generated table");
  if (end == std::string_view::npos)
    throw missing("END", kDerivativesEnd, "below the generated table");
  if (end < begin_line)
    throw std::invalid_argument(
        "the END marker line comes before the BEGIN line; "
        "put BEGIN above the generated table and END below it");
  // END follows, so the BEGIN line ends in a line end.
  return {document.find('\n', begin_line) + 1, end};
}

}  // namespace

std::string derivatives_table(const OpRegistry& registry) {
  std::string md = "| op | forward | VJP | file | extra tests |\n|---|---|---|---|---|\n";
  for (const OpEntry& e : registry.entries()) {
    const std::string file = e.kernel.empty() ? e.file : e.file + ", " + e.kernel;
    md += "| " + cell(e.name) + " | " + cell(e.forward) + " | " + cell(e.vjp) + " | " + cell(file) +
          " | " + cell(e.tests) + " |\n";
  }
  std::string autocast;
  for (const OpEntry& e : registry.entries())
    if (!e.autocast.empty()) autocast += "| " + cell(e.name) + " | " + cell(e.autocast) + " |\n";
  if (!autocast.empty()) {
    md +=
        "\n| op | under `AutocastGuard(MatmulPrecision::bf16)`, f32 inputs (autograd/autocast.h) "
        "|\n|---|---|\n";
    md += autocast;
  }
  return md;
}

std::string_view generated_region(std::string_view document) {
  const auto [begin, end] = region_bounds(document);
  return document.substr(begin, end - begin);
}

std::string replace_generated_region(std::string_view document, std::string_view region) {
  const auto [begin, end] = region_bounds(document);
  std::string out(document.substr(0, begin));
  // A document with CRLF line ends (its BEGIN line ends so) gets the region in CRLF too.
  const bool crlf = begin >= 2 && document[begin - 2] == '\r';
  for (char c : region) {
    if (crlf && c == '\n') out += '\r';
    out += c;
  }
  out += document.substr(end);
  return out;
}

}  // namespace attograd
