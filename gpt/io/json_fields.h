// Settings read from JSON strictly and written back: JsonFields, whose getters refuse what a
// lenient reader would truncate (3.9 to 3), cast (2^64) or ignore (a key no field knows), naming
// the document, the key and the value; a struct's fields listed once as JsonField rows that
// fields_to_json and fields_from_json both walk; and the visitors of a field table
// (gpt/io/fields.h) that checkpoints and config files use: json_fields, config_section_to_json
// and read_config_section. The parsing underneath (duplicate keys, the nesting bound) is
// nn/io/strict_json.h's.
//
// This header knows no GPT: the ranges and the tables live with the structs.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "gpt/io/fields.h"
#include "nn/io/strict_json.h"

namespace attograd::gpt {

/// The fields of a JSON object read strictly: each getter refuses a missing key, a value of
/// another type, a non-integer where an integer belongs and a value outside its range, naming
/// `what`, the key and the value (std::runtime_error "<what>: n_head is 3.9, expected an
/// integer in [1, 9223372036854775807]"). finish() refuses the keys no getter read, so a field
/// this version does not know is never dropped without a word.
class JsonFields {
 public:
  /// Keeps `object`; throws std::runtime_error when it is not a JSON object.
  JsonFields(nlohmann::json object, std::string what);

  bool has(const std::string& key) const { return object_.contains(key); }
  /// The object itself, for a reader that walks its keys (the page's requests).
  const nlohmann::json& object() const { return object_; }
  /// An integer in [min, max].
  int64_t integer(const std::string& key, int64_t min, int64_t max);
  /// An integer in [0, 2^64) (a seed).
  uint64_t unsigned_integer(const std::string& key);
  /// A finite number (integer or float) in [min, max].
  double number(const std::string& key, double min, double max);
  /// A finite number in r, each end open or closed ("expected a finite number in [0, 1)").
  double number(const std::string& key, RealRange r);
  /// A string that is one of c's names; returns its index (the enum's value).
  size_t choice(const std::string& key, Choices c);
  bool boolean(const std::string& key);
  std::string string(const std::string& key);
  /// Throws std::runtime_error naming the first key no getter has read.
  void finish() const;

 private:
  const nlohmann::json& at(const std::string& key);
  [[noreturn]] void refuse(const std::string& key, const std::string& expected) const;

