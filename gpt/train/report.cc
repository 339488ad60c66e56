#include "gpt/train/report.h"

#include <algorithm>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <iterator>
#include <string>

#include "autograd/size_math.h"
#include "gpt/model/config.h"
#include "nn/io/utf8.h"

namespace attograd::gpt {

namespace {

// printf's formatting into a string: the lines keep their exact figures.
[[gnu::format(printf, 1, 2)]] std::string format(const char* fmt, ...) {
  va_list args;
  va_start(args, fmt);
  va_list copy;
  va_copy(copy, args);
  const int n = std::vsnprintf(nullptr, 0, fmt, copy);
  va_end(copy);
  std::string s(static_cast<size_t>(std::max(n, 0)) + 1, '\0');
  std::vsnprintf(s.data(), s.size(), fmt, args);
  va_end(args);
  s.resize(static_cast<size_t>(std::max(n, 0)));
  return s;
}

// A count of floating-point operations with its SI prefix, 3 significant digits: "1.20 GFLOP".
std::string flop_str(double flops) {
  static constexpr const char* kPrefixes[] = {"", "k", "M", "G", "T", "P", "E"};
  size_t i = 0;
  while (flops >= 999.5 && i + 1 < std::size(kPrefixes)) flops /= 1000, ++i;
  return format("%.3g %sFLOP", flops, kPrefixes[i]);
}

}  // namespace

Baselines Baselines::of(const Dataset& data, int64_t vocab_size) {
  const std::vector<int64_t>& train = data.tokens(Split::train);
  const std::vector<int64_t>& val = data.tokens(Split::val);
  return {std::log(static_cast<double>(vocab_size)), unigram_entropy(val),
          bigram_cross_entropy(train, val, vocab_size)};
}

std::string Baselines::csv() const {
  std::string rows = "name,val_loss\n";
  append_csv_field(rows += "unigram,", unigram);
  append_csv_field(rows += "\nbigram,", bigram);
  return rows + "\n";
}

std::string format_duration(double seconds) {
  const auto s = static_cast<long long>(seconds + 0.5);
  if (s >= 3600) return format("%lld:%02lld:%02lld", s / 3600, s / 60 % 60, s % 60);
  return format("%lld:%02lld", s / 60, s % 60);
}

void SetUpReport::removed_stale(const std::filesystem::path& path) {
  out_ << "cleanup removed " << path.string() << ", left by an interrupted run\n";
}

void SetUpReport::threads_beyond_cpus(int threads, int cpus, int ranks) {
  out_ << "note    " << threads << " threads" << (ranks > 1 ? " per rank" : "")
       << ", but this process may run on " << cpus << " CPU" << (cpus == 1 ? "" : "s") << " only"
       << (ranks > 1 ? " (mpirun binds each rank to a core unless told otherwise: add "
                       "--bind-to none, or --map-by ...:pe=N to give each rank N cores)"
                     : "")
       << "\n";
}

void SetUpReport::corpus(const Corpus& corpus) { out_ << "corpus  " << corpus.describe() << "\n"; }

void SetUpReport::resumed(int64_t step, const std::string& checkpoint) {
  out_ << "resume  step " << step << " of " << nn::escape_controls(checkpoint) << "\n";
}

void SetUpReport::init(const std::string& description) {
  out_ << "init    " << nn::escape_controls(description) << "\n";  // it names a user's file
}

void SetUpReport::tokens(const Tokenizer& tokenizer, size_t n_tokens, size_t n_bytes,
                         double seconds) {
  out_ << format(
      "tokens  %s tokenizer (vocab %lld): %zu tokens, %.2f bytes per token, encoded in "
      "%.2f s\n",
      tokenizer.kind().c_str(), static_cast<long long>(tokenizer.vocab_size()), n_tokens,
      static_cast<double>(n_bytes) / static_cast<double>(std::max<size_t>(n_tokens, 1)), seconds);
}

void SetUpReport::option_notes(const TrainOptions& options) {
  if (options.warmup_steps >= options.max_steps)
    out_ << format(
        "note    --warmup %lld >= --steps %lld: the learning rate never reaches its "
        "peak %g\n",
        static_cast<long long>(options.warmup_steps), static_cast<long long>(options.max_steps),
        options.learning_rate);
  if (options.label_smoothing > 0)
    out_ << format(
        "note    label smoothing %g: the step losses and train_log.csv are of the smoothed "
        "loss; evaluations, eval_log.csv and perplexities are plain cross-entropy\n",
        options.label_smoothing);
}

void SetUpReport::model(const LanguageModel& model) {
  const GPTConfig& c = model.config();
  const long long n_params = model.num_parameters();
  const auto n = [](int64_t v) { return static_cast<long long>(v); };
  out_ << "model   ";
  switch (model.kind()) {
    case ModelKind::gpt:
      out_ << format(
          "gpt: n_layer %lld, n_head %lld, n_embd %lld, block_size %lld, vocab_size %lld, %s "
          "positions: %lld parameters",
          n(c.n_layer), n(c.n_head), n(c.n_embd), n(c.block_size), n(c.vocab_size),
          pos_encoding_name(c.pos_encoding), n_params);
      break;
    case ModelKind::bigram:
      out_ << format("bigram: a %lld x %lld table of logits, block_size %lld: %lld parameters",
                     n(c.vocab_size), n(c.vocab_size), n(c.block_size), n_params);
      break;
    case ModelKind::average:
      out_ << format(
          "average (causal mean of the context, no attention): n_embd %lld, block_size %lld, "
          "vocab_size %lld, %s positions: %lld parameters",
          n(c.n_embd), n(c.block_size), n(c.vocab_size), pos_encoding_name(c.pos_encoding),
          n_params);
      break;
    default:
      out_ << model_kind_name(model.kind());
  }
  out_ << "\n";
}

void SetUpReport::data(const Dataset& data, const Baselines& baselines) {
  out_ << format(
      "data    %lld train / %lld val tokens; baselines on val: uniform %.4f, unigram "
      "%.4f, add-one bigram %.4f nats\n",
      static_cast<long long>(data.size(Split::train)),
      static_cast<long long>(data.size(Split::val)), baselines.uniform, baselines.unigram,
      baselines.bigram);
}

void SetUpReport::plan(const TrainOptions& options, int64_t T, int threads, int ranks) {
  out_ << format("train   %lld steps, batch %lld x %lld tokens, lr %g -> %g, %d thread%s",
                 static_cast<long long>(options.max_steps),
                 static_cast<long long>(options.batch_size), static_cast<long long>(T),
                 options.learning_rate, options.min_lr, threads, threads == 1 ? "" : "s");
  if (ranks > 1)
    out_ << format(" per rank; %d ranks: global batch %d x %lld x %lld = %lld sequences per step",
                   ranks, ranks, static_cast<long long>(options.batch_size),
                   static_cast<long long>(options.grad_accum),
                   static_cast<long long>(options.global_batch()));
  out_ << "\n\n" << std::flush;
}

void SetUpReport::note(const std::string& text) { out_ << "note    " << text << "\n"; }

TrainingReport::TrainingReport(std::ostream& out, const TrainOptions& options, int64_t first_step,
                               int ranks, std::optional<double> flops_per_step, Timing timing)
    : out_(out),
      options_(options),
      first_step_(first_step),
      ranks_(ranks),
      // Within limits.h's bounds this fits easily; tokens/s is then computed in double.
      global_batch_(options.global_batch()),  // ranks x B x grad_accum
      tokens_per_step_(checked_mul(global_batch_, options.block_size, "tokens per step")),
      flops_per_step_(flops_per_step ? std::optional<double>(*flops_per_step *
                                                             static_cast<double>(tokens_per_step_))
                                     : std::nullopt),
      timing_(timing) {}

double TrainingReport::elapsed() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

double TrainingReport::step_done(int64_t step) {
  const double secs = elapsed();
  if (!measured_from_) {
    measured_from_ = secs;
    return secs;
  }
  if (estimated_ || step >= options_.max_steps ||
      (step - first_step_ - 1 < timing_.estimate_steps &&
       secs - *measured_from_ < timing_.estimate_s))
    return secs;
  estimated_ = true;
  const auto measured = static_cast<double>(step - first_step_ - 1);
  const double per_step = (secs - *measured_from_) / measured;
  const double total = secs + per_step * static_cast<double>(options_.max_steps - step);
  // Seconds with a decimal for a short run, whose m:ss would read 0:00.
  const std::string duration = total < 59.95 ? format("%.1f s", total) : format_duration(total);
  std::string line =
      format("estimate about %s for %lld steps (%.3g %s/step measured over %.0f steps",
             duration.c_str(), static_cast<long long>(options_.max_steps - first_step_),
             per_step >= 1 ? per_step : per_step * 1e3, per_step >= 1 ? "s" : "ms", measured);
  if (flops_per_step_)
    line += "; model " + flop_str(*flops_per_step_) + "/step, " +
            flop_str(*flops_per_step_ / per_step) + "/s";
  out_ << line << ")\n" << std::flush;
  return secs;
}

double TrainingReport::tokens_per_s(int64_t step, double secs) const {
  return static_cast<double>(step - first_step_) * static_cast<double>(tokens_per_step_) /
         std::max(secs, 1e-9);
}

bool TrainingReport::line_due_by_time(double secs) const {
  return secs - last_line_ >= (any_step_line_ ? timing_.line_s : timing_.first_line_s);
}

void TrainingReport::progress(int64_t step, double loss, double lr, double secs) {
  const double left = secs / static_cast<double>(step - first_step_) *
                      static_cast<double>(options_.max_steps - step);
  // With several ranks, the global batch (ranks x B x grad_accum sequences) too.
  const std::string ranks = ranks_ == 1 ? std::string()
                                        : " | " + std::to_string(ranks_) + " ranks, global batch " +
                                              std::to_string(global_batch_);
  out_ << format("step %lld/%lld | loss %.4f | lr %.2e | %.0f tok/s%s | %s elapsed, %s left\n",
                 static_cast<long long>(step), static_cast<long long>(options_.max_steps), loss, lr,
                 tokens_per_s(step, secs), ranks.c_str(), format_duration(secs).c_str(),
                 format_duration(left).c_str())
       << std::flush;
  last_line_ = elapsed();
  any_step_line_ = true;
}

void TrainingReport::eval(const EvalResult& r) {
  out_ << format(
              "eval at step %lld: train loss %.4f (perplexity %.2f), val loss %.4f (perplexity "
              "%.2f)\n",
              static_cast<long long>(r.step), unsigned_nan(r.train_loss), unsigned_nan(r.train_ppl),
              unsigned_nan(r.val_loss), unsigned_nan(r.val_ppl))
       << std::flush;
  last_line_ = elapsed();
}

void TrainingReport::already_at(const EvalResult& r) {
  out_ << format("already at step %lld of %lld: val loss %.4f (perplexity %.2f)\n",
                 static_cast<long long>(r.step), static_cast<long long>(options_.max_steps),
                 unsigned_nan(r.val_loss), unsigned_nan(r.val_ppl));
}

}  // namespace attograd::gpt
