// CharTokenizer: one token per Unicode character, the tokenizer of the lecture's first models.
//
// The vocabulary is the sorted set of distinct code points of a training text, and a
// character's id is its rank in that set. Sorting makes the ids a function of the character
// set alone (not of the order characters first appear), so the same text always gives the same
// ids, and ids order like the characters: on Tiny Shakespeare '\n' is 0 and ' ' is 1.
//
// Code points, not bytes: "café" is 4 tokens, and 'é' is one id, never two UTF-8 bytes that a
// model could learn to emit separately (and so produce invalid UTF-8 when sampling).
//
// Ids are int64_t because they become i64 tensors (Tensor::from_ids).
//
// Errors: text that is not UTF-8, or an empty vocabulary, is std::invalid_argument; a character
// outside the vocabulary in encode() is std::invalid_argument naming it and its position; an id
// outside [0, V) in decode() is std::out_of_range naming the id and V.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "gpt/text/tokenizer.h"

namespace attograd::gpt {

/// Maps UTF-8 text to ids in [0, V) and back, one id per Unicode code point.
class CharTokenizer : public Tokenizer {
 public:
  /// Builds the vocabulary of `utf8_text`: its distinct code points, sorted ascending.
  /// Throws std::invalid_argument if the text is empty (nothing to learn a vocabulary from) or
  /// not valid UTF-8 (naming the byte offset).
  static CharTokenizer from_text(std::string_view utf8_text);

  /// Restores a tokenizer saved by to_string() (e.g. from checkpoint metadata). Throws
  /// std::invalid_argument if `serialized` is empty, not valid UTF-8, or its code points are not
  /// strictly increasing (then it is not a vocabulary to_string() wrote: it names the first
  /// character out of order).
  static CharTokenizer from_string(std::string_view serialized);

  /// The vocabulary itself as UTF-8: its V characters in id order, nothing else. It is its own
  /// format (a sorted distinct list checks itself on load) and readable in a checkpoint's
  /// metadata: on "hello world" it is " dehlorw".
  std::string to_string() const;

  /// Tokenizer interface: kind "char", serialize() = to_string(), token_bytes() = token_text().
  std::string kind() const override { return "char"; }
  std::string serialize() const override { return to_string(); }
  std::string token_bytes(int64_t id) const override { return token_text(id); }

  /// V, the number of distinct characters (ids are 0 .. V-1).
  int64_t vocab_size() const override { return static_cast<int64_t>(vocab_.size()); }

  /// The vocabulary as code points in id order: vocabulary()[id] is the character of `id`.
  const std::u32string& vocabulary() const { return vocab_; }

  /// The ids of the characters of `utf8_text`, one per code point, shape (n,) with n the number
  /// of code points. Throws std::invalid_argument if the text is not valid UTF-8 (naming the
  /// byte offset), or if a character is not in the vocabulary, naming it, e.g.
  /// "'p' (U+0070)", with its position as a character index and a byte offset.
  std::vector<int64_t> encode(std::string_view utf8_text) const override;

  /// The UTF-8 text of `ids`. Throws std::out_of_range naming the first id outside [0, V),
  /// its index in `ids`, and V.
  std::string decode(std::span<const int64_t> ids) const override;
  /// Same, for a vector (also lets callers write decode({3, 5, 4, 1})).
  std::string decode(const std::vector<int64_t>& ids) const {
    return decode(std::span<const int64_t>(ids));
  }

  /// The id of code point `cp`. Throws std::invalid_argument naming it if it is not in the
  /// vocabulary.
  int64_t id_of(char32_t cp) const;

  /// True if `cp` is in the vocabulary.
  bool contains(char32_t cp) const { return find(cp) >= 0; }

  /// A character of a text that is not in the vocabulary: its code point and its position, a
  /// 1-based character (code point) index, as a person counts.
  struct Unknown {
    char32_t code_point;
    int64_t position;
  };
  /// The first character of `utf8_text` not in the vocabulary, or nullopt when every one is:
  /// what a front end checks to word its own message (a prompt, a corpus read with another
  /// text's checkpoint) before encode's. Throws std::invalid_argument on invalid UTF-8.
  std::optional<Unknown> first_unknown(std::string_view utf8_text) const;

  /// The character of `id` as UTF-8. Throws std::out_of_range naming id and V.
  std::string token_text(int64_t id) const;

 private:
  explicit CharTokenizer(std::u32string sorted_vocab);
  // -1 if cp is not in the vocabulary.
  int64_t find(char32_t cp) const;
  // Throws std::out_of_range naming id and V; `where` says which call and which index.
  void check_id(int64_t id, const char* where, size_t index) const;

  std::u32string vocab_;                 // (V,) code points, strictly increasing
  std::vector<std::string> token_text_;  // (V,) UTF-8 of each id, so decode only appends bytes
  std::array<int32_t, 128> ascii_ids_;   // id of each ASCII code point or -1: the common case
                                         // in English text skips the binary search
};

}  // namespace attograd::gpt
