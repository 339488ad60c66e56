// Tests gpt/text/char_tokenizer: the vocabulary is sorted distinct code points, encode/decode are
// inverse, errors name the character or id, and to_string/from_string round-trip.
#define BOOST_TEST_MODULE char_tokenizer
#include <boost/test/unit_test.hpp>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "gpt/text/char_tokenizer.h"
#include "tests/test_util.h"

using namespace attograd::gpt;
using attograd::testing::expect_throw_with;
using Ids = std::vector<int64_t>;

BOOST_AUTO_TEST_CASE(hello_world_vocabulary_and_ids) {
  const CharTokenizer tok = CharTokenizer::from_text("hello world");
  BOOST_TEST(tok.vocab_size() == 8);
  BOOST_TEST(tok.to_string() == " dehlorw");
  BOOST_TEST(tok.encode("hold") == (Ids{3, 5, 4, 1}), boost::test_tools::per_element());
  BOOST_TEST(tok.decode({3, 5, 4, 1}) == "hold");
  BOOST_TEST(tok.decode(tok.encode("hello world")) == "hello world");
  BOOST_TEST(tok.encode("").empty());
  BOOST_TEST(tok.decode(Ids{}).empty());
  BOOST_TEST(tok.id_of(U' ') == 0);
  BOOST_TEST(tok.token_text(7) == "w");
  BOOST_TEST(tok.contains(U'o'));
  BOOST_TEST(!tok.contains(U'p'));
}

BOOST_AUTO_TEST_CASE(unknown_character_names_it_and_its_position) {
  const CharTokenizer tok = CharTokenizer::from_text("hello world");
  expect_throw_with<std::invalid_argument>([&] { tok.encode("help!"); }, "'p' (U+0070)");
  expect_throw_with<std::invalid_argument>([&] { tok.encode("help!"); }, "at position 3");
  expect_throw_with<std::invalid_argument>([&] { tok.encode("hello\n"); }, "'\\n' (U+000A)");
  // After a multi-byte character the character position and the byte offset differ.
  const CharTokenizer cafe = CharTokenizer::from_text("caf\xC3\xA9");
  expect_throw_with<std::invalid_argument>([&] { cafe.encode("\xC3\xA9t\xC3\xA9"); },
                                           "'t' (U+0074) at position 1 (byte offset 2)");
  expect_throw_with<std::invalid_argument>([&] { tok.id_of(U'z'); }, "'z' (U+007A)");
}

// first_unknown: what the page's prompt and eval's corpus check word their messages from; its
// position is 1-based and counts characters, not bytes.
BOOST_AUTO_TEST_CASE(first_unknown_counts_characters_from_one) {
  const CharTokenizer tok = CharTokenizer::from_text("hello world");
  BOOST_TEST(!tok.first_unknown("hello world").has_value());
  BOOST_TEST(!tok.first_unknown("").has_value());
  const auto p = tok.first_unknown("help!");
  BOOST_TEST_REQUIRE(p.has_value());
  BOOST_TEST(static_cast<uint32_t>(p->code_point) == 0x70u);
  BOOST_TEST(p->position == 4);
  const CharTokenizer cafe = CharTokenizer::from_text("caf\xC3\xA9");
  const auto t = cafe.first_unknown("\xC3\xA9\xC3\xA9t");  // two 2-byte characters, then 't'
  BOOST_TEST_REQUIRE(t.has_value());
  BOOST_TEST(static_cast<uint32_t>(t->code_point) == 0x74u);
  BOOST_TEST(t->position == 3);
  expect_throw_with<std::invalid_argument>([&] { tok.first_unknown("h\xC3"); }, "UTF-8");
}

BOOST_AUTO_TEST_CASE(ids_outside_the_vocabulary_name_the_id_and_v) {
  const CharTokenizer tok = CharTokenizer::from_text("hello world");
  expect_throw_with<std::out_of_range>([&] { tok.decode({8}); }, "id 8");
  expect_throw_with<std::out_of_range>([&] { tok.decode({8}); }, "V = 8");
  expect_throw_with<std::out_of_range>([&] { tok.decode({-1}); }, "id -1");
  expect_throw_with<std::out_of_range>([&] { tok.decode({0, 1, 99}); }, "at index 2");
  expect_throw_with<std::out_of_range>([&] { tok.token_text(8); }, "[0, 8)");
}

BOOST_AUTO_TEST_CASE(non_ascii_text_counts_code_points_not_bytes) {
  const std::string text = "na\xC3\xAFve caf\xC3\xA9 \xE2\x98\x95";  // "naïve café ☕"
  BOOST_TEST(text.size() == 16u);                                    // bytes
  const CharTokenizer tok = CharTokenizer::from_text(text);
  // Distinct: ' ', 'a', 'c', 'e', 'f', 'n', 'v', 'é', 'ï', '☕' -- sorted by code point.
  BOOST_TEST(tok.vocab_size() == 10);
  BOOST_TEST((tok.vocabulary() == std::u32string(U" acefnv\u00E9\u00EF\u2615")));
  const Ids ids = tok.encode(text);
  BOOST_TEST(ids.size() == 12u);  // characters
  BOOST_TEST(tok.decode(ids) == text);
  BOOST_TEST(tok.id_of(U'\u2615') == 9);
  BOOST_TEST(tok.token_text(9) == "\xE2\x98\x95");
}

BOOST_AUTO_TEST_CASE(invalid_utf8_is_rejected_with_the_offset) {
  expect_throw_with<std::invalid_argument>([] { CharTokenizer::from_text("ab\xFF"); },
                                           "byte offset 2");
  const CharTokenizer tok = CharTokenizer::from_text("abc");
  expect_throw_with<std::invalid_argument>([&] { tok.encode("a\xC0\xAF"); }, "byte offset 1");
  expect_throw_with<std::invalid_argument>([] { CharTokenizer::from_text(""); }, "empty");
}

BOOST_AUTO_TEST_CASE(serialisation_round_trips_and_checks_itself) {
  const std::string text = "To be, or not to be:\nthat is the question. \xE2\x98\x95";
  const CharTokenizer tok = CharTokenizer::from_text(text);
  const std::string saved = tok.to_string();
  const CharTokenizer restored = CharTokenizer::from_string(saved);
  BOOST_TEST(restored.vocab_size() == tok.vocab_size());
  BOOST_TEST(restored.to_string() == saved);
  BOOST_TEST(restored.encode(text) == tok.encode(text), boost::test_tools::per_element());
  // Newline is the smallest code point here, so it is id 0 and the first byte of the string.
  BOOST_TEST(saved.front() == '\n');

  expect_throw_with<std::invalid_argument>([] { CharTokenizer::from_string(""); }, "empty");
  expect_throw_with<std::invalid_argument>([] { CharTokenizer::from_string("abca"); },
                                           "character 3, 'a' (U+0061), sorts before");
  expect_throw_with<std::invalid_argument>([] { CharTokenizer::from_string("abb"); },
                                           "repeats the one before it");
  expect_throw_with<std::invalid_argument>([] { CharTokenizer::from_string("a\xFF"); },
                                           "byte offset 1");
}

BOOST_AUTO_TEST_CASE(large_text_builds_quickly_and_round_trips) {
  // 1 MB of mixed text: from_text must be linear (a bitmap, no sort of the text).
  std::string text;
  while (text.size() < (1u << 20)) text += "The quick brown fox \xE2\x80\x94 jumps! \xC3\xA9\n";
  const CharTokenizer tok = CharTokenizer::from_text(text);
  BOOST_TEST(tok.decode(tok.encode(text)) == text);
}
