#include "nn/io/strict_json.h"

#include "nn/io/utf8.h"

#include <optional>
#include <set>
#include <stdexcept>
#include <vector>

namespace attograd::nn {

namespace {

// text cut to at most `max` bytes, "..." in place of the rest, never inside a UTF-8 character
// (a lone lead byte printed by the CLI, a U+FFFD on the page).
std::string shortened(std::string text, size_t max) {
  if (text.size() <= max) return text;
  size_t cut = max - 3;
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
  text.resize(cut);
  return text + "...";
}

}  // namespace

nlohmann::json parse_json(std::string_view text, const std::string& what) {
  struct Object {
    std::string name;  // the key this object is the value of ("" for the document itself)
    std::set<std::string> keys;
  };
  std::vector<Object> open;
  int depth = 0;  // objects and arrays open around the current event
  std::string last_key;
  auto check = [&](int /*depth*/, nlohmann::json::parse_event_t event, nlohmann::json& parsed) {
    using E = nlohmann::json::parse_event_t;
    if (event == E::object_start || event == E::array_start) {
      // Refused while opening: the over-deep value is never built, so never printed or freed.
      if (++depth > kMaxJsonDepth)
        throw std::runtime_error(what + " nests deeper than " + std::to_string(kMaxJsonDepth) +
                                 " levels");
    }
    if (event == E::object_end || event == E::array_end) --depth;
    if (event == E::object_start) open.push_back({open.empty() ? std::string() : last_key, {}});
    if (event == E::object_end) open.pop_back();
    if (event == E::key) {
      last_key = parsed.get<std::string>();
      if (!open.back().keys.insert(last_key).second)
        throw std::runtime_error(what + " has the key '" + json_key_text(last_key) + "' twice" +
                                 (open.size() > 1
                                      ? " in the entry '" + json_key_text(open.back().name) + "'"
                                      : std::string()) +
                                 " (a JSON parser keeps only one of them: which is ambiguous)");
    }
    return true;
  };
  try {
    return nlohmann::json::parse(text.begin(), text.end(), check);
  } catch (const nlohmann::json::exception& e) {
    // e.what() starts with the library's tag ("[json.exception.parse_error.101] "), which names
    // nothing a reader of the message can act on: the rest says where and what.
    std::string detail = e.what();
    if (detail.rfind("[json.exception.", 0) == 0 && detail.find("] ") != std::string::npos)
      detail.erase(0, detail.find("] ") + 2);
    // The parser quotes what it last read, which may be a 50 MB number or hold control bytes.
    throw std::runtime_error(what +
                             " is not valid JSON: " + shortened(escape_controls(detail), 300));
  }
}

std::optional<uint64_t> json_uint(const nlohmann::json& v, uint64_t max) {
  if (v.is_number_unsigned() && v.get<uint64_t>() <= max) return v.get<uint64_t>();
  if (v.is_number_integer() && v.get<int64_t>() >= 0 &&
      static_cast<uint64_t>(v.get<int64_t>()) <= max)
    return static_cast<uint64_t>(v.get<int64_t>());
  return std::nullopt;
}

std::string json_excerpt(const nlohmann::json& v) {
  return shortened(
      escape_c1_controls(v.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)), 60);
}

std::string json_key_text(const std::string& key) {
  // dump() escapes C0 controls, quotes and backslashes; a parsed key is valid UTF-8.
  const std::string quoted =
      nlohmann::json(key).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  return shortened(escape_c1_controls(quoted.substr(1, quoted.size() - 2)), 80);
}

}  // namespace attograd::nn
