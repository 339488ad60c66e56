// CharTokenizer: vocabulary = the sorted distinct code points of a text (see char_tokenizer.h).
#include "gpt/text/char_tokenizer.h"

#include <algorithm>
#include <stdexcept>

#include "nn/io/utf8.h"

namespace attograd::gpt {

CharTokenizer::CharTokenizer(std::u32string sorted_vocab) : vocab_(std::move(sorted_vocab)) {
  ascii_ids_.fill(-1);
  token_text_.reserve(vocab_.size());
  for (size_t id = 0; id < vocab_.size(); ++id) {
    if (vocab_[id] < 128) ascii_ids_[vocab_[id]] = static_cast<int32_t>(id);
    token_text_.push_back(nn::encode_utf8(vocab_[id]));
  }
}

CharTokenizer CharTokenizer::from_text(std::string_view utf8_text) {
  if (utf8_text.empty()) {
    throw std::invalid_argument(
        "CharTokenizer::from_text: the text is empty, so there is no vocabulary to build; "
        "pass the training text");
  }
  nn::validate_utf8(utf8_text, "CharTokenizer::from_text");
  // One bit per possible code point (136 KiB): marking is O(n) and reading the bits in order
  // yields the vocabulary already sorted, with no sort of a multi-megabyte text. Reading stops
  // at the largest code point seen: 128 bits for ASCII, not 1.1 million (a short text, as a
  // test or a fuzzer makes thousands of, then costs microseconds, not a millisecond).
  std::vector<bool> seen(nn::kMaxCodePoint + 1, false);
  char32_t max_seen = 0;
  for (size_t pos = 0; pos < utf8_text.size();) {
    const char32_t cp = nn::decode_next(utf8_text, pos);
    seen[cp] = true;
    max_seen = std::max(max_seen, cp);
  }
  std::u32string vocab;
  for (char32_t cp = 0; cp <= max_seen; ++cp) {
    if (seen[cp]) vocab.push_back(cp);
  }
  return CharTokenizer(std::move(vocab));
}

CharTokenizer CharTokenizer::from_string(std::string_view serialized) {
  if (serialized.empty()) {
    throw std::invalid_argument(
        "CharTokenizer::from_string: the serialized vocabulary is empty; expected the string "
        "CharTokenizer::to_string() wrote (its characters in id order)");
  }
  nn::validate_utf8(serialized, "CharTokenizer::from_string");
  std::u32string vocab = nn::decode_utf8(serialized);
  for (size_t i = 1; i < vocab.size(); ++i) {
    if (vocab[i] <= vocab[i - 1]) {
      throw std::invalid_argument(
          "CharTokenizer::from_string: not a vocabulary written by to_string(): character " +
          std::to_string(i) + ", " + nn::describe_code_point(vocab[i]) + ", " +
          (vocab[i] == vocab[i - 1]
               ? "repeats the one before it"
               : "sorts before the one before it, " + nn::describe_code_point(vocab[i - 1])) +
          "; a vocabulary lists distinct code points in increasing order");
    }
  }
  return CharTokenizer(std::move(vocab));
}

std::string CharTokenizer::to_string() const { return nn::encode_utf8(vocab_); }

int64_t CharTokenizer::find(char32_t cp) const {
  if (cp < 128) return ascii_ids_[cp];
  auto it = std::lower_bound(vocab_.begin(), vocab_.end(), cp);
  if (it == vocab_.end() || *it != cp) return -1;
  return it - vocab_.begin();
}

std::optional<CharTokenizer::Unknown> CharTokenizer::first_unknown(
    std::string_view utf8_text) const {
  size_t offset = 0;
  for (int64_t position = 1; offset < utf8_text.size(); ++position)
    if (const char32_t cp = nn::decode_next(utf8_text, offset); !contains(cp))
      return Unknown{cp, position};
  return std::nullopt;
}

int64_t CharTokenizer::id_of(char32_t cp) const {
  const int64_t id = find(cp);
  if (id < 0) {
    throw std::invalid_argument("CharTokenizer: character " + nn::describe_code_point(cp) +
                                " is not in the vocabulary of " + std::to_string(vocab_size()) +
                                " characters");
  }
  return id;
}

std::vector<int64_t> CharTokenizer::encode(std::string_view utf8_text) const {
  nn::validate_utf8(utf8_text, "CharTokenizer::encode");
  std::vector<int64_t> ids;
  ids.reserve(utf8_text.size());  // upper bound: one id per byte of ASCII text
  size_t pos = 0;
  while (pos < utf8_text.size()) {
    const size_t byte_offset = pos;
    const char32_t cp = nn::decode_next(utf8_text, pos);
    const int64_t id = find(cp);
    if (id < 0) {
      throw std::invalid_argument(
          "CharTokenizer::encode: character " + nn::describe_code_point(cp) + " at position " +
          std::to_string(ids.size()) + " (byte offset " + std::to_string(byte_offset) +
          ") is not in the vocabulary of " + std::to_string(vocab_size()) +
          " characters; build the tokenizer from a text that contains it, or remove it from "
          "the input");
    }
    ids.push_back(id);
  }
  return ids;
}

void CharTokenizer::check_id(int64_t id, const char* where, size_t index) const {
  if (id < 0 || id >= vocab_size()) {
    throw std::out_of_range(std::string("CharTokenizer::") + where + ": id " + std::to_string(id) +
                            " at index " + std::to_string(index) +
                            " is outside the vocabulary [0, " + std::to_string(vocab_size()) +
                            "), V = " + std::to_string(vocab_size()) +
                            "; were the ids made by a different tokenizer or model?");
  }
}

std::string CharTokenizer::decode(std::span<const int64_t> ids) const {
  std::string out;
  out.reserve(ids.size());
  for (size_t i = 0; i < ids.size(); ++i) {
    check_id(ids[i], "decode", i);
    out += token_text_[static_cast<size_t>(ids[i])];
  }
  return out;
}

std::string CharTokenizer::token_text(int64_t id) const {
  check_id(id, "token_text", 0);
  return token_text_[static_cast<size_t>(id)];
}

}  // namespace attograd::gpt
