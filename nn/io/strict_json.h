// Strict parsing of JSON that comes from files: safetensors headers, checkpoint metadata,
// Hugging Face config.json, GPT-2's encoder.json. Nothing read from a file is trusted: what a
// lenient parser would silently accept (the last of two equal keys, a value nested 100,000
// levels deep) is an error that names the document and the key, and the helpers below quote a
// value or a key in an error without letting it garble or flood the message. Reading the fields
// of a settings struct strictly (an integer that is 3.9, a key no field knows) is
// gpt/io/json_fields.h's.
//
// nlohmann_json is a public dependency of the library: this header includes it.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

namespace attograd::nn {

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
nlohmann::json parse_json(std::string_view text, const std::string& what);

/// The value v as an integer in [0, max], or nullopt for anything else: a negative number, a
/// float even when integral (70.9, 2.0, 1e3), a value above max (2^64), a string, a bool.
std::optional<uint64_t> json_uint(const nlohmann::json& v, uint64_t max);

/// v as text for an error message: its JSON with control characters (C0 and C1) escaped, at most
/// 60 bytes (a huge array or a 50 MB string stays short), never cut inside a UTF-8 character.
std::string json_excerpt(const nlohmann::json& v);

/// A key of a parsed JSON object as an error message can print it whole: control characters
/// (C0 and C1) as JSON escapes ("a\u0000b", "\u0085"), the rest as it is, no quotes added, at
/// most 80 bytes ("..." for the rest, never inside a UTF-8 character). A raw
/// NUL cut the message short where it was printed as a C string (issue 31, kind 14).
std::string json_key_text(const std::string& key);

}  // namespace attograd::nn
