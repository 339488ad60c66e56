// Tests nn/io/utf8: every boundary of the well-formed table in utf8.h, each kind of malformed
// input with the byte offset in the message, and round trips through encode/decode.
#define BOOST_TEST_MODULE utf8
#include <boost/test/unit_test.hpp>

#include <stdexcept>
#include <string>

#include "nn/io/utf8.h"
#include "tests/test_util.h"

using namespace attograd::nn;
using attograd::testing::expect_throw_with;

namespace {

// The error for `bytes`, which must be invalid.
Utf8Error error_of(const std::string& bytes) {
  auto error = find_utf8_error(bytes);
  BOOST_REQUIRE_MESSAGE(error.has_value(), "expected invalid UTF-8");
  return *error;
}

}  // namespace

BOOST_AUTO_TEST_CASE(valid_text_decodes_to_code_points) {
  // 'n', 'a', 'ï' (2 bytes), 'v', 'e', ' ', '☕' (3 bytes), ' ', '😀' (4 bytes)
  const std::string text = "na\xC3\xAFve \xE2\x98\x95 \xF0\x9F\x98\x80";
  BOOST_TEST(!find_utf8_error(text).has_value());
  const std::u32string cps = decode_utf8(text);
  BOOST_TEST((cps == std::u32string(U"na\u00EFve \u2615 \U0001F600")));
  BOOST_TEST(count_code_points(text) == 9u);
  BOOST_TEST(encode_utf8(cps) == text);
  BOOST_TEST(!find_utf8_error("").has_value());
  BOOST_TEST(decode_utf8("").empty());
}

BOOST_AUTO_TEST_CASE(boundaries_of_each_length_round_trip) {
  // The first and last code point of every row of the table, plus U+0000.
  for (char32_t cp :
       {0x0u, 0x7Fu, 0x80u, 0x7FFu, 0x800u, 0xFFFu, 0x1000u, 0xD7FFu, 0xE000u, 0xFFFDu, 0xFFFFu,
        0x10000u, 0x3FFFFu, 0x40000u, 0xFFFFFu, 0x100000u, 0x10FFFFu}) {
    BOOST_TEST_INFO("code point " << code_point_hex(cp));
    const std::string bytes = encode_utf8(cp);
    const size_t expected_length = cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4;
    BOOST_TEST(bytes.size() == expected_length);
    size_t offset = 0;
    BOOST_TEST(static_cast<uint32_t>(decode_next(bytes, offset)) == static_cast<uint32_t>(cp));
    BOOST_TEST(offset == expected_length);
  }
  BOOST_TEST(encode_utf8(U'\u00E9') == "\xC3\xA9");
  BOOST_TEST(encode_utf8(U'\u2615') == "\xE2\x98\x95");
}

BOOST_AUTO_TEST_CASE(malformed_sequences_name_the_offset_and_the_problem) {
  struct Case {
    std::string bytes;
    size_t offset;
    std::string needle;
  };
  const Case cases[] = {
      {"ab\x80", 2, "continuation byte without a lead byte (byte 80)"},
      {"\xC0\xAF", 0, "overlong 2-byte encoding of U+002F"},  // '/' in two bytes
      {"x\xC1\xBF", 1, "overlong 2-byte encoding of U+007F"},
      {"\xE0\x80\xAF", 0, "overlong 3-byte encoding of U+002F"},
      {"\xE0\x9F\xBF", 0, "overlong 3-byte encoding of U+07FF"},
      {"\xF0\x8F\xBF\xBF", 0, "overlong 4-byte encoding of U+FFFF"},
      {"ok \xED\xA0\x80", 3, "surrogate U+D800"},
      {"\xED\xBF\xBF", 0, "surrogate U+DFFF"},
      {"\xF4\x90\x80\x80", 0, "U+110000 is above U+10FFFF"},
      {"\xF5\x80\x80\x80", 0, "never appears in UTF-8 (byte F5)"},
      {"abc\xFF", 3, "never appears in UTF-8 (byte FF)"},
      {"caf\xC3", 3, "truncated 2-byte sequence: the text ends after 1 of its bytes"},
      {"\xE2\x98", 0, "truncated 3-byte sequence: the text ends after 2 of its bytes"},
      {"\xF0\x9F\x98", 0, "truncated 4-byte sequence: the text ends after 3 of its bytes"},
      {"\xE2\x98x", 0, "byte 3 is not a continuation byte"},
      {"\xC3(", 0, "byte 2 is not a continuation byte 80..BF (bytes C3 28)"},
  };
  for (const Case& c : cases) {
    const Utf8Error error = error_of(c.bytes);
    BOOST_TEST_INFO("reason: " << error.reason);
    BOOST_TEST(error.offset == c.offset);
    BOOST_TEST(error.reason.find(c.needle) != std::string::npos);
    const std::string offset_text = "byte offset " + std::to_string(c.offset) + ":";
    BOOST_TEST(error.message().find(offset_text) != std::string::npos);
    // The throwing entry points carry the same message.
    expect_throw_with<std::invalid_argument>([&] { decode_utf8(c.bytes); }, offset_text);
    expect_throw_with<std::invalid_argument>([&] { validate_utf8(c.bytes, "my file"); },
                                             "my file: invalid UTF-8 at " + offset_text);
  }
}

