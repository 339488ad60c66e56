// Tokenizer: the interface the trainer, sampler and CLI use, so a model can be trained and
// sampled with characters (CharTokenizer) or GPT-2's byte-level BPE alike.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace attograd::gpt {

/// Text <-> token ids in [0, vocab_size()).
class Tokenizer {
 public:
  virtual ~Tokenizer() = default;
  /// "char" or "gpt2": stored in checkpoints next to serialize().
  virtual std::string kind() const = 0;
  virtual int64_t vocab_size() const = 0;
  /// Ids of UTF-8 text. Throws std::invalid_argument for text the tokenizer cannot encode
  /// (invalid UTF-8, or a character outside a char vocabulary), naming it.
  virtual std::vector<int64_t> encode(std::string_view text) const = 0;
  /// Text of ids. Throws std::out_of_range for an id outside [0, vocab_size()).
  virtual std::string decode(std::span<const int64_t> ids) const = 0;
  /// The raw bytes of one token: for byte-level BPE possibly an incomplete UTF-8 sequence.
  /// Throws std::out_of_range for a bad id.
  virtual std::string token_bytes(int64_t id) const = 0;
  /// What a checkpoint stores to rebuild this tokenizer with load_tokenizer().
  virtual std::string serialize() const = 0;
};

/// Rebuilds a tokenizer from a checkpoint's (kind, serialize()): "char" (the vocabulary) or
/// "gpt2" (the BPE files shipped in data/gpt2, see bpe_tokenizer.h). Throws
/// std::invalid_argument for an unknown kind or malformed data, std::runtime_error when the
/// GPT-2 vocabulary files cannot be read.
std::unique_ptr<Tokenizer> load_tokenizer(const std::string& kind, const std::string& data);

/// Turns a stream of token ids into text as they arrive, holding back the bytes of a UTF-8
/// sequence that is not complete yet (a byte-level BPE token can end mid-character), so what
/// it returns is always valid UTF-8. Bytes that can never become a character come out as
/// U+FFFD. Never throws for bytes; a bad id throws std::out_of_range.
class StreamDecoder {
 public:
  explicit StreamDecoder(const Tokenizer& tokenizer) : tokenizer_(tokenizer) {}
  /// The text completed by adding token `id` (possibly empty).
  std::string push(int64_t id);
  /// Whatever is still held back, as U+FFFD replacement characters (end of the stream).
  std::string flush();

 private:
  const Tokenizer& tokenizer_;
  std::string pending_;
};

/// Decodes bytes as UTF-8, replacing each maximal invalid or truncated sequence by U+FFFD
/// (the WHATWG / Python errors="replace" convention). Never throws.
std::string utf8_replace_invalid(std::string_view bytes);

}  // namespace attograd::gpt
