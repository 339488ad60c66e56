// Tests gpt/text/dataset: the 90/10 split by position, batches as shifted windows drawn from every
// valid start, the errors, and the unigram/bigram baselines on Tiny Shakespeare.
#define BOOST_TEST_MODULE dataset
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include <unistd.h>

#include "gpt/text/char_tokenizer.h"
#include "gpt/text/corpus.h"
#include "gpt/text/dataset.h"
#include "tests/peak_memory.h"
#include "tests/test_util.h"

using namespace attograd;
using namespace attograd::gpt;
using attograd::testing::data_available;
using attograd::testing::expect_throw_with;
using attograd::testing::shared_data;
using Ids = std::vector<int64_t>;

namespace {

// 0, 1, ..., n-1: a token's value is its position, so a window is identified by its start.
Ids iota_ids(int64_t n) {
  Ids ids(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) ids[static_cast<size_t>(i)] = i;
  return ids;
}

}  // namespace

BOOST_AUTO_TEST_CASE(split_is_ninety_ten_by_position) {
  const Dataset data(iota_ids(1000), 8);
  BOOST_TEST(data.size(Split::train) == 900);
  BOOST_TEST(data.size(Split::val) == 100);
  BOOST_TEST(data.tokens(Split::train).front() == 0);
  BOOST_TEST(data.tokens(Split::train).back() == 899);
  BOOST_TEST(data.tokens(Split::val).front() == 900);  // val is the last 10%
  BOOST_TEST(data.tokens(Split::val).back() == 999);
  // floor(0.9 n): 1,115,394 tokens give 1,003,854 train and 111,540 val (as nanoGPT).
  const Dataset odd(Ids(1115394, 0), 8);
  BOOST_TEST(odd.size(Split::train) == 1003854);
  BOOST_TEST(odd.size(Split::val) == 111540);
  BOOST_TEST(std::string(split_name(Split::val)) == "val");
}

BOOST_AUTO_TEST_CASE(batches_are_shifted_windows) {
  const Dataset data(iota_ids(1000), 16);
  Generator gen(42);
  const auto [x, y] = data.get_batch(Split::train, 4, 16, gen);
  BOOST_TEST((x.dtype() == DType::i64));
  BOOST_TEST((y.dtype() == DType::i64));
  BOOST_TEST((x.shape() == Shape{4, 16}));
  BOOST_TEST((y.shape() == Shape{4, 16}));
  const Ids xs = x.to_ids(), ys = y.to_ids();
  for (size_t b = 0; b < 4; ++b) {
    const int64_t start = xs[b * 16];
    BOOST_TEST(start >= 0);
    BOOST_TEST(start <= 900 - 16 - 1);  // the last target must stay inside train
    for (size_t t = 0; t < 16; ++t) {
      BOOST_TEST(xs[b * 16 + t] == start + static_cast<int64_t>(t));
      BOOST_TEST(ys[b * 16 + t] == start + static_cast<int64_t>(t) + 1);
    }
  }
  // val windows come from val tokens only.
  const Batch val = data.get_batch(Split::val, 8, 10, gen);
  for (int64_t id : val.x.to_ids()) BOOST_TEST(id >= 900);
  for (int64_t id : val.y.to_ids()) BOOST_TEST(id <= 999);
}

BOOST_AUTO_TEST_CASE(same_seed_same_batches) {
  const Dataset data(iota_ids(500), 8);
  Generator a(7), b(7), c(8);
  const Ids first = data.get_batch(Split::train, 8, 8, a).x.to_ids();
  BOOST_TEST(first == data.get_batch(Split::train, 8, 8, b).x.to_ids(),
             boost::test_tools::per_element());
  BOOST_TEST(first != data.get_batch(Split::train, 8, 8, c).x.to_ids());
  // One below(n - T) per row, in row order: the documented draw sequence.
  Generator d(7);
  for (size_t row = 0; row < 8; ++row) {
    BOOST_TEST(first[row * 8] == static_cast<int64_t>(d.below(450 - 8)));
  }
}

// Data-parallel ranks each keep their rows of one global batch: rank 0's 3 rows and rank 1's 3
// rows, in that order, are the 6 rows one process draws, and every rank's generator ends in the
// state of that one process.
BOOST_AUTO_TEST_CASE(ranks_share_one_global_batch_row_by_row) {
  const Dataset data(iota_ids(500), 8);
  Generator whole(7), rank0(7), rank1(7);
  const Batch all = data.get_batch(Split::train, 6, 8, whole);
  Ids joined = data.get_batch(Split::train, 3, 8, rank0, 0, 2).y.to_ids();
  const Ids second = data.get_batch(Split::train, 3, 8, rank1, 1, 2).y.to_ids();
  joined.insert(joined.end(), second.begin(), second.end());
  BOOST_TEST(joined == all.y.to_ids(), boost::test_tools::per_element());
  BOOST_TEST(rank0.state() == whole.state());
  BOOST_TEST(rank1.state() == whole.state());
  expect_throw_with<std::invalid_argument>([&] { data.get_batch(Split::train, 3, 8, rank0, 2, 2); },
                                           "Dataset::get_batch: rank 2 is not in [0, 2)");
}

