#include "options/option_checks.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string_view>
#include <utility>
#include <vector>

#include "gpt/io/fields.h"
#include "nn/io/utf8.h"

namespace attograd::cli {

namespace {

// CLI11 stores a floating-point option as (double) strtold(text): rounded twice, first to a long
// double, that is one double away from the correctly rounded v when the text lies within a long
// double's rounding error of halfway between two doubles. "0.99999999999999994448884876874" is
// checked as 0.99999999999999989, inside [0, 1), and would be stored as 1, outside it. The value
// checked must be the value used, and a check cannot rewrite the text (see leading_zeros
// below), so such text is refused, naming the value it was checked as.
std::optional<std::string> rounded_apart(const std::string& text, double v) {
  const auto stored = static_cast<double>(std::strtold(text.c_str(), nullptr));
  if (stored == v) return std::nullopt;
  char checked[32];
  std::snprintf(checked, sizeof checked, "%.17g", v);
  return text +
         " lies too close to halfway between two doubles to be read the same way twice; "
         "write " +
         checked;
}

// A finite double satisfying `ok`; `condition` completes "must be a finite number ..." and,
// after "NUMBER ", the --help hint.
CLI::Validator finite_number_check(const std::function<bool(double)>& ok,
                                   const std::string& condition) {
  return CLI::Validator(
      [ok, condition](std::string& text) -> std::string {
        // Decimal notation only: std::stod alone would also read hex floats (0x1p3 = 8) and skip
        // leading blanks. nan and inf get through to be named as not finite below.
        std::string word = text;
        if (!word.empty() && (word[0] == '-' || word[0] == '+')) word.erase(0, 1);
        for (char& ch : word) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
        const bool special = word == "nan" || word == "inf" || word == "infinity";
        if (!special &&
            (text.empty() || text.find_first_not_of("0123456789+-.eE") != std::string::npos))
          return "expected a decimal number, got '" + nn::escape_controls(text) + "'";
        double v;
        try {
          size_t used = 0;
          v = std::stod(text, &used);
          if (used != text.size()) throw std::invalid_argument("trailing characters");
        } catch (const std::out_of_range&) {
          return "must be a finite number " + condition + " within the range of a double, got " +
                 text;
        } catch (const std::exception&) {
          return "expected a number, got '" + nn::escape_controls(text) + "'";
        }
        if (!std::isfinite(v) || !ok(v))
          return "must be a finite number " + condition + ", got " + nn::escape_controls(text);
        return rounded_apart(text, v).value_or("");
      },
      "NUMBER " + condition);
}

// `text` as a decimal integer of type I: digits with an optional leading minus sign and
// nothing else, within I's range; nullopt otherwise.
template <typename I>
std::optional<I> parse_decimal(const std::string& text) {
  I v{};
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return v;
}

// CLI11 converts integers with strtoll/strtoull in base 0, where "010" is octal 8: the value
// checked here would not be the value used. Such text is refused instead (a check cannot
// rewrite it: Option::check makes every validator non-modifying).
std::optional<std::string> leading_zeros(const std::string& text, const std::string& value) {
  const size_t digits = text.rfind('-', 0) == 0 ? 1 : 0;
  if (text.size() > digits + 1 && text[digits] == '0')
    return text + " has leading zeros, which would be read as octal; write " + value;
  return std::nullopt;
}

}  // namespace

const CLI::Validator kPositive = finite_number_check([](double v) { return v > 0; }, "> 0");
const CLI::Validator kNonNegative = finite_number_check([](double v) { return v >= 0; }, ">= 0");

CLI::Validator number_in(double min, double max, bool min_open) {
  return number_in(gpt::RealRange{min, max, min_open, false});
}

CLI::Validator number_in(gpt::RealRange r) {
  return finite_number_check([r](double v) { return r.contains(v); }, gpt::range_str(r));
}

CLI::Validator integer_in(gpt::IntRange range) {
  const std::string expected = "an integer in " + gpt::range_str(range);
  return CLI::Validator(
      [range, expected](std::string& text) -> std::string {
        const std::optional<int64_t> v = parse_decimal<int64_t>(text);
        if (!v || !range.contains(*v))
          return "must be " + expected + ", got " + nn::escape_controls(text);
        return leading_zeros(text, std::to_string(*v)).value_or("");
      },
      "INT in " + gpt::range_str(range));
}

const CLI::Validator kSeed = CLI::Validator(
    [](std::string& text) -> std::string {
      const std::optional<uint64_t> v = parse_decimal<uint64_t>(text);
      if (!v)
        return "must be an integer in [0, 18446744073709551615] (2^64 - 1), got " +
               nn::escape_controls(text);
      return leading_zeros(text, std::to_string(*v)).value_or("");
    },
    "INT in [0, 2^64 - 1]");

const CLI::Validator kOutputPath = CLI::Validator(
    [](std::string& text) -> std::string { return gpt::path_to_write_problem(text); }, "");

const CLI::Validator kNotEmpty = CLI::Validator(
    [](std::string& text) -> std::string {
      return text.empty() ? "is empty: give a value, or leave the option out for its default" : "";
    },
    "");

std::string did_you_mean(const CLI::App& command, const std::string& arg,
                         const std::vector<FlagAlias>& nanogpt) {
  if (arg.rfind("--", 0) != 0) return "";
  std::string name = arg.substr(0, arg.find('='));
  std::replace(name.begin(), name.end(), '_', '-');
  // nanoGPT's settings that have no counterpart here, and why.
  static constexpr std::pair<std::string_view, std::string_view> kNoCounterpart[] = {
      {"--device", "attograd runs on the CPU, with --threads cores: drop it"},
      {"--compile",
       "attograd has no compile step, its kernels are compiled ahead of time: drop it"},
  };
  for (const auto& [theirs, why] : kNoCounterpart)
    if (name == theirs) return " (" + std::string(why) + ")";
  for (const FlagAlias& alias : nanogpt)
    if (name == alias.theirs && command.get_option_no_throw(alias.ours) != nullptr)
      return " (did you mean " + alias.ours + ", attograd's name for nanoGPT's " +
             arg.substr(2, arg.find('=') - 2) + "?)";
  std::vector<std::string> names;
  for (const CLI::Option* option : command.get_options())
    for (const std::string& long_name : option->get_lnames()) names.push_back("--" + long_name);
  const std::string best = gpt::nearest_name(name, names);
  return best.empty() ? "" : " (did you mean " + best + "?)";
}

void refuse_empty_values(CLI::App& app) {
  for (CLI::Option* option : app.get_options())
    if (option->get_expected_min() > 0) option->check(kNotEmpty);
  for (CLI::App* command : app.get_subcommands(std::function<bool(CLI::App*)>()))
    refuse_empty_values(*command);
}

CLI::Validator one_of(std::vector<std::string> names) {
  std::string set = "{";
  for (size_t i = 0; i < names.size(); ++i) set += (i ? "," : "") + names[i];
  set += "}";
  return CLI::Validator(
      [names = std::move(names), set](std::string& text) -> std::string {
        if (std::find(names.begin(), names.end(), text) != names.end()) return "";
        return nn::escape_controls(text) + " not in " + set;
      },
      set);
}

}  // namespace attograd::cli
