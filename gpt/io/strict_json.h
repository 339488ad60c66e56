// Strict reading of JSON that comes from files: safetensors headers, checkpoint metadata,
// Hugging Face config.json, GPT-2's encoder.json. Nothing read from a file is trusted: what a
// lenient reader would silently change (truncate 3.9 to 3, cast 2^64, keep the last of two
// equal keys, recurse 100,000 levels deep) is an error that names the document, the key and
// the value.
//
// Internal to attograd_gpt: nlohmann_json is a private dependency of the library, so only its
// .cc files include this header.
#pragma once

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace attograd::gpt {

/// The deepest nesting parse_json accepts (the document itself is level 1). attograd's
/// deepest legitimate document nests 3 levels (a safetensors header: object, entry, shape);
/// nlohmann's serializer recurses once per level, so a value nested 100,000 levels deep would
/// overflow the stack the first time it is printed.
inline constexpr int kMaxJsonDepth = 32;

/// Parses `text`, refusing a key that appears twice in one object (nlohmann would keep the
/// last one silently) and nesting deeper than kMaxJsonDepth, before any such value is built.
/// `what` names the document in errors ("safetensors file 'x': the header"). Throws
/// std::runtime_error: "<what> is not valid JSON: ...", "<what> has the key 'k' twice [in the
/// entry 'e']", "<what> nests deeper than 32 levels".
nlohmann::json parse_json(const std::string& text, const std::string& what);

/// The value v as an integer in [0, max], or nullopt for anything else: a negative number, a
/// float even when integral (70.9, 2.0, 1e3), a value above max (2^64), a string, a bool.
std::optional<uint64_t> json_uint(const nlohmann::json& v, uint64_t max);

/// v as text for an error message: at most 60 characters (a huge array stays short).
std::string json_excerpt(const nlohmann::json& v);

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
  /// An integer in [min, max].
  int64_t integer(const std::string& key, int64_t min, int64_t max);
  /// An integer in [0, 2^64) (a seed).
  uint64_t unsigned_integer(const std::string& key);
  /// A finite number (integer or float) in [min, max].
  double number(const std::string& key, double min, double max);
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

}  // namespace attograd::gpt
