// Train/val split, random next-token batches, and the unigram/bigram baselines (dataset.h).
#include "gpt/text/dataset.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <stdexcept>
#include <string>
#include <unordered_map>

#include "autograd/allocator.h"
#include "autograd/size_math.h"

namespace attograd::gpt {

const char* split_name(Split split) { return split == Split::train ? "train" : "val"; }

Dataset::Dataset(std::vector<int64_t> tokens, int64_t block_size) : block_size_(block_size) {
  if (block_size < 1) {
    throw std::invalid_argument("Dataset: block_size must be at least 1, got " +
                                std::to_string(block_size));
  }
  for (size_t i = 0; i < tokens.size(); ++i) {
    if (tokens[i] < 0) {
      throw std::invalid_argument("Dataset: token id " + std::to_string(tokens[i]) +
                                  " at position " + std::to_string(i) +
                                  " is negative; ids must be in [0, V)");
    }
  }
  // floor(0.9 n) in integers, so no rounding of 0.9 can move the boundary by a token.
  const size_t n_train = checked_mul(tokens.size(), size_t{9}, "Dataset: the train split") / 10;
  val_.assign(tokens.begin() + static_cast<std::ptrdiff_t>(n_train), tokens.end());
  tokens.resize(n_train);
  train_ = std::move(tokens);
}

int64_t Dataset::num_windows(Split split, int64_t T) const {
  const int64_t n = size(split);
  return n > T ? n - T : 0;
}

Batch Dataset::get_batch(Split split, int64_t B, int64_t T, Generator& gen, int rank,
                         int ranks) const {
  if (B < 1 || T < 1) {
    throw std::invalid_argument(
        "Dataset::get_batch: batch size B and length T must be at least "
        "1, got B = " +
        std::to_string(B) + ", T = " + std::to_string(T));
  }
  if (T > block_size_) {
    throw std::invalid_argument("Dataset::get_batch: T = " + std::to_string(T) +
                                " exceeds block_size = " + std::to_string(block_size_) +
                                "; the model has no positions beyond block_size");
  }
  if (ranks < 1 || rank < 0 || rank >= ranks)
    throw std::invalid_argument("Dataset::get_batch: rank " + std::to_string(rank) +
                                " is not in [0, " + std::to_string(ranks) + ")");
  const std::vector<int64_t>& tokens = this->tokens(split);
  const int64_t n = static_cast<int64_t>(tokens.size());
  if (n < T + 1) {
    throw std::invalid_argument(
        std::string("Dataset::get_batch: the ") + split_name(split) + " split has " +
        std::to_string(n) + " tokens, fewer than T + 1 = " + std::to_string(T + 1) +
        " needed for one window of T = " + std::to_string(T) +
        " inputs and their next-token targets; use a longer corpus or a smaller block_size");
  }
  // Valid starts are 0 .. n - T - 1: the window's last target is tokens[start + T] <= n - 1.
  const auto n_starts = static_cast<uint64_t>(n - T);
  checked_mul(B, T, "Dataset::get_batch: batch size B * T tokens");
  Batch batch{Tensor::empty({B, T}, DType::i64), Tensor::empty({B, T}, DType::i64)};
  int64_t* x = batch.x.data<int64_t>();
  int64_t* y = batch.y.data<int64_t>();
  checked_mul(B, static_cast<int64_t>(ranks), "Dataset::get_batch: the global batch ranks * B");
  // The other ranks' rows are drawn too (one below() each), so every generator moves alike.
  for (int64_t skip = 0; skip < B * rank; ++skip) gen.below(n_starts);
  for (int64_t b = 0; b < B; ++b) {
    const auto start = static_cast<size_t>(gen.below(n_starts));
    for (int64_t t = 0; t < T; ++t) {
      x[b * T + t] = tokens[start + static_cast<size_t>(t)];
      y[b * T + t] = tokens[start + static_cast<size_t>(t) + 1];
    }
  }
  for (int64_t skip = B * (rank + 1); skip < B * ranks; ++skip) gen.below(n_starts);
  return batch;
}

double unigram_entropy(const std::vector<int64_t>& tokens) {
  if (tokens.empty()) {
    throw std::invalid_argument(
        "unigram_entropy: the token sequence is empty; entropy needs at "
        "least one token");
  }
  std::unordered_map<int64_t, int64_t> counts;
  for (int64_t id : tokens) ++counts[id];
  const double n = static_cast<double>(tokens.size());
  double h = 0;
  for (const auto& [id, count] : counts) {
    const double p = static_cast<double>(count) / n;
    h -= p * std::log(p);
  }
  return h;
}

namespace {

void check_ids(const std::vector<int64_t>& ids, const char* name, int64_t V) {
  for (size_t i = 0; i < ids.size(); ++i) {
    if (ids[i] < 0 || ids[i] >= V) {
      throw std::invalid_argument(std::string("bigram_cross_entropy: ") + name + " id " +
                                  std::to_string(ids[i]) + " at position " + std::to_string(i) +
                                  " is outside the vocabulary [0, " + std::to_string(V) + ")");
    }
  }
}

}  // namespace

double bigram_cross_entropy(const std::vector<int64_t>& train, const std::vector<int64_t>& val,
                            int64_t vocab_size) {
  const int64_t V = vocab_size;
  if (V < 1) {
    throw std::invalid_argument("bigram_cross_entropy: vocab_size must be at least 1, got " +
                                std::to_string(V));
  }
  if (train.empty() || val.size() < 2) {
    throw std::invalid_argument(
        "bigram_cross_entropy: need at least 1 train token and 2 val tokens (one bigram), got " +
        std::to_string(train.size()) + " and " + std::to_string(val.size()));
  }
  checked_mul(V, V, "bigram_cross_entropy: pair keys a * V + b");
  if (train.size() < 2) {  // no pair seen: every P(b | a) is 1 / V
    check_ids(train, "train", V);
    check_ids(val, "val", V);
    return std::log(static_cast<double>(V));
  }
  // The counted n-gram of n = 2 with add-one, term for term: one sorted key a train token, where
  // a hash map of pairs took about 40 bytes a distinct pair (millions with GPT-2's V).
  return ngram_cross_entropy(train, val, V, 2, 1.0).loss;
}

NgramLoss ngram_cross_entropy(const std::vector<int64_t>& train, const std::vector<int64_t>& val,
                              int64_t vocab_size, int64_t n, double k, size_t max_table_bytes) {
  const int64_t V = vocab_size;
  if (V < 1 || n < 1 || !(k > 0))
    throw std::invalid_argument(
        "ngram_cross_entropy: need vocab_size >= 1, n >= 1 and k > 0, got " + std::to_string(V) +
        ", " + std::to_string(n) + " and " + std::to_string(k));
  if (static_cast<int64_t>(train.size()) < n || static_cast<int64_t>(val.size()) < n)
    throw std::invalid_argument("ngram_cross_entropy: a " + std::to_string(n) +
                                "-gram needs at least " + std::to_string(n) +
                                " train and val tokens, got " + std::to_string(train.size()) +
                                " and " + std::to_string(val.size()));
  int64_t keys = 1;  // V^n: every n-gram's key below it
  for (int64_t i = 0; i < n; ++i) {
    if (keys > std::numeric_limits<int64_t>::max() / V)  // V^i fits, V^(i + 1) does not
      throw std::overflow_error("ngram_cross_entropy: the keys of " + std::to_string(n) +
                                "-grams over " + std::to_string(V) + " tokens (V^" +
                                std::to_string(n) + ") do not fit in int64; use n <= " +
                                std::to_string(i) + " for this vocabulary (ngram --n)");
    keys *= V;
  }
  check_ids(train, "train", V);
  check_ids(val, "val", V);
  // The table is train's n-gram keys, one int64 each: estimated and refused before any is made.
  const size_t grams_in_train = train.size() + 1 - static_cast<size_t>(n);
  const size_t need = checked_mul(grams_in_train, sizeof(int64_t), "n-gram table bytes");
  const size_t limit = max_table_bytes != 0 ? max_table_bytes : physical_memory_bytes() / 2;
  if (limit != 0 && need > limit) {
    const auto size = [](size_t bytes) {
      char buf[32];
      const double b = static_cast<double>(bytes);
      std::snprintf(buf, sizeof buf, b < 1e9 ? "%.1f MB" : "%.2f GB", b < 1e9 ? b / 1e6 : b / 1e9);
      return std::string(buf);
    };
    throw std::runtime_error("counting the " + std::to_string(n) + "-grams of " +
                             std::to_string(train.size()) + " train tokens needs " + size(need) +
                             " (8 bytes a token), more than the " + size(limit) + " allowed" +
                             (max_table_bytes != 0 ? "" : " (half this machine's memory)") +
                             "; use a shorter corpus");
  }
  // The key of the n − 1 tokens before position i (base V), and of the n-gram ending at i.
  const auto context_key = [&](const std::vector<int64_t>& s, size_t i) {
    int64_t key = 0;
    for (size_t j = i + 1 - static_cast<size_t>(n); j < i; ++j) key = key * V + s[j];
    return key;
  };
  // The n-gram keys context * V + next, sorted: the n-grams of one context are then adjacent,
  // so that one array of 8 bytes a token answers both counts by binary search. Two hash maps
  // (n-gram and context counts) took about 85 bytes a token: 22 GB for the largest corpus
  // `train` reads (issue 31, kind 13).
  std::vector<int64_t> grams;
  grams.reserve(grams_in_train);
  for (size_t i = static_cast<size_t>(n - 1); i < train.size(); ++i)
    grams.push_back(context_key(train, i) * V + train[i]);
  std::sort(grams.begin(), grams.end());
  NgramLoss r;
  for (size_t i = 0; i < grams.size(); ++i)
    if (i == 0 || grams[i] / V != grams[i - 1] / V) ++r.contexts;
  double total = 0;
  for (size_t i = static_cast<size_t>(n - 1); i < val.size(); ++i) {
    const int64_t c = context_key(val, i);
    // count_train(c, .): the keys in [c V, (c + 1) V), which fits as V^n does.
    const auto row_begin = std::lower_bound(grams.begin(), grams.end(), c * V);
    const auto row_end = std::lower_bound(row_begin, grams.end(), (c + 1) * V);
    const auto gram = std::equal_range(row_begin, row_end, c * V + val[i]);
    const auto count = static_cast<double>(gram.second - gram.first);
    const auto row = static_cast<double>(row_end - row_begin);
    total -= std::log((count + k) / (row + k * static_cast<double>(V)));
    ++r.predictions;
  }
  r.loss = total / static_cast<double>(r.predictions);
  return r;
}

}  // namespace attograd::gpt
