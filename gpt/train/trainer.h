// Training a language model (a GPT, or the bigram and average models of gpt/model/bigram_average.h)
// on a Dataset: AdamW, warmup + cosine learning rate, gradient clipping and accumulation, periodic
// evaluation (loss and perplexity), CSV logs, plots, atomic checkpoints, and bit-exact resume.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <iosfwd>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "autograd/autocast.h"
#include "autograd/random.h"
#include "gpt/io/fields.h"
#include "gpt/model/checkpoint.h"
#include "gpt/model/field_ranges.h"
#include "gpt/model/gpt2.h"
#include "gpt/model/perplexity.h"
#include "gpt/text/dataset.h"
#include "gpt/train/distributed.h"
#include "nn/optim.h"

namespace attograd::gpt {

/// Hyper-parameters of a training run (nanoGPT's names where it has them).
struct TrainOptions {
  int64_t max_steps = 2000;     // optimizer steps
  int64_t batch_size = 32;      // B, sequences per micro-batch
  int64_t block_size = 0;       // T of each sequence; 0 = the model's block_size
  int64_t grad_accum = 1;       // micro-batches per optimizer step
  double learning_rate = 1e-2;  // peak lr after warmup
  double min_lr = 1e-3;         // floor of the cosine decay
  int64_t warmup_steps = 100;
  int64_t lr_decay_steps = 0;  // 0 = max_steps (decay_steps())
  double weight_decay = 0.1;   // AdamW, 2-D weights only
  double beta1 = 0.9;
  double beta2 = 0.95;
  double grad_clip = 1.0;       // global L2 norm; 0 = off
  uint64_t seed = 1337;         // batches (model init has its own seed)
  int64_t eval_interval = 250;  // evaluate every N steps (and at the end); 0 = only at the end
  int64_t eval_early = 0;       // also evaluate every N steps before the first eval_interval step
                                // (with eval_interval 0: before the end); 0 = off
  int64_t eval_iters = 20;      // batches per split per evaluation
  int64_t checkpoint_interval = 0;  // also checkpoint every N steps; 0 = at evaluations and the end
  int64_t log_interval = 50;        // progress line every N steps
  std::string corpus;               // the corpus spec, and the sha256 of its text: --resume
  std::string corpus_sha256;        //   loads it again and refuses a different text
  bool keep_cr = false;             // the corpus kept its CR line ends (CorpusOptions::keep_cr)
  int64_t ranks = 1;  // data-parallel processes, each with batch_size sequences: the Trainer
                      // sets it to its communicator's size (absent in older checkpoints: 1)
  double label_smoothing = 0.0;  // ε of the training loss only (PyTorch's); 0 = off
  std::string init_from;         // the file the weights started from (train --init-from), or ""
  // The precision of the products of forward and backward (autograd/autocast.h): f32, or bf16
  // mixed precision (bf16 operands, f32 sums; master weights, gradients and AdamW stay f32).
  MatmulPrecision mixed_precision = MatmulPrecision::f32;

