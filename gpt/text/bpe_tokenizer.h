// BpeTokenizer: GPT-2's byte-level byte-pair encoding, with GPT-2's own 50,257-token vocabulary.
//
// Sources: Radford et al. 2019, "Language Models are Unsupervised Multitask Learners" §2.2
// (byte-level BPE, and why merges never cross character categories); Sennrich et al. 2016,
// "Neural Machine Translation of Rare Words with Subword Units" (BPE itself). The vocabulary
// files are OpenAI's GPT-2 release as shipped in data/gpt2/ (see data/gpt2/README.md).
//
// Encoding "hello  world" takes four steps:
//
//   1. Pre-tokenise with GPT-2's regular expression (kGpt2Pattern below), so merges never
//      cross a word, number or punctuation boundary: "hello", " ", " world". A space sticks to
//      the word after it, and a run of whitespace stops one short of the next word
//      ("\s+(?!\S)"), so " world" is the same token however many spaces precede it.
//   2. Take each piece's UTF-8 bytes: every text is bytes, so there is no unknown token.
//   3. Start from one token per byte and merge adjacent pairs, always the pair whose merge has
//      the lowest rank (its position in vocab.bpe, i.e. the order the merges were learned),
//      until no adjacent pair has a merge: "hello" -> h e l l o -> ... -> "hello".
//   4. Look the resulting byte strings up: [31373, 220, 995].
//
// The files spell bytes as printable characters (OpenAI's bytes_to_unicode): bytes that are
// printable Latin-1 ('!'..'~', '¡'..'¬', '®'..'ÿ') stand for themselves, the other 68 bytes
// for U+0100 + n in byte order, so ' ' (0x20) is 'Ġ' (U+0120) and '\n' is 'Ċ'. That is a
// property of the files only: this class converts every entry to raw bytes when it loads them,
// and works on bytes from then on. So a literal 'Ġ' in the text is its own UTF-8 bytes C4 A0
// (ids [128, 254]), never a space.
//
// "<|endoftext|>" (id 50256) separates documents in GPT-2's training data. encode() treats it
// as ordinary text (7 tokens), so text from a user can never smuggle in a document boundary;
// encode(text, AllowSpecial::yes) turns every occurrence into id 50256.
//
// Decoding concatenates the tokens' bytes. A token can end inside a UTF-8 character ("😀" is
// [47249, 222]: F0 9F 98 + 80), so decode() replaces bytes that do not form characters with
// U+FFFD rather than throwing, and StreamDecoder (gpt/text/tokenizer.h) holds such bytes back while
// sampling.
//
// Thread safety: all const member functions may be called concurrently. encode() keeps a cache
// of piece -> ids (most words recur: the 4 MB King James Bible cuts into 952,556 pieces of
// which 14,364 are distinct, so ~98% are cache hits), guarded by a mutex held only for the
// lookup and the insert. Speed on the 2-core reference VM: the whole Bible (4,153,204 bytes,
// 1,031,936 tokens) encodes in ~0.12 s, about half of it in PCRE2; loading the files takes ~0.09 s.
//
// Fidelity: PCRE2 10.42 (Debian 12) has Unicode 14 tables. Compared with Python's `regex`
// module (what OpenAI's encoder.py runs the pattern with) on every code point, the pieces agree
// for every character assigned in Unicode 14 except U+180E MONGOLIAN VOWEL SEPARATOR, which
// PCRE2 still treats as whitespace; characters assigned later are unknown to PCRE2 and may be
// cut differently. On 1.1 million test strings, a separate Python BPE over the `regex` pieces
// gave the same ids wherever the pieces agreed (checked when this was written). Round trips
// never depend on any of this: every byte has a token.
//
// Errors: a missing or malformed vocabulary file is std::runtime_error naming the path (and
// $ATTOGRAD_DATA_DIR, which says where the files are looked for); text that is not UTF-8 is
// std::invalid_argument naming the byte offset; an id outside [0, 50257) is std::out_of_range
// naming the id.
#pragma once

#include <array>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "gpt/text/tokenizer.h"

