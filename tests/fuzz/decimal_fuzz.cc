// Fuzz target: the parser of numbers a user types (gpt/io/decimal.h, parse_decimal), the
// lecture's matrix parser built on it (lecture::parse_matrix, lecture/attention_by_hand.h:
// attention_by_hand's --Q, --K and --V), and the attention steps those matrices are walked
// through (lecture::causal_attention_steps).
//
// The input is "<text>", or "<Q>\n--8<--\n<K>\n--8<--\n<V>". Properties:
// - parse_decimal(text) is a finite double exactly when strtod (in the C locale, as this
//   program runs) reads the whole text, which holds only the grammar's characters (digits,
//   signs, '.', 'e', 'E'), as a finite number that is not a nonzero number rounded to 0; and
//   then it is strtod's double, bit for bit;
// - parse_matrix(text): std::invalid_argument naming the option, or an f64 (rows, cols) tensor
//   with one row per row of the text (rows end at ';' or a line break; a ',' or ';' after a
//   row's last number adds nothing) and cols numbers in each, all finite, which printed back
//   (%.17g, ',' and ';') parses to the same tensor;
// - three matrices that fit together (T <= 256: longer ones cost time, not coverage):
//   causal_attention_steps refuses an overflow with
//   std::invalid_argument, or gives finite weights, each row summing to 1 and exactly 0 above
//   the diagonal, and finite outputs.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "autograd/tensor.h"
#include "gpt/io/decimal.h"
#include "lecture/attention_by_hand.h"
#include "tests/fuzz/fuzz_support.h"

using namespace attograd;