  nlohmann::json object_;
  std::string what_;
  std::set<std::string> read_;
};

/// One field of a struct S as JSON: its key, how it is written, and how it is read strictly
/// from a JsonFields. A struct's fields are listed once, as a vector of these, and
/// fields_to_json / fields_from_json both walk that list: a field cannot be written and
/// forgotten when reading, or the reverse.
template <typename S>
struct JsonField {
  std::string key;
  std::function<nlohmann::json(const S&)> write;
  std::function<void(S&, JsonFields&)> read;
  bool optional = false;  // may be absent (files written before it existed): the default stays
};

/// Whether a JsonField may be absent from a document.
enum class Presence { required, optional };

/// An integer field in [min, max] (JsonFields::integer).
template <typename S>
JsonField<S> json_field(std::string key, int64_t S::*m, int64_t min, int64_t max,
                        Presence presence = Presence::required) {
  return {key, [m](const S& s) { return nlohmann::json(s.*m); },
          [m, key, min, max](S& s, JsonFields& f) { s.*m = f.integer(key, min, max); },
          presence == Presence::optional};
}
/// An integer field in [0, 2^64) (JsonFields::unsigned_integer): a seed.
template <typename S>
JsonField<S> json_field(std::string key, uint64_t S::*m) {
  return {key, [m](const S& s) { return nlohmann::json(s.*m); },
          [m, key](S& s, JsonFields& f) { s.*m = f.unsigned_integer(key); }};
}
/// A finite number field in [min, max] (JsonFields::number).
template <typename S>
JsonField<S> json_field(std::string key, double S::*m, double min, double max) {
  return {key, [m](const S& s) { return nlohmann::json(s.*m); },
          [m, key, min, max](S& s, JsonFields& f) { s.*m = f.number(key, min, max); }};
}
/// A true/false field.
template <typename S>
JsonField<S> json_field(std::string key, bool S::*m, Presence presence = Presence::required) {
  return {key, [m](const S& s) { return nlohmann::json(s.*m); },
          [m, key](S& s, JsonFields& f) { s.*m = f.boolean(key); }, presence == Presence::optional};
}
/// A string field.
template <typename S>
JsonField<S> json_field(std::string key, std::string S::*m,
                        Presence presence = Presence::required) {
  return {key, [m](const S& s) { return nlohmann::json(s.*m); },
          [m, key](S& s, JsonFields& f) { s.*m = f.string(key); }, presence == Presence::optional};
}

/// s as a JSON object with one key per field, in the list's order.
template <typename S>
nlohmann::json fields_to_json(const S& s, const std::vector<JsonField<S>>& fields) {
  nlohmann::json j = nlohmann::json::object();
  for (const JsonField<S>& field : fields) j[field.key] = field.write(s);
  return j;
}

/// Reads every field of the list from f in the list's order (each strictly, see JsonFields; an
/// optional one only when present), then refuses any other key (JsonFields::finish). Fields
/// not in the list keep their values in `s`.
template <typename S>
S fields_from_json(JsonFields& f, const std::vector<JsonField<S>>& fields, S s = S()) {
  for (const JsonField<S>& field : fields)
    if (!field.optional || f.has(field.key)) field.read(s, f);
  f.finish();
  return s;
}

/// The JSON field of one row of a struct's table (gpt/io/fields.h): its name is the key, its
/// range is what reading accepts (the range validate() applies), an enum is written by name, and
/// a row with kOptionalInFiles may be absent.
template <class S, class T, class R>
JsonField<S> json_field_of(const Field<S, T, R>& f) {
  const Presence presence = f.optional_in_files() ? Presence::optional : Presence::required;
  const std::string key = f.name;
  const auto m = f.member;
  if constexpr (std::is_same_v<R, IntRange>) {
    return json_field(key, m, f.range.min, f.range.max, presence);
  } else if constexpr (std::is_same_v<R, RealRange>) {
    const RealRange r = f.range;
    return {key, [m](const S& s) { return nlohmann::json(s.*m); },
            [m, key, r](S& s, JsonFields& j) { s.*m = j.number(key, r); },
            presence == Presence::optional};
  } else if constexpr (std::is_same_v<R, Choices>) {
    const Choices c = f.range;
    return {key, [m, c](const S& s) { return nlohmann::json(choice_name(s.*m, c)); },
            [m, key, c](S& s, JsonFields& j) { s.*m = static_cast<T>(j.choice(key, c)); },
            presence == Presence::optional};
  } else if constexpr (std::is_same_v<T, uint64_t>) {
    JsonField<S> field = json_field(key, m);
    field.optional = presence == Presence::optional;
    return field;
  } else {
    return json_field(key, m, presence);  // a bool or a string
  }
}

/// S's JSON fields, one per row of S::for_each_field, in the table's order: what
/// fields_to_json and fields_from_json walk.
template <class S>
std::vector<JsonField<S>> json_fields() {
  std::vector<JsonField<S>> fields;
  S::for_each_field([&](const auto& f) { fields.push_back(json_field_of(f)); });
  return fields;
}

namespace detail {

// v as a value of row f (an optional row: of its value type), into `out`; returns "" or what
// was expected instead ("an integer in [1, 65536]", "learned, sinusoidal or rope"). The ranges
// are those validate() and the flags apply, in their words (range_str).
template <class F, class V>
std::string json_to_field(const nlohmann::json& v, const F& f, V& out) {
  using R = typename F::Range;
  if constexpr (std::is_same_v<V, bool>) {
    if (!v.is_boolean()) return "true or false";
    out = v.get<bool>();
  } else if constexpr (std::is_same_v<R, IntRange>) {
    const std::string expected = "an integer in " + range_str(f.range);
    if (!v.is_number_integer() ||
        (v.is_number_unsigned() &&
         v.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())))
      return expected;
    const int64_t x = v.get<int64_t>();
    if (!f.range.contains(x)) return expected;
    out = static_cast<V>(x);
  } else if constexpr (std::is_same_v<R, RealRange>) {
    if (!v.is_number() || !f.range.contains(v.get<double>()))
      return "a finite number " + range_str(f.range);
    out = v.get<double>();
  } else if constexpr (std::is_same_v<R, Choices>) {
    const std::vector<std::string> names(f.range.names.begin(), f.range.names.end());
    const auto it =
        v.is_string() ? std::find(names.begin(), names.end(), v.get<std::string>()) : names.end();
    if (it == names.end()) return join_names(names);
    out = static_cast<V>(it - names.begin());
  } else if constexpr (std::is_same_v<V, uint64_t>) {
    const std::optional<uint64_t> x = nn::json_uint(v, std::numeric_limits<uint64_t>::max());
    if (!x) return "an integer in [0, 18446744073709551615]";
    out = *x;
  } else {
    static_assert(std::is_same_v<V, std::string>, "a row of a type config files cannot hold");
    if (!v.is_string()) return "a string";
    if constexpr (std::is_same_v<R, Names>) {
      const std::vector<std::string> names = f.range.names();
      if (std::find(names.begin(), names.end(), v.get<std::string>()) == names.end())
        return join_names(names);
    } else if constexpr (std::is_same_v<R, PathToWrite>) {
      const std::string problem = path_to_write_problem(v.get<std::string>());
      if (!problem.empty()) return "a path to write (" + problem + ")";
    }
    // No string a config file sets (a path, a corpus, a name) holds a control character: a NUL
    // ended a corpus path early where it was opened, training on another file (issue 31).
    if (!path_to_write_problem(v.get<std::string>()).empty())
      return "a string without control characters";
    out = v.get<std::string>();
  }
  return "";
}

}  // namespace detail

