// Tests gpt/text/bpe_tokenizer: GPT-2's ids for known strings (whitespace runs, emoji, accents, a
// literal 'Ġ'), the special token, decoding partial characters, errors, the fast merge loop
// against the reference, and round trips on random and real text.
#define BOOST_TEST_MODULE bpe_tokenizer
#include <boost/test/unit_test.hpp>

#include <unistd.h>
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "gpt/text/bpe_tokenizer.h"
#include "nn/io/utf8.h"
#include "tests/test_util.h"

using namespace attograd::gpt;
namespace nn = attograd::nn;
using attograd::testing::data_available;
using attograd::testing::expect_throw_with;
using attograd::testing::shared_data;
using Ids = std::vector<int64_t>;

namespace {

// Loading parses a 1 MB JSON file: do it once for the whole test module.
const BpeTokenizer& gpt2() {
  static const BpeTokenizer tok = BpeTokenizer::gpt2();
  return tok;
}

std::string ids_str(const Ids& ids) {
  std::string s;
  for (int64_t id : ids) {
    if (!s.empty()) s += ' ';
    s += std::to_string(id);
  }
  return "[" + s + "]";
}

// Checks the ids of `text`, and that they decode back to it.
void check_ids(const std::string& text, const Ids& expected) {
  const Ids ids = gpt2().encode(text);
  BOOST_TEST_INFO("got " << ids_str(ids) << ", expected " << ids_str(expected));
  BOOST_TEST(ids == expected, boost::test_tools::per_element());
  BOOST_TEST(gpt2().decode(ids) == text);
}

// Random valid UTF-8 built from the kinds of text that exercise the pattern and the merges.
std::string random_text(std::mt19937_64& rng) {
  const auto pick = [&](uint64_t n) { return static_cast<size_t>(rng() % n); };
  static const std::vector<std::string> words = {
      "the",    "The",    "hello", "world",    "naïve",  "café",    "Straße",
      "日本語", "東京",   "😀",     "👍🏽", "🇫🇷",     "e\u0301", "n\u0303o",
      "don't",  "I'm",    "we're", "they've",  "you'll", "he'd",    "it's",
      "'S",     "123",    "4.5",   "--",       "!?",     "(x)",     "<|endoftext|>",
      "\u00a0", "\u3000", "Ġ",     "Ċ",        "\r\n",   "\u2028"};
  static const std::vector<std::string> spaces = {" ",  "  ",   "   ", "\n",  "\n\n",
                                                  "\t", "\t\t", " \n", "\n ", ""};
  std::string s;
  const size_t parts = pick(12);
  for (size_t i = 0; i < parts; ++i) {
    switch (pick(5)) {
      case 0:
        s += words[pick(words.size())];
        break;
      case 1:
        s += spaces[pick(spaces.size())];
        break;
      case 2:
        s += static_cast<char>(0x20 + pick(0x5F));
        break;  // printable ASCII
      case 3:
        nn::append_utf8(s, static_cast<char32_t>(0xA0 + pick(0x60)));
        break;  // Latin-1
      default: {
        // Any code point that is a character (not a surrogate), weighted toward the BMP.
        char32_t cp = pick(4) == 0 ? static_cast<char32_t>(pick(nn::kMaxCodePoint + 1))
                                   : static_cast<char32_t>(pick(0x10000));
        if (cp >= 0xD800 && cp <= 0xDFFF) cp = 0x4E00 + (cp & 0xFF);  // a CJK character instead
        nn::append_utf8(s, cp);
      }
    }
  }
  return s;
}

}  // namespace

