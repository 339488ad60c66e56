// Decimal numbers from text: the one parser for numbers a user types (the lecture's matrices in
// attention_by_hand and the page's workbench), the same in the native and the WebAssembly build.
//
// std::from_chars for double would be the natural tool, but the libc++ of emscripten 3.1.6 (the
// WebAssembly build) does not have it, and std::stod/strtod read the decimal point of the
// current locale (a ',' locale would read "2.5" as 2) and also accept what a typed number should
// not be: hex floats ("0x1p3" = 8), "inf", "nan" and leading blanks.
#pragma once

#include <optional>
#include <string_view>

namespace attograd::gpt {

/// The finite double `text` spells in plain decimal notation: an optional sign ('+' or '-'),
/// digits with an optional decimal point ('.', whatever the locale; "5." and ".5" are read),
/// and an optional exponent ('e' or 'E', an optional sign, digits): "1", "-2.5", "+3e-4".
/// "010" is ten (decimal, never octal). Correctly rounded, as strtod rounds.
/// Returns nullopt, never a bent value, for: empty text, blanks anywhere, any other character,
/// hex floats, "inf", "nan", a magnitude beyond the largest double (1e400), and a nonzero
/// number so small it would round to 0 (1e-400); callers name the field in their message.
std::optional<double> parse_decimal(std::string_view text);

}  // namespace attograd::gpt