namespace attograd::gpt {

/// GPT-2's pre-tokenisation pattern, verbatim from OpenAI's encoder.py (compiled with PCRE2's
/// UTF and UCP options, so \p{L}, \p{N} and \s are Unicode classes): English contractions,
/// then an optional space followed by a run of letters, of digits, or of other non-space
/// characters, then whitespace.
inline constexpr std::string_view kGpt2Pattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

/// Whether encode() turns "<|endoftext|>" into its special id or treats it as text.
enum class AllowSpecial { no, yes };

/// The directory holding attograd's data files (gpt2/encoder.json, gpt2/vocab.bpe), the first
/// of: the environment variable ATTOGRAD_DATA_DIR if it is set and not empty; the installed
/// data folder <the program's folder>/../share/attograd when it holds gpt2/ (`cmake --install`
/// puts the attograd binary in bin/ and the files in share/attograd/); the data/ folder of the
/// source tree this library was built from. Does not check that the result exists.
std::filesystem::path data_dir();

/// data_dir()'s rule on given inputs: `env` (ATTOGRAD_DATA_DIR's value, or nullptr), `program`
/// (the running program's path; empty when unknown) and `built_from` (the source tree's data/).
/// Sets *why, when given, to how the folder was chosen, for error messages.
std::filesystem::path data_dir(const char* env, const std::filesystem::path& program,
                               const std::filesystem::path& built_from, std::string* why = nullptr);

/// GPT-2's byte-level BPE tokenizer (see the top of this file). V = 50257 ids: 256 single
/// bytes, 50,000 merges, and <|endoftext|>.
class BpeTokenizer : public Tokenizer {
 public:
  /// GPT-2's vocabulary size V.
  static constexpr int64_t kVocabSize = 50257;
  /// The id of "<|endoftext|>", GPT-2's document separator.
  static constexpr int64_t kEndOfText = 50256;
  /// The text of the special token.
  static constexpr std::string_view kEndOfTextText = "<|endoftext|>";

  /// Loads GPT-2's vocabulary from data_dir()/gpt2/{encoder.json, vocab.bpe} (~0.1 s).
  /// Throws std::runtime_error naming the missing file and ATTOGRAD_DATA_DIR, or as
  /// from_files() for a malformed one.
  static BpeTokenizer gpt2();
  /// The two files gpt2() reads, {encoder.json, vocab.bpe}: Hugging Face's GPT-2 tokenizer is
  /// the same pair under the names vocab.json and merges.txt. Throws as gpt2() when one is
  /// missing.
  static std::vector<std::filesystem::path> gpt2_files();

  /// Loads a vocabulary from OpenAI's two files: `encoder_json`, a JSON object from token (in
  /// the bytes_to_unicode spelling) to id, and `vocab_bpe`, a "#version" line followed by one
  /// merge "left right" per line, its rank being its index among the merges (0-based).
  /// Throws std::runtime_error naming the path and the problem (with a line number for
  /// vocab.bpe) when a file is missing or malformed: ids not exactly 0..N-1, a token not
  /// spelled in the byte alphabet, a missing single byte, a merge of unknown tokens or whose
  /// result is not in the vocabulary, or a merge using a token before the merge that makes it.
  static BpeTokenizer from_files(const std::filesystem::path& encoder_json,
                                 const std::filesystem::path& vocab_bpe);

  BpeTokenizer(BpeTokenizer&&) noexcept;
  BpeTokenizer& operator=(BpeTokenizer&&) noexcept;
  ~BpeTokenizer() override;

  /// Tokenizer interface: kind "gpt2"; serialize() is "gpt2" too (the standard vocabulary,
  /// which load_tokenizer("gpt2", "gpt2") reloads from data_dir()); V = 50257.
  std::string kind() const override { return "gpt2"; }
  std::string serialize() const override { return "gpt2"; }
  int64_t vocab_size() const override { return static_cast<int64_t>(tokens_.size()); }

