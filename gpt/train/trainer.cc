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
#include "gpt/io/atomic_file.h"
#include "gpt/io/strict_json.h"
#include "gpt/model/checkpoint.h"
#include "gpt/model/field_ranges.h"
#include "gpt/train/interrupt.h"
#include "gpt/train/plot.h"
#include "gpt/train/run_logs.h"

namespace attograd::gpt {

namespace {

// A loss or norm for a message: "nan" whatever NaN's sign bit (std::to_string prints "-nan"),
// "inf" / "-inf", else the number.
std::string non_finite_str(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  return std::to_string(v);
}

// v for printf: a NaN without its sign bit, which printf writes as "-nan" (an eval line read
// "val loss -nan" beside the divergence message's "nan"; issue 31, kind 14).
double unsigned_nan(double v) { return std::isnan(v) ? std::fabs(v) : v; }

// A count of floating-point operations with its SI prefix, 3 significant digits: "1.20 GFLOP".
std::string flop_str(double flops) {
  static constexpr const char* kPrefixes[] = {"", "k", "M", "G", "T", "P", "E"};
  size_t i = 0;
  while (flops >= 999.5 && i + 1 < std::size(kPrefixes)) flops /= 1000, ++i;
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g %sFLOP", flops, kPrefixes[i]);
  return buf;
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

std::string TrainOptions::to_json() const {
  return fields_to_json(*this, train_option_fields()).dump();
}

TrainOptions TrainOptions::from_json(const std::string& text) {
  const std::string what = "the training options in the checkpoint";
  JsonFields f(parse_json(text, what), what);
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
  if (options_.block_size == 0) options_.block_size = model.config().block_size;
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
  const int64_t decay = o.decay_steps();
  optimizer_.step(nn::cosine_lr(step_, o.warmup_steps, decay, o.learning_rate, o.min_lr), scale);
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
  return r;
}

namespace {

// An append-only CSV log. Rows collect in memory and reach the file on flush(); sync() also
// makes them durable. The trainer syncs before every checkpoint, so after a crash the log holds
// every row up to the checkpoint's step (rows past it are dropped on resume). Write errors (a
// full disk) throw, naming the file, before the checkpoint is touched.
class CsvLog {
 public:
  explicit CsvLog(const std::filesystem::path& path) : path_(path.string()) {
    // The log was just rewritten as a regular file (resume_log). O_NOFOLLOW: a symlink put in
    // its place since is refused, never written through (into a file outside the run).
    fd_ = ::open(path_.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (fd_ < 0)
      throw std::runtime_error(
          "cannot write the log " + path_ + ": " +
          (errno == ELOOP ? std::string("it became a symbolic link while the run started; remove "
                                        "it, or choose another --out")
                          : std::string(std::strerror(errno))));
  }
  ~CsvLog() {
    try {
      flush();  // an exception (a diverged run) still leaves the rows so far in the log
    } catch (const std::runtime_error&) {
      // the exception on its way out already says what went wrong
    }
    ::close(fd_);
  }
  CsvLog(const CsvLog&) = delete;
  CsvLog& operator=(const CsvLog&) = delete;

  std::string& pending() { return pending_; }
  void flush() {
    size_t done = 0;
    while (done < pending_.size()) {
      const ssize_t n = ::write(fd_, pending_.data() + done, pending_.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        const int err = n == 0 ? ENOSPC : errno;
        pending_.erase(0, done);
        throw std::runtime_error("cannot write the log " + path_ + ": " + std::strerror(err) +
                                 "; the checkpoint was not updated");
      }
      done += static_cast<size_t>(n);
    }
    pending_.clear();
  }
  void sync() {
    flush();
    if (::fdatasync(fd_) != 0)
      throw std::runtime_error("cannot write the log " + path_ + " (fdatasync): " +
                               std::strerror(errno) + "; the checkpoint was not updated");
  }

 private:
  std::string path_, pending_;
  int fd_ = -1;
};

// Appends a CSV field the way the logs always wrote them (an ostream's default %g, 6 digits).
void append_field(std::string& row, double v) {
  std::ostringstream s;
  s << unsigned_nan(v);  // "nan", as the lines printed, not "-nan"
  row += s.str();
}

}  // namespace

namespace {

// Makes <dir>/kBestCheckpointFile the checkpoint just written: a hard link (no copy; the next
// save replaces kCheckpointFile by a rename and leaves the linked file alone), renamed into
// place, so the previous best stays until the new one is whole. A copy where the file system
// has no hard links. The temporary is named as AtomicFile's, so a crash leaves nothing that the
// next run would not remove.
void keep_as_best(const std::filesystem::path& dir) {
  const std::filesystem::path tmp =
      dir / (std::string(kBestCheckpointFile) + ".tmp." + std::to_string(::getpid()) + ".linked");
  std::error_code error;
  std::filesystem::remove(tmp, error);
  std::filesystem::create_hard_link(dir / kCheckpointFile, tmp, error);
  if (error) std::filesystem::copy_file(dir / kCheckpointFile, tmp);
  std::filesystem::rename(tmp, dir / kBestCheckpointFile);
}

}  // namespace

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
  const bool files = !out_dir_.empty() && comm_.is_root();  // rank 0 alone writes
  const std::filesystem::path dir(out_dir_);
  std::optional<CsvLog> train_csv, eval_csv;
  if (files) {
    std::filesystem::create_directories(dir);
    // A run from step 0 (a fresh one, e.g. with --overwrite) writes its step-0 evaluation again,
    // so it keeps no row of an earlier run; a resumed run keeps the rows up to its step.
    const int64_t keep_through = step_ > 0 ? step_ : -1;
    resume_log(dir / kTrainLog.file, kTrainLog, keep_through);
    resume_log(dir / kEvalLog.file, kEvalLog, keep_through);
    train_csv.emplace(dir / kTrainLog.file);
    eval_csv.emplace(dir / kEvalLog.file);
  }
  // Within limits.h's bounds this fits easily; tokens/s is then computed in double.
  const int64_t global_batch = o.global_batch();  // ranks x B x grad_accum (ranks: the ctor's)
  const int64_t tokens_per_step = checked_mul(global_batch, o.block_size, "tokens per step");
  std::ostream null_log(nullptr);  // the progress lines of ranks other than 0 go nowhere
  std::ostream& out = comm_.is_root() ? log : null_log;
  const int64_t first_step = step_;
  const auto start = std::chrono::steady_clock::now();
  auto elapsed = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  const int64_t decay = o.decay_steps();

  // Progress lines come every log_interval steps, and by time too (one process: with several
  // ranks a progress line is a collective, and their clocks differ): the first within
  // first_line_s_ of the start, then at least every line_s_ (log_by_time), so a slow model says
  // how it is doing whatever log_interval is.
  double last_line = 0;        // when the last line, progress or evaluation, was printed
  bool any_step_line = false;  // whether a progress line was (the first one comes sooner)
  auto line_printed = [&] { last_line = elapsed(); };

  // The estimate of the run's time (estimate_after), timed from the end of the first step.
  std::optional<double> measured_from;  // elapsed() then
  bool estimated = false;
  auto estimate = [&](double secs) {
    const auto measured = static_cast<double>(step_ - first_step - 1);
    const double per_step = (secs - *measured_from) / measured;
    const double total = secs + per_step * static_cast<double>(o.max_steps - step_);
    // Seconds with a decimal for a short run, whose m:ss would read 0:00.
    char short_run[32];
    std::snprintf(short_run, sizeof short_run, "%.1f s", total);
    const std::string duration = total < 59.95 ? short_run : format_duration(total);
    char buf[320];
    const int n = std::snprintf(
        buf, sizeof buf, "estimate about %s for %lld steps (%.3g %s/step measured over %.0f steps",
        duration.c_str(), static_cast<long long>(o.max_steps - first_step),
        per_step >= 1 ? per_step : per_step * 1e3, per_step >= 1 ? "s" : "ms", measured);
    std::string line(buf, static_cast<size_t>(std::max(n, 0)));
    if (model_.kind() == ModelKind::gpt) {
      const double flops =
          gpt_flops_per_token(model_.config(), o.block_size) * static_cast<double>(tokens_per_step);
      line += "; model " + flop_str(flops) + "/step, " + flop_str(flops / per_step) + "/s";
    }
    out << line << ")\n" << std::flush;
  };

  auto do_eval = [&] {
    const EvalResult r = evaluate();
    char buf[256];
    std::snprintf(
        buf, sizeof buf,
        "eval at step %lld: train loss %.4f (perplexity %.2f), val loss %.4f (perplexity %.2f)\n",
        static_cast<long long>(r.step), unsigned_nan(r.train_loss), unsigned_nan(r.train_ppl),
        unsigned_nan(r.val_loss), unsigned_nan(r.val_ppl));
    out << buf << std::flush;
    line_printed();
    if (files) {
      std::string& row = eval_csv->pending();
      row += std::to_string(r.step);
      for (double v : {r.train_loss, r.val_loss, r.train_ppl, r.val_ppl})
        append_field(row += ',', v);
      row += '\n';
      eval_csv->flush();
    }
    return r;
  };

  if (files) {
    // The loss plot's reference lines: what a model that ignores the context (unigram) and one
    // that sees one token (add-one bigram) reach on val.
    const std::vector<int64_t>& train = data_.tokens(Split::train);
    const std::vector<int64_t>& val = data_.tokens(Split::val);
    std::string rows = std::string("name,val_loss\n");
    append_field(rows += "unigram,", unigram_entropy(val));
    append_field(rows += "\nbigram,", bigram_cross_entropy(train, val, model_.config().vocab_size));
    write_file_atomically(dir / kBaselinesFile, rows + "\n");
    for (const auto& [name, contents] : start_files_) write_file_atomically(dir / name, contents);
  }
  // The best checkpoint (kBestCheckpointFile) of this run: a fresh run drops the one an
  // overwritten run left; a resumed run goes on from its eval log while the file is there.
  std::optional<double> best_val;
  if (files) {
    const std::filesystem::path best = dir / kBestCheckpointFile;
    if (step_ == 0)
      std::filesystem::remove(best);
    else if (std::filesystem::exists(best))
      best_val = lowest_val_loss(dir / kEvalLog.file);
  }
  EvalResult last;
  // The untrained model's loss too (about ln vocab_size), so every curve starts where training
  // does.
  if (step_ == 0 && o.max_steps > 0) last = do_eval();
  while (step_ < o.max_steps) {
    const double lr = nn::cosine_lr(step_, o.warmup_steps, decay, o.learning_rate, o.min_lr);
    const double loss = train_step();
    const double secs = elapsed();
    const double tok_s = static_cast<double>(step_ - first_step) *
                         static_cast<double>(tokens_per_step) / std::max(secs, 1e-9);
    if (!measured_from) {
      measured_from = secs;
    } else if (!estimated && step_ < o.max_steps &&
               (step_ - first_step - 1 >= estimate_steps_ ||
                secs - *measured_from >= estimate_s_)) {
      estimate(secs);
      estimated = true;
    }
    if (files) {  // grad_norm is left empty when it was not computed (no clipping)
      std::string& row = train_csv->pending();
      row += std::to_string(step_);
      append_field(row += ',', loss);
      append_field(row += ',', lr);
      row += ',';
      if (std::isfinite(last_grad_norm_)) append_field(row, last_grad_norm_);
      append_field(row += ',', tok_s);
      row += '\n';
    }
    const bool log_now =
        step_ % o.log_interval == 0 || step_ == o.max_steps ||
        (comm_.size() == 1 && secs - last_line >= (any_step_line ? line_s_ : first_line_s_));
    if (log_now) {
      check_replicas();  // every log_interval steps: the ranks still hold one model
      const double left =
          secs / static_cast<double>(step_ - first_step) * static_cast<double>(o.max_steps - step_);
      // With several ranks, the global batch (ranks x B x grad_accum sequences) too.
      const std::string ranks = comm_.size() == 1
                                    ? std::string()
                                    : " | " + std::to_string(comm_.size()) +
                                          " ranks, global batch " + std::to_string(global_batch);
      char buf[320];
      std::snprintf(buf, sizeof buf,
                    "step %lld/%lld | loss %.4f | lr %.2e | %.0f tok/s%s | %s elapsed, %s left\n",
                    static_cast<long long>(step_), static_cast<long long>(o.max_steps), loss, lr,
                    tok_s, ranks.c_str(), format_duration(secs).c_str(),
                    format_duration(left).c_str());
      out << buf << std::flush;
      line_printed();
      any_step_line = true;
      if (files) train_csv->flush();  // the log file keeps up with the progress lines
    }
    // eval_early: also every eval_early steps until the first regular evaluation.
    const int64_t first_regular = o.eval_interval > 0 ? o.eval_interval : o.max_steps;
    const bool eval_now = step_ == o.max_steps ||
                          (o.eval_interval > 0 && step_ % o.eval_interval == 0) ||
                          (o.eval_early > 0 && step_ < first_regular && step_ % o.eval_early == 0);
    if (eval_now) {
      last = do_eval();
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
      // The logs first: a checkpoint at step N promises every row up to N, after any crash.
      train_csv->sync();
      eval_csv->sync();
      save(checkpoint_path());
      if (eval_now && (!best_val || last.val_loss < *best_val)) {
        best_val = last.val_loss;
        keep_as_best(dir);
      }
    }
    if (signal != 0) throw Interrupted(signal, step_, o.max_steps);
  }
  if (step_ == first_step) {  // nothing left to train: report, without logging the same step twice
    last = evaluate();
    char buf[160];
    std::snprintf(buf, sizeof buf,
                  "already at step %lld of %lld: val loss %.4f (perplexity %.2f)\n",
                  static_cast<long long>(last.step), static_cast<long long>(o.max_steps),
                  unsigned_nan(last.val_loss), unsigned_nan(last.val_ppl));
    out << buf;
  }
  if (files) {
    train_csv->sync();
    eval_csv->sync();
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