  /// The table of fields (gpt/io/fields.h): v(Field{member, name = JSON key, CLI flag, help,
  /// range, traits}) once per field, in the JSON's order. validate(), the checkpoint's JSON, the
  /// CLI's options of `attograd train` and its resume check walk it; a new option is one row.
  /// Rows without a flag are set by the run itself (gpt/train/run.h), not by the command line.
  template <class V>
  static void for_each_field(V&& v) {
    using O = TrainOptions;
    namespace l = limits;
    v(Field(&O::max_steps, "max_steps", "--steps", "optimizer steps", l::steps, kResumable)
          .nanogpt_name("max_iters"));
    v(Field(&O::batch_size, "batch_size", "--batch-size",
            "sequences per micro-batch (B), per rank under mpirun", l::batch_size));
    v(Field(&O::block_size, "block_size", nullptr, "T of each sequence; 0 = the model's",
            IntRange{0, l::block_size.max}));
    v(Field(&O::grad_accum, "grad_accum", "--grad-accum", "micro-batches per step", l::grad_accum)
          .nanogpt_name("gradient_accumulation_steps"));
    v(Field(&O::learning_rate, "learning_rate", "--lr", "peak learning rate", l::positive)
          .nanogpt_name("learning_rate"));
    v(Field(&O::min_lr, "min_lr", "--min-lr", "final learning rate of the cosine decay",
            l::non_negative));
    v(Field(&O::warmup_steps, "warmup_steps", "--warmup", "linear warmup steps", l::count)
          .nanogpt_name("warmup_iters"));
    v(Field(&O::lr_decay_steps, "lr_decay_steps", "--decay-steps",
            "cosine decay length (0 = --steps)", l::count)
          .nanogpt_name("lr_decay_iters"));
    v(Field(&O::weight_decay, "weight_decay", "--weight-decay", "AdamW decay of 2-D weights",
            l::non_negative));
    v(Field(&O::beta1, "beta1", "--beta1", "AdamW's first-moment decay (β₁)", l::below_one));
    v(Field(&O::beta2, "beta2", "--beta2",
            "AdamW's second-moment decay (β₂; nanoGPT's char config uses 0.99)", l::below_one));
    v(Field(&O::grad_clip, "grad_clip", "--grad-clip", "max global gradient norm (0 = off)",
            l::non_negative));
    v(Field(&O::seed, "seed", "--seed", "seed of the batch sampler", AnyValue{}));
    v(Field(&O::eval_interval, "eval_interval", "--eval-interval", "evaluate every N steps",
            l::count, kResumable));
    // Denser evaluations where the curves fall fastest (train_pico.sh: every 100 steps before
    // 2,000). Evaluation draws its own fixed batches, so the weights stay the same: resumable.
    // Checkpoints written before it have none: 0.
    v(Field(&O::eval_early, "eval_early", "--eval-early",
            "also evaluate every N steps before the first --eval-interval step (0 = off)", l::count,
            kResumable | kOptionalInFiles));
    v(Field(&O::eval_iters, "eval_iters", "--eval-iters", "batches per split per evaluation",
            l::positive_count));
    v(Field(&O::checkpoint_interval, "checkpoint_interval", "--checkpoint-interval",
            "also checkpoint every N steps (0 = at evaluations and the end)", l::count,
            kResumable));
    v(Field(&O::log_interval, "log_interval", "--log-interval", "progress line every N steps",
            l::positive_count, kResumable));
    // Checkpoints written before the corpus was recorded have none of these three, and those
    // written before data-parallel training no ranks (one process).
    v(Field(&O::corpus, "corpus", nullptr, "the corpus spec", AnyValue{}, kOptionalInFiles));
    v(Field(&O::corpus_sha256, "corpus_sha256", nullptr, "the sha256 of the corpus text",
            AnyValue{}, kOptionalInFiles));
    v(Field(&O::keep_cr, "keep_cr", nullptr, "the corpus kept its CR line ends", AnyValue{},
            kOptionalInFiles));
    v(Field(&O::ranks, "ranks", nullptr, "data-parallel processes", l::ranks, kOptionalInFiles));
    // The training loss aims at (1 - eps) onehot + eps / V (PyTorch's label_smoothing); an
    // evaluation's loss and perplexity stay plain cross-entropy, comparable across runs. Older
    // checkpoints have none: they trained with 0. Not resumable: a resumed run is the same run.
    v(Field(&O::label_smoothing, "label_smoothing", "--label-smoothing",
            "label smoothing of the training loss (eval and perplexity stay plain "
            "cross-entropy)",
            l::below_one, kOptionalInFiles));
    // Where a fine-tuning run's weights came from (RunRequest::init_from, made absolute): set
    // by the run, kept by --resume; "" for a run from random weights and in older checkpoints.
    v(Field(&O::init_from, "init_from", nullptr,
            "the file the run's weights started from (train --init-from)", AnyValue{},
            kOptionalInFiles));
    // Training steps run forward and backward under AutocastGuard(mixed_precision); evaluation
    // stays f32, so that val losses compare across runs of either precision. Not resumable: the
    // weights a bf16 step trains to differ from an f32 step's, and a resumed run is the same
    // run (as label_smoothing). Older checkpoints have none: f32.
    v(Field(&O::mixed_precision, "mixed_precision", "--mixed-precision",
            "the precision of the training steps' matrix products",
            Choices{kMatmulPrecisionNames, kMatmulPrecisionDescriptions}, kOptionalInFiles)
          .nanogpt_name("dtype"));
  }

  /// The length of the cosine decay: lr_decay_steps, or max_steps when it is 0.
  int64_t decay_steps() const { return lr_decay_steps > 0 ? lr_decay_steps : max_steps; }

