// Fuzz target: the command line's number checks (options/option_checks.h) and the options the field
// tables become (options/field_options.h): every row of TrainOptions' and GPTConfig's tables that
// takes a value, as `attograd train` adds them, and the stand-alone checks other options use
// (kPositive, kNonNegative, number_in, integer_in with a reason, kSeed).
//
// The input is "--flag=<text>": the option named (or, when no option has that name, the one the
// first byte picks) is given <text> through CLI11, as `attograd train --flag=<text>` gives it.
// Properties:
// - refused: a CLI::ParseError (the CLI's usage error, exit code 2: a ValidationError from the
//   checks, an ArgumentMismatch for "--flag=" with nothing after it) whose message starts with
//   "<flag>: "; any other exception is a crash;
// - accepted: the value stored is in the option's range; it is the value the text spells, as
//   one reading gives it (strtoll or strtoull in base 10 for an integer, strtod for a real, the
//   name for a choice), not only CLI11's own conversion; and printed again (decimal digits,
//   %.17g, the name) it is accepted as the same value.
#include <CLI/CLI.hpp>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "gpt/model/config.h"
#include "gpt/model/field_ranges.h"
#include "gpt/train/trainer.h"
#include "options/field_options.h"
#include "options/option_checks.h"
#include "tests/fuzz/fuzz_support.h"

using namespace attograd;
using gpt::AnyValue;
using gpt::Choices;
using gpt::IntRange;
using gpt::RealRange;

namespace {

// One option under test: its flag, and what to do with a text given to it.
struct Probe {
  std::string flag;
  std::function<void(const std::string& text)> run;
};

// Parses "--flag=<text>" on an app that `add` fills (it returns the getter of the value);
// nullopt when the text is refused, after checking that it was refused as documented.
template <class T>
std::optional<T> parse(const std::string& flag, const std::string& text,
                       const std::function<std::function<T()>(CLI::App&)>& add) {
  CLI::App app;
  const std::function<T()> value = add(app);
  cli::refuse_empty_values(app);
  try {
    std::vector<std::string> args{flag + "=" + text};
    app.parse(args);
  } catch (const CLI::ParseError& e) {
    FUZZ_CHECK(std::string_view(e.what()).starts_with(flag + ": "),
               "the message does not start with " + flag + ": " + e.what());
    return std::nullopt;
  }
  return value();
}

std::string printed(int64_t v) { return std::to_string(v); }
std::string printed(uint64_t v) { return std::to_string(v); }
std::string printed(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.17g", v);  // 17 digits read back as the same double
  return buf;
}

// The value `text` spells, read once more by a reader of its own; nullopt when it reads none.
std::optional<int64_t> reread(const std::string& text, int64_t) {
  errno = 0;
  char* end = nullptr;
  const long long v = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || end != text.c_str() + text.size() || errno != 0) return std::nullopt;
  return v;
}
std::optional<uint64_t> reread(const std::string& text, uint64_t) {
  errno = 0;
  char* end = nullptr;
  const unsigned long long v = std::strtoull(text.c_str(), &end, 10);
  // strtoull reads "-1" as 2^64 - 1: a seed has no sign.
  if (text.empty() || text[0] == '-' || end != text.c_str() + text.size() || errno != 0)
    return std::nullopt;
  return v;
}
std::optional<double> reread(const std::string& text, double) {
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (text.empty() || end != text.c_str() + text.size()) return std::nullopt;
  return v;
}

bool in_range(int64_t v, IntRange r) { return r.contains(v); }
bool in_range(uint64_t, AnyValue) { return true; }
bool in_range(double v, RealRange r) { return r.contains(v); }

// The properties of an accepted number (see the top of the file).
template <class T, class R>
void check_number(const std::string& flag, const std::string& text, T v, R range,
                  const std::function<std::optional<T>(const std::string&)>& parse_text) {
  FUZZ_CHECK(in_range(v, range), flag + " accepted " + text + ", outside its range");
  const std::optional<T> again = reread(text, T{});
  FUZZ_CHECK(again.has_value(), flag + " accepted " + text + ", which is no number");
  FUZZ_CHECK(std::memcmp(&*again, &v, sizeof v) == 0,
             flag + " stored " + printed(v) + " for " + text + ", which is " + printed(*again));
  const std::optional<T> back = parse_text(printed(v));
  FUZZ_CHECK(back.has_value(), flag + " refused " + printed(v) + ", its own value printed");
  FUZZ_CHECK(std::memcmp(&*back, &v, sizeof v) == 0,
             flag + ": " + printed(v) + " printed and parsed again became " + printed(*back));
}

