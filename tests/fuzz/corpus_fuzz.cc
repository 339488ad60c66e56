// Fuzz target: the corpus loader (gpt/text/corpus.h) on a user's text file, then what `train` does
// with the text (a char vocabulary, token ids, batches), and clean_kjv on the same bytes as if
// `bible` had printed them.
//
// Properties:
// - load_corpus(file) returns non-empty, valid UTF-8 text no longer than the file, or throws
//   std::runtime_error (documented); the text's char tokenizer round-trips it, and a batch
//   drawn from it has y = x shifted left by one token;
// - clean_kjv returns lines with no leading or trailing whitespace, ending in '\n', with at
//   least one heading, or throws std::runtime_error (documented).
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "autograd/random.h"
#include "gpt/text/char_tokenizer.h"
#include "gpt/text/corpus.h"
#include "gpt/text/dataset.h"
#include "nn/io/utf8.h"
#include "tests/fuzz/fuzz_support.h"

using namespace attograd;
using namespace attograd::gpt;

namespace {

void check_batches(const std::string& text) {
  const CharTokenizer tok = CharTokenizer::from_text(text);
  const std::vector<int64_t> ids = tok.encode(text);
  FUZZ_CHECK(tok.decode(ids) == text, "the corpus's char tokenizer does not round-trip it");
  const Dataset data(ids, 8);
  const int64_t n = data.size(Split::train);
  if (n < 2) return;  // too short for a batch: get_batch's documented error, tested elsewhere
  const int64_t T = std::min<int64_t>(8, n - 1);
  Generator gen(7);
  const Batch batch = data.get_batch(Split::train, 2, T, gen);
  const std::vector<double> x = batch.x.to_vector(), y = batch.y.to_vector();
  for (int64_t b = 0; b < 2; ++b)
    for (int64_t t = 0; t + 1 < T; ++t)
      FUZZ_CHECK(y[static_cast<size_t>(b * T + t)] == x[static_cast<size_t>(b * T + t + 1)],
                 "y is not x shifted by one");
}

void check_corpus(std::string_view bytes) {
  const std::string path = attograd::fuzz::write_scratch("corpus.txt", bytes).string();
  CorpusOptions options;
  options.cache_dir = attograd::fuzz::scratch_dir() / "cache";
  options.bible_program = "/nonexistent/bible";  // a file corpus never runs it
  Corpus corpus;
  try {
    corpus = load_corpus(path, options);
  } catch (const std::runtime_error&) {
    return;  // a clean refusal
  }
  FUZZ_CHECK(!corpus.text.empty(), "an empty corpus was accepted");
  FUZZ_CHECK(!nn::find_utf8_error(corpus.text), "the corpus text is not valid UTF-8");
  FUZZ_CHECK(corpus.text.size() <= bytes.size(), "the corpus text is longer than its file");
  check_batches(corpus.text);
}

void check_clean_kjv(std::string_view bytes) {
  std::string out;
  try {
    out = clean_kjv(bytes);
  } catch (const std::runtime_error&) {
    return;  // a clean refusal
  }
  FUZZ_CHECK(!out.empty() && out.back() == '\n', "clean_kjv's output does not end with a newline");
  auto is_space = [](char c) { return c == ' ' || c == '\t' || c == '\r'; };
  size_t start = 0;
  while (start < out.size()) {
    const size_t end = out.find('\n', start);
    const std::string_view line(out.data() + start, end - start);
    FUZZ_CHECK(line.empty() || (!is_space(line.front()) && !is_space(line.back())),
               "clean_kjv left whitespace at the ends of a line");
    start = end + 1;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes = attograd::fuzz::as_text(data, size);
  check_corpus(bytes);
  check_clean_kjv(bytes);
  return 0;
}
