// Tests gpt/io/decimal: what parse_decimal reads (and how it rounds) and every kind of text it
// refuses, in the native and the WebAssembly build alike (tests/wasm runs this program too).
#define BOOST_TEST_MODULE decimal
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <limits>
#include <string>

#include "gpt/io/decimal.h"

using attograd::gpt::parse_decimal;

namespace {

// The value of `text`, which must parse.
double value_of(const std::string& text) {
  const auto v = parse_decimal(text);
  BOOST_TEST_INFO("text '" << text << "'");
  BOOST_REQUIRE(v.has_value());
  return *v;
}

}  // namespace

BOOST_AUTO_TEST_CASE(reads_plain_decimal_notation) {
  BOOST_TEST(value_of("0") == 0.0);
  BOOST_TEST(value_of("1") == 1.0);
  BOOST_TEST(value_of("-2.5") == -2.5);
  BOOST_TEST(value_of("+3") == 3.0);
  BOOST_TEST(value_of("5.") == 5.0);
  BOOST_TEST(value_of(".5") == 0.5);
  BOOST_TEST(value_of("-.25") == -0.25);
  BOOST_TEST(value_of("1e3") == 1000.0);
  BOOST_TEST(value_of("2.5E-1") == 0.25);
  BOOST_TEST(value_of("+1e+2") == 100.0);
  BOOST_TEST(value_of("010") == 10.0);  // decimal, never octal
  BOOST_TEST(value_of("0.000") == 0.0);
  BOOST_TEST(std::signbit(value_of("-0")));
  BOOST_TEST(value_of("19.820138") == 19.820138);
}

BOOST_AUTO_TEST_CASE(rounds_correctly_at_the_edges_of_double) {
  // 0.1 is the double nearest to 1/10, and 0.1 + 0.2 is not 0.3: the parser rounds as the
  // compiler's literals do.
  BOOST_TEST(value_of("0.1") == 0.1);
  BOOST_TEST(value_of("0.3") == 0.3);
  BOOST_TEST(value_of("0.1") + value_of("0.2") != value_of("0.3"));
  // Halfway between 1 and the next double (1 + 2^-52): ties go to even, i.e. 1.
  BOOST_TEST(value_of("1.00000000000000011102230246251565404236316680908203125") == 1.0);
  BOOST_TEST(value_of("1.7976931348623157e308") == std::numeric_limits<double>::max());
  BOOST_TEST(value_of("2.2250738585072014e-308") == std::numeric_limits<double>::min());
  BOOST_TEST(value_of("4.9406564584124654e-324") == std::numeric_limits<double>::denorm_min());
  BOOST_TEST(value_of("0e999999") == 0.0);  // zero is zero at any exponent
}

BOOST_AUTO_TEST_CASE(refuses_what_is_not_a_finite_decimal_number) {
  for (const std::string text :
       {"",    " ",     " 1",    "1 ",  "1,5",   "+",      "-",      ".",      "e3",   "1e",
        "1e+", "1.2.3", "--1",   "+-1", "1e3.5", "0x10",   "0x1p3",  "inf",    "-inf", "infinity",
        "nan", "NaN",   "1_000", "١",   "1e400", "-1e400", "1e-400", "1.8e308"}) {
    BOOST_TEST_INFO("text '" << text << "'");
    BOOST_TEST(!parse_decimal(text).has_value());
  }
  // A NUL inside the text is a character like any other, not its end.
  BOOST_TEST(!parse_decimal(std::string("1\0"
                                        "2",
                                        3))
                  .has_value());
}
