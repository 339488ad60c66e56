// Fuzz target: GPT-2's byte-level BPE (gpt/text/bpe_tokenizer.h) with its real vocabulary from
// data/gpt2/, encoder and decoder.
//
// Properties, for any input:
// - valid UTF-8 text x: pre_tokenize cuts x into pieces that concatenate to x; encode(x) gives
//   ids in [0, 50256) (no <|endoftext|>), and decode(encode(x)) == x; with AllowSpecial::yes
//   every "<|endoftext|>" becomes id 50256, one per occurrence, and decoding still gives x;
//   the fast bpe() of each short piece equals the O(n^2) bpe_reference();
// - invalid UTF-8: encode throws std::invalid_argument (documented), nothing else;
// - the input's bytes read as ids (16-bit little-endian, modulo V): decode gives valid UTF-8,
//   and a StreamDecoder fed the same ids one at a time gives the same text.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "gpt/text/bpe_tokenizer.h"
#include "gpt/text/tokenizer.h"
#include "nn/io/utf8.h"
#include "tests/fuzz/fuzz_support.h"

using namespace attograd::gpt;
namespace nn = attograd::nn;

namespace {

const BpeTokenizer& gpt2() {
  static const BpeTokenizer tokenizer = BpeTokenizer::gpt2();
  return tokenizer;
}

size_t count_occurrences(std::string_view text, std::string_view needle) {
  size_t n = 0;
  for (size_t at = text.find(needle); at != std::string_view::npos;
       at = text.find(needle, at + needle.size()))
    ++n;
  return n;
}

void check_text(const BpeTokenizer& bpe, std::string_view text) {
  std::string joined;
  size_t checked = 0;
  for (std::string_view piece : bpe.pre_tokenize(text)) {
    FUZZ_CHECK(!piece.empty(), "pre_tokenize gave an empty piece");
    joined += piece;
    // The reference is quadratic: a few short pieces per input keep the fuzzer fast.
    if (piece.size() <= 64 && checked++ < 8)
      FUZZ_CHECK(bpe.bpe(piece) == bpe.bpe_reference(piece),
                 "bpe and bpe_reference disagree on a piece");
  }
  FUZZ_CHECK(joined == text, "the pieces of pre_tokenize do not concatenate to the text");

  const std::vector<int64_t> ids = bpe.encode(text);
  for (int64_t id : ids)
    FUZZ_CHECK(id >= 0 && id < BpeTokenizer::kEndOfText, "encode gave id " + std::to_string(id));
  FUZZ_CHECK(bpe.decode(ids) == text, "decode(encode(x)) != x");

  const std::vector<int64_t> special = bpe.encode(text, AllowSpecial::yes);
  size_t eot = 0;
  for (int64_t id : special) eot += id == BpeTokenizer::kEndOfText;
  FUZZ_CHECK(eot == count_occurrences(text, BpeTokenizer::kEndOfTextText),
             "AllowSpecial::yes gave another count of <|endoftext|> ids than the text has");
  FUZZ_CHECK(bpe.decode(special) == text, "decode(encode(x, AllowSpecial::yes)) != x");
}

void check_ids(const BpeTokenizer& bpe, std::string_view bytes) {
  std::vector<int64_t> ids;
  for (size_t i = 0; i + 1 < bytes.size(); i += 2) {
    const unsigned raw =
        static_cast<unsigned char>(bytes[i]) | static_cast<unsigned char>(bytes[i + 1]) << 8;
    ids.push_back(static_cast<int64_t>(raw) % BpeTokenizer::kVocabSize);
  }
  const std::string text = bpe.decode(ids);
  FUZZ_CHECK(!nn::find_utf8_error(text), "decode gave invalid UTF-8");
  StreamDecoder stream(bpe);
  std::string streamed;
  for (int64_t id : ids) streamed += stream.push(id);
  streamed += stream.flush();
  FUZZ_CHECK(streamed == text, "StreamDecoder and decode give different text");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input = attograd::fuzz::as_text(data, size);
  const BpeTokenizer& bpe = gpt2();
  if (nn::find_utf8_error(input)) {
    bool refused = false;
    try {
      bpe.encode(input);
    } catch (const std::invalid_argument&) {
      refused = true;
    }
    FUZZ_CHECK(refused, "encode accepted invalid UTF-8");
  } else {
    check_text(bpe, input);
  }
  check_ids(bpe, input);
  return 0;
}
