// UTF-8: validate, decode to code points, encode code points, and describe one in a message.
//
// Text everywhere in attograd is UTF-8 in a std::string (bytes) or std::string_view. The
// character tokenizer works on Unicode code points (char32_t), so it needs a strict decoder:
// a sloppy one would let two byte sequences stand for the same character (an "overlong"
// encoding) or admit code points that are not characters at all (UTF-16 surrogates), and a
// model would then learn two ids for one letter. The rules are those of RFC 3629 / Unicode
// 15 §3.9 (Table 3-7, "well-formed UTF-8 byte sequences"):
//
//   code points          byte 1   byte 2   byte 3   byte 4
//   U+0000..U+007F       00..7F
//   U+0080..U+07FF       C2..DF   80..BF                      (C0, C1 would be overlong)
//   U+0800..U+0FFF       E0       A0..BF   80..BF             (E0 80..9F would be overlong)
//   U+1000..U+CFFF       E1..EC   80..BF   80..BF
//   U+D000..U+D7FF       ED       80..9F   80..BF             (ED A0..BF are surrogates)
//   U+E000..U+FFFF       EE..EF   80..BF   80..BF
//   U+10000..U+3FFFF     F0       90..BF   80..BF   80..BF    (F0 80..8F would be overlong)
//   U+40000..U+FFFFF     F1..F3   80..BF   80..BF   80..BF
//   U+100000..U+10FFFF   F4       80..8F   80..BF   80..BF    (F4 90.. is above U+10FFFF)
//
// Errors: malformed input is std::invalid_argument whose message names the byte offset of the
// first byte of the bad sequence, the bytes themselves, and what is wrong with them.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace attograd::nn {

/// The largest Unicode code point, U+10FFFF.
inline constexpr char32_t kMaxCodePoint = 0x10FFFF;

/// Where and why a byte string is not valid UTF-8.
struct Utf8Error {
  /// Byte offset (from 0) of the first byte of the invalid sequence.
  size_t offset = 0;
  /// What is wrong, with the bytes in hex, e.g. "overlong 2-byte encoding of U+002F (bytes C0 AF)".
  std::string reason;

  /// "invalid UTF-8 at byte offset 12: overlong 2-byte encoding of U+002F (bytes C0 AF)".
  std::string message() const;
};

/// Checks that `bytes` is well-formed UTF-8 (see the table at the top of this file) and returns
/// the first problem, or std::nullopt when the whole string is valid. Never throws (except
/// std::bad_alloc while building the reason). An empty string is valid.
std::optional<Utf8Error> find_utf8_error(std::string_view bytes);

/// Like find_utf8_error, but throws std::invalid_argument("<what>: invalid UTF-8 at byte offset
/// N: <reason>") on the first problem. `what` names the text in the message (e.g. "corpus").
void validate_utf8(std::string_view bytes, std::string_view what = "text");

/// Decodes the code point that starts at byte `offset` of `bytes` and advances `offset` past it
/// (by 1 to 4 bytes). This is the one decoding loop every other function here is built on.
/// Throws std::invalid_argument naming the byte offset if the sequence there is malformed, or
/// std::out_of_range if offset >= bytes.size().
char32_t decode_next(std::string_view bytes, size_t& offset);

/// Decodes a whole UTF-8 string to code points (one char32_t per character, so size() counts
/// characters, not bytes). Throws std::invalid_argument naming the byte offset of the first
/// malformed sequence.
std::u32string decode_utf8(std::string_view bytes);

/// Number of code points in a UTF-8 string; throws like decode_utf8 on malformed input.
size_t count_code_points(std::string_view bytes);

/// Appends the UTF-8 encoding (1 to 4 bytes) of code point `cp` to `out`.
/// Throws std::invalid_argument if cp is a surrogate (U+D800..U+DFFF) or above U+10FFFF:
/// neither is a character, and their bytes would not be valid UTF-8.
void append_utf8(std::string& out, char32_t cp);

/// The UTF-8 encoding of one code point; throws like append_utf8.
std::string encode_utf8(char32_t cp);

/// The UTF-8 encoding of a sequence of code points; throws like append_utf8 on the first
/// invalid one (naming its index).
std::string encode_utf8(std::u32string_view cps);

/// Formats a code point for error messages so that invisible characters stay visible:
///   'p' (U+0070)     printable characters, quoted
///   '\n' (U+000A)    newline, tab, carriage return, quote and backslash, escaped
///   U+0007 (a control character)        other C0/C1 controls and DEL, which would garble a
///                                       terminal if printed
///   U+D800 (not a Unicode character)    surrogates and values above U+10FFFF
/// Never throws (except std::bad_alloc).
std::string describe_code_point(char32_t cp);

/// "U+0070": at least four upper-case hex digits, as Unicode writes them.
std::string code_point_hex(char32_t cp);

/// Bytes (e.g. one token's) as one printable line: newline, tab and carriage return as \n, \t,
/// \r, a quote or backslash preceded by a backslash, other control bytes, and every byte of a
/// string that is not valid UTF-8 (a BPE token can end mid-character), as \xNN; in valid UTF-8 a
/// C1 control character (U+0080 to U+009F) as \u0085. Other valid UTF-8 characters are kept as
/// they are. Never throws (except std::bad_alloc).
std::string escape_bytes(std::string_view bytes);

/// `text` (valid UTF-8) with each C1 control character (U+0080 to U+009F) written \u0085, the
/// rest as it is: what JSON's own escaping (C0 only) leaves for a terminal to misread.
std::string escape_c1_controls(std::string_view text);

/// As escape_bytes, but quotes and backslashes are kept as they are: text for a reader (a figure's
/// title or label) rather than for a quoted string. Still one line, with no control byte.
std::string escape_controls(std::string_view bytes);

}  // namespace attograd::nn
