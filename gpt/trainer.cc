#include "gpt/trainer.h"

#include <cctype>
#include <chrono>
#include <cstdlib>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <ostream>
#include <sstream>

#include "autograd/engine.h"
#include "autograd/ops.h"
#include "gpt/plot.h"

namespace attograd::gpt {

void PerplexityMeter::add(double sum_nll, int64_t tokens) {
  sum_ += sum_nll;
  tokens_ += tokens;
}

double PerplexityMeter::mean_nll() const {
  if (tokens_ == 0) throw std::logic_error("PerplexityMeter: no tokens were added");
  return sum_ / static_cast<double>(tokens_);
}

double PerplexityMeter::perplexity() const { return std::exp(mean_nll()); }

void TrainOptions::validate() const {
  auto positive = [](int64_t v, const char* name) {
    if (v <= 0) throw std::invalid_argument(std::string(name) + " must be positive, got " + std::to_string(v));
  };
  auto non_negative = [](double v, const char* name) {
    if (!(v >= 0)) throw std::invalid_argument(std::string(name) + " must be >= 0, got " + std::to_string(v));
  };
  positive(max_steps, "steps");
  positive(batch_size, "batch size");
  positive(grad_accum, "grad_accum");
  positive(eval_iters, "eval_iters");
  positive(log_interval, "log_interval");
  non_negative(static_cast<double>(block_size), "block_size");
  non_negative(static_cast<double>(warmup_steps), "warmup");
  non_negative(static_cast<double>(lr_decay_steps), "lr_decay_steps");
  non_negative(static_cast<double>(eval_interval), "eval_interval");
  non_negative(static_cast<double>(checkpoint_interval), "checkpoint_interval");
  non_negative(weight_decay, "weight_decay");
  non_negative(grad_clip, "grad_clip");
  if (!(learning_rate > 0)) throw std::invalid_argument("learning rate must be positive, got " + std::to_string(learning_rate));
  non_negative(min_lr, "min_lr");
  if (min_lr > learning_rate)
    throw std::invalid_argument("min_lr " + std::to_string(min_lr) + " exceeds the learning rate " + std::to_string(learning_rate));
  if (!(beta1 >= 0 && beta1 < 1 && beta2 >= 0 && beta2 < 1)) throw std::invalid_argument("AdamW betas must be in [0, 1)");
}

std::string TrainOptions::to_json() const {
  return nlohmann::json{{"max_steps", max_steps},       {"batch_size", batch_size},
                        {"block_size", block_size},     {"grad_accum", grad_accum},
                        {"learning_rate", learning_rate}, {"min_lr", min_lr},
                        {"warmup_steps", warmup_steps}, {"lr_decay_steps", lr_decay_steps},
                        {"weight_decay", weight_decay}, {"beta1", beta1},
                        {"beta2", beta2},               {"grad_clip", grad_clip},
                        {"seed", seed},                 {"eval_interval", eval_interval},
                        {"eval_iters", eval_iters},     {"checkpoint_interval", checkpoint_interval},
                        {"log_interval", log_interval},   {"corpus", corpus},
                        {"corpus_sha256", corpus_sha256}}
      .dump();
}

TrainOptions TrainOptions::from_json(const std::string& text) {
  try {
    const nlohmann::json j = nlohmann::json::parse(text);
    TrainOptions o;
    o.max_steps = j.at("max_steps");
    o.batch_size = j.at("batch_size");
    o.block_size = j.at("block_size");
    o.grad_accum = j.at("grad_accum");
    o.learning_rate = j.at("learning_rate");
    o.min_lr = j.at("min_lr");
    o.warmup_steps = j.at("warmup_steps");
    o.lr_decay_steps = j.at("lr_decay_steps");
    o.weight_decay = j.at("weight_decay");
    o.beta1 = j.at("beta1");
    o.beta2 = j.at("beta2");
    o.grad_clip = j.at("grad_clip");
    o.seed = j.at("seed");
    o.eval_interval = j.at("eval_interval");
    o.eval_iters = j.at("eval_iters");
    o.checkpoint_interval = j.at("checkpoint_interval");
    o.log_interval = j.at("log_interval");
    o.corpus = j.value("corpus", "");
    o.corpus_sha256 = j.value("corpus_sha256", "");
    return o;
  } catch (const nlohmann::json::exception& e) {
    throw std::runtime_error(std::string("malformed training options in the checkpoint: ") + e.what());
  }
}

Trainer::Trainer(GPT& model, const Dataset& data, const TrainOptions& options, std::string tokenizer_kind,
                 std::string tokenizer_data, std::string out_dir)
    : model_(model),
      data_(data),
      options_(options),
      tokenizer_kind_(std::move(tokenizer_kind)),
      tokenizer_data_(std::move(tokenizer_data)),
      out_dir_(std::move(out_dir)),
      optimizer_(model.arena(), nn::AdamWOptions{options.beta1, options.beta2, 1e-8, options.weight_decay}),
      batch_gen_(options.seed) {
  options_.validate();
  if (options_.block_size == 0) options_.block_size = model.config().block_size;
  if (options_.block_size > model.config().block_size)
    throw std::invalid_argument("training block_size " + std::to_string(options_.block_size) +
                                " exceeds the model's block_size " + std::to_string(model.config().block_size));
}

void Trainer::restore(const TrainingState& s) {
  try {
    optimizer_.load_state(s.adam_m, s.adam_v, s.adam_t);
    batch_gen_.set_state(s.batch_rng);  // a malformed batch_rng is the checkpoint's fault too
  } catch (const std::invalid_argument& e) {
    throw std::runtime_error(std::string("checkpoint: ") + e.what());
  }
  step_ = s.step;
}

std::string Trainer::checkpoint_path() const {
  return out_dir_.empty() ? std::string() : (std::filesystem::path(out_dir_) / "ckpt.safetensors").string();
}

void Trainer::save(const std::string& path) {
  TrainingState s;
  s.step = step_;
  s.batch_rng = batch_gen_.state();
  s.adam_m = optimizer_.m();
  s.adam_v = optimizer_.v();
  s.adam_t = optimizer_.steps();
  s.train_options = options_.to_json();
  save_checkpoint(path, model_, tokenizer_kind_, tokenizer_data_, &s);
}

double Trainer::train_step() {
  const TrainOptions& o = options_;
  model_.train();
  model_.arena().zero_grad();
  double loss_sum = 0;
  for (int64_t micro = 0; micro < o.grad_accum; ++micro) {
    const Batch b = data_.get_batch(Split::train, o.batch_size, o.block_size, batch_gen_);
    const Tensor loss = model_.forward(b.x, b.y).loss;
    const double value = loss.item();
    if (!std::isfinite(value))
      throw NonFiniteLoss("the training loss became " + std::to_string(value) + " at step " + std::to_string(step_) +
                          "; stopped before updating the parameters. Try a lower --lr or a --grad-clip");
    loss_sum += value;
    // Each micro-batch contributes 1/grad_accum of the mean: the accumulated gradient is the
    // gradient of the mean loss over all grad_accum * B * T tokens.
    mul_scalar(loss, 1.0 / static_cast<double>(o.grad_accum)).backward();
  }
  // The gradient norm is one pass over every gradient: computed only to clip, and then once.
  // The clipping factor is applied by AdamW as it reads each gradient.
  double scale = 1.0;
  last_grad_norm_ = std::numeric_limits<double>::quiet_NaN();
  if (o.grad_clip > 0) {
    const double norm = model_.arena().grad_norm();
    if (!std::isfinite(norm))
      throw NonFiniteLoss("the gradient norm became " + std::to_string(norm) + " at step " + std::to_string(step_) +
                          "; stopped before updating the parameters. Try a lower --lr or a --grad-clip");
    last_grad_norm_ = norm;
    scale = nn::clip_scale(norm, o.grad_clip);
  }
  const int64_t decay = o.lr_decay_steps > 0 ? o.lr_decay_steps : o.max_steps;
  optimizer_.step(nn::cosine_lr(step_, o.warmup_steps, decay, o.learning_rate, o.min_lr), scale);
  ++step_;
  return loss_sum / static_cast<double>(o.grad_accum);
}

EvalResult Trainer::evaluate() {
  NoGradGuard no_grad;
  const bool was_training = model_.is_training();
  model_.eval();
  EvalResult r;
  r.step = step_;
  for (Split split : {Split::train, Split::val}) {
    Generator gen(options_.seed ^ 0x5eed0fe7a1ULL);  // the same batches at every evaluation
    PerplexityMeter meter;
    for (int64_t i = 0; i < options_.eval_iters; ++i) {
      const Batch b = data_.get_batch(split, options_.batch_size, options_.block_size, gen);
      const int64_t tokens = b.y.numel();
      meter.add(model_.forward(b.x, b.y).loss.item() * static_cast<double>(tokens), tokens);
    }
    (split == Split::train ? r.train_loss : r.val_loss) = meter.mean_nll();
    (split == Split::train ? r.train_ppl : r.val_ppl) = meter.perplexity();
  }
  model_.train(was_training);
  return r;
}

namespace {

std::string format_duration(double seconds) {
  const auto s = static_cast<long long>(seconds + 0.5);
  char buf[32];
  if (s >= 3600) std::snprintf(buf, sizeof buf, "%lld:%02lld:%02lld", s / 3600, s / 60 % 60, s % 60);
  else std::snprintf(buf, sizeof buf, "%lld:%02lld", s / 60, s % 60);
  return buf;
}

// Keeps the rows of a CSV log up to `step` (a resumed run rewrites what came after).
void truncate_log(const std::filesystem::path& path, const std::string& header, int64_t step) {
  std::vector<std::string> keep{header};
  std::ifstream in(path);
  std::string line;
  if (in && std::getline(in, line))
    while (std::getline(in, line))
      if (!line.empty() && std::isdigit(static_cast<unsigned char>(line[0])) && std::strtoll(line.c_str(), nullptr, 10) <= step)
        keep.push_back(line);  // a malformed line (not starting with a step number) is dropped
  std::ofstream out(path, std::ios::trunc);
  for (const std::string& l : keep) out << l << '\n';
}

}  // namespace

EvalResult Trainer::run(std::ostream& log) {
  const TrainOptions& o = options_;
  const bool files = !out_dir_.empty();
  const std::filesystem::path dir(out_dir_);
  std::ofstream train_csv, eval_csv;
  if (files) {
    std::filesystem::create_directories(dir);
    truncate_log(dir / "train_log.csv", "step,loss,lr,grad_norm,tokens_per_s", step_);
    truncate_log(dir / "eval_log.csv", "step,train_loss,val_loss,train_ppl,val_ppl", step_);
    train_csv.open(dir / "train_log.csv", std::ios::app);
    eval_csv.open(dir / "eval_log.csv", std::ios::app);
    if (!train_csv || !eval_csv) throw std::runtime_error("cannot write the logs in " + out_dir_);
  }
  const int64_t tokens_per_step = o.batch_size * o.block_size * o.grad_accum;
  const int64_t first_step = step_;
  const auto start = std::chrono::steady_clock::now();
  auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(); };
  const int64_t decay = o.lr_decay_steps > 0 ? o.lr_decay_steps : o.max_steps;

