#include "gpt/io/json_fields.h"

#include <cmath>
#include <limits>
#include <optional>
#include <stdexcept>
#include <utility>

namespace attograd::gpt {

JsonFields::JsonFields(nlohmann::json object, std::string what)
    : object_(std::move(object)), what_(std::move(what)) {
  if (!object_.is_object())
    throw std::runtime_error(what_ + " is " + nn::json_excerpt(object_) + ", not a JSON object");
}

const nlohmann::json& JsonFields::at(const std::string& key) {
  auto it = object_.find(key);
  if (it == object_.end()) throw std::runtime_error(what_ + " has no '" + key + "'");
  read_.insert(key);
  return *it;
}

void JsonFields::refuse(const std::string& key, const std::string& expected) const {
  throw std::runtime_error(what_ + ": " + key + " is " + nn::json_excerpt(object_.at(key)) +
                           ", expected " + expected);
}

int64_t JsonFields::integer(const std::string& key, int64_t min, int64_t max) {
  const nlohmann::json& v = at(key);
  const std::string range =
      "an integer in [" + std::to_string(min) + ", " + std::to_string(max) + "]";
  // Signed or unsigned, a JSON integer: an unsigned one above INT64_MAX is out of every range here.
  if (!v.is_number_integer() ||
      (v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(max)))
    refuse(key, range);
  const int64_t x = v.get<int64_t>();
  if (x < min || x > max) refuse(key, range);
  return x;
}

uint64_t JsonFields::unsigned_integer(const std::string& key) {
  const auto x = nn::json_uint(at(key), std::numeric_limits<uint64_t>::max());
  if (!x) refuse(key, "an integer in [0, 18446744073709551615]");
  return *x;
}

double JsonFields::number(const std::string& key, double min, double max) {
  const nlohmann::json& v = at(key);
  if (!v.is_number()) refuse(key, "a number");
  const double x = v.get<double>();
  if (!(std::isfinite(x) && x >= min && x <= max))
    refuse(key,
           "a number in [" + nlohmann::json(min).dump() + ", " + nlohmann::json(max).dump() + "]");
  return x;
}

double JsonFields::number(const std::string& key, RealRange r) {
  const nlohmann::json& v = at(key);
  if (!v.is_number() || !r.contains(v.get<double>()))
    refuse(key, std::string("a finite number ") + range_str(r));
  return v.get<double>();
}

size_t JsonFields::choice(const std::string& key, Choices c) {
  const nlohmann::json& v = at(key);
  if (v.is_string())
    if (const std::optional<size_t> i = choice_index(v.get<std::string>(), c)) return *i;
  refuse(key, join_names({c.names.begin(), c.names.end()}));
}

bool JsonFields::boolean(const std::string& key) {
  const nlohmann::json& v = at(key);
  if (!v.is_boolean()) refuse(key, "true or false");
  return v.get<bool>();
}

std::string JsonFields::string(const std::string& key) {
  const nlohmann::json& v = at(key);
  if (!v.is_string()) refuse(key, "a string");
  return v.get<std::string>();
}

void JsonFields::finish() const {
  for (auto it = object_.begin(); it != object_.end(); ++it)
    if (!read_.count(it.key()))
      throw std::runtime_error(
          what_ + " has an unknown field '" + nn::json_key_text(it.key()) +
          "' (written by a newer attograd?); refusing rather than ignoring it");
}

}  // namespace attograd::gpt