namespace {

void check_decimal(std::string_view text) {
  const std::optional<double> v = gpt::parse_decimal(text);
  const std::string s(text);  // strtod needs a NUL; one inside the text stops it early
  char* end = nullptr;
  const double d = std::strtod(s.c_str(), &end);
  const bool whole = !s.empty() && end == s.c_str() + s.size();
  const bool plain = s.find_first_not_of("0123456789+-.eE") == std::string::npos;
  const bool nonzero_digit =
      s.substr(0, s.find_first_of("eE")).find_first_of("123456789") != std::string::npos;
  const bool expected = whole && plain && std::isfinite(d) && !(d == 0 && nonzero_digit);
  FUZZ_CHECK(v.has_value() == expected, std::string("parse_decimal ") +
                                            (v ? "accepted" : "refused") + " '" + s +
                                            "', which strtod reads otherwise");
  if (v) FUZZ_CHECK(std::memcmp(&*v, &d, sizeof d) == 0, "parse_decimal and strtod differ");
}

std::string printed(const Tensor& m) {
  const std::vector<double> v = m.to_vector();
  std::string text;
  char buf[64];
  for (int64_t r = 0; r < m.size(0); ++r)
    for (int64_t c = 0; c < m.size(1); ++c) {
      std::snprintf(buf, sizeof buf, "%.17g", v[static_cast<size_t>(r * m.size(1) + c)]);
      text += std::string(c == 0 ? (r == 0 ? "" : ";") : ",") + buf;
    }
  return text;
}

// How many numbers each row of `text` has, read off the text without parse_matrix's code: a
// number is a run of characters that are neither separators (',', ';', line breaks) nor blanks,
// and it ends its row when the next character that is not a blank or ',' is ';', a line break or
// the end of the text (so a ',' or ';' typed after a row's last number adds nothing). Only
// meaningful for text parse_matrix accepted, which has no empty field.
std::vector<int64_t> row_lengths(std::string_view text) {
  const auto separator = [](char c) { return c == ',' || c == ';' || c == '\n' || c == '\r'; };
  const auto blank = [](char c) { return c == ' ' || c == '\t'; };
  std::vector<int64_t> lengths;
  int64_t in_row = 0;
  for (size_t i = 0; i < text.size();) {
    if (separator(text[i]) || blank(text[i])) {
      ++i;
      continue;
    }
    while (i < text.size() && !separator(text[i]) && !blank(text[i])) ++i;  // one number
    ++in_row;
    size_t next = i;
    while (next < text.size() && (blank(text[next]) || text[next] == ',')) ++next;
    if (next == text.size() || text[next] == ';' || text[next] == '\n' || text[next] == '\r') {
      lengths.push_back(in_row);
      in_row = 0;
    }
  }
  return lengths;
}

// The matrix `text` holds, checked; nullopt when parse_matrix refused it as documented.
std::optional<Tensor> check_matrix(std::string_view text, const std::string& name) {
  std::optional<Tensor> m;
  try {
    m = lecture::parse_matrix(std::string(text), name);
  } catch (const std::invalid_argument& e) {
    FUZZ_CHECK(std::string_view(e.what()).starts_with(name), "the error does not name " + name);
    return std::nullopt;
  }
  FUZZ_CHECK(m->dim() == 2 && m->dtype() == DType::f64, "not an f64 matrix");
  const std::vector<int64_t> lengths = row_lengths(text);
  FUZZ_CHECK(m->size(0) == static_cast<int64_t>(lengths.size()),
             "the rows are not the text's rows");
  FUZZ_CHECK(
      std::all_of(lengths.begin(), lengths.end(), [&](int64_t n) { return n == m->size(1); }),
      "rows of different lengths were accepted, or a row's numbers were not all kept");
  const std::vector<double> v = m->to_vector();
  FUZZ_CHECK(std::all_of(v.begin(), v.end(), [](double x) { return std::isfinite(x); }),
             "a matrix entry is not finite");
  const Tensor back = lecture::parse_matrix(printed(*m), name);
  FUZZ_CHECK(back.shape() == m->shape() && back.to_vector() == v,
             "the matrix printed and parsed again changed");
  return m;
}

void check_attention(const Tensor& Q, const Tensor& K, const Tensor& V) {
  try {
    lecture::check_attention_shapes(Q, K, V);
  } catch (const std::invalid_argument&) {
    return;  // attention_by_hand stops here with the message
  }
  lecture::AttentionSteps s;
  try {
    s = lecture::causal_attention_steps(Q, K, V);
  } catch (const std::invalid_argument&) {
    return;  // an overflow, named (documented)
  }
  const int64_t T = Q.size(0);
  const std::vector<double> w = s.weights.to_vector();
  for (int64_t t = 0; t < T; ++t) {
    double row = 0;
    for (int64_t j = 0; j < T; ++j) {
      const double x = w[static_cast<size_t>(t * T + j)];
      FUZZ_CHECK(std::isfinite(x) && x >= 0, "an attention weight is not a finite number >= 0");
      FUZZ_CHECK(j <= t || x == 0, "a weight above the diagonal is not 0");
      row += x;
    }
    FUZZ_CHECK(std::abs(row - 1) < 1e-9, "a row of attention weights does not sum to 1");
  }
  for (const Tensor* out : {&s.out, &s.column_out}) {
    const std::vector<double> o = out->to_vector();
    FUZZ_CHECK(std::all_of(o.begin(), o.end(), [](double x) { return std::isfinite(x); }),
               "an output is not finite and was not refused");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input = attograd::fuzz::as_text(data, size);
  check_decimal(input);
  const auto [q, rest] = attograd::fuzz::split_input(input);
  if (!rest) {
    check_matrix(q, "--Q");
    return 0;
  }
  const auto [k, v] = attograd::fuzz::split_input(*rest);
  const std::optional<Tensor> Q = check_matrix(q, "--Q");
  const std::optional<Tensor> K = check_matrix(k, "--K");
  const std::optional<Tensor> V = v ? check_matrix(*v, "--V") : std::nullopt;
  if (Q && K && V && Q->size(0) <= 256) check_attention(*Q, *K, *V);
  return 0;
}