  /// Whether Trainer::run evaluates after `step`: at max_steps, every eval_interval steps, and
  /// every eval_early steps before the first eval_interval step (with eval_interval 0, before
  /// max_steps). The one statement of the schedule: the CLI's run and the page's worker (through
  /// next_eval, web/attograd_api.cc) both follow it.
  bool evaluates_at(int64_t step) const;
  /// The first step after `step` at which evaluates_at holds, or 0 when none does (past
  /// max_steps with eval_interval 0). Computed, not searched: a step count may be large.
  int64_t next_eval(int64_t step) const;

  /// Sequences per optimizer step over all ranks: ranks * batch_size * grad_accum.
  int64_t global_batch() const;
  /// The same run on `new_ranks` ranks: the global batch (ranks * batch_size per micro-batch,
  /// and grad_accum) stays, batch_size becomes ranks * batch_size / new_ranks. Throws
  /// std::invalid_argument when new_ranks does not divide it, naming the global batch and
  /// the rank counts that fit. A resumed run so keeps its batches on any number of ranks.
  TrainOptions on_ranks(int64_t new_ranks) const;

  bool operator==(const TrainOptions&) const = default;

  /// Throws std::invalid_argument naming the first bad field: a value outside its range in the
  /// table ("TrainOptions: batch_size must be in [1, 65536], got 0"), or min_lr above
  /// learning_rate.
  void validate() const;
  /// A JSON object with one key per field of the table (its name, max_steps as "max_steps").
  std::string to_json() const;
  /// Reads to_json's object strictly (see gpt/io/json_fields.h): a missing, mistyped, out-of-range
  /// or unknown field is std::runtime_error naming it, as is malformed JSON. The ranges are
  /// validate()'s, so a value no run could have trained with is refused when the file is read.
  /// corpus, corpus_sha256, keep_cr, ranks, label_smoothing, init_from and mixed_precision may be
  /// absent (older checkpoints): defaults stay.
  static TrainOptions from_json(const std::string& json);
};

/// An error every rank of a data-parallel run meets at the same point, because what it checks
/// was reduced over the ranks first: each rank can stop in order (rank 0 reporting for all)
/// without leaving another waiting at a collective for ever. exit_code() is what `attograd
/// train` returns for it.
class CollectiveError : public std::runtime_error {
 public:
  CollectiveError(const std::string& what, int exit_code)
      : std::runtime_error(what), exit_code_(exit_code) {}
  int exit_code() const { return exit_code_; }

 private:
  int exit_code_;
};

/// Thrown when the loss or the gradient norm is NaN or infinite (nothing was updated), or when
/// an evaluation or the parameters are (no checkpoint was written). Exit code 1.
/// Its message is what happened, then kFix (the CLI's flags); what_happened() is the message
/// without it, for a program that offers other settings (the companion page).
class NonFiniteLoss : public CollectiveError {
 public:
  static constexpr const char* kFix = "Try a lower --lr or a --grad-clip";
  explicit NonFiniteLoss(const std::string& what_happened)
      : CollectiveError(what_happened + " " + kFix, 1), what_happened_(what_happened) {}
  const std::string& what_happened() const { return what_happened_; }

 private:
  std::string what_happened_;
};

/// Thrown on every rank when the ranks of a data-parallel run do not hold one model: started
/// with different options, corpora, models or SIMD kernels (exit code 2, a usage error), or
/// with parameters that drifted apart during training (exit code 1).
class RanksDisagree : public CollectiveError {
 public:
  using CollectiveError::CollectiveError;
};

/// The result of one evaluation.
struct EvalResult {
  int64_t step = 0;
  double train_loss = 0, val_loss = 0;  // mean NLL per token, nats
  double train_ppl = 0, val_ppl = 0;    // exp of the above
};

/// Runs training. The model, dataset and output directory must outlive the trainer.
class Trainer {
 public:
  /// tokenizer_kind/data are stored in every checkpoint. out_dir may be empty (no files).
  /// Any LanguageModel trains the same way (its kind is stored in the checkpoint).
  ///
  /// Data-parallel over `comm` (gpt/train/distributed.h) when it has several ranks:
  /// options.batch_size is B per rank, each micro-batch is one global batch of size() * B sequences
  /// drawn from the same generator on every rank, rank r training on rows r * B .. (r + 1) * B - 1;
  /// the gradients are averaged over the ranks in one all-reduce of the arena, so every rank clips
  /// by the same norm and takes the same AdamW step. The result is that of one process with
  /// batch_size size() * B, up to the order of float additions. Only rank 0 writes files and
  /// progress lines. Every rank must construct its Trainer alike and call the same methods.
  Trainer(LanguageModel& model, const Dataset& data, const TrainOptions& options,
          std::string tokenizer_kind, std::string tokenizer_data, std::string out_dir,
          const Communicator& comm = Communicator::single_process());

