// Every row of the field tables (GPTConfig::for_each_field, TrainOptions::for_each_field and,
// without JSON, RunRequest::for_each_field) has one
// range, and the places that apply it agree: the CLI option the row becomes
// (options/field_options.h), the struct's validate(), its JSON in checkpoints and its key in a
// config file (`train --config`, gpt/train/run_config.h). At the ends of its range a value is
// accepted by all and round-trips; just outside, all refuse it with a message naming the field (its
// flag on the command line, its name elsewhere). The test walks the tables, so a new row is covered
// without a line here.
#define BOOST_TEST_MODULE field_options_test
#include <CLI/CLI.hpp>
#include <boost/test/unit_test.hpp>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <type_traits>
#include <vector>

#include "gpt/model/checkpoint.h"
#include "gpt/model/config.h"
#include "gpt/train/run.h"
#include "gpt/train/run_config.h"
#include "gpt/train/trainer.h"
#include "options/field_options.h"
#include "tests/gpt/field_count.h"
#include "tests/test_util.h"

using namespace attograd::gpt;
using attograd::cli::add_field_options;
using attograd::cli::add_override_options;

namespace {

// A double as text that reads back as the same double.
std::string text_of(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}
template <class T>
std::string text_of(T v) {
  return std::to_string(v);
}

// How each struct is validated, written and read, and a value of it from which every field can
// reach both ends of its range without breaking a rule between fields (n_head dividing n_embd,
// min_lr <= learning_rate, the parameter budget).
struct ConfigTable {
  using S = GPTConfig;
  static S base() {
    GPTConfig c;
    c.vocab_size = 1, c.block_size = 1, c.n_layer = 1, c.n_head = 1, c.n_embd = 1024;
    return c;
  }
  static void validate(const S& s) { s.validate(); }
  static std::string to_json(const S& s) { return config_to_json(s); }
  static S from_json(const std::string& text) { return config_from_json(text, "config"); }
  // Parses `args` as the CLI does (over a preset: ConfigOverrides), into `s`.
  // The config file's section of the struct, and the struct a parsed file holds.
  static constexpr const char* kSection = "model";
  static S of(const RunConfig& c) { return c.request.config.applied_to(base()); }
  static void parse(S& s, const std::string& args) {
    CLI::App app;
    ConfigOverrides overrides;
    overrides.values = s;
    add_override_options(&app, overrides.values, overrides.given, "override: ");
    app.parse(args, false);
    s = overrides.applied_to(s);
  }
};

struct OptionsTable {
  using S = TrainOptions;
  static S base() {
    TrainOptions o;
    o.learning_rate = 1e300, o.min_lr = 0;  // min_lr may then reach the largest value tried
    return o;
  }
  static void validate(const S& s) { s.validate(); }
  static std::string to_json(const S& s) { return s.to_json(); }
  static S from_json(const std::string& text) { return TrainOptions::from_json(text); }
  static constexpr const char* kSection = "train";
  static S of(const RunConfig& c) { return c.request.options; }
  static void parse(S& s, const std::string& args) {
    CLI::App app;
    add_field_options(&app, s);
    app.parse(args, false);
  }
};

// The values a range accepts at its ends, and those just outside (none past an unbounded end).
// An open end is approached by a step that any parser keeps (1e-6), not by the next double.
struct Ends {
  std::vector<double> inside, outside;
};
Ends ends(RealRange r) {
  Ends e;
  e.inside.push_back(r.min_open ? r.min + 1e-6 : r.min);
  e.outside.push_back(r.min_open ? r.min : r.min - 1e-6);
  if (std::isinf(r.max)) {
    e.inside.push_back(1e300);
  } else {
    e.inside.push_back(r.max_open ? r.max - 1e-6 : r.max);
    e.outside.push_back(r.max_open ? r.max : r.max + 1e-6);
  }
  return e;
}

// Whether row f is a key of a config file: a row with a flag, but vocab_size (the tokenizer's).
template <class F>
bool in_config_files(const F& f) {
  return f.in_config_files() && std::string(f.name) != "vocab_size";
}

template <class Table>
void check_table(const std::string& owner) {
  using S = typename Table::S;
  int rows = 0;
  S::for_each_field([&](const auto& f) {
    ++rows;
    using F = std::decay_t<decltype(f)>;
    using T = typename F::Type;
    using R = typename F::Range;
    BOOST_TEST_CONTEXT(owner << "::" << f.name) {
      // Accepted: CLI, validate() and a JSON round trip all keep the value.
      auto accepted = [&](T value, const std::string& text) {
        BOOST_TEST_CONTEXT("value " << text) {
          S s = Table::base();
          if (f.flag != nullptr) {
            if constexpr (std::is_same_v<T, bool>) {
              Table::parse(s, f.flag);
            } else {
              Table::parse(s, std::string(f.flag) + " " + text);
            }
            BOOST_TEST((s.*f.member == value), "the CLI did not set " << f.name);
          } else {
            s.*f.member = value;
          }
          BOOST_CHECK_NO_THROW(Table::validate(s));
          S back = Table::base();
          BOOST_CHECK_NO_THROW(back = Table::from_json(Table::to_json(s)));
          BOOST_TEST((back == s), "the JSON round trip changed " << f.name);
          if (in_config_files(f)) {  // the same value as a config file's key
            nlohmann::json file;
            file[Table::kSection][f.name] = nlohmann::json::parse(Table::to_json(s))[f.name];
            RunConfig c;
            BOOST_CHECK_NO_THROW(c = parse_run_config(file.dump(), "c.json"));
            BOOST_TEST((Table::of(c).*f.member == value), "the config file did not set " << f.name);
          }
        }
      };
      // Refused: CLI (naming the flag), validate() and JSON (naming the field).
      auto refused = [&](std::optional<T> value, const std::string& text, const nlohmann::json& j) {
        BOOST_TEST_CONTEXT("value " << text) {
          if (f.flag != nullptr) {
            S s = Table::base();
            attograd::testing::expect_throw_with<CLI::ParseError>(
                [&] { Table::parse(s, std::string(f.flag) + " " + text); }, f.flag);
          }
          if (value) {
            S s = Table::base();
            s.*f.member = *value;
            attograd::testing::expect_throw_with<std::invalid_argument>(
                [&] { Table::validate(s); }, std::string(f.name) + " must be");
          }
          nlohmann::json doc = nlohmann::json::parse(Table::to_json(Table::base()));
          doc[f.name] = j;
          attograd::testing::expect_throw_with<std::runtime_error>(
              [&] { Table::from_json(doc.dump()); }, std::string(f.name) + " is ");
          if (in_config_files(f)) {
            nlohmann::json file;
            file[Table::kSection][f.name] = j;
            attograd::testing::expect_throw_with<std::invalid_argument>(
                [&] { parse_run_config(file.dump(), "c.json"); },
                std::string(f.name) + " (" + f.flag + ") is ");
          }
        }
      };
      if constexpr (std::is_same_v<R, IntRange>) {
        accepted(f.range.min, text_of(f.range.min));
        accepted(f.range.max, text_of(f.range.max));
        if (f.range.min > std::numeric_limits<int64_t>::min())
          refused(f.range.min - 1, text_of(f.range.min - 1), f.range.min - 1);
        if (f.range.max < std::numeric_limits<int64_t>::max())
          refused(f.range.max + 1, text_of(f.range.max + 1), f.range.max + 1);
        else  // one past int64_t: refused as text and as JSON; no int64_t holds it
          refused(std::nullopt, "9223372036854775808", 9223372036854775808ull);
      } else if constexpr (std::is_same_v<R, RealRange>) {
        const Ends e = ends(f.range);
        for (double v : e.inside) accepted(v, text_of(v));
        for (double v : e.outside) refused(v, text_of(v), v);
        refused(std::numeric_limits<double>::quiet_NaN(), "nan", "nan");
      } else if constexpr (std::is_same_v<R, Choices>) {
        for (size_t i = 0; i < f.range.names.size(); ++i)
          accepted(static_cast<T>(i), f.range.names[i]);
        refused(std::nullopt, "alibi", "alibi");
      } else if constexpr (std::is_same_v<T, uint64_t>) {
        accepted(0, "0");
        accepted(std::numeric_limits<uint64_t>::max(),
                 text_of(std::numeric_limits<uint64_t>::max()));
        refused(std::nullopt, "-1", -1);
      } else if constexpr (std::is_same_v<T, bool>) {
        accepted(!(S{}.*f.member), "not the default");  // a flag turns the default around
      } else {
        accepted(T("a value"), "a value");
      }
    }
  });
  // The table names every field of the struct.
  BOOST_TEST(rows == static_cast<int>(attograd::testing::field_count<S>()));
}

}  // namespace

