#include "gpt/text/tokenizer.h"

#include <stdexcept>

#include "gpt/text/bpe_tokenizer.h"
#include "gpt/text/char_tokenizer.h"

namespace attograd::gpt {

std::unique_ptr<Tokenizer> load_tokenizer(const std::string& kind, const std::string& data) {
  if (kind == "char") return std::make_unique<CharTokenizer>(CharTokenizer::from_string(data));
  if (kind == "gpt2") {
    // Only the standard vocabulary exists, so the data is just its name (BpeTokenizer::serialize).
    if (data != "gpt2") {
      throw std::invalid_argument(
          "gpt2 tokenizer data must be 'gpt2' (the standard GPT-2 vocabulary), got '" +
          data.substr(0, 40) + "'");
    }
    return std::make_unique<BpeTokenizer>(BpeTokenizer::gpt2());
  }
  throw std::invalid_argument("unknown tokenizer kind '" + kind + "' (expected char or gpt2)");
}

namespace {

// Length of the UTF-8 sequence a lead byte announces, 0 for a byte that cannot start one.
int sequence_length(unsigned char b) {
  if (b < 0x80) return 1;
  if (b >= 0xC2 && b <= 0xDF) return 2;
  if (b >= 0xE0 && b <= 0xEF) return 3;
  if (b >= 0xF0 && b <= 0xF4) return 4;
  return 0;
}

// Whether the second byte is allowed after lead byte b (excludes overlongs, surrogates and
// code points past U+10FFFF, as the Unicode standard's table 3-7 does).
bool valid_second(unsigned char b, unsigned char c) {
  if (b == 0xE0) return c >= 0xA0 && c <= 0xBF;
  if (b == 0xED) return c >= 0x80 && c <= 0x9F;
  if (b == 0xF0) return c >= 0x90 && c <= 0xBF;
  if (b == 0xF4) return c >= 0x80 && c <= 0x8F;
  return c >= 0x80 && c <= 0xBF;
}

// How many bytes of `s` from i form a valid (possibly incomplete) prefix of one sequence;
// `complete` tells whether the sequence is whole.
size_t valid_prefix(std::string_view s, size_t i, bool& complete) {
  const unsigned char b = static_cast<unsigned char>(s[i]);
  const int n = sequence_length(b);
  complete = false;
  if (n == 0) return 0;
  size_t k = 1;
  while (k < static_cast<size_t>(n) && i + k < s.size()) {
    const unsigned char c = static_cast<unsigned char>(s[i + k]);
    if (k == 1 ? !valid_second(b, c) : (c < 0x80 || c > 0xBF)) return k;
    ++k;
  }
  complete = k == static_cast<size_t>(n);
  return k;
}

const char kReplacement[] = "\xEF\xBF\xBD";  // U+FFFD

}  // namespace

std::string utf8_replace_invalid(std::string_view s) {
  std::string out;
  size_t i = 0;
  while (i < s.size()) {
    bool complete;
    const size_t k = valid_prefix(s, i, complete);
    if (complete) {
      out.append(s.substr(i, k));
      i += k;
    } else {
      out += kReplacement;
      i += k == 0 ? 1 : k;  // one U+FFFD per maximal invalid subpart
    }
  }
  return out;
}

std::string StreamDecoder::push(int64_t id) {
  pending_ += tokenizer_.token_bytes(id);
  // Emit everything except a trailing sequence that is valid so far but not complete.
  size_t i = 0, keep_from = pending_.size();
  while (i < pending_.size()) {
    bool complete;
    const size_t k = valid_prefix(pending_, i, complete);
    if (!complete && k > 0 && i + k == pending_.size()) {
      keep_from = i;
      break;
    }
    i += k == 0 ? 1 : k;
  }
  std::string out = utf8_replace_invalid(std::string_view(pending_).substr(0, keep_from));
  pending_.erase(0, keep_from);
  return out;
}

std::string StreamDecoder::flush() {
  std::string out = utf8_replace_invalid(pending_);
  pending_.clear();
  return out;
}

}  // namespace attograd::gpt
