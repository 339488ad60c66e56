// BpeTokenizer: GPT-2's byte-level BPE (see bpe_tokenizer.h for the algorithm and sources).
#include "gpt/text/bpe_tokenizer.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <mutex>
#include <nlohmann/json.hpp>
#include <queue>
#include <sstream>
#include <stdexcept>

#include "nn/io/strict_json.h"
#include "nn/io/utf8.h"

#ifndef ATTOGRAD_DEFAULT_DATA_DIR
#error \
    "ATTOGRAD_DEFAULT_DATA_DIR (the source tree's data/ folder) must be defined by gpt/CMakeLists.txt"
#endif

namespace attograd::gpt {

namespace {

// The piece cache holds at most this many entries and is emptied when full: room for every
// distinct piece of the King James Bible or Tiny Shakespeare (~15k each) many times over, yet
// bounded (~10 MB) for a stream of text that never repeats.
constexpr size_t kMaxCacheEntries = size_t{1} << 17;
// Longer pieces (base64, long digit runs) are rare and seldom repeat: not worth caching.
constexpr size_t kMaxCachedPieceBytes = 64;

// The inverse of bytes_to_unicode: byte of each code point below 324 (= 256 + 68), or -1.
const std::array<int16_t, 324>& unicode_to_bytes() {
  static const std::array<int16_t, 324> table = [] {
    std::array<int16_t, 324> t;
    t.fill(-1);
    const auto& forward = BpeTokenizer::bytes_to_unicode();
    for (int b = 0; b < 256; ++b) t[forward[b]] = static_cast<int16_t>(b);
    return t;
  }();
  return table;
}

// Converts a token spelled in the byte alphabet (valid UTF-8) to the raw bytes it stands for.
// Returns false, with `bad` the offending code point, if a character is not in the alphabet.
bool alphabet_to_bytes(std::string_view spelled, std::string& out, char32_t& bad) {
  out.clear();
  const auto& table = unicode_to_bytes();
  for (size_t pos = 0; pos < spelled.size();) {
    const char32_t cp = nn::decode_next(spelled, pos);
    if (cp >= table.size() || table[cp] < 0) {
      bad = cp;
      return false;
    }
    out.push_back(static_cast<char>(table[cp]));
  }
  return true;
}

std::string read_whole_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    throw std::runtime_error("cannot read GPT-2 vocabulary file '" + path.string() +
                             "': it does not exist or is not readable");
  }
  std::ostringstream ss;
  ss << in.rdbuf();
  return std::move(ss).str();
}

std::string pcre2_message(int code) {
  std::array<PCRE2_UCHAR, 256> buffer;
  pcre2_get_error_message(code, buffer.data(), buffer.size());
  return reinterpret_cast<const char*>(buffer.data());
}

// data_dir()'s rule for this process: the program's path from /proc/self/exe (Linux; empty
// elsewhere, which skips the installed folder).
std::filesystem::path current_data_dir(std::string* why);

}  // namespace

std::filesystem::path data_dir(const char* env, const std::filesystem::path& program,
                               const std::filesystem::path& built_from, std::string* why) {
  const auto say = [why](const std::string& how) {
    if (why != nullptr) *why = how;
  };
  if (env != nullptr && *env != '\0') {
    say("ATTOGRAD_DATA_DIR is set to '" + std::string(env) + "'");
    return env;
  }
  if (!program.empty()) {
    const std::filesystem::path installed =
        program.parent_path().parent_path() / "share" / "attograd";
    std::error_code ec;
    if (std::filesystem::is_directory(installed / "gpt2", ec)) {
      say("ATTOGRAD_DATA_DIR is not set, and " + installed.string() +
          " is the installed data folder beside " + program.string());
      return installed;
    }
  }
  say("ATTOGRAD_DATA_DIR is not set and no installed data folder is beside the program, so the "
      "build's data folder '" +
      built_from.string() + "' was used");
  return built_from;
}