  /// Continues from a checkpoint's training state (optimizer moments, step, batch RNG).
  /// Throws std::runtime_error if the state does not fit this model.
  void restore(const TrainingState& state);

  /// One optimizer step over grad_accum micro-batches, forward and backward under
  /// AutocastGuard(options.mixed_precision); returns the mean training loss (over all ranks).
  /// Throws NonFiniteLoss (parameters untouched) when the loss or gradient is not finite, on every
  /// rank together when any rank's is not.
  double train_step();
  /// One optimizer step on the caller's batch (x, y i64 (B, T), T <= block_size; checked as
  /// GPT::forward checks them) instead of grad_accum drawn ones: an overfit check, or a
  /// comparison with another implementation on the same data. Same schedule, clipping, step
  /// count and errors as train_step(); the batch generator is not advanced.
  double train_step(const Batch& batch);

  /// Mean loss and perplexity over eval_iters fixed batches of each split, in eval mode with
  /// no graph, in f32 whatever mixed_precision is (the weights themselves are f32). With several
  /// ranks each evaluates its rows of the global batches and the token-weighted sums are reduced:
  /// every rank returns the same result. The batches come from their own generator, so evaluating
  /// never changes the training batches (resume stays bit-exact).
  EvalResult evaluate();

  /// The whole run: steps until max_steps with progress lines on `log` (report.h's
  /// TrainingReport), evaluations (at step 0 of a new run too), CSV logs (train_log.csv,
  /// eval_log.csv), the files given by write_on_start, checkpoints (ckpt.safetensors) and plots.
  /// Returns the last evaluation. With several ranks it first checks that they agree on
  /// options, corpus, model and SIMD kernels, and throws RanksDisagree if not. Throws
  /// NonFiniteLoss after writing the logs when the training
  /// loss, the gradient norm, an evaluation's loss or (at a save) a parameter is not finite; no
  /// checkpoint is written then, so the last one is untouched and holds finite parameters.
  ///
  /// Crash safety: the logs are written through to the disk (fdatasync) before each checkpoint
  /// is renamed into place, so after a kill -9 they hold every row up to the checkpoint's step.
  /// A resumed run first rewrites them (atomically) to their complete rows up to its step: a
  /// row cut off by the crash, or logged after the checkpoint, is dropped, so the logs of a
  /// resumed run have each step once and no holes. Throws std::runtime_error, before the
  /// checkpoint is touched, if a log cannot be written (a full disk), and after training if
  /// the plots fail (see write_plots).
  ///
  /// Progress lines: every log_interval steps, and with one process also by time (log_by_time),
  /// the first kFirstLineSeconds after the start and then at least every kLineSeconds.
  ///
  /// The best checkpoint: at each evaluation whose val loss is the lowest of the run so far,
  /// RunDir::kBestCheckpoint becomes the checkpoint of that step as well (a hard link; nanoGPT's
  /// always_save_checkpoint = False). A fresh run removes one an earlier run left; a resumed
  /// run compares with the val loss that file records (BestCheckpoint).
  ///
  /// Stopping: after stop_on(flag), run() reads the flag after every step; once it is non-zero
  /// it writes the checkpoint at that step (with an output directory) and throws Interrupted.
  EvalResult run(std::ostream& log);
  static constexpr double kFirstLineSeconds = 3, kLineSeconds = 60;
  /// Progress lines by time: the first `first` seconds after run() starts, then at least every
  /// `every` seconds (defaults kFirstLineSeconds, kLineSeconds; infinity: by steps only).
  void log_by_time(double first, double every) { first_line_s_ = first, line_s_ = every; }
  static constexpr int64_t kEstimateSteps = 10;
  static constexpr double kEstimateSeconds = 5;
  /// The estimate of the run's time, one line early in run(): "estimate about 3:20 for 5000
  /// steps (40.1 ms/step measured over 10 steps; model 1.20 GFLOP/step, 29.9 GFLOP/s)" (the
  /// FLOPs for a GPT only: gpt_flops_per_token; "about 12.5 s" below a minute). The step time is
  /// measured from the end of the run's first step, which pays for the warm-up, over `steps` steps
  /// or `seconds` seconds, whichever ends first (defaults kEstimateSteps, kEstimateSeconds);
  /// evaluations are not counted. No line when the run ends first.
  void estimate_after(int64_t steps, double seconds) {
    estimate_steps_ = steps, estimate_s_ = seconds;
  }

