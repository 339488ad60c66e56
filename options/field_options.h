// The command-line visitor of the field tables (gpt/io/fields.h): each row of a struct's
// for_each_field that has a flag becomes a CLI11 option with the row's help, the check of the
// row's range (integer_in, number_in, kSeed, or the enum's names) and, bound to a struct, its
// default in --help. A bool row whose default is true is the flag that turns it off (--no-bias).
// A new row of GPTConfig or TrainOptions so reaches `attograd train`, `info`, `figure` and their
// --help with no code here.
#pragma once

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdint>
#include <functional>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "gpt/io/fields.h"
#include "options/option_checks.h"

namespace attograd::cli {

/// The option check of a range: integer_in for an IntRange, number_in for a RealRange.
inline CLI::Validator range_check(gpt::IntRange r) { return integer_in(r); }
inline CLI::Validator range_check(gpt::RealRange r) { return number_in(r); }

namespace detail {

// The row's help, followed by its choices and what each is when the table says (--model's
// "gpt (the GPT-2 transformer), bigram (...) or average (...)").
template <class F>
std::string help_of(const F& f, const std::string& prefix) {
  using R = typename F::Range;
  std::vector<std::string> described;
  if constexpr (std::is_same_v<R, gpt::Choices>) {
    for (size_t i = 0; i < f.range.descriptions.size(); ++i)
      described.push_back(std::string(f.range.names[i]) + " (" + f.range.descriptions[i] + ")");
  } else if constexpr (std::is_same_v<R, gpt::Names>) {
    if (f.range.describe != nullptr)
      for (const std::string& name : f.range.names())
        described.push_back(name + " (" + f.range.describe(name) + ")");
  }
  return prefix + f.help + (described.empty() ? "" : ": " + gpt::join_names(described));
}

// The option's check of row f's range; none for AnyValue (but a seed's).
template <class F>
void check_range_of(CLI::Option* option, const F& f) {
  using V = typename gpt::detail::ValueOf<typename F::Type>::type;
  using R = typename F::Range;
  if constexpr (std::is_same_v<R, gpt::IntRange> || std::is_same_v<R, gpt::RealRange>)
    option->check(range_check(f.range));
  else if constexpr (std::is_same_v<R, gpt::Choices>)
    option->check(one_of(std::vector<std::string>(f.range.names.begin(), f.range.names.end())));
  else if constexpr (std::is_same_v<R, gpt::Names>)
    option->check(one_of(f.range.names()));
  else if constexpr (std::is_same_v<R, gpt::PathToWrite>)
    option->check(kOutputPath);
  else if constexpr (std::is_same_v<V, uint64_t>)
    option->check(kSeed);
}

// Adds row f as an option writing into target. With `given`, the option records the row's name
// there when used and shows no default (an override over a preset); without, it shows target's
// value as the default. An optional field is set only when its option is used, and shows none.
template <class F>
CLI::Option* add_field_option(CLI::App* cmd, const F& f, typename F::Struct& target,
                              const std::string& help, std::set<std::string>* given) {
  using T = typename F::Type;
  using V = typename gpt::detail::ValueOf<T>::type;
  using R = typename F::Range;
  constexpr bool optional = !std::is_same_v<T, V>;
  const auto m = f.member;
  const std::string name = f.name;
  auto mark = [given, name] {
    if (given != nullptr) given->insert(name);
  };
  if constexpr (std::is_same_v<V, bool>) {
    // A flag: it turns the default around (an optional one says yes).
    const bool value = optional || !(typename F::Struct{}.*m);
    return cmd->add_flag_callback(
        f.flag,
        [&target, m, value, mark] {
          target.*m = value;
          mark();
        },
        help);
  } else if constexpr (std::is_same_v<R, gpt::Choices>) {
    const gpt::Choices c = f.range;
    CLI::Option* option = cmd->add_option_function<std::string>(
        f.flag,
        [&target, m, c, mark](const std::string& text) {
          if (const std::optional<size_t> i = gpt::choice_index(text, c))
            target.*m = static_cast<V>(*i);
          mark();
        },
        help);
    check_range_of(option, f);
    if (given == nullptr && !optional) option->default_str(gpt::choice_name(target.*m, c));
    return option;
  } else {
    CLI::Option* option = nullptr;
    if (given == nullptr && !optional) {
      option = cmd->add_option(f.flag, target.*m, help)->capture_default_str();
    } else {
      option = cmd->add_option_function<V>(
          f.flag,
          [&target, m, mark](const V& v) {
            target.*m = v;
            mark();
          },
          help);
    }
    check_range_of(option, f);
    return option;
  }
}

}  // namespace detail

/// Adds an option to `cmd` for every row of S's table that has a flag and whose name is not in
/// `skip`, bound to the field of `s` (which must outlive parsing), its value shown as the
/// default. Returns the options, in the table's order.
template <class S>
std::vector<CLI::Option*> add_field_options(CLI::App* cmd, S& s,
                                            const std::set<std::string>& skip = {}) {
  std::vector<CLI::Option*> options;
  S::for_each_field([&](const auto& f) {
    if (f.flag != nullptr && !skip.count(f.name))
      options.push_back(detail::add_field_option(cmd, f, s, detail::help_of(f, ""), nullptr));
  });
  return options;
}

/// Like add_field_options, for values set over others (a preset): a used option writes its
/// field of `values` and adds the row's name to `given`; --help shows no default and each
/// help starts with `help_prefix`.
template <class S>
void add_override_options(CLI::App* cmd, S& values, std::set<std::string>& given,
                          const std::string& help_prefix, const std::set<std::string>& skip = {}) {
  S::for_each_field([&](const auto& f) {
    if (f.flag != nullptr && !skip.count(f.name))
      detail::add_field_option(cmd, f, values, detail::help_of(f, help_prefix), &given);
  });
}

/// Adds the option of S's row for `member` (the row's flag and its range's check, as
/// add_field_options adds it) writing into `value`, a field of another struct that holds the same
/// quantity: gpt::ModelSource::n_head is GPTConfig's n_head for a file that does not store it, so
/// its flag and range are that row's, not a second declaration. `help` replaces the row's help.
/// Throws std::logic_error when S has no row with a flag for `member`.
template <class S, class T>
CLI::Option* add_row_option(CLI::App* cmd, T S::*member, T& value, const std::string& help) {
  CLI::Option* option = nullptr;
  S::for_each_field([&](const auto& f) {
    if constexpr (std::is_same_v<decltype(f.member), T S::*>) {
      if (f.member == member && f.flag != nullptr) {
        option = cmd->add_option(f.flag, value, help);
        detail::check_range_of(option, f);
      }
    }
  });
  if (option == nullptr)
    throw std::logic_error("add_row_option: no row with a flag for the member");
  return option;
}

/// nanoGPT's names of S's rows that have one (Field::nanogpt_name), as flags with the row's:
/// {"--max-iters", "--steps"}, appended to `out` for did_you_mean.
template <class S>
void add_nanogpt_flags(std::vector<FlagAlias>& out) {
  S::for_each_field([&](const auto& f) {
    if (f.nanogpt == nullptr || f.flag == nullptr) return;
    std::string theirs = std::string("--") + f.nanogpt;
    std::replace(theirs.begin(), theirs.end(), '_', '-');
    out.push_back({theirs, f.flag});
  });
}

/// The names of S's rows whose option (added by add_field_options) was used on `cmd`'s command
/// line.
template <class S>
std::set<std::string> given_fields(const CLI::App& cmd) {
  std::set<std::string> given;
  S::for_each_field([&](const auto& f) {
    if (f.flag != nullptr && cmd.count(f.flag) > 0) given.insert(f.name);
  });
  return given;
}

/// The flags of S's rows.
template <class S>
std::set<std::string> field_flags() {
  std::set<std::string> flags;
  S::for_each_field([&](const auto& f) {
    if (f.flag != nullptr) flags.insert(f.flag);
  });
  return flags;
}

/// The flags of S's rows that a resumed run may change (kResumable).
template <class S>
std::set<std::string> resumable_flags() {
  std::set<std::string> flags;
  S::for_each_field([&](const auto& f) {
    if (f.flag != nullptr && f.resumable()) flags.insert(f.flag);
  });
  return flags;
}

}  // namespace attograd::cli