std::filesystem::path data_dir() { return current_data_dir(nullptr); }

namespace {

std::filesystem::path current_data_dir(std::string* why) {
  std::error_code ec;
  const std::filesystem::path program = std::filesystem::read_symlink("/proc/self/exe", ec);
  return data_dir(std::getenv("ATTOGRAD_DATA_DIR"), ec ? std::filesystem::path() : program,
                  ATTOGRAD_DEFAULT_DATA_DIR, why);
}

}  // namespace

const std::array<char32_t, 256>& BpeTokenizer::bytes_to_unicode() {
  // Printable Latin-1 bytes spell themselves; the 68 others (controls, space, DEL, NBSP,
  // soft hyphen) get U+0100, U+0101, ... in byte order, so every byte is a visible character
  // and the files are readable text with no whitespace inside a token.
  static const std::array<char32_t, 256> table = [] {
    std::array<char32_t, 256> t{};
    char32_t next = 256;
    for (int b = 0; b < 256; ++b) {
      const bool printable =
          (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
      t[b] = printable ? static_cast<char32_t>(b) : next++;
    }
    return t;
  }();
  return table;
}

// ---------------------------------------------------------------------------------------------
// PCRE2 state and the piece cache.

struct BpeTokenizer::Impl {
  pcre2_code* code = nullptr;
  std::mutex mutex;  // guards cache
  std::unordered_map<std::string, std::vector<int32_t>, StringHash, std::equal_to<>>
      cache;  // piece -> ids

  Impl() {
    int error = 0;
    PCRE2_SIZE offset = 0;
    code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(kGpt2Pattern.data()), kGpt2Pattern.size(),
                         PCRE2_UTF | PCRE2_UCP, &error, &offset, nullptr);
    if (code == nullptr) {
      throw std::logic_error("BpeTokenizer: GPT-2's pattern does not compile at offset " +
                             std::to_string(offset) + ": " + pcre2_message(error));
    }
    // JIT makes matching several times faster; when PCRE2 was built without it this fails and
    // pcre2_match silently uses the interpreter, with the same results.
    pcre2_jit_compile(code, PCRE2_JIT_COMPLETE);
  }
  ~Impl() { pcre2_code_free(code); }
  Impl(const Impl&) = delete;
  Impl& operator=(const Impl&) = delete;

  // Calls fn(piece) for each match of the pattern in `text` (valid UTF-8), in order.
  template <typename Fn>
  void for_each_piece(std::string_view text, Fn&& fn) const {
    // Match data is per call: sharing one between threads would race.
    std::unique_ptr<pcre2_match_data, decltype(&pcre2_match_data_free)> match(
        pcre2_match_data_create_from_pattern(code, nullptr), &pcre2_match_data_free);
    if (!match) throw std::bad_alloc();
    const auto subject = reinterpret_cast<PCRE2_SPTR>(text.data());
    size_t start = 0;
    while (start < text.size()) {
      // NO_UTF_CHECK: the caller validated the text once; PCRE2 would rescan it on every call.
      const int rc =
          pcre2_match(code, subject, text.size(), start, PCRE2_NO_UTF_CHECK, match.get(), nullptr);
      if (rc < 0) {
        throw std::runtime_error("BpeTokenizer: PCRE2 failed to match at byte offset " +
                                 std::to_string(start) + ": " + pcre2_message(rc));
      }
      const PCRE2_SIZE* ovector = pcre2_get_ovector_pointer(match.get());
      // Every character is \s, \p{L}, \p{N} or none of them, so the pattern matches at `start`
      // and never skips text, and no alternative matches the empty string.
      if (ovector[0] != start || ovector[1] <= start) {
        throw std::logic_error("BpeTokenizer: GPT-2's pattern skipped text at byte offset " +
                               std::to_string(start));
      }
      fn(text.substr(start, ovector[1] - start));
      start = ovector[1];
    }
  }
};