BOOST_AUTO_TEST_CASE(the_first_error_wins) {
  const Utf8Error error = error_of("good \xE2\x98\x95 then \xFF and \xC0\xAF");
  BOOST_TEST(error.offset == 14u);  // "good " (5) + ☕ (3 bytes) + " then " (6)
}

BOOST_AUTO_TEST_CASE(encode_rejects_non_characters) {
  expect_throw_with<std::invalid_argument>([] { encode_utf8(char32_t{0xD800}); }, "surrogate");
  expect_throw_with<std::invalid_argument>([] { encode_utf8(char32_t{0x110000}); },
                                           "U+110000 is above U+10FFFF");
  expect_throw_with<std::invalid_argument>(
      [] {
        encode_utf8(std::u32string{U'a', char32_t{0xDC00}});
      },
      "code point index 1");
}

BOOST_AUTO_TEST_CASE(decode_next_past_the_end_is_out_of_range) {
  size_t offset = 3;
  expect_throw_with<std::out_of_range>([&] { decode_next("abc", offset); }, "byte offset 3");
}

BOOST_AUTO_TEST_CASE(describe_code_point_keeps_invisible_characters_visible) {
  BOOST_TEST(describe_code_point(U'p') == "'p' (U+0070)");
  BOOST_TEST(describe_code_point(U' ') == "' ' (U+0020)");
  BOOST_TEST(describe_code_point(U'\n') == "'\\n' (U+000A)");
  BOOST_TEST(describe_code_point(U'\t') == "'\\t' (U+0009)");
  BOOST_TEST(describe_code_point(U'\'') == "'\\'' (U+0027)");
  BOOST_TEST(describe_code_point(U'\u00E9') == "'\xC3\xA9' (U+00E9)");
  BOOST_TEST(describe_code_point(U'\u2615') == "'\xE2\x98\x95' (U+2615)");
  BOOST_TEST(describe_code_point(U'\U0001F600') == "'\xF0\x9F\x98\x80' (U+1F600)");
  BOOST_TEST(describe_code_point(char32_t{7}) == "U+0007 (a control character)");
  BOOST_TEST(describe_code_point(char32_t{0x85}) == "U+0085 (a control character)");
  BOOST_TEST(describe_code_point(char32_t{0xD800}) == "U+D800 (not a Unicode character)");
  BOOST_TEST(describe_code_point(char32_t{0x110000}) == "U+110000 (not a Unicode character)");
  BOOST_TEST(code_point_hex(U'A') == "U+0041");
  BOOST_TEST(code_point_hex(char32_t{0x10FFFF}) == "U+10FFFF");
}

BOOST_AUTO_TEST_CASE(escape_bytes_gives_one_printable_line) {
  BOOST_TEST(escape_bytes("a b") == "a b");
  BOOST_TEST(escape_bytes("\n\t\r\"\\\x01\x7f") == "\\n\\t\\r\\\"\\\\\\x01\\x7f");
  BOOST_TEST(escape_bytes("caf\xc3\xa9") == "caf\xc3\xa9");  // whole characters are kept
  // C1 controls (U+0080 to U+009F; U+0085 is NEL, a line break to some terminals) as \u00XX,
  // the characters around them kept; U+00A0, the first after them, is kept too.
  BOOST_TEST(escape_bytes("a\xc2\x85"
                          "b\xc2\x80\xc2\x9f\xc2\xa0") == "a\\u0085b\\u0080\\u009f\xc2\xa0");
  BOOST_TEST(escape_controls("\xc2\x85\"") == "\\u0085\"");
  // A BPE token can end mid-character: then no byte of it is taken for text.
  BOOST_TEST(escape_bytes("\xc3") == "\\xc3");
  BOOST_TEST(escape_bytes("\xc3\xa9\xe2\x82") == "\\xc3\\xa9\\xe2\\x82");
}
