// Settings read from JSON strictly (gpt/io/json_fields.h): typed fields that refuse what a
// lenient reader would truncate (3.9), cast (2^63, 2^64) or ignore (an unknown field), each error
// naming the document, the key and the value.
#define BOOST_TEST_MODULE json_fields
#include <boost/test/unit_test.hpp>

#include <string>

#include "gpt/io/json_fields.h"
#include "tests/test_util.h"

using namespace attograd::gpt;
namespace nn = attograd::nn;
using attograd::testing::expect_throw_with;

BOOST_AUTO_TEST_CASE(integers_are_refused_not_truncated_or_cast) {
  const auto field = [](const std::string& value) {
    JsonFields f(nn::parse_json("{\"n\": " + value + "}", "cfg"), "cfg");
    return f.integer("n", 1, 100);
  };
  BOOST_TEST(field("7") == 7);
  // {as written, as the message shows it}
  const std::pair<std::string, std::string> bad[] = {
      {"3.9", "3.9"},
      {"70.0", "70.0"},
      {"1e1", "10.0"},
      {"0", "0"},
      {"101", "101"},
      {"-1", "-1"},
      {"\"7\"", "\"7\""},
      {"true", "true"},
      {"null", "null"},
      {"[7]", "[7]"},
      {"9223372036854775808", "9223372036854775808"},
      {"18446744073709551616", "1.8446744073709552e+19"}};
  for (const auto& pair : bad) {
    // Not a structured binding: clang 14 (the WebAssembly build's) cannot capture one.
    const auto& value = pair.first;
    expect_throw_with<std::runtime_error>(
        [&] { field(value); }, "cfg: n is " + pair.second + ", expected an integer in [1, 100]");
  }
  JsonFields big(
      nn::parse_json(R"({"n": 9223372036854775807, "seed": 18446744073709551615, "neg": -1})",
                     "cfg"),
      "cfg");
  BOOST_TEST(big.integer("n", 0, INT64_MAX) == INT64_MAX);
  BOOST_TEST(big.unsigned_integer("seed") == UINT64_MAX);
  expect_throw_with<std::runtime_error>(
      [&] { big.unsigned_integer("neg"); },
      "cfg: neg is -1, expected an integer in [0, 18446744073709551615]");
}

BOOST_AUTO_TEST_CASE(numbers_booleans_strings_and_unknown_fields) {
  JsonFields f(nn::parse_json(R"({"p": 0.5, "q": 2, "b": 1, "s": 3, "x": true})", "cfg"), "cfg");
  BOOST_TEST(f.number("p", 0, 1) == 0.5);
  expect_throw_with<std::runtime_error>([&] { f.number("q", 0, 1); },
                                        "cfg: q is 2, expected a number in [0.0, 1.0]");
  expect_throw_with<std::runtime_error>([&] { f.boolean("b"); },
                                        "cfg: b is 1, expected true or false");
  expect_throw_with<std::runtime_error>([&] { f.string("s"); }, "cfg: s is 3, expected a string");
  expect_throw_with<std::runtime_error>([&] { f.string("missing"); }, "cfg has no 'missing'");
  expect_throw_with<std::runtime_error>([&] { f.finish(); }, "cfg has an unknown field 'x'");
  f.boolean("x");
  f.finish();  // every field read now
  expect_throw_with<std::runtime_error>([] { JsonFields(nn::parse_json("[1, 2]", "cfg"), "cfg"); },
                                        "cfg is [1,2], not a JSON object");
  // Long values are cut short in messages.
  JsonFields l(nn::parse_json("{\"v\": \"" + std::string(1000, 'z') + "\"}", "cfg"), "cfg");
  try {
    l.integer("v", 0, 1);
    BOOST_FAIL("no error");
  } catch (const std::runtime_error& e) {
    BOOST_TEST(std::string(e.what()).size() < 150u);
  }
}

// A name field: its index among the names (choice_index, the lookup the CLI and the benches
// share), or an error listing every name; a non-string is refused the same way.
BOOST_AUTO_TEST_CASE(choices_are_read_by_name) {
  const char* const names[] = {"f32", "bf16", "f16"};
  const Choices c{names};
  BOOST_TEST(choice_index("bf16", c).value() == 1u);
  BOOST_TEST(choice_index("f16", c).value() == 2u);
  BOOST_TEST(!choice_index("BF16", c).has_value());
  BOOST_TEST(!choice_index("", c).has_value());
  JsonFields f(nn::parse_json(R"({"a": "f32", "b": "f64", "c": 1})", "cfg"), "cfg");
  BOOST_TEST(f.choice("a", c) == 0u);
  expect_throw_with<std::runtime_error>([&] { f.choice("b", c); },
                                        "cfg: b is \"f64\", expected f32, bf16 or f16");
  expect_throw_with<std::runtime_error>([&] { f.choice("c", c); },
                                        "cfg: c is 1, expected f32, bf16 or f16");
}