BpeTokenizer::BpeTokenizer() : impl_(std::make_unique<Impl>()) {}
BpeTokenizer::BpeTokenizer(BpeTokenizer&&) noexcept = default;
BpeTokenizer& BpeTokenizer::operator=(BpeTokenizer&&) noexcept = default;
BpeTokenizer::~BpeTokenizer() = default;

// ---------------------------------------------------------------------------------------------
// Loading.

std::vector<std::filesystem::path> BpeTokenizer::gpt2_files() {
  std::string where;
  const std::filesystem::path dir = current_data_dir(&where) / "gpt2";
  std::vector<std::filesystem::path> files;
  for (const char* name : {"encoder.json", "vocab.bpe"}) {
    const std::filesystem::path path = dir / name;
    if (!std::filesystem::is_regular_file(path)) {
      throw std::runtime_error(
          "GPT-2 vocabulary file '" + path.string() + "' not found (" + where +
          "); set ATTOGRAD_DATA_DIR to the directory holding gpt2/encoder.json "
          "and gpt2/vocab.bpe (attograd's data/ folder)");
    }
    files.push_back(path);
  }
  return files;
}

BpeTokenizer BpeTokenizer::gpt2() {
  const std::vector<std::filesystem::path> files = gpt2_files();
  return from_files(files[0], files[1]);
}

