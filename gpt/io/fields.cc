#include "gpt/io/fields.h"

#include <algorithm>
#include <optional>
#include <sstream>
#include <stdexcept>

#include "nn/io/utf8.h"

namespace attograd::gpt {

namespace {

// %g-style: 0.99, 1e-08, not to_string's 0.990000.
std::string number_str(double v) {
  std::ostringstream out;
  out << v;
  return out.str();
}

std::string prefix(const std::string& owner) { return owner.empty() ? owner : owner + ": "; }

}  // namespace

std::string range_str(IntRange r) {
  // Appended piece by piece: "[" + std::to_string(...) trips gcc 12's -Wrestrict false positive.
  std::string s = "[";
  s += std::to_string(r.min);
  s += ", ";
  s += std::to_string(r.max);
  s += ']';
  if (r.why != nullptr) {
    s += " (";
    s += r.why;
    s += ')';
  }
  return s;
}

void check_range(const std::string& owner, const char* field, int64_t v, IntRange r) {
  if (!r.contains(v))
    throw std::invalid_argument(prefix(owner) + field + " must be in " + range_str(r) + ", got " +
                                std::to_string(v));
}

std::string range_str(RealRange r) {
  std::string s;
  if (std::isinf(r.max) && r.max > 0) {
    s = r.min_open ? "> " : ">= ";
    s += number_str(r.min);
    return s;
  }
  s = "in ";
  s += r.min_open ? '(' : '[';
  s += number_str(r.min);
  s += ", ";
  s += number_str(r.max);
  s += r.max_open ? ')' : ']';
  return s;
}

void check_range(const std::string& owner, const char* field, double v, RealRange r) {
  if (!r.contains(v))
    throw std::invalid_argument(prefix(owner) + field + " must be a finite number " + range_str(r) +
                                ", got " + number_str(v));
}

std::string path_to_write_problem(std::string_view path) {
  // Messages print the path: it must be text a terminal shows as it is.
  if (const std::optional<nn::Utf8Error> error = nn::find_utf8_error(path))
    return "the path \"" + nn::escape_bytes(path) + "\" is not valid UTF-8 (" + error->message() +
           "); choose a name in UTF-8";
  for (size_t offset = 0; offset < path.size();) {
    const char32_t cp = nn::decode_next(path, offset);
    if (cp < 0x20 || (cp >= 0x7F && cp <= 0x9F))  // C0, DEL and C1
      return "the path \"" + nn::escape_bytes(path) + "\" holds a control character (" +
             nn::code_point_hex(cp) +
             "); choose a name without newlines, tabs or other control characters";
  }
  return "";
}

std::string join_names(const std::vector<std::string>& names, const std::string& last) {
  std::string s;
  for (size_t i = 0; i < names.size(); ++i) {
    if (i > 0 && i + 1 == names.size()) {
      s += ' ';
      s += last;
      s += ' ';
    } else if (i > 0) {
      s += ", ";
    }
    s += names[i];
  }
  return s;
}

size_t edit_distance(std::string_view a, std::string_view b, size_t limit) {
  if ((a.size() > b.size() ? a.size() - b.size() : b.size() - a.size()) > limit) return limit + 1;
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0], best = row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t above = row[j];
      row[j] = std::min({above + 1, row[j - 1] + 1, diagonal + (a[i - 1] != b[j - 1])});
      diagonal = above;
      best = std::min(best, row[j]);
    }
    if (best > limit) return limit + 1;
  }
  return row[b.size()];
}

std::string nearest_name(std::string_view name, const std::vector<std::string>& names,
                         size_t limit) {
  std::string best;
  size_t best_distance = limit + 1;
  for (const std::string& candidate : names) {
    const size_t d = edit_distance(name, candidate, limit);
    if (d < best_distance) best_distance = d, best = candidate;
  }
  return best;
}

}  // namespace attograd::gpt
