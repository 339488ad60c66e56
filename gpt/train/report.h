// Everything a training run says on its log, in one place: the set-up lines start() prints
// before the first step (corpus, tokens, model, data and baselines, the plan), and the lines
// Trainer::run prints while it trains (evaluations, progress, the estimate of the run's time).
// With several ranks only rank 0 speaks: the others' reports write to a stream without a
// buffer, which drops every line.
//
//   corpus  kjv: 4,153,204 bytes, from `bible gen1:1-rev22:21` (Debian bible-kjv), cached at ...
//   tokens  char tokenizer (vocab 77): 4153204 tokens, 1.00 bytes per token, encoded in 0.05 s
//   model   gpt: n_layer 3, n_head 3, n_embd 6, block_size 8, vocab_size 77, learned ...
//   data    3737884 train / 415320 val tokens; baselines on val: uniform 4.3438, unigram ...
//   train   1500 steps, batch 32 x 8 tokens, lr 0.01 -> 0.001, 2 threads
//
//   eval at step 0: train loss 4.3453 (perplexity 77.13), val loss 4.3449 (perplexity 77.07)
//   estimate about 3.1 s for 1500 steps (2.06 ms/step measured over 10 steps; ...)
//   step 100/1500 | loss 3.0113 | lr 1.00e-02 | 125107 tok/s | 0:00 elapsed, 0:03 left
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <ostream>
#include <string>

#include "gpt/model/language_model.h"
#include "gpt/text/corpus.h"
#include "gpt/text/dataset.h"
#include "gpt/text/tokenizer.h"
#include "gpt/train/run_logs.h"
#include "gpt/train/trainer.h"

namespace attograd::gpt {

/// The val losses a trained model must get below, in nats per token (Lecture 19's references):
/// uniform = ln vocab_size (a model that knows nothing), unigram = the val split's unigram
/// entropy (a model that knows only token frequencies, and has seen the answer), bigram = the
/// val loss of the add-one bigram counted on the train split (one token of context; dataset.h).
struct Baselines {
  double uniform = 0, unigram = 0, bigram = 0;

  /// Counted on `data`'s splits for a vocabulary of `vocab_size` tokens.
  static Baselines of(const Dataset& data, int64_t vocab_size);
  /// The text of a run directory's baselines.csv: the loss plot's reference lines, "name,
  /// val_loss" then unigram and bigram (uniform is off the plot's scale at the start).
  std::string csv() const;
};

/// A duration for progress lines: "m:ss" below an hour, "h:mm:ss" from one hour, rounded to
/// the second (59.5 s is "1:00").
std::string format_duration(double seconds);

/// The lines start() prints while it sets a run up, each a tagged line ("corpus  ...").
class SetUpReport {
 public:
  explicit SetUpReport(std::ostream& out) : out_(out) {}

  /// A temporary of an interrupted run that start() removed.
  void removed_stale(const std::filesystem::path& path);
  /// More threads than the CPUs this process may run on: they would take turns.
  void threads_beyond_cpus(int threads, int cpus, int ranks);
  void corpus(const Corpus& corpus);
  void resumed(int64_t step, const std::string& checkpoint);
  /// The weights a fine-tuning run starts from (InitWeights::describe()).
  void init(const std::string& description);
  /// The tokenizer and the corpus's length in tokens, and how long encoding took.
  void tokens(const Tokenizer& tokenizer, size_t n_tokens, size_t n_bytes, double seconds);
  /// Options worth a word before the run: a warm-up that never ends, label smoothing.
  void option_notes(const TrainOptions& options);
  /// The model's kind, sizes and parameter count.
  void model(const LanguageModel& model);
  /// The splits' sizes and the baselines on val.
  void data(const Dataset& data, const Baselines& baselines);
  /// Steps, batch (of sequences of T tokens), learning rates and threads, then the global batch
  /// with several ranks; ends the set-up with a blank line.
  void plan(const TrainOptions& options, int64_t T, int threads, int ranks);
  /// A note of the caller's own ("note    <text>").
  void note(const std::string& text);

 private:
  std::ostream& out_;
};

/// The lines Trainer::run prints while it trains, and when: progress lines every log_interval
/// steps and (by_time) also by the clock, the first within first_line_s of the start and then
/// at least every line_s; the estimate of the run's time once, measured from the end of the
/// first step (which pays for the warm-up) over estimate_steps steps or estimate_s seconds,
/// whichever ends first.
class TrainingReport {
 public:
  struct Timing {
    double first_line_s, line_s;
    int64_t estimate_steps;
    double estimate_s;
  };
  /// A run of `options` starting at `first_step`, `ranks` ranks of `global_batch` sequences;
  /// flops_per_step (a GPT's, gpt_flops_per_token) adds the model's FLOP rate to the estimate.
  TrainingReport(std::ostream& out, const TrainOptions& options, int64_t first_step, int ranks,
                 std::optional<double> flops_per_step, Timing timing);

  /// Seconds since the run started.
  double elapsed() const;
  /// After each step (`step` is the count of steps done): the seconds since the start, and the
  /// estimate line when it is due.
  double step_done(int64_t step);
  /// The tokens per second of the steps since the start, `secs` after it.
  double tokens_per_s(int64_t step, double secs) const;
  /// Whether a progress line is due by the clock `secs` after the start.
  bool line_due_by_time(double secs) const;
  /// "step 100/1500 | loss 3.0113 | lr 1.00e-02 | 125107 tok/s | 0:00 elapsed, 0:03 left", with
  /// the ranks and the global batch when there are several.
  void progress(int64_t step, double loss, double lr, double secs);
  /// "eval at step N: train loss ... val loss ..."
  void eval(const EvalResult& r);
  /// A resumed run with no step left: "already at step N of M: val loss ...".
  void already_at(const EvalResult& r);

 private:
  std::ostream& out_;
  const TrainOptions& options_;
  const int64_t first_step_;
  const int ranks_;
  const int64_t global_batch_, tokens_per_step_;
  const std::optional<double> flops_per_step_;
  const Timing timing_;
  const std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
  double last_line_ = 0;                 // when the last line, progress or evaluation, was printed
  bool any_step_line_ = false;           // whether a progress line was (the first one comes sooner)
  std::optional<double> measured_from_;  // elapsed() at the end of the first step
  bool estimated_ = false;
};

}  // namespace attograd::gpt