BpeTokenizer BpeTokenizer::from_files(const std::filesystem::path& encoder_json,
                                      const std::filesystem::path& vocab_bpe) {
  BpeTokenizer tok;
  const std::string enc_where = "GPT-2 vocabulary file '" + encoder_json.string() + "'";

  // encoder.json: {"!": 0, ..., "Ġthe": 262, ..., "<|endoftext|>": 50256}.
  // Strictly: a token listed twice or a value nested 100,000 deep is an error, not a crash.
  const nlohmann::json json = nn::parse_json(read_whole_file(encoder_json), enc_where);
  if (!json.is_object() || json.empty()) {
    throw std::runtime_error(enc_where + " must be a non-empty JSON object from token to id");
  }
  const size_t n = json.size();
  tok.tokens_.assign(n, std::string());
  std::vector<bool> seen(n, false);
  std::string bytes;
  for (const auto& [spelled, value] : json.items()) {
    if (!value.is_number_integer() || value.get<int64_t>() < 0 ||
        value.get<int64_t>() >= static_cast<int64_t>(n)) {
      throw std::runtime_error(enc_where + ": token '" + spelled + "' has id " +
                               nn::json_excerpt(value) + "; ids must be the integers 0.." +
                               std::to_string(n - 1));
    }
    const auto id = value.get<int32_t>();
    if (seen[id])
      throw std::runtime_error(enc_where + ": id " + std::to_string(id) + " is used twice");
    seen[id] = true;
    char32_t bad = 0;
    if (!alphabet_to_bytes(spelled, bytes, bad)) {
      throw std::runtime_error(enc_where + ": token '" + spelled + "' contains " +
                               nn::describe_code_point(bad) +
                               ", which is not in GPT-2's byte alphabet (bytes_to_unicode)");
    }
    tok.tokens_[id] = bytes;
    tok.ids_.emplace(bytes, id);
  }
  for (int b = 0; b < 256; ++b) {
    const int64_t id = tok.find(std::string(1, static_cast<char>(b)));
    if (id < 0) {
      throw std::runtime_error(
          enc_where + " has no token for the single byte " + std::to_string(b) +
          ": a byte-level vocabulary needs all 256, so that any text can be encoded");
    }
    tok.byte_ids_[b] = static_cast<int32_t>(id);
  }
  if (tok.find(kEndOfTextText) < 0) {
    throw std::runtime_error(enc_where + " has no '<|endoftext|>' token");
  }

  // vocab.bpe: "#version: 0.2", then "Ġ t", "Ġ a", ... one merge per line, best first.
  const std::string text = read_whole_file(vocab_bpe);
  const std::string bpe_where = "GPT-2 merges file '" + vocab_bpe.string() + "'";
  // made_by[id]: rank of the merge that makes token id, or -1 (a byte, or not made yet).
  std::vector<int32_t> made_by(n, -1);
  size_t line_start = 0;
  int line_number = 0;
  std::string left, right;
  while (line_start < text.size()) {
    size_t line_end = text.find('\n', line_start);
    if (line_end == std::string::npos) line_end = text.size();
    std::string_view line(text.data() + line_start, line_end - line_start);
    line_start = line_end + 1;
    ++line_number;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line_number == 1 && line.starts_with("#version")) continue;
    const auto at = [&] {
      return bpe_where + " line " + std::to_string(line_number) + " '" + std::string(line) + "'";
    };
    const size_t space = line.find(' ');
    if (line.empty() || space == std::string_view::npos || space == 0 || space + 1 == line.size() ||
        line.find(' ', space + 1) != std::string_view::npos) {
      if (line.empty() && line_start >= text.size()) break;  // a final empty line
      throw std::runtime_error(at() + ": expected a merge, two tokens separated by one space");
    }
    if (const auto error = nn::find_utf8_error(line)) {
      throw std::runtime_error(bpe_where + " line " + std::to_string(line_number) + ": " +
                               error->message());
    }
    char32_t bad = 0;
    if (!alphabet_to_bytes(line.substr(0, space), left, bad) ||
        !alphabet_to_bytes(line.substr(space + 1), right, bad)) {
      throw std::runtime_error(at() + ": " + nn::describe_code_point(bad) +
                               " is not in GPT-2's byte alphabet");
    }
    const int32_t rank = static_cast<int32_t>(tok.merges_.size());
    const int64_t l = tok.find(left), r = tok.find(right), result = tok.find(left + right);
    if (l < 0 || r < 0 || result < 0) {
      throw std::runtime_error(at() + ": " +
                               (l < 0   ? "the left token"
                                : r < 0 ? "the right token"
                                        : "the merged token") +
                               " is not in " + encoder_json.string());
    }
    // The fast merge loop (bpe) gives the reference's result only if merges come in the order
    // they were learned: a token is made (once) before any merge uses it. Training produces
    // that order; checking it here keeps a shuffled file from silently changing the ids.
    for (const int64_t part : {l, r}) {
      if (tok.tokens_[part].size() > 1 && made_by[part] < 0) {
        const std::string_view spelled = part == l ? line.substr(0, space) : line.substr(space + 1);
        throw std::runtime_error(
            at() + ": uses token '" + std::string(spelled) +
            "' before the merge that makes it; merges must be listed in the order "
            "they were learned");
      }
    }
    if (made_by[result] >= 0) {
      throw std::runtime_error(at() + ": makes the same token as merge number " +
                               std::to_string(made_by[result]) +
                               " (counting from 0); each token is made once");
    }
    made_by[result] = rank;
    tok.merges_.emplace(pair_key(static_cast<int32_t>(l), static_cast<int32_t>(r)),
                        Merge{rank, static_cast<int32_t>(result)});
  }
  return tok;
}

// ---------------------------------------------------------------------------------------------
// Lookups.

int64_t BpeTokenizer::find(std::string_view bytes) const {
  const auto it = ids_.find(bytes);
  return it == ids_.end() ? -1 : it->second;
}

const BpeTokenizer::Merge* BpeTokenizer::find_merge(int32_t left, int32_t right) const {
  const auto it = merges_.find(pair_key(left, right));
  return it == merges_.end() ? nullptr : &it->second;
}

