// Fuzz target: the character tokenizer (gpt/text/char_tokenizer.h), built from a text as `train`
// builds it, and restored from a checkpoint's serialized vocabulary as `sample` restores it.
//
// The input is "<text>", or "<serialized vocabulary>\n--8<--\n<text>". Properties:
// - from_text(text) on valid, non-empty UTF-8: V = the number of distinct code points, ids
//   sorted like the characters, decode(encode(text)) == text, and to_string() restores an
//   equal tokenizer; on anything else it throws std::invalid_argument (documented);
// - a vocabulary restored by from_string (or load_tokenizer("char", ...)) encodes a text
//   whose characters it holds, with decode(encode(text)) == text, and refuses any other text
//   with std::invalid_argument; ids outside [0, V) are std::out_of_range.
#include <cstdint>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "gpt/text/char_tokenizer.h"
#include "gpt/text/tokenizer.h"
#include "nn/io/utf8.h"
#include "tests/fuzz/fuzz_support.h"

using namespace attograd::gpt;
namespace nn = attograd::nn;

namespace {

// Encodes text if the tokenizer holds all of its characters; checks the round trip and the
// ids' range. False when the tokenizer refused the text (std::invalid_argument).
bool round_trip(const Tokenizer& tok, std::string_view text) {
  std::vector<int64_t> ids;
  try {
    ids = tok.encode(text);
  } catch (const std::invalid_argument&) {
    return false;
  }
  for (int64_t id : ids)
    FUZZ_CHECK(id >= 0 && id < tok.vocab_size(), "encode gave id " + std::to_string(id));
  FUZZ_CHECK(tok.decode(ids) == text, "decode(encode(text)) != text");
  return true;
}

void check_bad_ids(const Tokenizer& tok) {
  for (int64_t id : {int64_t{-1}, tok.vocab_size(), INT64_MAX}) {
    bool refused = false;
    try {
      tok.decode(std::vector<int64_t>{0, id});
    } catch (const std::out_of_range&) {
      refused = true;
    }
    FUZZ_CHECK(refused, "decode accepted id " + std::to_string(id));
  }
}

void check_from_text(std::string_view text) {
  std::optional<CharTokenizer> tok;
  try {
    tok.emplace(CharTokenizer::from_text(text));
  } catch (const std::invalid_argument&) {
    FUZZ_CHECK(text.empty() || nn::find_utf8_error(text),
               "from_text refused valid, non-empty UTF-8");
    return;
  }
  const std::u32string cps = nn::decode_utf8(text);
  const std::set<char32_t> distinct(cps.begin(), cps.end());
  FUZZ_CHECK(tok->vocab_size() == static_cast<int64_t>(distinct.size()),
             "V is not the number of distinct characters");
  FUZZ_CHECK(tok->vocabulary() == std::u32string(distinct.begin(), distinct.end()),
             "the vocabulary is not sorted");
  FUZZ_CHECK(round_trip(*tok, text), "from_text's tokenizer refused its own text");
  FUZZ_CHECK(CharTokenizer::from_string(tok->to_string()).vocabulary() == tok->vocabulary(),
             "from_string(to_string()) changed the vocabulary");
  check_bad_ids(*tok);
}

void check_restored(std::string_view serialized, std::string_view text) {
  std::unique_ptr<Tokenizer> tok;
  try {
    tok = load_tokenizer("char", std::string(serialized));
  } catch (const std::invalid_argument&) {
    return;  // a clean refusal of a malformed vocabulary
  }
  FUZZ_CHECK(tok->serialize() == serialized,
             "serialize() does not give back the vocabulary it was loaded from");
  const bool encoded = round_trip(*tok, text);
  if (!encoded && !nn::find_utf8_error(text)) {
    bool missing = false;  // refused valid UTF-8: some character must be outside the vocabulary
    const std::u32string vocab = nn::decode_utf8(serialized);
    for (char32_t cp : nn::decode_utf8(text))
      missing = missing || vocab.find(cp) == std::u32string::npos;
    FUZZ_CHECK(missing, "encode refused a text whose characters are all in the vocabulary");
  }
  check_bad_ids(*tok);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto [first, text] = attograd::fuzz::split_input(attograd::fuzz::as_text(data, size));
  if (text) {
    check_restored(first, *text);
  } else {
    check_from_text(first);
  }
  return 0;
}
