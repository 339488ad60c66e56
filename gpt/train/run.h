// A training run, fresh or resumed, set up the way `attograd train` does it, for any program: the
// run directory (its lock, stale temporaries, what a fresh run may replace), the corpus and its
// check against the checkpoint, the tokenizer, the model and the memory it needs, the dataset
// and its baselines, the engine's threads. start() returns a run ready to train; the CLI only
// parses its options into a RunRequest, calls start() within the ranks' set-up agreement, and
// prints.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <memory>
#include <optional>
#include <set>
#include <string>

#include "gpt/io/fields.h"
#include "gpt/model/checkpoint.h"
#include "gpt/model/config.h"
#include "gpt/model/field_ranges.h"
#include "gpt/model/language_model.h"
#include "gpt/model/open_model.h"
#include "gpt/text/corpus.h"
#include "gpt/text/dataset.h"
#include "gpt/text/tokenizer.h"
#include "gpt/train/distributed.h"
#include "gpt/train/report.h"
#include "gpt/train/trainer.h"

namespace attograd::gpt {

/// A run to continue: its model and tokenizer, its training state (AdamW moments included)
/// and the options it was trained with.
struct ResumedRun {
  Session session;
  TrainingState state;
  TrainOptions options;
};

/// Reads <out_dir>/kCheckpointFile for `attograd train --resume`. Throws std::invalid_argument
/// when it does not exist ("nothing to resume: <path> does not exist", then `hint`: start()'s
/// says which directory --resume without --out continues) or holds no training state (written
/// by save_checkpoint without one), std::runtime_error as require_training_memory (checked from
/// the header, before the moments are read), open_checkpoint and TrainOptions::from_json for a
/// damaged file or a model this machine cannot train.
ResumedRun resume_run(const std::string& out_dir, const std::string& hint = "");

/// What a training run is asked to do: the options of `attograd train`, as any program gives
/// them. A fresh run uses every field; a resumed one (resume = true) takes its model, tokenizer,
/// options and corpus from the checkpoint in out_dir: it reads this table's kResumable rows, the
/// TrainOptions rows named in options_given (kResumable ones replace the checkpoint's, others
/// must equal them), and ignores model, init_seed and config.preset; config overrides and
/// overwrite are refused with it.
struct RunRequest {
  /// Logs, plots and kCheckpointFile. Absent: run_dir()'s default, runs/<preset> (nanoGPT's
  /// out-<config> habit): runs/pico, runs/nano, or runs/bigram, runs/average for those models.
  std::optional<std::string> out_dir;
  bool resume = false;  // continue the run in out_dir, bit for bit
  /// Fresh: replace the run in out_dir (RunDir::remove_previous_run, once the run trains).
  bool overwrite = false;
  /// The corpus (load_corpus's spec). Absent: kDefaultCorpus; resume: the one the checkpoint
  /// records, else it must hold the same text (its sha256 is compared).
  std::optional<std::string> corpus;
  std::string cache_dir;        // where named corpora are kept; empty: default_cache_dir()
  std::optional<bool> keep_cr;  // keep CR line ends; absent: false, resume: as recorded
  /// A tokenizer_kinds() name. Absent: kDefaultTokenizer; resume: must name the checkpoint's.
  std::optional<std::string> tokenizer;
  /// Fine-tuning: the run starts from the weights of this file (open_init_weights: a Hugging
  /// Face GPT-2 model.safetensors, or an attograd checkpoint or run directory) at step 0 with a
  /// fresh optimizer, its config and tokenizer. Of the config overrides only n_head (a Hugging
  /// Face file without config.json), dropout (a rate) and block_size (then the length T of the
  /// training sequences, at most the model's context, as llm.c's T) may be given with it;
  /// model must be gpt (the file decides), resume is refused. Recorded in the checkpoint as
  /// TrainOptions::init_from.
  std::optional<std::string> init_from;
  ModelKind model = ModelKind::gpt;
  ConfigOverrides config;  // the preset and its overrides; vocab_size is the tokenizer's
  uint64_t init_seed = 1337;
  TrainOptions options;  // fresh: every field (validated); resume: only options_given's
  /// resume: the TrainOptions rows (by name) to take from `options` rather than the
  /// checkpoint; each must be a kResumable row (max_steps, the CLI's --steps). A new max_steps
  /// extends or cuts the run, and the learning-rate schedule keeps its end (then min_lr).
  std::set<std::string> options_given;
  /// The engine's pool (kernels::set_num_threads). 0: every CPU this process may run on, shared
  /// equally by the ranks of one machine when they are not bound to CPUs of their own.
  int threads = 0;

