#include "gpt/io/decimal.h"

#include <locale.h>
#include <clocale>
#include <cmath>
#include <cstdlib>
#include <string>

namespace attograd::gpt {

namespace {

// The "C" locale as an object, made once: strtod_l reads '.' as the decimal point in it whatever
// setlocale the program (or a library it loads) has called. POSIX 2008; glibc and emscripten's
// musl both have it.
locale_t c_locale() {
  static const locale_t c = newlocale(LC_ALL_MASK, "C", static_cast<locale_t>(0));
  return c;
}

bool is_digit(char ch) { return ch >= '0' && ch <= '9'; }

}  // namespace

std::optional<double> parse_decimal(std::string_view text) {
  // The grammar first, so that strtod_l only ever sees plain decimal notation:
  //   [+-]? (digits ('.' digits?)? | '.' digits) ([eE] [+-]? digits)?
  size_t i = 0;
  const size_t n = text.size();
  if (i < n && (text[i] == '+' || text[i] == '-')) ++i;
  size_t mantissa_digits = 0;
  bool nonzero = false;  // a nonzero mantissa digit: the value cannot honestly be 0
  for (; i < n && is_digit(text[i]); ++i, ++mantissa_digits) nonzero |= text[i] != '0';
  if (i < n && text[i] == '.')
    for (++i; i < n && is_digit(text[i]); ++i, ++mantissa_digits) nonzero |= text[i] != '0';
  if (mantissa_digits == 0) return std::nullopt;
  if (i < n && (text[i] == 'e' || text[i] == 'E')) {
    ++i;
    if (i < n && (text[i] == '+' || text[i] == '-')) ++i;
    size_t exponent_digits = 0;
    for (; i < n && is_digit(text[i]); ++i) ++exponent_digits;
    if (exponent_digits == 0) return std::nullopt;
  }
  if (i != n) return std::nullopt;

  const locale_t c = c_locale();
  if (c == static_cast<locale_t>(0)) return std::nullopt;  // newlocale failed: out of memory
  const std::string copy(text);                            // strtod_l needs a terminating NUL
  char* end = nullptr;
  const double v = strtod_l(copy.c_str(), &end, c);
  if (end != copy.c_str() + copy.size()) return std::nullopt;
  // Range by the value itself, not errno: glibc and musl disagree on when an underflow sets
  // ERANGE. Subnormal results are kept; infinity (overflow) and a nonzero number read as 0
  // are refused.
  if (!std::isfinite(v) || (v == 0 && nonzero)) return std::nullopt;
  return v;
}

}  // namespace attograd::gpt