void BpeTokenizer::check_id(int64_t id, const char* where, size_t index) const {
  if (id < 0 || id >= vocab_size()) {
    throw std::out_of_range(std::string("BpeTokenizer::") + where + ": id " + std::to_string(id) +
                            (index == SIZE_MAX ? "" : " at index " + std::to_string(index)) +
                            " is outside the vocabulary [0, " + std::to_string(vocab_size()) + ")");
  }
}

std::string BpeTokenizer::token_bytes(int64_t id) const {
  check_id(id, "token_bytes", SIZE_MAX);
  return tokens_[static_cast<size_t>(id)];
}

// ---------------------------------------------------------------------------------------------
// BPE on one piece.

std::vector<int64_t> BpeTokenizer::bpe_reference(std::string_view piece) const {
  std::vector<int32_t> word;
  for (unsigned char b : piece) word.push_back(byte_ids_[b]);
  while (word.size() >= 2) {
    // The adjacent pair whose merge has the lowest rank (was learned first).
    const Merge* best = nullptr;
    int32_t best_left = 0, best_right = 0;
    for (size_t i = 0; i + 1 < word.size(); ++i) {
      const Merge* m = find_merge(word[i], word[i + 1]);
      if (m != nullptr && (best == nullptr || m->rank < best->rank))
        best = m, best_left = word[i], best_right = word[i + 1];
    }
    if (best == nullptr) break;
    // Merge every occurrence, left to right (in "a a a" the first two merge, not the last two).
    std::vector<int32_t> merged;
    for (size_t i = 0; i < word.size(); ++i) {
      if (i + 1 < word.size() && word[i] == best_left && word[i + 1] == best_right) {
        merged.push_back(best->result);
        ++i;
      } else {
        merged.push_back(word[i]);
      }
    }
    word = std::move(merged);
  }
  return {word.begin(), word.end()};
}

std::vector<int64_t> BpeTokenizer::bpe(std::string_view piece) const {
  if (piece.size() <= 1)
    return piece.empty() ? std::vector<int64_t>{}
                         : std::vector<int64_t>{byte_ids_[static_cast<unsigned char>(piece[0])]};
  // The reference rescans the word after every merge: O(n^2) for an n-byte piece, which is
  // fine for words but hangs on a megabyte without spaces. Here the symbols form a linked list
  // (a merge absorbs the right symbol into the left one), and every mergeable adjacent pair
  // waits in a min-heap ordered by (rank, position); a merge pushes only the two pairs it
  // creates. Popping by (rank, position) merges the lowest-rank pair first and its
  // occurrences left to right, as the reference does: a pair made by a merge never has a lower
  // rank than that merge, because from_files checked that tokens are made before they are used.
  struct Symbol {
    int32_t id;    // token id; -1 once absorbed into the symbol on its left
    int32_t prev;  // index of the previous live symbol, -1 at the start
    int32_t next;  // index of the next live symbol, -1 at the end
  };
  struct Candidate {
    int32_t rank, left, left_id, right_id, result;
    bool operator>(const Candidate& o) const {
      return rank != o.rank ? rank > o.rank : left > o.left;
    }
  };
  const auto n = static_cast<int32_t>(piece.size());
  std::vector<Symbol> sym(static_cast<size_t>(n));
  for (int32_t i = 0; i < n; ++i)
    sym[i] = {byte_ids_[static_cast<unsigned char>(piece[i])], i - 1, i + 1 < n ? i + 1 : -1};
  std::priority_queue<Candidate, std::vector<Candidate>, std::greater<>> heap;
  const auto consider = [&](int32_t left) {
    const int32_t right = sym[left].next;
    if (right < 0) return;
    if (const Merge* m = find_merge(sym[left].id, sym[right].id))
      heap.push({m->rank, left, sym[left].id, sym[right].id, m->result});
  };
  for (int32_t i = 0; i + 1 < n; ++i) consider(i);
  while (!heap.empty()) {
    const Candidate c = heap.top();
    heap.pop();
    Symbol& l = sym[c.left];
    // Stale if either side changed since the pair was pushed. Ids only ever get longer, so an
    // unchanged id means an untouched symbol.
    if (l.id != c.left_id || l.next < 0 || sym[l.next].id != c.right_id) continue;
    Symbol& r = sym[l.next];
    l.id = c.result;
    l.next = r.next;
    if (r.next >= 0) sym[r.next].prev = c.left;
    r.id = -1;
    if (l.prev >= 0) consider(l.prev);
    consider(c.left);
  }
  std::vector<int64_t> ids;
  for (int32_t i = 0; i >= 0; i = sym[i].next) ids.push_back(sym[i].id);
  return ids;
}