  /// The run's directory: out_dir, else runs/<config.preset> for a GPT and runs/<model>
  /// (bigram, average) for the lecture's models, which have no preset.
  std::string run_dir() const;

  static constexpr const char* kDefaultTokenizer = "char";

  /// The table of the request's own fields (gpt/io/fields.h): the CLI's options and --help,
  /// validate() and the options a resumed run accepts come from it. config and options have
  /// tables of their own (GPTConfig's, TrainOptions').
  template <class V>
  static void for_each_field(V&& v) {
    using R = RunRequest;
    v(Field(&R::out_dir, "out_dir", "--out",
            "output directory: logs, plots, ckpt.safetensors (default runs/<preset>, or "
            "runs/bigram, runs/average for --model)",
            PathToWrite{}, kResumable)
          .nanogpt_name("out_dir"));
    v(Field(&R::resume, "resume", "--resume",
            "continue the run in --out from its checkpoint, bit-exact, with its stored options and "
            "corpus (--steps may extend it; the learning-rate schedule keeps its end; a --corpus "
            "given must hold the same text)",
            AnyValue{}, kResumable | kNotInConfigFiles));
    v(Field(&R::overwrite, "overwrite", "--overwrite",
            "start a new run in --out even if it holds one: once the new run is set up, the old "
            "run's checkpoints (ckpt.safetensors, best.safetensors) and plots are removed and its "
            "logs, run.json and baselines.csv written anew (files of other names stay)",
            AnyValue{}, kNotInConfigFiles));
    v(Field(&R::corpus, "corpus", "--corpus",
            "kjv (default, offline: Debian's bible-kjv), shakespeare (downloaded once), or a "
            "UTF-8 text file",
            AnyValue{}, kResumable)
          .nanogpt_name("dataset"));
    v(Field(&R::cache_dir, "cache_dir", "--cache-dir",
            "where fetched corpora are kept (default ~/.cache/attograd)", PathToWrite{},
            kResumable));
    v(Field(&R::keep_cr, "keep_cr", "--keep-cr", kKeepCrHelp, AnyValue{}, kResumable));
    v(Field(&R::tokenizer, "tokenizer", "--tokenizer", "the tokenizer (default char)",
            Names{tokenizer_kinds, tokenizer_description}, kResumable));
    v(Field(&R::init_from, "init_from", "--init-from",
            "fine-tune: start from the weights of a Hugging Face GPT-2 model.safetensors (with "
            "GPT-2's BPE) or an attograd checkpoint or run directory (with its tokenizer), at step "
            "0 with a fresh optimizer; its config is the model's (only --n-head, --dropout and "
            "--block-size, the training sequence length, may be given)",
            AnyValue{}));
    v(Field(&R::model, "model", "--model", "the model; the config options give its sizes",
            model_kind_choices()));
    v(Field(&R::init_seed, "init_seed", "--init-seed", "seed of the weight initialisation",
            AnyValue{}));
    v(Field(&R::threads, "threads", "--threads",
            "threads of the engine's pool (0 = every CPU this process may run on, shared among "
            "the ranks on one machine)",
            IntRange{0, max_threads(), "at most 4 x this machine's cores"}, kResumable));
  }