BOOST_AUTO_TEST_CASE(every_config_field_has_one_range_in_cli_validate_and_json) {
  check_table<ConfigTable>("GPTConfig");
}

BOOST_AUTO_TEST_CASE(every_training_option_has_one_range_in_cli_validate_and_json) {
  check_table<OptionsTable>("TrainOptions");
}

// Dropout is [0, 1) everywhere: the CLI once stopped at 0.99 while checkpoints took up to 1.
// A checkpoint holding dropout 1 (which no attograd ever wrote: validate() refused it) is refused
// when read, naming the field and its range.
BOOST_AUTO_TEST_CASE(dropout_is_below_one_everywhere) {
  GPTConfig c = ConfigTable::base();
  ConfigTable::parse(c, "--dropout 0.995");
  BOOST_TEST(c.dropout == 0.995);
  nlohmann::json doc = nlohmann::json::parse(config_to_json(c));
  BOOST_TEST((config_from_json(doc.dump(), "config") == c));
  doc["dropout"] = 1.0;
  attograd::testing::expect_throw_with<std::runtime_error>(
      [&] { config_from_json(doc.dump(), "config"); },
      "config: dropout is 1.0, expected a finite number in [0, 1)");
  // Checked as 0.99999999999999989 (strtod), this text would be stored as 1 (CLI11 rounds twice,
  // through a long double): refused (the cli_options fuzz target replays it too,
  // tests/fuzz/regressions/cli_options/dropout_rounded_twice_to_one).
  attograd::testing::expect_throw_with<CLI::ParseError>(
      [&] { ConfigTable::parse(c, "--dropout 0.99999999999999994448884876874"); },
      "--dropout: 0.99999999999999994448884876874 lies too close to halfway between two doubles "
      "to be read the same way twice; write 0.99999999999999989");
}

