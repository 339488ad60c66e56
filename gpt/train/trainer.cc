#include "gpt/train/trainer.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iterator>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <ostream>
#include <sstream>
#include <string_view>
#include <vector>

#include <fcntl.h>
#include <unistd.h>

#include "autograd/engine.h"
#include "autograd/kernels/targets.h"
#include "autograd/ops.h"
#include "autograd/size_math.h"
#include "gpt/io/json_fields.h"
#include "gpt/model/checkpoint.h"
#include "gpt/model/field_ranges.h"
#include "gpt/train/interrupt.h"
#include "gpt/train/plot.h"
#include "gpt/train/report.h"
#include "gpt/train/run_dir.h"
#include "gpt/train/run_logs.h"
#include "nn/io/atomic_file.h"
#include "nn/io/strict_json.h"

namespace attograd::gpt {

namespace {

// A loss or norm for a message: "nan" whatever NaN's sign bit (std::to_string prints "-nan"),
// "inf" / "-inf", else the number.
std::string non_finite_str(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  return std::to_string(v);
}

}  // namespace

void TrainOptions::validate() const {
  validate_fields(*this, "TrainOptions");  // each field in its range; then the rule between two
  if (min_lr > learning_rate) {
    std::ostringstream message;  // %g-style: 0.1, not to_string's 0.100000
    message << "min_lr " << min_lr << " exceeds the learning rate " << learning_rate
            << ": the cosine decay falls from lr to min_lr; lower --min-lr or raise --lr";
    throw std::invalid_argument(message.str());
  }
}

namespace {

// TrainOptions' JSON fields, from its table: to_json writes them and from_json reads them
// strictly (3.9 is not a batch size, 2^64 is not a step count, an option this version does not
// know is not ignored), in the ranges validate() and the CLI apply: a value no command line could
// give is refused when the file is read, before anything loops over it (a batch_size of 2^61 once
// made resuming on 2 ranks search its divisors for ever).
const std::vector<JsonField<TrainOptions>>& train_option_fields() {
  static const std::vector<JsonField<TrainOptions>> fields = json_fields<TrainOptions>();
  return fields;
}

}  // namespace

int64_t TrainOptions::global_batch() const {
  return checked_mul(checked_mul(ranks, batch_size, "the global batch"), grad_accum,
                     "the global batch");
}

TrainOptions TrainOptions::on_ranks(int64_t new_ranks) const {
  const int64_t rows = checked_mul(ranks, batch_size, "the global batch");
  if (new_ranks < 1 || rows % new_ranks != 0) {
    std::string fit;
    // The divisors up to a job's size: rows comes from a file, and may be large and prime.
    for (int64_t n = 1; n <= rows && n <= limits::ranks.max && fit.size() < 40; ++n)
      if (rows % n == 0) fit += (fit.empty() ? "" : ", ") + std::to_string(n);
    throw std::invalid_argument(
        "this run's global batch is " + std::to_string(ranks) + " rank" + (ranks == 1 ? "" : "s") +
        " x batch size " + std::to_string(batch_size) + " = " + std::to_string(rows) +
        " sequences per micro-batch, which " + std::to_string(new_ranks) +
        " ranks cannot share evenly; resume it on a number of ranks that divides " +
        std::to_string(rows) + " (" + fit + ")");
  }
  TrainOptions o = *this;
  o.ranks = new_ranks;
  o.batch_size = rows / new_ranks;
  return o;
}

bool TrainOptions::evaluates_at(int64_t step) const {
  const int64_t first_regular = eval_interval > 0 ? eval_interval : max_steps;
  return step == max_steps || (eval_interval > 0 && step % eval_interval == 0) ||
         (eval_early > 0 && step < first_regular && step % eval_early == 0);
}

int64_t TrainOptions::next_eval(int64_t step) const {
  // The next multiple of n after step (steps are >= 0, so integer division rounds down).
  const auto next_multiple = [step](int64_t n) { return (step / n + 1) * n; };
  int64_t next = step < max_steps ? max_steps : 0;
  const auto take = [&next](int64_t candidate) {
    if (next == 0 || candidate < next) next = candidate;
  };
  if (eval_interval > 0) take(next_multiple(eval_interval));
  const int64_t first_regular = eval_interval > 0 ? eval_interval : max_steps;
  if (eval_early > 0 && next_multiple(eval_early) < first_regular) take(next_multiple(eval_early));
  return next;
}

std::string TrainOptions::to_json() const {
  return fields_to_json(*this, train_option_fields()).dump();
}

TrainOptions TrainOptions::from_json(const std::string& text) {
  const std::string what = "the training options in the checkpoint";
  JsonFields f(nn::parse_json(text, what), what);
  return fields_from_json(f, train_option_fields());
}

Trainer::Trainer(LanguageModel& model, const Dataset& data, const TrainOptions& options,
                 std::string tokenizer_kind, std::string tokenizer_data, std::string out_dir,
                 const Communicator& comm)
    : model_(model),
      data_(data),
      options_(options),
      tokenizer_kind_(std::move(tokenizer_kind)),
      tokenizer_data_(std::move(tokenizer_data)),
      out_dir_(std::move(out_dir)),
      comm_(comm),
      optimizer_(model.param_groups(options.weight_decay),
                 nn::AdamWOptions().betas({options.beta1, options.beta2}).eps(1e-8)),
      batch_gen_(options.seed) {
  options_.ranks = comm_.size();  // stored in checkpoints: a resume keeps the global batch
  options_.validate();
  options_.block_size = sequence_length(options_.block_size, model.config());
  if (options_.block_size > model.config().block_size)
    throw std::invalid_argument("training block_size " + std::to_string(options_.block_size) +
                                " exceeds the model's block_size " +
                                std::to_string(model.config().block_size));
}

void Trainer::restore(const TrainingState& s) {
  // What attograd writes always satisfies these; a file that does not was damaged or edited, and
  // resuming it would follow another path silently (bias correction restarted or skipped) or
  // diverge with a message that blames the learning rate.
  if (const int64_t bad = model_.arena().num_non_finite(); bad > 0)
    throw std::runtime_error(
        "checkpoint: " + std::to_string(bad) + " of its " +
        std::to_string(model_.arena().params().numel()) +
        " weights are not finite, so it cannot be resumed; resume from an earlier checkpoint");
  if (s.adam_t != s.step)
    throw std::runtime_error("checkpoint metadata 'adam_t' is " + std::to_string(s.adam_t) +
                             " but 'step' is " + std::to_string(s.step) +
                             ": every step takes one optimizer step, so they must agree");
  try {
    optimizer_.load_state(s.adam_m, s.adam_v, s.adam_t);
  } catch (const std::invalid_argument& e) {  // moments that do not fit the model: the file's fault
    throw std::runtime_error(std::string("checkpoint: ") + e.what());
  }
  try {
    batch_gen_.set_state(s.batch_rng);
  } catch (const std::invalid_argument& e) {
    throw std::runtime_error(std::string("checkpoint metadata 'batch_rng': ") + e.what());
  }
  step_ = s.step;
  last_eval_.reset();
}

std::string Trainer::checkpoint_path() const {
  return out_dir_.empty() ? std::string()
                          : (std::filesystem::path(out_dir_) / kCheckpointFile).string();
}

void Trainer::check_finite_parameters() const {
  // A diverged update can leave the parameters NaN while the loss that led to it was finite:
  // such a state must never replace a good checkpoint.
  if (const int64_t bad = model_.arena().num_non_finite(); bad > 0)
    throw NonFiniteLoss(
        "the parameters are no longer finite after step " + std::to_string(step_) + " (" +
        std::to_string(bad) + " of " + std::to_string(model_.arena().params().numel()) +
        " are NaN or infinite): the update diverged, so no checkpoint was written at this step.");
}

void Trainer::check_replicas() const {
  if (comm_.size() == 1) return;
  // Every rank took the same steps on the same averaged gradients, so the parameters must agree
  // to the bit; if they do not (a rank with other data, a non-deterministic kernel), the run is
  // no longer one model and must not go on.
  if (!comm_.all_equal(fingerprint(model_.arena().params())))
    throw RanksDisagree("the parameters of the " + std::to_string(comm_.size()) +
                            " ranks differ at step " + std::to_string(step_) +
                            " (their fingerprints disagree): the replicas diverged, so the run "
                            "stopped; every rank must run the same build on the same corpus",
                        1);
}

void Trainer::check_ranks_agree() const {
  if (comm_.size() == 1) return;
  // What each rank must share to train one model, with what differs named: a wrong command
  // line on one machine would otherwise mix data silently or end in an MPI error far from it.
  TrainOptions options = options_;  // the corpus is checked by its tokens, below
  options.corpus.clear();
  options.corpus_sha256.clear();
  options.keep_cr = false;
  const auto bytes = [](const auto& v) {
    return fingerprint(
        std::string_view(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(v[0])));
  };
  const std::string ranks = "the " + std::to_string(comm_.size()) + " ranks ";
  const std::pair<uint64_t, std::string> checks[] = {
      {fingerprint(options.to_json() + "\n" + out_dir_),
       ranks + "were started with different training options (--batch-size, --steps, --lr, "
               "--out, ...): give every rank the same command line"},
      {fingerprint(tokenizer_kind_ + "\n" + tokenizer_data_),
       ranks + "use different tokenizers (--tokenizer): give every rank the same one"},
      {bytes(data_.tokens(Split::train)) ^ (bytes(data_.tokens(Split::val)) * 31),
       ranks + "read different corpora (--corpus): every rank must read the same text (the same "
               "file, with the same contents, on every machine)"},
      {fingerprint(std::string(model_kind_name(model_.kind())) + " " +
                   config_to_json(model_.config()) + " " + dtype_name(model_.dtype())),
       ranks + "built different models: give every rank the same model options"},
      {fingerprint(std::to_string(step_) + " " + batch_gen_.state()) ^
           fingerprint(model_.arena().params()),
       ranks + "start from different weights or training states (another --init-seed, or a "
               "checkpoint that differs between the machines): give every rank the same ones"},
      {fingerprint(kernels::active_target()),
       ranks + "run different SIMD kernels (this rank: " + kernels::active_target() +
           "), whose float results differ, so the replicas would drift apart: run every rank on "
           "the same kind of CPU"},
  };
  for (const auto& [value, message] : checks)
    if (!comm_.all_equal(value)) throw RanksDisagree(message, 2);
}

void Trainer::seed_dropout() const {
  if (comm_.size() == 1) return;
  // splitmix64's finaliser over (seed, step, rank): nearby steps and ranks get unrelated seeds.
  uint64_t z = options_.seed ^ (static_cast<uint64_t>(step_) * 0x9e3779b97f4a7c15ULL) ^
               (static_cast<uint64_t>(comm_.rank()) * 0xd1b54a32d192ed03ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  model_.dropout_generator().reseed(z ^ (z >> 31));
}

void Trainer::save(const std::string& path) {
  check_finite_parameters();
  TrainingState s;
  s.step = step_;
  s.batch_rng = batch_gen_.state();
  s.adam_m = optimizer_.m();
  s.adam_v = optimizer_.v();
  s.adam_t = optimizer_.steps();
  s.train_options = options_.to_json();
  if (last_eval_ && last_eval_->step == step_) s.val_loss = last_eval_->val_loss;
  save_checkpoint(path, model_, tokenizer_kind_, tokenizer_data_, &s);
  last_saved_step_ = step_;
}

double Trainer::train_step() { return step_on(nullptr); }

double Trainer::train_step(const Batch& batch) { return step_on(&batch); }

double Trainer::step_on(const Batch* fixed) {
  const TrainOptions& o = options_;
  const int64_t micro_batches = fixed != nullptr ? 1 : o.grad_accum;
  model_.train();
  model_.arena().zero_grad();
  seed_dropout();
  const double parts = static_cast<double>(micro_batches) * comm_.size();
  double loss_sum = 0;
  // Forward and backward; the products record the precision in their nodes, and AdamW below
  // updates the f32 master weights from f32 gradients.
  const AutocastGuard autocast(o.mixed_precision);
  for (int64_t micro = 0; micro < micro_batches; ++micro) {
    const Batch b = fixed != nullptr ? *fixed
                                     : data_.get_batch(Split::train, o.batch_size, o.block_size,
                                                       batch_gen_, comm_.rank(), comm_.size());
    const Tensor loss = model_.forward(b.x, b.y, o.label_smoothing).loss;
    const double value = loss.item();
    if (!std::isfinite(value)) {
      loss_sum = value;  // reaches every rank through the sum below: all of them stop
      break;
    }
    loss_sum += value;
    // Each micro-batch of each rank contributes 1/(grad_accum * ranks) of the mean: the summed
    // gradient is the gradient of the mean loss over all ranks * grad_accum * B * T tokens.
    mul_scalar(loss, 1.0 / parts).backward();
  }
  comm_.all_reduce_sum(&loss_sum, 1);
  if (!std::isfinite(loss_sum))
    throw NonFiniteLoss("the training loss became " + non_finite_str(loss_sum) + " at step " +
                        std::to_string(step_) +
                        (comm_.size() > 1 ? " (on at least one rank)" : "") +
                        "; stopped before updating the parameters.");
  // One flat all-reduce of the arena's gradients: every rank then holds the same mean.
  comm_.all_reduce_sum(model_.arena().grads());
  // The gradient norm is one pass over every gradient: computed only to clip, and then once.
  // The clipping factor is applied by AdamW as it reads each gradient.
  double scale = 1.0;
  last_grad_norm_ = std::numeric_limits<double>::quiet_NaN();
  if (o.grad_clip > 0) {
    const double norm = model_.arena().grad_norm();
    if (!std::isfinite(norm))
      throw NonFiniteLoss("the gradient norm became " + non_finite_str(norm) + " at step " +
                          std::to_string(step_) + "; stopped before updating the parameters.");
    last_grad_norm_ = norm;
    scale = nn::clip_scale(norm, o.grad_clip);
  }
  last_lr_ = nn::cosine_lr(step_, o.warmup_steps, o.decay_steps(), o.learning_rate, o.min_lr);
  optimizer_.step(last_lr_, scale);
  ++step_;
  return loss_sum / parts;
}

EvalResult Trainer::evaluate() {
  NoGradGuard no_grad;
  const AutocastGuard f32(MatmulPrecision::f32);  // val losses comparable across precisions
  const bool was_training = model_.is_training();
  model_.eval();
  EvalResult r;
  r.step = step_;
  // Summed NLL and token count per split, this rank's rows, then reduced over the ranks.
  double sums[2][2] = {};
  for (Split split : {Split::train, Split::val}) {
    Generator gen(options_.seed ^ 0x5eed0fe7a1ULL);  // the same batches at every evaluation
    double* sum = sums[split == Split::train ? 0 : 1];
    for (int64_t i = 0; i < options_.eval_iters; ++i) {
      const Batch b = data_.get_batch(split, options_.batch_size, options_.block_size, gen,
                                      comm_.rank(), comm_.size());
      const auto tokens = static_cast<double>(b.y.numel());
      sum[0] += model_.forward(b.x, b.y).loss.item() * tokens;
      sum[1] += tokens;
    }
  }
  comm_.all_reduce_sum(&sums[0][0], 4);
  for (Split split : {Split::train, Split::val}) {
    const double* sum = sums[split == Split::train ? 0 : 1];
    PerplexityMeter meter;
    meter.add(sum[0], static_cast<int64_t>(sum[1]));
    (split == Split::train ? r.train_loss : r.val_loss) = meter.mean_nll();
    (split == Split::train ? r.train_ppl : r.val_ppl) = meter.perplexity();
  }
  model_.train(was_training);
  last_eval_ = r;
  return r;
}

int Trainer::stop_signal() const {
  if (stop_ == nullptr) return 0;
  const int mine = stop_->load(std::memory_order_relaxed);
  if (comm_.size() == 1) return mine == 0 || mine == SIGINT ? mine : SIGTERM;
  // How many ranks have SIGINT, how many another signal: one all-reduce of two numbers.
  double counts[2] = {mine == SIGINT ? 1.0 : 0.0, mine != 0 && mine != SIGINT ? 1.0 : 0.0};
  comm_.all_reduce_sum(counts, 2);
  return counts[0] > 0 ? SIGINT : counts[1] > 0 ? SIGTERM : 0;
}

EvalResult Trainer::run(std::ostream& log) {
  check_ranks_agree();  // before any rank writes a file
  const TrainOptions& o = options_;
  // Rank 0 alone writes files and speaks.
  std::ostream null_log(nullptr);
  std::ostream& out = comm_.is_root() ? log : null_log;
  const bool files = !out_dir_.empty() && comm_.is_root();
  const RunDir dir(out_dir_);
  std::optional<RunLogs> logs;
  std::optional<BestCheckpoint> best;
  if (files) {
    std::filesystem::create_directories(dir.path());
    // A fresh run replaces the run in its directory (--overwrite), past every check that could
    // refuse it (start()'s, and the ranks' agreement above): that run's checkpoints go before
    // any file of this run is written.
    if (step_ == 0) dir.remove_previous_run();
    logs.emplace(dir, step_);
    for (const std::string& note : logs->notes()) SetUpReport(out).note(note);
    for (const auto& [name, contents] : start_files_)
      nn::write_file_atomically(dir.path() / name, contents);
    best.emplace(dir, step_);
    if (!best->note().empty()) SetUpReport(out).note(best->note());
  }
  const int64_t first_step = step_;
  TrainingReport report(out, o, first_step, comm_.size(),
                        model_.kind() == ModelKind::gpt ? std::optional<double>(gpt_flops_per_token(
                                                              model_.config(), o.block_size))
                                                        : std::nullopt,
                        {first_line_s_, line_s_, estimate_steps_, estimate_s_});
  EvalResult last;
  const auto evaluate_and_log = [&] {
    last = evaluate();
    report.eval(last);
    if (logs)
      logs->eval_row(last.step, last.train_loss, last.val_loss, last.train_ppl, last.val_ppl);
  };
  // The untrained model's loss too (about ln vocab_size), so every curve starts where training
  // does.
  if (step_ == 0 && o.max_steps > 0) evaluate_and_log();
  while (step_ < o.max_steps) {
    const double loss = train_step();
    const double secs = report.step_done(step_);
    if (logs)
      logs->train_row(step_, loss, last_lr_, last_grad_norm_, report.tokens_per_s(step_, secs));
    const bool log_now = step_ % o.log_interval == 0 || step_ == o.max_steps ||
                         (comm_.size() == 1 && report.line_due_by_time(secs));
    if (log_now) {
      check_replicas();  // every log_interval steps: the ranks still hold one model
      report.progress(step_, loss, last_lr_, secs);
      if (logs) logs->flush();  // the log file keeps up with the progress lines
    }
    const bool eval_now = o.evaluates_at(step_);
    if (eval_now) {
      evaluate_and_log();
      // Finite parameters can still be too large for a finite loss: such a model is no
      // checkpoint either.
      if (!std::isfinite(last.train_loss) || !std::isfinite(last.val_loss))
        throw NonFiniteLoss("the evaluation loss became " + non_finite_str(last.val_loss) +
                            " (val) / " + non_finite_str(last.train_loss) + " (train) at step " +
                            std::to_string(step_) +
                            ": the model diverged, so no checkpoint was written at this step.");
    }
    // Ctrl-C or SIGTERM (stop_on): the step is done; it gets its checkpoint like any other,
    // then the run stops. At the last step the run simply ends.
    const int signal = step_ < o.max_steps ? stop_signal() : 0;
    const bool ckpt_now = step_ == o.max_steps || eval_now || signal != 0 ||
                          (o.checkpoint_interval > 0 && step_ % o.checkpoint_interval == 0);
    if (ckpt_now && !out_dir_.empty()) {
      // Every rank checks, so that all stop together; the parameters are the same on all (the
      // replicas were compared above already when this step also logged).
      check_finite_parameters();
      if (!log_now) check_replicas();
    }
    if (files && ckpt_now) {
      logs->sync();  // the logs first: a checkpoint at step N promises every row up to N
      save(checkpoint_path());
      if (eval_now) best->offer(last.val_loss);
    }
    if (signal != 0) throw Interrupted(signal, step_, o.max_steps);
  }
  if (step_ == first_step) {  // nothing left to train: report, without logging the same step twice
    last = evaluate();
    report.already_at(last);
  }
  if (files) {
    logs->sync();
    try {
      write_plots(out_dir_, log);
    } catch (const std::runtime_error& e) {
      throw std::runtime_error(std::string(e.what()) + "; the training itself finished: " +
                               checkpoint_path() + " and the CSV logs are saved");
    }
  }
  return last;
}

}  // namespace attograd::gpt