BOOST_AUTO_TEST_CASE(every_valid_start_is_drawn_including_the_last) {
  // train = 20 tokens, T = 5: starts 0 .. 14, all equally likely.
  const Dataset data(iota_ids(23), 5);
  BOOST_TEST(data.size(Split::train) == 20);
  BOOST_TEST(data.num_windows(Split::train, 5) == 15);
  Generator gen(1);
  std::vector<int> hits(15, 0);
  const Ids xs = data.get_batch(Split::train, 3000, 5, gen).x.to_ids();
  for (size_t b = 0; b < 3000; ++b) {
    BOOST_REQUIRE(xs[b * 5] >= 0 && xs[b * 5] < 15);
    ++hits[static_cast<size_t>(xs[b * 5])];
  }
  for (int h : hits) BOOST_TEST(std::abs(h - 200) < 70);  // 3000 / 15 = 200 each, ~4.7 sigma
}

BOOST_AUTO_TEST_CASE(exactly_t_plus_one_tokens_gives_one_window) {
  // 100 tokens: val = the last 10 = 90..99; T = 9 needs exactly 10.
  const Dataset data(iota_ids(100), 9);
  BOOST_TEST(data.num_windows(Split::val, 9) == 1);
  Generator gen(3);
  const auto [x, y] = data.get_batch(Split::val, 5, 9, gen);
  const Ids xs = x.to_ids(), ys = y.to_ids();
  for (size_t b = 0; b < 5; ++b) {
    for (size_t t = 0; t < 9; ++t) {
      BOOST_TEST(xs[b * 9 + t] == 90 + static_cast<int64_t>(t));
      BOOST_TEST(ys[b * 9 + t] == 91 + static_cast<int64_t>(t));
    }
  }
}

BOOST_AUTO_TEST_CASE(errors_name_the_problem_and_the_fix) {
  const Dataset data(iota_ids(100), 9);
  Generator gen(0);
  // val has 10 tokens: T = 10 needs 11.
  const Dataset wide(iota_ids(100), 32);
  expect_throw_with<std::invalid_argument>([&] { wide.get_batch(Split::val, 2, 10, gen); },
                                           "the val split has 10 tokens, fewer than T + 1 = 11");
  expect_throw_with<std::invalid_argument>([&] { wide.get_batch(Split::val, 2, 10, gen); },
                                           "use a longer corpus or a smaller block_size");
  expect_throw_with<std::invalid_argument>([&] { data.get_batch(Split::train, 2, 10, gen); },
                                           "T = 10 exceeds block_size = 9");
  expect_throw_with<std::invalid_argument>([&] { data.get_batch(Split::train, 0, 4, gen); },
                                           "B = 0");
  expect_throw_with<std::invalid_argument>([&] { data.get_batch(Split::train, 2, 0, gen); },
                                           "T = 0");
  expect_throw_with<std::invalid_argument>([] { Dataset(iota_ids(10), 0); },
                                           "block_size must be at least 1");
  expect_throw_with<std::invalid_argument>([] { Dataset(Ids{1, 2, -3}, 4); }, "position 2");
  const Dataset none(Ids{}, 4);
  expect_throw_with<std::invalid_argument>([&] { none.get_batch(Split::train, 1, 1, gen); },
                                           "the train split has 0 tokens");
}

// The example: B = 2^61 sequences of T = 8 tokens wrap to 0 tokens mod 2^64.
BOOST_AUTO_TEST_CASE(a_batch_whose_size_overflows_is_refused) {
  const Dataset data(iota_ids(100), 9);
  Generator gen(0);
  expect_throw_with<std::overflow_error>(
      [&] { data.get_batch(Split::train, 2305843009213693952, 8, gen); },
      "Dataset::get_batch: batch size B * T tokens: 2305843009213693952 * 8 exceeds");
  expect_throw_with<std::overflow_error>(
      [] {
        bigram_cross_entropy({0, 1}, {0, 1}, int64_t{1} << 32);
      },
      "bigram_cross_entropy: pair keys a * V + b");
}