  /// Ids of UTF-8 text, shape (n,), with "<|endoftext|>" treated as ordinary text. Throws
  /// std::invalid_argument naming the byte offset of the first invalid UTF-8 sequence.
  std::vector<int64_t> encode(std::string_view text) const override;
  /// Same; with AllowSpecial::yes each "<|endoftext|>" becomes id 50256 (kEndOfText).
  std::vector<int64_t> encode(std::string_view text, AllowSpecial allow) const;

  /// The text of `ids`: their bytes concatenated, with each maximal invalid UTF-8 sequence
  /// replaced by U+FFFD (so decode({47249}) is one U+FFFD, never an exception). Throws
  /// std::out_of_range naming the first id outside [0, V) and its index.
  std::string decode(std::span<const int64_t> ids) const override;
  /// Same, for a vector (also lets callers write decode({31373, 995})).
  std::string decode(const std::vector<int64_t>& ids) const {
    return decode(std::span<const int64_t>(ids));
  }

  /// The raw bytes of token `id` (e.g. " world" for 995; "\xF0\x9F\x98" for 47249, not valid
  /// UTF-8 on its own). Throws std::out_of_range naming the id and V.
  std::string token_bytes(int64_t id) const override;

  /// The id of the token whose bytes are exactly `bytes`, or -1 if there is none.
  int64_t find(std::string_view bytes) const;

  /// Step 1 of encode: the pieces of `text` (views into it) that GPT-2's pattern cuts it into;
  /// concatenated they are `text` again. "hello  world" -> {"hello", " ", " world"}. Throws
  /// std::invalid_argument for invalid UTF-8, naming the byte offset.
  std::vector<std::string_view> pre_tokenize(std::string_view text) const;

  /// Steps 2-4 of encode for one piece (any bytes, uncached): ids in piece order. Merges the
  /// lowest-rank adjacent pair first, every occurrence left to right, then the next; a heap of
  /// candidate pairs over a linked list of symbols makes this O(n log n) in the piece length n.
  std::vector<int64_t> bpe(std::string_view piece) const;
  /// The same result computed the plain way, O(n^2): rescan all adjacent pairs for the lowest
  /// rank, merge its occurrences, repeat. The readable specification and the tests' oracle.
  std::vector<int64_t> bpe_reference(std::string_view piece) const;

  /// Number of merges (50,000 for GPT-2).
  int64_t num_merges() const { return static_cast<int64_t>(merges_.size()); }

  /// OpenAI's bytes_to_unicode: the printable character that stands for each byte in
  /// encoder.json and vocab.bpe. bytes_to_unicode()[0x20] == U'Ġ' (U+0120).
  static const std::array<char32_t, 256>& bytes_to_unicode();

 private:
  BpeTokenizer();
  // Appends the ids of one pre-tokenised piece, through the cache.
  void encode_piece(std::string_view piece, std::vector<int64_t>& out) const;
  // Appends the ids of text without special tokens (validated UTF-8).
  void encode_ordinary(std::string_view text, std::vector<int64_t>& out) const;
  // Throws std::out_of_range naming id and V; `where` says which call and which index.
  void check_id(int64_t id, const char* where, size_t index) const;

  // A merge: the pair (left, right) of token ids becomes `result`; lower rank merges first.
  struct Merge {
    int32_t rank;
    int32_t result;
  };
  static uint64_t pair_key(int32_t left, int32_t right) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(left)) << 32) |
           static_cast<uint32_t>(right);
  }
  // The merge of (left, right), or nullptr.
  const Merge* find_merge(int32_t left, int32_t right) const;

  // Lets a map keyed by std::string be probed with a string_view, without a copy per lookup.
  struct StringHash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const noexcept {
      return std::hash<std::string_view>{}(s);
    }
  };

  std::vector<std::string> tokens_;  // (V,) raw bytes of each id
  std::unordered_map<std::string, int32_t, StringHash, std::equal_to<>> ids_;  // bytes -> id
  std::array<int32_t, 256> byte_ids_{};         // id of each single byte
  std::unordered_map<uint64_t, Merge> merges_;  // pair_key(left, right) -> merge

  // PCRE2 state and the piece cache; behind a pointer so the header needs no pcre2.h and the
  // class stays movable (a std::mutex is not).
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace attograd::gpt