// A row of S's table as the CLI adds it: TrainOptions' rows bound to a TrainOptions
// (add_field_options), GPTConfig's as overrides over a preset (add_override_options, as
// add_config_options does), which must also record the field as given.
template <class S, class F>
Probe row_probe(const F& f) {
  using T = typename F::Type;
  using R = typename F::Range;
  const std::string flag = f.flag, name = f.name;
  const auto member = f.member;
  const R range = f.range;
  auto parse_text = [flag, name, member](const std::string& text) {
    return parse<T>(flag, text, [name, member](CLI::App& app) -> std::function<T()> {
      auto s = std::make_shared<S>();
      if constexpr (std::is_same_v<S, gpt::GPTConfig>) {
        auto given = std::make_shared<std::set<std::string>>();
        cli::add_override_options(&app, *s, *given, "");
        return [s, given, name, member] {
          FUZZ_CHECK(given->count(name) == 1, name + " was set but not recorded as given");
          return (*s).*member;
        };
      } else {
        cli::add_field_options(&app, *s);
        return [s, member] { return (*s).*member; };
      }
    });
  };
  return {flag, [flag, range, parse_text](const std::string& text) {
            const std::optional<T> v = parse_text(text);
            if (!v) return;
            if constexpr (std::is_same_v<R, Choices>) {
              const auto i = static_cast<size_t>(*v);
              FUZZ_CHECK(i < range.names.size(), flag + " stored a value with no name");
              FUZZ_CHECK(text == range.names[i],
                         flag + " accepted " + text + " as " + range.names[i]);
              const std::optional<T> back = parse_text(range.names[i]);
              FUZZ_CHECK(back && *back == *v, flag + " refused its own name " + range.names[i]);
            } else {
              check_number<T>(flag, text, *v, range, parse_text);
            }
          }};
}

// A stand-alone option of type T with `check`, whose range is `range`.
template <class T, class R>
Probe check_probe(const std::string& flag, const CLI::Validator& check, R range) {
  auto parse_text = [flag, check](const std::string& text) {
    return parse<T>(flag, text, [flag, check](CLI::App& app) -> std::function<T()> {
      auto v = std::make_shared<T>();
      app.add_option(flag, *v)->check(check);
      return [v] { return *v; };
    });
  };
  return {flag, [flag, range, parse_text](const std::string& text) {
            if (const std::optional<T> v = parse_text(text))
              check_number<T>(flag, text, *v, range, parse_text);
          }};
}

// Every row with a value (a bool row is a flag without one; strings have no flag), then the checks
// of other options, named after an option that uses each.
std::vector<Probe> make_probes() {
  std::vector<Probe> probes;
  auto rows = [&](auto tag) {
    using S = decltype(tag);
    S::for_each_field([&](const auto& f) {
      using T = typename std::decay_t<decltype(f)>::Type;
      if constexpr (!std::is_same_v<T, bool> && !std::is_same_v<T, std::string>)
        if (f.flag != nullptr) probes.push_back(row_probe<S>(f));
    });
  };
  rows(gpt::TrainOptions{});
  rows(gpt::GPTConfig{});
  constexpr double inf = gpt::limits::kInf;
  probes.push_back(check_probe<double>("--positive", cli::kPositive, RealRange{0, inf, true}));
  probes.push_back(check_probe<double>("--temperature", cli::kNonNegative, RealRange{0, inf}));
  probes.push_back(
      check_probe<double>("--top-p", cli::number_in(0, 1, true), RealRange{0, 1, true}));
  const IntRange threads{0, gpt::max_threads(), "a reason"};
  probes.push_back(check_probe<int64_t>("--threads", cli::integer_in(threads), threads));
  const IntRange head_dim{1, int64_t{1} << 20};
  probes.push_back(check_probe<int64_t>("--head-dim", cli::integer_in(head_dim), head_dim));
  probes.push_back(check_probe<uint64_t>("--init-seed", cli::kSeed, AnyValue{}));
  return probes;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::vector<Probe> probes = make_probes();
  if (size == 0) return 0;
  const std::string input(reinterpret_cast<const char*>(data), size);
  const size_t eq = input.find('=');
  const std::string flag = input.substr(0, eq);
  const std::string text = eq == std::string::npos ? input : input.substr(eq + 1);
  const Probe* probe = &probes[data[0] % probes.size()];
  for (const Probe& p : probes)
    if (p.flag == flag) probe = &p;
  probe->run(text);
  return 0;
}