BOOST_AUTO_TEST_CASE(unigram_entropy_by_hand) {
  BOOST_TEST(unigram_entropy({5, 5, 5}) == 0.0);
  BOOST_TEST(std::abs(unigram_entropy({0, 1}) - std::log(2.0)) < 1e-12);
  BOOST_TEST(std::abs(unigram_entropy({0, 1, 2, 3}) - std::log(4.0)) < 1e-12);
  // p = (1/2, 1/4, 1/4): H = 1.5 ln 2.
  BOOST_TEST(std::abs(unigram_entropy({7, 7, 1, 2}) - 1.5 * std::log(2.0)) < 1e-12);
  expect_throw_with<std::invalid_argument>([] { unigram_entropy({}); }, "empty");
}

BOOST_AUTO_TEST_CASE(bigram_cross_entropy_by_hand) {
  // train 0 1 0 1: bigrams (0,1) x2, (1,0) x1; rows: count(0,.) = 2, count(1,.) = 1. V = 2.
  // val 0 1 1: P(1|0) = (2+1)/(2+2) = 3/4, P(1|1) = (0+1)/(1+2) = 1/3.
  const double expected = -(std::log(0.75) + std::log(1.0 / 3.0)) / 2;
  BOOST_TEST(std::abs(bigram_cross_entropy({0, 1, 0, 1}, {0, 1, 1}, 2) - expected) < 1e-12);
  // With no training pairs every prediction is uniform: ln V.
  BOOST_TEST(std::abs(bigram_cross_entropy({0}, {0, 1, 2}, 3) - std::log(3.0)) < 1e-12);
  expect_throw_with<std::invalid_argument>(
      [] {
        bigram_cross_entropy({0, 1}, {0, 2}, 2);
      },
      "val id 2 at position 1");
  expect_throw_with<std::invalid_argument>(
      [] {
        bigram_cross_entropy({0, 1}, {0}, 2);
      },
      "2 val tokens");
}

// The val losses of the counted 3-, 4- and 5-grams on `data`'s splits, add-one and add-0.01, as
// docs/05-training.md quotes them (4 decimals).
static void check_ngrams(const Dataset& data, int64_t V, const std::vector<double>& add_one,
                         const std::vector<double>& add_hundredth) {
  for (int64_t n = 3; n <= 5; ++n) {
    const auto i = static_cast<size_t>(n - 3);
    BOOST_TEST_CONTEXT("n = " << n) {
      const std::pair<double, double> cases[] = {{1.0, add_one[i]}, {0.01, add_hundredth[i]}};
      for (const auto& [k, expected] : cases) {
        const double loss =
            ngram_cross_entropy(data.tokens(Split::train), data.tokens(Split::val), V, n, k).loss;
        BOOST_TEST(std::abs(loss - expected) < 5e-5, "k = " << k << ": " << loss);
      }
    }
  }
}

// The counted n-gram by hand: train 0 1 0 1 0 1 (V = 2) has the trigram contexts (0, 1) and
// (1, 0), each twice and each followed by the same token; val 0 1 0 scores its last token from
// (0, 1): add-one gives (2 + 1) / (2 + 2) = 3/4, add-0.5 (2.5) / (3); an unseen context is
// uniform; n = 2 is the bigram baseline's model exactly.
BOOST_AUTO_TEST_CASE(ngram_cross_entropy_by_hand) {
  const std::vector<int64_t> train{0, 1, 0, 1, 0, 1};
  const NgramLoss tri = ngram_cross_entropy(train, {0, 1, 0}, 2, 3);
  BOOST_TEST(tri.contexts == 2);
  BOOST_TEST(tri.predictions == 1);
  BOOST_TEST(std::abs(tri.loss + std::log(0.75)) < 1e-12);
  BOOST_TEST(std::abs(ngram_cross_entropy(train, {0, 1, 0}, 2, 3, 0.5).loss + std::log(2.5 / 3.0)) <
             1e-12);
  BOOST_TEST(std::abs(ngram_cross_entropy(train, {1, 1, 1}, 2, 3).loss - std::log(2.0)) < 1e-12);
  const std::vector<int64_t> a{0, 1, 0, 1, 2, 2, 1}, b{0, 1, 1, 2, 0};
  BOOST_TEST(std::abs(ngram_cross_entropy(a, b, 3, 2).loss - bigram_cross_entropy(a, b, 3)) <
             1e-12);
  expect_throw_with<std::invalid_argument>(
      [] {
        ngram_cross_entropy({0, 1}, {0, 1}, 2, 3);
      },
      "a 3-gram needs at least 3 train and val tokens");
  expect_throw_with<std::overflow_error>(
      [] {
        ngram_cross_entropy({0, 1, 2}, {0, 1, 2}, int64_t{1} << 32, 3);
      },
      "ngram_cross_entropy: the keys of 3-grams over 4294967296 tokens (V^3) do not fit in int64; "
      "use n <= 1 for this vocabulary (ngram --n)");
}

