// Dataset: token ids split into train and val, and random (B, T) batches of next-token pairs.
//
// Shapes: B batch size, T time (context length, T <= block_size), V vocab size.
//
// The split is by position, as in nanoGPT: the first 90% of the tokens train, the last 10%
// validate (n_train = floor(0.9 n), computed in integers). A random split of characters would
// leak: every val window would overlap train windows, and val loss would measure memory.
//
// A batch is B windows of T + 1 consecutive tokens, each from a start drawn uniformly from all
// valid starts [0, n - T - 1] of the split (n = tokens in the split) with Generator::below:
//
//   x[b, t] = tokens[start_b + t],   y[b, t] = tokens[start_b + t + 1]   (y is x shifted by one)
//
// so y[b, t] is the target for the prediction made after reading x[b, 0..t]. The starts are
// drawn in row order b = 0 .. B-1, one below() call each, so the same seed gives the same
// batches.
//
// Two baselines put a first model's loss in context (all in nats, natural log):
// - unigram_entropy: the loss of always predicting the token frequencies of a sequence (a
//   model that ignores its context entirely, and has seen the answer).
// - bigram_cross_entropy: the val loss of an add-one-smoothed bigram model counted on train,
//   the classic lecture baseline a transformer should beat.
// On Tiny Shakespeare (char tokenizer, V = 65): val unigram entropy 3.337, add-one bigram
// cross-entropy train -> val 2.482 (tests/gpt/text/dataset_test.cc); ln 65 = 4.174 is the loss of
// a uniform guess.
//
// Errors: std::invalid_argument for bad arguments (non-positive sizes, T > block_size, a split
// too short for one window, ids outside [0, V)), each naming the values involved.
#pragma once

#include <cstdint>
#include <vector>

#include "autograd/random.h"
#include "autograd/tensor.h"

namespace attograd::gpt {

/// Which part of the tokens: the first 90% (train) or the last 10% (val).
enum class Split { train, val };

/// "train" or "val".
const char* split_name(Split split);

/// One batch of next-token pairs: x (B, T) i64 inputs and y (B, T) i64 targets, y = x shifted
/// left by one position in the corpus. Works with structured bindings: auto [x, y] = ...
struct Batch {
  Tensor x;
  Tensor y;
};

/// Token ids split 90/10 by position, with random batches.
class Dataset {
 public:
  /// Splits `tokens` (n,) into train = tokens[0, floor(0.9 n)) and val = the rest.
  /// `block_size` is the model's maximum context: get_batch refuses T > block_size.
  /// Throws std::invalid_argument if block_size < 1 or a token id is negative (naming its
  /// position). Too few tokens is not an error here but in get_batch, which knows T.
  Dataset(std::vector<int64_t> tokens, int64_t block_size);

  int64_t block_size() const { return block_size_; }
  /// The tokens of a split, in corpus order.
  const std::vector<int64_t>& tokens(Split split) const {
    return split == Split::train ? train_ : val_;
  }
  /// Number of tokens in a split.
  int64_t size(Split split) const { return static_cast<int64_t>(tokens(split).size()); }
  /// Number of distinct windows of T + 1 tokens in a split: n - T (0 if the split is too short).
  int64_t num_windows(Split split, int64_t T) const;

  /// B random windows of the split as x (B, T) and y (B, T), both i64 (see the top of this
  /// file). Draws B numbers from gen. Throws std::invalid_argument if B < 1, T < 1,
  /// T > block_size, or the split has fewer than T + 1 tokens (naming the split, its size
  /// and T: "use a longer corpus or a smaller block_size"); std::overflow_error if B * T does
  /// not fit int64_t.
  Batch get_batch(Split split, int64_t B, int64_t T, Generator& gen) const {
    return get_batch(split, B, T, gen, 0, 1);
  }
  /// Rank `rank`'s share of a batch spread over `ranks` processes (data-parallel training):
  /// draws the ranks * B windows of one global batch from gen, as get_batch(split, ranks * B,
  /// T, gen) would, and returns only rows rank * B .. (rank + 1) * B - 1. Every rank's
  /// generator stays in the same state, and the ranks together see exactly the batch one
  /// process with ranks * B would. Throws as get_batch does, and std::invalid_argument unless
  /// 0 <= rank < ranks.
  Batch get_batch(Split split, int64_t B, int64_t T, Generator& gen, int rank, int ranks) const;

 private:
  int64_t block_size_;
  std::vector<int64_t> train_;  // (floor(0.9 n),)
  std::vector<int64_t> val_;    // (n - floor(0.9 n),)
};

/// Entropy, in nats, of the token frequency distribution of `tokens`:
///   H = -sum_v p_v ln p_v,  p_v = count(v) / n.
/// 0 for a sequence of one repeated token. Throws std::invalid_argument if `tokens` is empty.
double unigram_entropy(const std::vector<int64_t>& tokens);

/// Cross-entropy, in nats per token, of `val` under a bigram model counted on `train` with
/// add-one (Laplace) smoothing over a vocabulary of V = vocab_size tokens:
///   P(b | a) = (count_train(a, b) + 1) / (count_train(a, .) + V)
///   loss = -(1 / (m - 1)) sum_{i=1}^{m-1} ln P(val[i] | val[i-1])     (m = val.size())
/// count_train(a, .) counts the bigrams of train that start with a, so each P(. | a) sums to 1.
/// Only pairs inside each sequence count (no pair across the train/val boundary).
/// Throws std::invalid_argument if vocab_size < 1, train has fewer than 1 token, val fewer than
/// 2, or an id is outside [0, V) (naming the sequence, position and id); std::overflow_error if
/// V * V does not fit int64_t.
double bigram_cross_entropy(const std::vector<int64_t>& train, const std::vector<int64_t>& val,
                            int64_t vocab_size);

/// A counted n-gram model's val loss and size (ngram_cross_entropy).
struct NgramLoss {
  double loss = 0;          // nats per scored val token
  int64_t contexts = 0;     // distinct (n − 1)-token contexts seen in train: the table's rows
  int64_t predictions = 0;  // val tokens scored: m − (n − 1)
};

/// Cross-entropy, in nats per token, of `val` under an n-gram model counted on `train` with
/// add-k smoothing over V = vocab_size tokens (k = 1: Laplace's add-one, as the bigram's):
///   P(b | c) = (count_train(c, b) + k) / (count_train(c, .) + k V),  c the n − 1 tokens before b
///   loss = -(1 / (m − n + 1)) sum_{i=n-1}^{m-1} ln P(val[i] | val[i-n+1 .. i-1])
/// A context train never shows gets the uniform 1 / V. n = 2 is bigram_cross_entropy's model.
/// The lecture's comparison with attention: the table has one row per context seen, up to
/// V^(n-1), and a context longer than n − 1 tokens is invisible to it.
/// Memory: 8 bytes per train token (its n-gram's key, sorted), checked before any is made
/// against `max_table_bytes` (0: half the machine's physical memory). Throws
/// std::invalid_argument for n < 1, k <= 0, too short sequences or an id outside [0, V),
/// std::overflow_error when V^n does not fit int64_t (the n-gram keys), and std::runtime_error
/// naming the bytes needed and allowed when the keys would not fit.
NgramLoss ngram_cross_entropy(const std::vector<int64_t>& train, const std::vector<int64_t>& val,
                              int64_t vocab_size, int64_t n, double k = 1.0,
                              size_t max_table_bytes = 0);

}  // namespace attograd::gpt