  /// Makes run() stop cleanly, between two steps, once `*signal` is non-zero: a signal number,
  /// as StopOnSignals::signal() (gpt/train/interrupt.h) records Ctrl-C or SIGTERM; another
  /// non-zero value counts as SIGTERM. nullptr (the default): never. With several ranks the
  /// flag is summed over them after every step (one small collective), so all stop at the same
  /// step: every rank must call stop_on alike, with a flag or with nullptr.
  void stop_on(const std::atomic<int>* signal) { stop_ = signal; }

  /// A file run() writes into the output directory (rank 0, atomically) once the ranks agree,
  /// before the first step: start() gives it the run's effective config (RunDir::kConfig,
  /// gpt/train/run_config.h) and baselines.csv (report.h's Baselines::csv). A run refused
  /// before training so leaves none. A Trainer made by hand gets the plots' baseline lines the
  /// same way: `trainer.write_on_start(RunDir::kBaselines, Baselines::of(data, vocab_size).csv())`
  /// (the baselines are counted where the data is prepared, gpt/train/prepare.h, not here).
  void write_on_start(std::string file_name, std::string contents) {
    start_files_.emplace_back(std::move(file_name), std::move(contents));
  }

  /// Saves model + training state to `path` (atomically), with the val loss of evaluate() when
  /// it evaluated this very step (TrainingState::val_loss). Throws NonFiniteLoss, writing
  /// nothing, when any parameter is NaN or infinite (a diverged update): a checkpoint is
  /// always a state worth resuming.
  void save(const std::string& path);
  /// The step of the last checkpoint save() wrote; nullopt before the first.
  std::optional<int64_t> last_saved_step() const { return last_saved_step_; }
  int64_t step() const { return step_; }
  /// The global L2 norm of the last step's gradients before clipping; NaN when grad_clip is 0
  /// (the norm is computed only to clip).
  double last_grad_norm() const { return last_grad_norm_; }
  /// The learning rate of the last step (the cosine schedule's, nn::cosine_lr); 0 before one.
  double last_lr() const { return last_lr_; }
  std::string checkpoint_path() const;
  /// With several ranks, compares a fingerprint of the parameters across them (one collective:
  /// every rank must call it) and throws RanksDisagree (exit code 1) on every rank when any bit
  /// differs: the replicas drifted apart. run() calls it every log_interval steps and before
  /// every checkpoint. Nothing to do for one process.
  void check_replicas() const;

 private:
  // train_step's body: one micro-batch `fixed`, or grad_accum drawn ones when it is null.
  double step_on(const Batch* fixed);
  // The signal stop_on's flag holds, agreed over the ranks (SIGINT when any rank has SIGINT,
  // else SIGTERM when any has a signal); 0 when none has, or without a flag.
  int stop_signal() const;
  // Throws NonFiniteLoss when a parameter is NaN or infinite (save() writes no such state).
  void check_finite_parameters() const;
  // Throws RanksDisagree, on every rank, when the ranks were started with different training
  // options, corpora, models or SIMD kernels: they could not stay one model.
  void check_ranks_agree() const;
  // With several ranks, seeds the dropout generator for step_ on this rank from (seed, step,
  // rank): each rank draws its own masks, and a resumed run the same ones as an uninterrupted
  // run. (One process keeps one stream, whose state every checkpoint holds; a checkpoint holds
  // rank 0's only.)
  void seed_dropout() const;

  LanguageModel& model_;
  const Dataset& data_;
  TrainOptions options_;
  std::string tokenizer_kind_, tokenizer_data_, out_dir_;
  const Communicator& comm_;
  nn::AdamW optimizer_;
  Generator batch_gen_;
  int64_t step_ = 0;
  double last_grad_norm_ = 0;
  double last_lr_ = 0;
  std::optional<int64_t> last_saved_step_;
  std::optional<EvalResult> last_eval_;  // evaluate()'s last result, for save()
  std::vector<std::pair<std::string, std::string>> start_files_;     // write_on_start
  const std::atomic<int>* stop_ = nullptr;                           // stop_on's flag
  double first_line_s_ = kFirstLineSeconds, line_s_ = kLineSeconds;  // log_by_time
  int64_t estimate_steps_ = kEstimateSteps;                          // estimate_after
  double estimate_s_ = kEstimateSeconds;
};

}  // namespace attograd::gpt
