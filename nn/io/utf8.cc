// UTF-8 decoding and encoding; the rules are in the table at the top of utf8.h.
#include "nn/io/utf8.h"

#include <cstdint>
#include <stdexcept>

namespace attograd::nn {
namespace {

// "C0 AF": the bytes of a sequence in hex, for messages.
std::string hex_bytes(std::string_view bytes) {
  static const char kDigits[] = "0123456789ABCDEF";
  std::string out;
  for (size_t i = 0; i < bytes.size(); ++i) {
    if (i > 0) out += ' ';
    const auto b = static_cast<unsigned char>(bytes[i]);
    out += kDigits[b >> 4];
    out += kDigits[b & 0xF];
  }
  return out;
}

bool is_continuation(unsigned char b) { return (b & 0xC0) == 0x80; }

// Decodes the sequence starting at `pos` (pos < s.size()). On success stores the code point
// and the sequence length and returns true; on failure fills *error (if given) and returns
// false. No exceptions, so the validator can run over untrusted files cheaply.
bool decode_at(std::string_view s, size_t pos, char32_t& cp, size_t& length, Utf8Error* error) {
  const auto b0 = static_cast<unsigned char>(s[pos]);
  if (b0 < 0x80) {  // ASCII: the common case, one byte
    cp = b0;
    length = 1;
    return true;
  }
  auto fail = [&](size_t n_bytes, const std::string& why) {
    if (error) {
      error->offset = pos;
      error->reason =
          why + " (byte" + (n_bytes > 1 ? "s " : " ") + hex_bytes(s.substr(pos, n_bytes)) + ")";
    }
    return false;
  };
  if (b0 < 0xC0) return fail(1, "continuation byte without a lead byte");
  if (b0 > 0xF4) return fail(1, "byte that never appears in UTF-8");

  // The lead byte says how many bytes follow and carries the top bits of the code point.
  size_t n;
  char32_t value;
  if (b0 < 0xE0) {
    n = 2;
    value = b0 & 0x1F;
  } else if (b0 < 0xF0) {
    n = 3;
    value = b0 & 0x0F;
  } else {
    n = 4;
    value = b0 & 0x07;
  }
  for (size_t i = 1; i < n; ++i) {
    if (pos + i >= s.size()) {
      return fail(i, "truncated " + std::to_string(n) + "-byte sequence: the text ends after " +
                         std::to_string(i) + " of its bytes");
    }
    const auto b = static_cast<unsigned char>(s[pos + i]);
    if (!is_continuation(b)) {
      return fail(i + 1, "truncated " + std::to_string(n) + "-byte sequence: byte " +
                             std::to_string(i + 1) + " is not a continuation byte 80..BF");
    }
    value = (value << 6) | (b & 0x3F);
  }
  // The smallest code point each length may encode; anything below is an overlong form,
  // which would give one character two spellings.
  static constexpr char32_t kMinForLength[5] = {0, 0, 0x80, 0x800, 0x10000};
  if (value < kMinForLength[n]) {
    return fail(n, "overlong " + std::to_string(n) + "-byte encoding of " + code_point_hex(value));
  }
  if (value >= 0xD800 && value <= 0xDFFF) {
    return fail(n,
                "encoded UTF-16 surrogate " + code_point_hex(value) + ", which is not a character");
  }
  if (value > kMaxCodePoint) {
    return fail(n, "code point " + code_point_hex(value) + " is above U+10FFFF");
  }
  cp = value;
  length = n;
  return true;
}

}  // namespace

std::string Utf8Error::message() const {
  return "invalid UTF-8 at byte offset " + std::to_string(offset) + ": " + reason;
}

std::optional<Utf8Error> find_utf8_error(std::string_view bytes) {
  Utf8Error error;
  char32_t cp;
  size_t length;
  for (size_t pos = 0; pos < bytes.size(); pos += length) {
    if (!decode_at(bytes, pos, cp, length, &error)) return error;
  }
  return std::nullopt;
}

void validate_utf8(std::string_view bytes, std::string_view what) {
  if (auto error = find_utf8_error(bytes)) {
    throw std::invalid_argument(std::string(what) + ": " + error->message());
  }
}

char32_t decode_next(std::string_view bytes, size_t& offset) {
  if (offset >= bytes.size()) {
    throw std::out_of_range("decode_next: byte offset " + std::to_string(offset) +
                            " is at or past the end of a " + std::to_string(bytes.size()) +
                            "-byte string");
  }
  char32_t cp;
  size_t length;
  Utf8Error error;
  if (!decode_at(bytes, offset, cp, length, &error)) throw std::invalid_argument(error.message());
  offset += length;
  return cp;
}

std::u32string decode_utf8(std::string_view bytes) {
  std::u32string out;
  out.reserve(bytes.size());  // an upper bound: at least one byte per code point
  for (size_t pos = 0; pos < bytes.size();) out.push_back(decode_next(bytes, pos));
  out.shrink_to_fit();
  return out;
}

size_t count_code_points(std::string_view bytes) {
  size_t count = 0;
  for (size_t pos = 0; pos < bytes.size(); ++count) decode_next(bytes, pos);
  return count;
}

void append_utf8(std::string& out, char32_t cp) {
  if (cp >= 0xD800 && cp <= 0xDFFF) {
    throw std::invalid_argument("encode_utf8: " + code_point_hex(cp) +
                                " is a UTF-16 surrogate, not a character; UTF-8 cannot encode it");
  }
  if (cp > kMaxCodePoint) {
    throw std::invalid_argument("encode_utf8: " + code_point_hex(cp) +
                                " is above U+10FFFF, the largest Unicode code point");
  }
  // Payload bits go into the x's: 0xxxxxxx | 110xxxxx 10xxxxxx | 1110xxxx 10xxxxxx 10xxxxxx |
  // 11110xxx 10xxxxxx 10xxxxxx 10xxxxxx.
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

std::string encode_utf8(char32_t cp) {
  std::string out;
  append_utf8(out, cp);
  return out;
}

std::string encode_utf8(std::u32string_view cps) {
  std::string out;
  out.reserve(cps.size());
  for (size_t i = 0; i < cps.size(); ++i) {
    try {
      append_utf8(out, cps[i]);
    } catch (const std::invalid_argument& e) {
      throw std::invalid_argument(std::string(e.what()) + " (code point index " +
                                  std::to_string(i) + ")");
    }
  }
  return out;
}

std::string code_point_hex(char32_t cp) {
  static const char kDigits[] = "0123456789ABCDEF";
  const auto v = static_cast<uint32_t>(cp);
  int n_digits = 4;  // Unicode writes at least four: U+0070
  while (n_digits < 8 && (v >> (4 * n_digits)) != 0) ++n_digits;
  std::string out = "U+";
  for (int i = n_digits - 1; i >= 0; --i) out += kDigits[(v >> (4 * i)) & 0xF];
  return out;
}

std::string describe_code_point(char32_t cp) {
  const std::string hex = code_point_hex(cp);
  switch (cp) {
    case U'\n':
      return "'\\n' (" + hex + ")";
    case U'\t':
      return "'\\t' (" + hex + ")";
    case U'\r':
      return "'\\r' (" + hex + ")";
    case U'\'':
      return "'\\'' (" + hex + ")";
    case U'\\':
      return "'\\\\' (" + hex + ")";
    default:
      break;
  }
  if ((cp >= 0xD800 && cp <= 0xDFFF) || cp > kMaxCodePoint) {
    return hex + " (not a Unicode character)";
  }
  // C0 controls, DEL and C1 controls: printing them raw could move the cursor or worse.
  if (cp < 0x20 || (cp >= 0x7F && cp <= 0x9F)) return hex + " (a control character)";
  std::string out = "'";
  append_utf8(out, cp);
  out += "' (";
  out += hex;
  out += ')';
  return out;
}

namespace {

constexpr char kHex[] = "0123456789abcdef";

std::string escaped(std::string_view bytes, bool quotes) {
  const bool utf8 = !find_utf8_error(bytes).has_value();
  std::string out;
  for (size_t i = 0; i < bytes.size(); ++i) {
    const auto ch = static_cast<unsigned char>(bytes[i]);
    if (ch == '\n')
      out += "\\n";
    else if (ch == '\t')
      out += "\\t";
    else if (ch == '\r')
      out += "\\r";
    else if (quotes && (ch == '"' || ch == '\\'))
      out += {'\\', static_cast<char>(ch)};
    else if (ch < 0x20 || ch == 0x7F || (ch >= 0x80 && !utf8)) {
      out += "\\x";
      out += kHex[ch >> 4];
      out += kHex[ch & 15];
    } else {
      out += static_cast<char>(ch);
    }
  }
  return utf8 ? escape_c1_controls(out) : out;
}

}  // namespace

std::string escape_c1_controls(std::string_view text) {
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    const auto ch = static_cast<unsigned char>(text[i]);
    // A C1 control (U+0080 to U+009F, two bytes C2 80 to C2 9F): U+0085 (NEL) printed raw
    // breaks the line in some terminals, the others move the cursor (issue 31, kind 14).
    if (ch == 0xC2 && i + 1 < text.size() && static_cast<unsigned char>(text[i + 1]) <= 0x9F) {
      const auto second = static_cast<unsigned char>(text[++i]);
      out += "\\u00";
      out += kHex[second >> 4];
      out += kHex[second & 15];
    } else {
      out += static_cast<char>(ch);
    }
  }
  return out;
}

std::string escape_bytes(std::string_view bytes) { return escaped(bytes, true); }

std::string escape_controls(std::string_view bytes) { return escaped(bytes, false); }

}  // namespace attograd::nn