  auto do_eval = [&] {
    const EvalResult r = evaluate();
    char buf[256];
    std::snprintf(buf, sizeof buf, "eval at step %lld: train loss %.4f (perplexity %.2f), val loss %.4f (perplexity %.2f)\n",
                  static_cast<long long>(r.step), r.train_loss, r.train_ppl, r.val_loss, r.val_ppl);
    log << buf << std::flush;
    if (files) eval_csv << r.step << ',' << r.train_loss << ',' << r.val_loss << ',' << r.train_ppl << ',' << r.val_ppl << std::endl;
    return r;
  };

  EvalResult last;
  while (step_ < o.max_steps) {
    const double lr = nn::cosine_lr(step_, o.warmup_steps, decay, o.learning_rate, o.min_lr);
    const double loss = train_step();
    const double secs = elapsed();
    const double tok_s = static_cast<double>((step_ - first_step) * tokens_per_step) / std::max(secs, 1e-9);
    if (files) {  // grad_norm is left empty when it was not computed (no clipping)
      train_csv << step_ << ',' << loss << ',' << lr << ',';
      if (std::isfinite(last_grad_norm_)) train_csv << last_grad_norm_;
      train_csv << ',' << tok_s << '\n';
    }
    if (step_ % o.log_interval == 0 || step_ == o.max_steps) {
      const double left = secs / static_cast<double>(step_ - first_step) * static_cast<double>(o.max_steps - step_);
      char buf[256];
      std::snprintf(buf, sizeof buf, "step %lld/%lld | loss %.4f | lr %.2e | %.0f tok/s | %s elapsed, %s left\n",
                    static_cast<long long>(step_), static_cast<long long>(o.max_steps), loss, lr, tok_s,
                    format_duration(secs).c_str(), format_duration(left).c_str());
      log << buf << std::flush;
    }
    const bool eval_now = step_ == o.max_steps || (o.eval_interval > 0 && step_ % o.eval_interval == 0);
    if (eval_now) last = do_eval();
    const bool ckpt_now = step_ == o.max_steps || eval_now ||
                          (o.checkpoint_interval > 0 && step_ % o.checkpoint_interval == 0);
    if (files && ckpt_now) save(checkpoint_path());
  }
  if (step_ == first_step) {  // nothing left to train: report, without logging the same step twice
    last = evaluate();
    char buf[160];
    std::snprintf(buf, sizeof buf, "already at step %lld of %lld: val loss %.4f (perplexity %.2f)\n",
                  static_cast<long long>(last.step), static_cast<long long>(o.max_steps), last.val_loss, last.val_ppl);
    log << buf;
  }
  if (files) {
    train_csv.close();
    eval_csv.close();
    write_plots(out_dir_, log);
  }
  return last;
}

}  // namespace attograd::gpt
