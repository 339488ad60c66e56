// Strict JSON from files (nn/io/strict_json.h): the nesting bound that keeps a 100,000-deep value
// from overflowing the stack, duplicate keys, and the helpers that read a size and quote a value
// or a key in an error, each error naming the document and the key.
#define BOOST_TEST_MODULE strict_json
#include <boost/test/unit_test.hpp>

#include <string>

#include "nn/io/strict_json.h"
#include "tests/test_util.h"

using namespace attograd::nn;
using attograd::testing::expect_throw_with;

namespace {

// `depth` arrays, one inside the other: "[[[...]]]".
std::string nested(int depth) {
  return std::string(static_cast<size_t>(depth), '[') +
         std::string(static_cast<size_t>(depth), ']');
}

}  // namespace

BOOST_AUTO_TEST_CASE(nesting_is_bounded_before_the_value_is_built) {
  BOOST_TEST(parse_json(nested(kMaxJsonDepth), "doc").is_array());
  expect_throw_with<std::runtime_error>([] { parse_json(nested(kMaxJsonDepth + 1), "doc"); },
                                        "doc nests deeper than 32 levels");
  // Deep enough to overflow the stack of a recursive printer or destructor: refused at level 33.
  expect_throw_with<std::runtime_error>([] { parse_json(nested(100'000), "doc"); },
                                        "nests deeper than 32 levels");
  std::string objects;
  for (int i = 0; i < 100'000; ++i) objects += "{\"a\":";
  expect_throw_with<std::runtime_error>(
      [&] { parse_json(objects + "1" + std::string(100'000, '}'), "doc"); },
      "nests deeper than 32 levels");
}

BOOST_AUTO_TEST_CASE(duplicate_keys_and_invalid_json_are_named) {
  expect_throw_with<std::runtime_error>(
      [] { parse_json(R"({"n_head": 2, "n_head": 3})", "config.json"); },
      "config.json has the key 'n_head' twice");
  expect_throw_with<std::runtime_error>([] { parse_json(R"({"n_head": 2,)", "config.json"); },
                                        "config.json is not valid JSON: parse error at line 1");
  // The library's own tag is dropped: it names nothing the reader can act on.
  try {
    parse_json("{\"q\": \"\\ud800\"}", "prompt");  // a lone surrogate
    BOOST_FAIL("a lone surrogate was accepted");
  } catch (const std::runtime_error& e) {
    BOOST_TEST_INFO(e.what());
    BOOST_TEST(std::string(e.what()).find("[json.exception") == std::string::npos);
    BOOST_TEST(std::string(e.what()).rfind("prompt is not valid JSON: parse error", 0) == 0);
  }
}

// json_uint takes an integer in [0, max] and nothing else; json_excerpt and json_key_text quote a
// value or a key so that a message stays one short line: control characters escaped (a NUL
// would end a C string early, a C1 control garble a terminal), cut with "..." on a character
// boundary.
BOOST_AUTO_TEST_CASE(sizes_values_and_keys_as_errors_quote_them) {
  const nlohmann::json j = parse_json(
      R"({"a": 7, "b": -1, "c": 7.0, "d": "7", "e": 18446744073709551615, "f": 1e3})", "doc");
  BOOST_TEST(json_uint(j["a"], 7).value() == 7u);
  BOOST_TEST(!json_uint(j["a"], 6).has_value());
  for (const char* key : {"b", "c", "d", "f"})
    BOOST_TEST(!json_uint(j[key], UINT64_MAX).has_value());
  BOOST_TEST(json_uint(j["e"], UINT64_MAX).value() == UINT64_MAX);

  BOOST_TEST(json_excerpt(nlohmann::json("a\u0085b")) == "\"a\\u0085b\"");  // a C1 control
  BOOST_TEST(json_excerpt(nlohmann::json(std::string("a\x01"
                                                     "b"))) == "\"a\\u0001b\"");  // C0
  const std::string long_value = json_excerpt(nlohmann::json(std::string(100, 'z')));
  BOOST_TEST(long_value == "\"" + std::string(56, 'z') + "...");  // 60 bytes
  // The cut falls inside the ninth "é": the eight before it are kept whole, the ninth dropped.
  std::string accents(39, 'x');
  for (int i = 0; i < 10; ++i) accents += "\u00e9";
  std::string eight(39, 'x');
  for (int i = 0; i < 8; ++i) eight += "\u00e9";
  BOOST_TEST(json_excerpt(nlohmann::json(accents)) == "\"" + eight + "...");

  BOOST_TEST(json_key_text(std::string("a\0b", 3)) == "a\\u0000b");
  BOOST_TEST(json_key_text("tab\there") == "tab\\there");
  const std::string long_key = json_key_text(std::string(200, 'k'));
  BOOST_TEST(long_key.size() == 80u);
  BOOST_TEST(long_key.ends_with("k..."));
}