// AdamW's betas are options under nanoGPT's names (its char config trains with β₂ = 0.99), in
// [0, 1) like PyTorch's.
BOOST_AUTO_TEST_CASE(adamw_betas_are_options) {
  TrainOptions o;
  OptionsTable::parse(o, "--beta1 0.8 --beta2 0.99");
  BOOST_TEST(o.beta1 == 0.8);
  BOOST_TEST(o.beta2 == 0.99);
  attograd::testing::expect_throw_with<CLI::ParseError>(
      [&] { OptionsTable::parse(o, "--beta2 1"); },
      "--beta2: must be a finite number in [0, 1), got 1");
}

// A learning rate must be > 0 in the CLI, validate() and JSON alike (a checkpoint once took 0).
BOOST_AUTO_TEST_CASE(a_learning_rate_of_zero_is_refused_everywhere) {
  nlohmann::json doc = nlohmann::json::parse(TrainOptions().to_json());
  doc["learning_rate"] = 0;
  attograd::testing::expect_throw_with<std::runtime_error>(
      [&] { TrainOptions::from_json(doc.dump()); },
      "learning_rate is 0, expected a finite number > 0");
  TrainOptions o;
  o.learning_rate = 0;
  attograd::testing::expect_throw_with<std::invalid_argument>(
      [&] { o.validate(); }, "TrainOptions: learning_rate must be a finite number > 0, got 0");
}

