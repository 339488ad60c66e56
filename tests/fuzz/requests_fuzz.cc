// Fuzz target: the page's request API (web/attograd_api.h: attograd_call, JSON in and out), the
// one function the WebAssembly page calls, on a request's text.
//
// Properties:
// - every reply is a JSON object with one key: "ok", or "error" with a non-empty message that
//   is not nlohmann's own (one that starts "[json.exception..."), which would mean a field was
//   read without the strict reader;
// - an accepted request sent again with one more key is refused, naming that key: every
//   command checks its fields (Request::finish) before it acts.
// Left out, because they reach outside the engine or take long: "save" and "load" (paths of this
// machine), "text_file" (a file to read), and sizes that make a request slow under the sanitizers
// (a model_new, train or sample whose sizes or counts exceed 16).
// The module keeps one model between requests, as the page's does, so an input's answer may
// depend on those before it: the regression runner replays them in a fixed order.
#include <cstdint>
#include <set>
#include <stdexcept>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "nn/io/strict_json.h"
#include "tests/fuzz/fuzz_support.h"
#include "web/attograd_api.h"

using namespace attograd;
using json = nlohmann::json;

namespace {

// Whether the request, as the engine's own reader reads it, is one the harness leaves out.
bool left_out(const std::string& text) {
  json request;
  try {
    request = nn::parse_json(text, "the request");
  } catch (const std::runtime_error&) {
    return false;  // the engine refuses it the same way: a property to check
  }
  if (!request.is_object()) return false;
  const auto cmd = request.find("cmd");
  if (cmd != request.end() && cmd->is_string() && (*cmd == "save" || *cmd == "load")) return true;
  if (request.contains("text_file")) return true;
  static const std::set<std::string> sizes = {
      "n_layer",    "n_head", "n_embd",         "block_size", "batch_size", "grad_accum",
      "eval_iters", "steps",  "max_new_tokens", "max_steps",  "rows",       "bars"};
  for (auto it = request.begin(); it != request.end(); ++it)
    if (sizes.count(it.key()) && it->is_number() && it->get<double>() > 16) return true;
  return false;
}

// The reply to `text`, checked to be one "ok" or one "error" with a message of the engine's.
json reply_to(const std::string& text) {
  const std::string reply = attograd_call(text.c_str());
  json r;
  try {
    r = json::parse(reply);
  } catch (const json::exception& e) {
    fuzz::fail("the reply is not JSON: " + reply.substr(0, 200));
  }
  FUZZ_CHECK(r.is_object() && r.size() == 1 && (r.contains("ok") || r.contains("error")),
             "the reply is not {\"ok\": ...} or {\"error\": ...}: " + reply.substr(0, 200));
  if (r.contains("error")) {
    FUZZ_CHECK(r["error"].is_string() && !r["error"].get<std::string>().empty(),
               "an empty error: " + reply.substr(0, 200));
    // nlohmann's own exceptions start with their tag (a parse error's text, which quotes the
    // request, may hold anything later on).
    FUZZ_CHECK(!r["error"].get<std::string>().starts_with("[json.exception"),
               "a field read by nlohmann, not the strict reader: " + reply.substr(0, 300));
  }
  return r;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // A C string, as the page passes it; the request's text up to its first NUL.
  const std::string text(reinterpret_cast<const char*>(data), size);
  const std::string request = text.substr(0, text.find('\0'));
  if (request.size() > 4096 || left_out(request)) return 0;
  const json r = reply_to(request);
  if (!r.contains("ok")) return 0;
  json again = nn::parse_json(request, "the request");
  const std::string key = "fuzz_extra_key";
  if (again.contains(key)) return 0;
  again[key] = 1;
  const json refused = reply_to(again.dump());
  FUZZ_CHECK(refused.contains("error") && refused["error"].get<std::string>().find(
                                              "has no field '" + key + "'") != std::string::npos,
             "an accepted request with an unknown key was not refused for it: " +
                 refused.dump().substr(0, 300));
  return 0;
}