// The counted 8-gram of 2 million tokens that are all different n-grams: its table is one
// sorted int64 key a token (16 MB), where two hash maps took about 85 bytes a token (170 MB; a
// 10 MB corpus took 860 MB, issue 31, kind 13). A corpus whose keys would not fit is refused
// before any is made, with the figures.
BOOST_AUTO_TEST_CASE(ngram_tables_take_8_bytes_a_token_and_are_checked_first) {
  Generator gen(5);
  Ids train(2'000'000), val(1000);
  for (Ids* ids : {&train, &val})
    for (int64_t& id : *ids) id = static_cast<int64_t>(gen.below(65));
  const testing::MeasuredRun run = testing::run_measured([&] {
    const NgramLoss r = ngram_cross_entropy(train, val, 65, 8);
    // Nearly every 7-token context of random text is new: each scored token is uniform.
    return r.contexts > 1'990'000 && std::abs(r.loss - std::log(65.0)) < 0.05 ? 0 : 1;
  });
  BOOST_TEST(run.exit_code == 0);
  BOOST_TEST((run.peak_kib >= 0 && run.peak_kib <= 40 * 1024), run.peak_kib << " KiB");
  expect_throw_with<std::runtime_error>(
      [&] { ngram_cross_entropy(train, val, 65, 8, 1.0, 1'000'000); },
      "counting the 8-grams of 2000000 train tokens needs 16.0 MB (8 bytes a token), more than "
      "the 1.0 MB allowed; use a shorter corpus");
}

BOOST_AUTO_TEST_CASE(tiny_shakespeare_baselines) {
  const std::filesystem::path path = shared_data("tinyshakespeare.txt");
  if (!data_available(path, "../shared is not beside this checkout")) return;
  std::ifstream in(path, std::ios::binary);
  const std::string text((std::istreambuf_iterator<char>(in)), {});
  const CharTokenizer tok = CharTokenizer::from_text(text);
  BOOST_TEST(tok.vocab_size() == 65);
  BOOST_TEST(tok.token_text(0) == "\n");
  BOOST_TEST(tok.token_text(1) == " ");
  const Dataset data(tok.encode(text), 256);
  const double unigram = unigram_entropy(data.tokens(Split::val));
  const double bigram =
      bigram_cross_entropy(data.tokens(Split::train), data.tokens(Split::val), tok.vocab_size());
  BOOST_TEST_MESSAGE("tiny shakespeare: V = "
                     << tok.vocab_size() << ", train " << data.size(Split::train) << ", val "
                     << data.size(Split::val) << " tokens; val unigram entropy " << unigram
                     << " nats; add-one bigram cross-entropy train -> val " << bigram
                     << " nats; uniform ln V = " << std::log(65.0));
  BOOST_TEST(std::abs(unigram - 3.337) < 1e-3);
  BOOST_TEST(std::abs(bigram - 2.482) < 1e-3);
  // docs/05-training.md's counted n-grams (`attograd ngram`), add-one and add-0.01.
  check_ngrams(data, tok.vocab_size(), {2.0684, 1.9526, 2.1737}, {2.0658, 1.7959, 1.7704});
}

// The default corpus's baselines, which `attograd train` prints and docs/05-training.md quotes.
BOOST_AUTO_TEST_CASE(king_james_bible_baselines) {
  if (!data_available("/usr/bin/bible", "apt-get install bible-kjv")) return;
  attograd::gpt::CorpusOptions options;
  options.cache_dir =
      std::filesystem::temp_directory_path() / ("attograd_kjv_" + std::to_string(::getpid()));
  const attograd::gpt::Corpus kjv = attograd::gpt::load_corpus("kjv", options);
  std::filesystem::remove_all(options.cache_dir);
  const auto tok = attograd::gpt::CharTokenizer::from_text(kjv.text);
  BOOST_TEST(tok.vocab_size() == 73);
  const attograd::gpt::Dataset data(tok.encode(kjv.text), 8);
  using attograd::gpt::Split;
  BOOST_TEST(std::abs(attograd::gpt::unigram_entropy(data.tokens(Split::val)) - 3.018) < 1e-3);
  BOOST_TEST(std::abs(attograd::gpt::bigram_cross_entropy(data.tokens(Split::train),
                                                          data.tokens(Split::val), 73) -
                      2.328) < 1e-3);
  check_ngrams(data, 73, {1.8738, 1.5888, 1.5933}, {1.8655, 1.5275, 1.3878});
  // `attograd ngram`'s N = 1 row: the unigram counted on train (add-one), scored on val.
  BOOST_TEST(
      std::abs(ngram_cross_entropy(data.tokens(Split::train), data.tokens(Split::val), 73, 1).loss -
               3.0308) < 5e-5);
}