// ---------------------------------------------------------------------------------------------
// Encode and decode.

void BpeTokenizer::encode_piece(std::string_view piece, std::vector<int64_t>& out) const {
  if (piece.size() == 1) {  // a lone byte (space, punctuation) is its own token: skip the lock
    out.push_back(byte_ids_[static_cast<unsigned char>(piece[0])]);
    return;
  }
  const bool cacheable = piece.size() <= kMaxCachedPieceBytes;
  if (cacheable) {
    std::lock_guard<std::mutex> lock(impl_->mutex);
    const auto it = impl_->cache.find(piece);
    if (it != impl_->cache.end()) {
      out.insert(out.end(), it->second.begin(), it->second.end());
      return;
    }
  }
  // Merging happens outside the lock, so threads only wait for each other on map accesses.
  const std::vector<int64_t> ids = bpe(piece);
  out.insert(out.end(), ids.begin(), ids.end());
  if (cacheable) {
    std::lock_guard<std::mutex> lock(impl_->mutex);
    if (impl_->cache.size() >= kMaxCacheEntries) impl_->cache.clear();
    impl_->cache.emplace(std::string(piece), std::vector<int32_t>(ids.begin(), ids.end()));
  }
}

void BpeTokenizer::encode_ordinary(std::string_view text, std::vector<int64_t>& out) const {
  impl_->for_each_piece(text, [&](std::string_view piece) { encode_piece(piece, out); });
}

std::vector<std::string_view> BpeTokenizer::pre_tokenize(std::string_view text) const {
  nn::validate_utf8(text, "BpeTokenizer::pre_tokenize");
  std::vector<std::string_view> pieces;
  impl_->for_each_piece(text, [&](std::string_view piece) { pieces.push_back(piece); });
  return pieces;
}

std::vector<int64_t> BpeTokenizer::encode(std::string_view text) const {
  return encode(text, AllowSpecial::no);
}

std::vector<int64_t> BpeTokenizer::encode(std::string_view text, AllowSpecial allow) const {
  nn::validate_utf8(text, "BpeTokenizer::encode");
  std::vector<int64_t> ids;
  ids.reserve(text.size() / 3);  // English averages ~4 bytes per GPT-2 token
  if (allow == AllowSpecial::no) {
    encode_ordinary(text, ids);
    return ids;
  }
  // Cut at each "<|endoftext|>" before pre-tokenising: the pattern would split it into
  // "<", "|", "endoftext", "|>", and the text on either side is encoded as if alone.
  const int64_t eot = find(kEndOfTextText);
  size_t start = 0;
  for (size_t at; (at = text.find(kEndOfTextText, start)) != std::string_view::npos;
       start = at + kEndOfTextText.size()) {
    encode_ordinary(text.substr(start, at - start), ids);
    ids.push_back(eot);
  }
  encode_ordinary(text.substr(start), ids);
  return ids;
}

std::string BpeTokenizer::decode(std::span<const int64_t> ids) const {
  std::string bytes;
  for (size_t i = 0; i < ids.size(); ++i) {
    check_id(ids[i], "decode", i);
    bytes += tokens_[static_cast<size_t>(ids[i])];
  }
  return utf8_replace_invalid(bytes);
}

}  // namespace attograd::gpt
