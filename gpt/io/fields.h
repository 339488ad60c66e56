// Fields declared once: each struct of settings (GPTConfig, TrainOptions) lists its fields in one
// table, a static `template <class V> void for_each_field(V&& v)` calling v(Field{...}) once per
// field with its member, name, command-line flag, help and range (the model is gemma.cpp's
// gemma_args.h ForEach(visitor); llama.cpp's common_arg is its cousin). Every consumer is a
// visitor of that table: validation (validate_fields below), JSON in checkpoints
// (json_fields in json_fields.h), the CLI's options and --help (options/field_options.h) and the
// resume check. A field added to the struct and to its table reaches all of them.
//
// This header knows no GPT: the ranges and the tables live with the structs.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "nn/io/utf8.h"

namespace attograd::gpt {

/// A closed range [min, max] of an integer setting, and what its bounds stand for when that is
/// not plain ("at most 4 x this machine's cores"), which messages say beside them.
struct IntRange {
  int64_t min;
  int64_t max;
  const char* why = nullptr;
  bool contains(int64_t v) const { return v >= min && v <= max; }
};

/// "[1, 1024]", or "[0, 8] (at most 4 x this machine's cores)" with a why.
std::string range_str(IntRange r);

/// Throws std::invalid_argument "<owner>: <field> must be in [min, max], got <v>" (owner may be
/// empty) when v is outside r.
void check_range(const std::string& owner, const char* field, int64_t v, IntRange r);

/// A range of finite real numbers, each end open or closed; max = +infinity means no upper
/// bound (the value must still be finite). Dropout is [0, 1): a probability of 1 drops all.
struct RealRange {
  double min;
  double max = std::numeric_limits<double>::infinity();
  bool min_open = false;
  bool max_open = false;
  bool contains(double v) const {
    return std::isfinite(v) && (min_open ? v > min : v >= min) && (max_open ? v < max : v <= max);
  }
};

/// The words that follow "a finite number": "> 0", ">= 0" (no upper bound), "in [0, 1)".
std::string range_str(RealRange r);

/// Throws std::invalid_argument "<owner>: <field> must be a finite number <range_str(r)>, got
/// <v>" (owner may be empty) when v is outside r or not finite.
void check_range(const std::string& owner, const char* field, double v, RealRange r);

/// The names of an enum whose values are 0, 1, 2, ... in this order, and, when given, what each
/// is in a few words (the CLI's --help lists "name (description)").
struct Choices {
  std::span<const char* const> names;
  std::span<const char* const> descriptions = {};
};

/// A string (or an optional one) that must be one of names(): a list known only at run time (a
/// build may leave a kind out), and what each is (nullptr: nothing to say).
struct Names {
  std::vector<std::string> (*names)();
  std::string (*describe)(const std::string&) = nullptr;
};

/// A path the program writes to (an output directory, a cache): one without control
/// characters, since such a name is almost always a mistake and one printed messages cannot show.
struct PathToWrite {};

/// A field with no range beyond its type's (a seed, a flag, a string).
struct AnyValue {};

/// Why `path` cannot be a PathToWrite, not valid UTF-8 or holding a C0 or C1 control character
/// or DEL ("the path \"r\\nrun\" holds a control character (U+000A); choose a name without
/// newlines, tabs or other control characters"), or "" when it can.
std::string path_to_write_problem(std::string_view path);

/// "a, b or c" (`last` joins the last two; one name alone is itself).
std::string join_names(const std::vector<std::string>& names, const std::string& last = "or");

/// Levenshtein distance between a and b, stopping early once it exceeds `limit` (then limit + 1).
size_t edit_distance(std::string_view a, std::string_view b, size_t limit);

/// The name of `names` nearest to `name` (a typo: at most `limit` edits away, the first of equal
/// ones), or "" when none is that close: what "did you mean" messages suggest.
std::string nearest_name(std::string_view name, const std::vector<std::string>& names,
                         size_t limit = 2);

/// What a field allows besides its value, or-ed together.
enum FieldTraits : unsigned {
  kRequired = 0,
  kOptionalInFiles = 1,   // may be absent from a file written before the field existed
  kResumable = 2,         // a resumed run may change it: the weights it trains to stay the same
                          // (more steps; the logging, evaluation and checkpoint intervals)
  kNotInConfigFiles = 4,  // said on each command line, never in a config file (what to do with
                          // an existing run directory: --resume, --overwrite)
  kKeepsWeights = 8,      // a run started from a file's weights (train --init-from) may be given
                          // it: no weight depends on it (a rate; n_head, which a Hugging Face
                          // file does not store; block_size, then the training sequences' length)
};

/// One row of a struct's table: the member, its name (the JSON key, and the name errors use),
/// its command-line flag (nullptr: none; "--no-x" for a bool that defaults to true), the help
/// the flag shows, its range (IntRange for int64_t, RealRange for double, Choices for an enum,
/// AnyValue otherwise) and its traits. The default is the struct's own initializer.
template <class S, class T, class R>
struct Field {
  using Struct = S;
  using Type = T;
  using Range = R;
  constexpr Field(T S::*m, const char* n, const char* f, const char* h, R r, unsigned t = kRequired)
      : member(m), name(n), flag(f), help(h), range(r), traits(t) {}
  /// This row, with nanoGPT's name for it (train.py's "max_iters" for max_steps): a user who types
  /// that name as a flag (--max_iters, --max-iters) is told the row's flag (cli::did_you_mean).
  constexpr Field nanogpt_name(const char* theirs) const {
    Field f = *this;
    f.nanogpt = theirs;
    return f;
  }
  T S::*member;
  const char* name;
  const char* flag;
  const char* help;
  R range;
  unsigned traits;
  const char* nanogpt = nullptr;  // nanoGPT's name for the field, or nullptr
  bool optional_in_files() const { return traits & kOptionalInFiles; }
  bool resumable() const { return traits & kResumable; }
  bool keeps_weights() const { return traits & kKeepsWeights; }
  /// Whether a config file (gpt/train/run_config.h) holds this row: one with a flag (the others
  /// the run sets itself) and without kNotInConfigFiles.
  bool in_config_files() const { return flag != nullptr && !(traits & kNotInConfigFiles); }
};

/// The enum value `v` as its name in `c` ("?" when out of range).
template <class T>
const char* choice_name(T v, Choices c) {
  const auto i = static_cast<size_t>(v);
  return i < c.names.size() ? c.names[i] : "?";
}

/// The index of `name` in `c` (the enum value whose name it is), or std::nullopt when it is none
/// of them: the one lookup behind a CLI option, a JSON field and a bench flag that take a name.
inline std::optional<size_t> choice_index(std::string_view name, Choices c) {
  for (size_t i = 0; i < c.names.size(); ++i)
    if (name == c.names[i]) return i;
  return std::nullopt;
}

namespace detail {

template <class T>
struct IsOptional : std::false_type {};
template <class T>
struct IsOptional<std::optional<T>> : std::true_type {};

// The value type of a row's member: T, or T of a std::optional<T>.
template <class T>
struct ValueOf {
  using type = T;
};
template <class T>
struct ValueOf<std::optional<T>> {
  using type = T;
};

}  // namespace detail

/// Throws std::invalid_argument as validate_fields() does when `v`, a value of row f (of an
/// optional field: its value), is outside f's range.
template <class F, class T>
void check_field(const F& f, const T& v, const std::string& owner) {
  using R = typename F::Range;
  const std::string where = owner.empty() ? std::string() : owner + ": ";
  if constexpr (std::is_same_v<R, IntRange>) {
    check_range(owner, f.name, static_cast<int64_t>(v), f.range);
  } else if constexpr (std::is_same_v<R, RealRange>) {
    check_range(owner, f.name, static_cast<double>(v), f.range);
  } else if constexpr (std::is_same_v<R, Choices>) {
    if (static_cast<size_t>(v) >= f.range.names.size())
      throw std::invalid_argument(where + f.name + " is not one of its names");
  } else if constexpr (std::is_same_v<R, Names>) {
    const std::vector<std::string> names = f.range.names();
    bool known = false;
    for (const std::string& n : names) known = known || n == v;
    if (!known)
      throw std::invalid_argument(where + f.name + " must be " + join_names(names) + ", got '" +
                                  nn::escape_controls(v) + "'");
  } else if constexpr (std::is_same_v<R, PathToWrite>) {
    if (const std::string problem = path_to_write_problem(v); !problem.empty())
      throw std::invalid_argument(where + f.name + ": " + problem);
  }
}

/// Throws std::invalid_argument naming `owner` and the first field of S's table whose value in
/// `s` is outside its range (check_range's messages; an enum out of its names, a string not in
/// its Names, a PathToWrite with a control character too; an absent optional passes). The
/// struct's cross-field rules are its own validate()'s.
template <class S>
void validate_fields(const S& s, const std::string& owner) {
  S::for_each_field([&](const auto& f) {
    using T = typename std::decay_t<decltype(f)>::Type;
    if constexpr (detail::IsOptional<T>::value) {
      if (const T& v = s.*f.member) check_field(f, *v, owner);
    } else {
      check_field(f, s.*f.member, owner);
    }
  });
}

}  // namespace attograd::gpt