// ConfigOverrides comes from the table: set() records the field's name, applied_to() writes
// only the fields set.
BOOST_AUTO_TEST_CASE(overrides_apply_only_the_fields_set) {
  ConfigOverrides o;
  o.set(&GPTConfig::n_layer, int64_t{5}).set(&GPTConfig::pos_encoding, PosEncoding::rope);
  BOOST_TEST((o.given == std::set<std::string>{"n_layer", "pos_encoding"}));
  GPTConfig expected = preset("pico");
  expected.n_layer = 5, expected.pos_encoding = PosEncoding::rope;
  BOOST_TEST((o.applied_to(preset("pico")) == expected));
}

// RunRequest's rows have no JSON (a request is not stored), but the CLI and validate() apply the
// same range: the ends of --threads, each tokenizer kind and an unknown one, an output path with
// and without a control character; an optional row is set only when its option is given.
BOOST_AUTO_TEST_CASE(every_run_request_option_has_one_range_in_cli_and_validate) {
  auto parse = [](const std::string& args) {
    RunRequest rq;
    CLI::App app;
    add_field_options(&app, rq);
    app.parse(args, false);
    return rq;
  };
  int rows = 0;
  RunRequest::for_each_field([&](const auto& f) {
    ++rows;
    using F = std::decay_t<decltype(f)>;
    using T = typename F::Type;
    using R = typename F::Range;
    BOOST_TEST_CONTEXT("RunRequest::" << f.name) {
      BOOST_TEST_REQUIRE(f.flag != nullptr);
      const std::string flag = f.flag;
      auto accepted = [&](const std::string& text, const T& value) {
        const RunRequest rq = parse(text.empty() ? flag : flag + " " + text);
        BOOST_TEST((rq.*f.member == value), "the CLI did not set " << f.name << " to " << text);
        BOOST_CHECK_NO_THROW(rq.validate());
      };
      auto refused = [&](const std::string& text, const T& value) {
        attograd::testing::expect_throw_with<CLI::ParseError>([&] { parse(flag + " " + text); },
                                                              flag);
        RunRequest rq;
        rq.*f.member = value;
        attograd::testing::expect_throw_with<std::invalid_argument>(
            [&] { rq.validate(); }, std::string("train: ") + f.name);
      };
      if constexpr (std::is_same_v<R, IntRange>) {
        accepted(text_of(f.range.min), static_cast<T>(f.range.min));
        accepted(text_of(f.range.max), static_cast<T>(f.range.max));
        refused(text_of(f.range.min - 1), static_cast<T>(f.range.min - 1));
        refused(text_of(f.range.max + 1), static_cast<T>(f.range.max + 1));
      } else if constexpr (std::is_same_v<R, Names>) {
        for (const std::string& name : f.range.names()) accepted(name, name);
        refused("bytes", "bytes");
      } else if constexpr (std::is_same_v<R, PathToWrite>) {
        accepted("runs/x", "runs/x");
        const std::string control = std::string("a\x01") + "b";  // CLI11 splits at a newline
        refused(control, control);
      } else if constexpr (std::is_same_v<R, Choices>) {
        for (size_t i = 0; i < f.range.names.size(); ++i)
          accepted(f.range.names[i], static_cast<T>(i));
        attograd::testing::expect_throw_with<CLI::ParseError>([&] { parse(flag + " alibi"); },
                                                              flag);
      } else if constexpr (std::is_same_v<T, uint64_t>) {
        accepted("0", 0);
        accepted(text_of(std::numeric_limits<uint64_t>::max()),
                 std::numeric_limits<uint64_t>::max());
      } else if constexpr (std::is_same_v<T, bool>) {
        accepted("", !(RunRequest{}.*f.member));
      } else if constexpr (std::is_same_v<T, std::optional<bool>>) {
        BOOST_TEST(!(RunRequest{}.*f.member).has_value());
        accepted("", true);
      } else {
        accepted("a_value", T("a_value"));
        if constexpr (!std::is_same_v<T, std::string>) BOOST_TEST(!(RunRequest{}.*f.member));
      }
    }
  });
  BOOST_TEST(rows == 11);
}