  /// Throws std::invalid_argument naming the first field outside its table's range (an unknown
  /// tokenizer, a control character in out_dir, too many threads), the first bad training
  /// option (TrainOptions::validate; on resume those of options_given), an options_given name
  /// that is no training option, on resume config overrides or overwrite, with init_from
  /// resume, a model other than gpt or a config override that changes the architecture, and
  /// for a new model the config's checks that need no vocabulary (check_config_before_vocab:
  /// ConfigRuleError for n_head not dividing n_embd, ...), so they come before the corpus loads.
  void validate() const;
};

class TrainingRun;

/// Sets up the run `request` asks for, on this rank of `comm`: the run directory (created,
/// locked against a second writer, stale temporaries removed, a fresh run refused where it
/// would replace files without overwrite), the corpus, the tokenizer, the model (refused when
/// it would not fit in memory), the dataset (both splits must hold a window), the threads. It
/// agrees with no other rank: call it inside set_up_together() (distributed.h), so that every
/// rank has set up before any trains. Writes what it did to `log`, rank 0 only: the lines
/// `attograd train` prints before training. Throws std::invalid_argument or std::runtime_error
/// naming the problem and its fix.
std::unique_ptr<TrainingRun> start(const RunRequest& request, const Communicator& comm,
                                   std::ostream& log);

/// A run set up by start(), ready to train. Holds the lock on its run directory until destroyed.
class TrainingRun {
 public:
  ~TrainingRun();
  TrainingRun(const TrainingRun&) = delete;
  TrainingRun& operator=(const TrainingRun&) = delete;

  /// Trains to options().max_steps (see Trainer::run), progress lines on `log` (rank 0), and
  /// returns the exit code of `attograd train`: 0 (the final evaluation is result()), or, when
  /// the run failed on every rank alike (a CollectiveError: NonFiniteLoss, ...), its code after
  /// rank 0 wrote failure_report() to `err` and the ranks met at a barrier. An error that one
  /// rank of several meets alone ends the job (Communicator::abort(2)) after it is written to
  /// `err`: the others would wait for it for ever; on one process it is thrown.
  ///
  /// With a stop flag (Trainer::stop_on; StopOnSignals::signal() for Ctrl-C and SIGTERM), the
  /// run stops after the step during which the flag was set, writes its checkpoint, and rank 0
  /// says on `err` where it is and the command that resumes it; the result is 128 + the
  /// signal's number (130 for Ctrl-C, 143 for SIGTERM).
  int train(std::ostream& log, std::ostream& err, const std::atomic<int>* stop = nullptr);
  /// What to say when training failed with `e`: the error, then which checkpoint of this run is
  /// intact (the last one saved, or the one resumed from), or that none was written.
  std::string failure_report(const CollectiveError& e) const;
  /// The final evaluation of a train() that returned 0.
  const EvalResult& result() const { return result_; }

  LanguageModel& model() { return *model_; }
  const Tokenizer& tokenizer() const { return *tokenizer_; }
  const Dataset& data() const { return *data_; }
  const TrainOptions& options() const { return options_; }
  Trainer& trainer() { return *trainer_; }
  /// The val losses the run must get below (report.h): uniform, unigram, add-one bigram.
  const Baselines& baselines() const { return baselines_; }
  /// <out_dir>/kCheckpointFile.
  const std::string& checkpoint_path() const { return checkpoint_path_; }

 private:
  friend std::unique_ptr<TrainingRun> start(const RunRequest&, const Communicator&, std::ostream&);
  explicit TrainingRun(const Communicator& comm) : comm_(comm) {}

  const Communicator& comm_;

  int lock_fd_ = -1;  // <out_dir>/.lock, held exclusively (rank 0)
  std::unique_ptr<LanguageModel> model_;
  std::unique_ptr<Tokenizer> tokenizer_;
  std::unique_ptr<Dataset> data_;
  TrainOptions options_;
  std::unique_ptr<Trainer> trainer_;
  std::optional<int64_t> resumed_step_;
  Baselines baselines_;
  std::string checkpoint_path_;
  EvalResult result_;
};

}  // namespace attograd::gpt