/// The rows of S's table that a config file holds (Field::in_config_files) and `keep` accepts,
/// as one JSON object in the table's order: each row's name its key, an enum written by name, an
/// absent optional left out. The section of a settings file that read_config_section reads back.
template <class S, class Keep>
nlohmann::ordered_json config_section_to_json(const S& s, Keep keep) {
  nlohmann::ordered_json j = nlohmann::ordered_json::object();
  S::for_each_field([&](const auto& f) {
    if (!f.in_config_files() || !keep(f)) return;
    using T = typename std::decay_t<decltype(f)>::Type;
    const auto write = [&](const auto& v) {
      if constexpr (std::is_same_v<typename std::decay_t<decltype(f)>::Range, Choices>)
        j[f.name] = choice_name(v, f.range);
      else
        j[f.name] = v;
    };
    if constexpr (detail::IsOptional<T>::value) {
      if (const T& v = s.*f.member) write(*v);
    } else {
      write(s.*f.member);
    }
  });
  return j;
}

/// Reads into `s` the keys of the JSON object `section` that are rows of S's table held by
/// config files and accepted by `keep`, each optional, strictly: a value of another type, a
/// non-integer where an integer belongs, a value outside the row's range (as validate() and the
/// flags have it) is std::invalid_argument "<what>: batch_size (--batch-size) is 0, expected an
/// integer in [1, 65536]". Returns the names read; a key that is no such row is left unread for
/// the caller to refuse (it knows the file's other names to suggest).
template <class S, class Keep>
std::set<std::string> read_config_section(const nlohmann::json& section, S& s,
                                          const std::string& what, Keep keep) {
  std::set<std::string> given;
  S::for_each_field([&](const auto& f) {
    if (!f.in_config_files() || !keep(f) || !section.contains(f.name)) return;
    using T = typename std::decay_t<decltype(f)>::Type;
    typename detail::ValueOf<T>::type value{};
    const nlohmann::json& v = section.at(f.name);
    const std::string expected = detail::json_to_field(v, f, value);
    if (!expected.empty())
      throw std::invalid_argument(what + ": " + f.name + " (" + f.flag + ") is " +
                                  nn::json_excerpt(v) + ", expected " + expected);
    s.*f.member = value;
    given.insert(f.name);
  });
  return given;
}

}  // namespace attograd::gpt