// Ids from OpenAI's GPT-2 tokenizer (tiktoken's "gpt2" encoding gives the same), one test each.
#define KNOWN_IDS(name, text, ...) \
  BOOST_AUTO_TEST_CASE(known_ids_##name) { check_ids(text, Ids{__VA_ARGS__}); }
KNOWN_IDS(empty, "")
KNOWN_IDS(two_spaces_between_words, "hello  world", 31373, 220, 995)  // "hello", " ", " world"
KNOWN_IDS(three_spaces, "a   b", 64, 220, 220, 275)
KNOWN_IDS(leading_spaces, "  leading", 220, 3756)
KNOWN_IDS(trailing_newlines, "x\n\n", 87, 628)                      // "\n\n" is one token
KNOWN_IDS(newline_run_before_a_word, "a\n\n\nb", 64, 628, 198, 65)  // \s+(?!\S) leaves the last \n
KNOWN_IDS(tabs, "\t\tx", 197, 197, 87)
KNOWN_IDS(emoji, "\xF0\x9F\x98\x80", 47249, 222)  // 😀 = F0 9F 98 | 80
KNOWN_IDS(space_emoji, " \xF0\x9F\x98\x80", 30325, 222)
KNOWN_IDS(accents, "na\xC3\xAFve caf\xC3\xA9", 2616, 38776, 40304)  // "naïve café"
KNOWN_IDS(literal_G_dot, "\xC4\xA0", 128, 254)                      // 'Ġ' is text, not a space

BOOST_AUTO_TEST_CASE(vocabulary_facts) {
  const BpeTokenizer& tok = gpt2();
  BOOST_TEST(tok.vocab_size() == 50257);
  BOOST_TEST(tok.num_merges() == 50000);
  BOOST_TEST(tok.kind() == "gpt2");
  BOOST_TEST(tok.serialize() == "gpt2");
  BOOST_TEST(tok.token_bytes(31373) == "hello");
  BOOST_TEST(tok.token_bytes(995) == " world");
  BOOST_TEST(tok.token_bytes(628) == "\n\n");
  BOOST_TEST(tok.token_bytes(220) == " ");
  BOOST_TEST(tok.token_bytes(47249) == "\xF0\x9F\x98");  // 3 bytes of a 4-byte character
  BOOST_TEST(tok.token_bytes(50256) == "<|endoftext|>");
  BOOST_TEST(tok.find(" world") == 995);
  BOOST_TEST(tok.find("no such token anywhere") == -1);
}

BOOST_AUTO_TEST_CASE(bytes_to_unicode_is_openais_table) {
  const auto& t = BpeTokenizer::bytes_to_unicode();
  BOOST_TEST(static_cast<uint32_t>(t[' ']) == 0x120u);   // 'Ġ'
  BOOST_TEST(static_cast<uint32_t>(t['\n']) == 0x10Au);  // 'Ċ'
  BOOST_TEST(static_cast<uint32_t>(t[0]) == 0x100u);
  BOOST_TEST(static_cast<uint32_t>(t['!']) == static_cast<uint32_t>('!'));
  BOOST_TEST(static_cast<uint32_t>(t[0xAD]) == 0x143u);  // soft hyphen: the 68th unprintable byte
  BOOST_TEST(static_cast<uint32_t>(t[0xFF]) == 0xFFu);
  std::vector<bool> used(324, false);  // a bijection onto printable characters below U+0144
  for (char32_t cp : t) {
    BOOST_REQUIRE(cp < 324u);
    BOOST_TEST(!used[cp]);
    used[cp] = true;
  }
}

BOOST_AUTO_TEST_CASE(pre_tokenize_cuts_like_gpt2) {
  using Pieces = std::vector<std::string_view>;
  const BpeTokenizer& tok = gpt2();
  BOOST_TEST(tok.pre_tokenize("hello  world") == (Pieces{"hello", " ", " world"}),
             boost::test_tools::per_element());
  BOOST_TEST(tok.pre_tokenize("I'm here, they'll see 42x") ==
                 (Pieces{"I", "'m", " here", ",", " they", "'ll", " see", " 42", "x"}),
             boost::test_tools::per_element());
  BOOST_TEST(tok.pre_tokenize("a\n\n\nb") == (Pieces{"a", "\n\n", "\n", "b"}),
             boost::test_tools::per_element());
  BOOST_TEST(tok.pre_tokenize("end  ") == (Pieces{"end", "  "}), boost::test_tools::per_element());
  BOOST_TEST(tok.pre_tokenize("").empty());
}

BOOST_AUTO_TEST_CASE(decode_replaces_partial_characters) {
  const BpeTokenizer& tok = gpt2();
  BOOST_TEST(tok.decode({47249}) == "\xEF\xBF\xBD");  // exactly one U+FFFD, no exception
  BOOST_TEST(tok.decode({47249, 222}) == "\xF0\x9F\x98\x80");
  BOOST_TEST(tok.decode(Ids{}).empty());
  StreamDecoder stream(tok);
  BOOST_TEST(stream.push(47249) == "");  // held back: F0 9F 98 may still become a character
  BOOST_TEST(stream.push(222) == "\xF0\x9F\x98\x80");
  BOOST_TEST(stream.flush() == "");
}

BOOST_AUTO_TEST_CASE(end_of_text_is_special_only_when_allowed) {
  const BpeTokenizer& tok = gpt2();
  const std::string eot = "<|endoftext|>";
  BOOST_TEST(tok.encode(eot, AllowSpecial::yes) == (Ids{50256}), boost::test_tools::per_element());
  const Ids plain = tok.encode(eot);
  BOOST_TEST_INFO("plain ids " << ids_str(plain));
  BOOST_TEST(plain.size() > 1u);
  BOOST_TEST(std::count(plain.begin(), plain.end(), 50256) == 0);
  BOOST_TEST(tok.decode(plain) == eot);
  BOOST_TEST(tok.encode(eot, AllowSpecial::no) == plain, boost::test_tools::per_element());
  // Text on either side is encoded as if alone, and decoding gives the text back.
  const std::string doc = "hello world<|endoftext|> world<|endoftext|>";
  BOOST_TEST(tok.encode(doc, AllowSpecial::yes) == (Ids{31373, 995, 50256, 995, 50256}),
             boost::test_tools::per_element());
  BOOST_TEST(tok.decode(tok.encode(doc, AllowSpecial::yes)) == doc);
}

BOOST_AUTO_TEST_CASE(bad_ids_and_bad_text_are_named) {
  const BpeTokenizer& tok = gpt2();
  expect_throw_with<std::out_of_range>([&] { tok.decode({50257}); }, "id 50257");
  expect_throw_with<std::out_of_range>([&] { tok.decode({50257}); }, "[0, 50257)");
  expect_throw_with<std::out_of_range>([&] { tok.decode({1, -1}); }, "id -1 at index 1");
  expect_throw_with<std::out_of_range>([&] { tok.token_bytes(60000); }, "id 60000");
  expect_throw_with<std::invalid_argument>([&] { tok.encode("ab\xFF"); }, "byte offset 2");
  expect_throw_with<std::invalid_argument>([&] { tok.encode("caf\xC3"); }, "byte offset 3");
  expect_throw_with<std::invalid_argument>([&] { tok.encode("\xED\xA0\x80", AllowSpecial::yes); },
                                           "byte offset 0");
}

BOOST_AUTO_TEST_CASE(fast_merges_match_the_reference) {
  const BpeTokenizer& tok = gpt2();
  std::mt19937_64 rng(7);
  for (int i = 0; i < 2000; ++i) {
    std::string piece;
    const size_t n = 1 + rng() % 24;
    // Bytes from a small alphabet, so that merges (and repeated pairs like "aaa") are common.
    for (size_t k = 0; k < n; ++k) piece += " etaoinshrd\xC3\xA9\xF0\x9F"[rng() % 15];
    BOOST_TEST_INFO("piece '" << piece << "'");
    BOOST_TEST(tok.bpe(piece) == tok.bpe_reference(piece), boost::test_tools::per_element());
  }
  for (const std::string text :
       {"hello", " world", "aaaaaaa", "          ", "\xF0\x9F\x98\x80", " naïve"})
    BOOST_TEST(tok.bpe(text) == tok.bpe_reference(text), boost::test_tools::per_element());
}

// 200,000 letters with no space form one piece; the reference (bpe_reference) would rescan it
// ~10^5 times, minutes of work, where bpe's heap of pairs takes a fraction of a second. No clock
// is read: a time is no assertion on a shared machine. A quadratic bpe would show as minutes in
// CTest's time for this test.
BOOST_AUTO_TEST_CASE(a_long_piece_is_not_quadratic) {
  const BpeTokenizer& tok = gpt2();
  std::string text;
  for (int i = 0; i < 20000; ++i) text += "abcdefghij";
  const Ids ids = tok.encode(text);
  BOOST_TEST(tok.decode(ids) == text);
  const std::string spaces(100000, ' ');  // one long whitespace run through the lookahead
  BOOST_TEST(tok.decode(tok.encode(spaces + "x")) == spaces + "x");
}

BOOST_AUTO_TEST_CASE(random_text_round_trips) {
  const BpeTokenizer& tok = gpt2();
  std::mt19937_64 rng(1234);
  for (int i = 0; i < 3000; ++i) {
    const std::string s = random_text(rng);
    const Ids ids = tok.encode(s);
    BOOST_TEST_INFO("case " << i << ": ids " << ids_str(ids));
    BOOST_TEST(tok.decode(ids) == s);
    for (int64_t id : ids) BOOST_TEST((id >= 0 && id < 50256));  // never the special token
    // The special token round-trips too when allowed.
    BOOST_TEST(tok.decode(tok.encode(s, AllowSpecial::yes)) == s);
  }
}

BOOST_AUTO_TEST_CASE(concurrent_encodes_agree) {
  const BpeTokenizer tok = BpeTokenizer::gpt2();  // a fresh, empty cache
  std::mt19937_64 rng(99);
  std::vector<std::string> texts;
  for (int i = 0; i < 400; ++i) texts.push_back(random_text(rng));
  std::vector<Ids> expected;
  for (const auto& t : texts) expected.push_back(gpt2().encode(t));
  std::vector<std::vector<Ids>> got(2);
  std::vector<std::thread> threads;
  for (int w = 0; w < 2; ++w) {
    threads.emplace_back([&, w] {
      for (const auto& t : texts) got[w].push_back(tok.encode(t));
    });
  }
  for (auto& th : threads) th.join();
  BOOST_TEST((got[0] == expected));
  BOOST_TEST((got[1] == expected));
}

BOOST_AUTO_TEST_CASE(tiny_shakespeare_round_trips) {
  const std::filesystem::path path = shared_data("tinyshakespeare.txt");
  if (!data_available(path, "../shared is not beside this checkout")) return;
  std::ifstream in(path, std::ios::binary);
  const std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::string text = all.substr(0, 100 * 1024);
  const BpeTokenizer tok = BpeTokenizer::gpt2();
  const Ids ids = tok.encode(text);
  BOOST_TEST(tok.decode(ids) == text);
  const double bytes_per_token = static_cast<double>(text.size()) / static_cast<double>(ids.size());
  BOOST_TEST_MESSAGE("Tiny Shakespeare, first " << text.size() << " bytes: " << ids.size()
                                                << " tokens (" << bytes_per_token
                                                << " bytes/token)");
  // GPT-2's BPE packs English into ~3-4.5 bytes per token; a char tokenizer is exactly 1.
  BOOST_TEST(bytes_per_token > 3.0);
  BOOST_TEST(bytes_per_token < 4.5);
  BOOST_TEST(ids[0] == 5962);  // "First" of "First Citizen:"

  // The whole file split as nanoGPT's data/shakespeare/prepare.py does (first 90% of the
  // characters, the rest), with the counts its readme reports from OpenAI's tokenizer.
  if (all.size() != 1115394) return;
  const size_t cut = all.size() * 9 / 10;
  const Ids train = tok.encode(std::string_view(all).substr(0, cut));
  const Ids val = tok.encode(std::string_view(all).substr(cut));
  BOOST_TEST(train.size() == 301966u);
  BOOST_TEST(val.size() == 36059u);
}

BOOST_AUTO_TEST_CASE(load_tokenizer_knows_gpt2) {
  const auto tok = load_tokenizer("gpt2", "gpt2");
  BOOST_TEST(tok->kind() == "gpt2");
  BOOST_TEST(tok->vocab_size() == 50257);
  BOOST_TEST(tok->encode("hello  world") == (Ids{31373, 220, 995}),
             boost::test_tools::per_element());
  expect_throw_with<std::invalid_argument>([] { load_tokenizer("gpt2", "r50k"); }, "'gpt2'");
  expect_throw_with<std::invalid_argument>([] { load_tokenizer("bpe", ""); }, "char or gpt2");
}

BOOST_AUTO_TEST_CASE(missing_data_names_the_path_and_the_variable) {
  const char* old = std::getenv("ATTOGRAD_DATA_DIR");
  const std::string saved = old ? old : "";
  ::setenv("ATTOGRAD_DATA_DIR", "/nonexistent/attograd-data", 1);
  BOOST_TEST(data_dir() == std::filesystem::path("/nonexistent/attograd-data"));
  expect_throw_with<std::runtime_error>([] { BpeTokenizer::gpt2(); },
                                        "/nonexistent/attograd-data/gpt2/encoder.json");
  expect_throw_with<std::runtime_error>([] { BpeTokenizer::gpt2(); }, "ATTOGRAD_DATA_DIR");
  if (old)
    ::setenv("ATTOGRAD_DATA_DIR", saved.c_str(), 1);
  else
    ::unsetenv("ATTOGRAD_DATA_DIR");
}

// The data folder: $ATTOGRAD_DATA_DIR, else the installed share/attograd beside the program
// (bin/../share/attograd, when it holds gpt2/), else the source tree's data/.
BOOST_AUTO_TEST_CASE(the_data_folder_is_the_variable_then_the_installed_one_then_the_source) {
  const attograd::testing::TempDir prefix("bpe_prefix");
  const std::filesystem::path program = prefix.path / "bin" / "attograd";
  const std::filesystem::path source = "/src/attograd/data";
  std::string why;
  BOOST_TEST(data_dir("/my/data", program, source, &why) == std::filesystem::path("/my/data"));
  BOOST_TEST(why == "ATTOGRAD_DATA_DIR is set to '/my/data'");
  // Nothing installed yet (an empty variable counts as unset): the source tree's folder.
  BOOST_TEST(data_dir("", program, source, &why) == source);
  BOOST_TEST(why.find("no installed data folder") != std::string::npos);
  BOOST_TEST(data_dir(nullptr, "", source) == source);  // the program's path unknown
  std::filesystem::create_directories(prefix.path / "share" / "attograd" / "gpt2");
  BOOST_TEST(data_dir(nullptr, program, source, &why) == prefix.path / "share" / "attograd");
  BOOST_TEST(why.find("is the installed data folder beside " + program.string()) !=
             std::string::npos);
  BOOST_TEST(data_dir("/my/data", program, source) == std::filesystem::path("/my/data"));
}

BOOST_AUTO_TEST_CASE(malformed_files_are_named) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("bpe_test_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const auto write = [&](const std::string& name, const std::string& text) {
    std::ofstream(dir / name, std::ios::binary) << text;
    return dir / name;
  };
  // A minimal byte-level vocabulary: the 256 bytes, "ab" = 256, "abc" = 257, <|endoftext|> = 258.
  std::string json = "{";
  const auto& alphabet = BpeTokenizer::bytes_to_unicode();
  for (int b = 0; b < 256; ++b) {
    json += '"';
    if (alphabet[b] == '"' || alphabet[b] == '\\') json += '\\';  // JSON escapes
    json += nn::encode_utf8(alphabet[b]);
    json += "\": ";
    json += std::to_string(b);
    json += ", ";
  }
  const auto enc =
      write("encoder.json", json + "\"ab\": 256, \"abc\": 257, \"<|endoftext|>\": 258}");
  const auto merges = write("vocab.bpe", "#version: 0.2\na b\nab c\n");
  const BpeTokenizer small = BpeTokenizer::from_files(enc, merges);
  BOOST_TEST(small.vocab_size() == 259);
  BOOST_TEST(small.encode("abcab") == (Ids{257, 256}), boost::test_tools::per_element());

  expect_throw_with<std::runtime_error>(
      [&] { BpeTokenizer::from_files(dir / "nope.json", merges); }, "nope.json");
  expect_throw_with<std::runtime_error>(
      [&] { BpeTokenizer::from_files(write("bad.json", "{\"a\": "), merges); }, "not valid JSON");
  expect_throw_with<std::runtime_error>(
      [&] { BpeTokenizer::from_files(write("gap.json", "{\"a\": 1}"), merges); },
      "ids must be the integers 0..0");
  expect_throw_with<std::runtime_error>(
      [&] { BpeTokenizer::from_files(enc, write("order.bpe", "#version: 0.2\nab c\na b\n")); },
      "line 2 'ab c': uses token 'ab' before the merge that makes it");
  expect_throw_with<std::runtime_error>(
      [&] { BpeTokenizer::from_files(enc, write("unknown.bpe", "#version: 0.2\na b\nb c\n")); },
      "line 3 'b c': the merged token is not in");
  expect_throw_with<std::runtime_error>(
      [&] { BpeTokenizer::from_files(enc, write("format.bpe", "#version: 0.2\na  b\n")); },
      "line 2");
  std::filesystem::remove_all(dir);
}

BOOST_AUTO_TEST_CASE(encoder_json_is_parsed_strictly) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("bpe_strict_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const auto write = [&](const std::string& name, const std::string& text) {
    std::ofstream(dir / name, std::ios::binary) << text;
    return dir / name;
  };
  const auto merges = write("vocab.bpe", "#version: 0.2\n");
  // A token listed twice used to keep its last id silently; a value nested 100,000 deep used to
  // overflow the stack when the error message printed it.
  expect_throw_with<std::runtime_error>(
      [&] { BpeTokenizer::from_files(write("dup.json", R"({"a": 0, "a": 1})"), merges); },
      "dup.json' has the key 'a' twice");
  const std::string deep = "{\"a\": " + std::string(100'000, '[') + std::string(100'000, ']') + "}";
  expect_throw_with<std::runtime_error>(
      [&] { BpeTokenizer::from_files(write("deep.json", deep), merges); },
      "deep.json' nests deeper than 32 levels");
  expect_throw_with<std::runtime_error>(
      [&] {
        BpeTokenizer::from_files(write("big.json", R"({"a": 18446744073709551615})"), merges);
      },
      "token 'a' has id 18446744073709551615; ids must be the integers 0..0");
  std::filesystem::remove_all(dir);
}
