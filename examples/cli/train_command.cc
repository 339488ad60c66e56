// `attograd train`: a GPT on a corpus, end to end, with the homework's outputs: progress,
// loss and perplexity against the unigram baseline, CSV logs, plots and checkpoints.
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <omp.h>

#include "examples/cli/command.h"
#include "gpt/char_tokenizer.h"
#include "gpt/checkpoint.h"
#include "gpt/corpus.h"
#include "gpt/dataset.h"
#include "gpt/trainer.h"

namespace attograd::cli {

namespace {

struct TrainArgs {
  ConfigArgs config;
  std::string corpus = "kjv";
  std::string cache_dir;
  std::string out = "runs/pico";
  gpt::TrainOptions options;
  uint64_t init_seed = 1337;
  bool resume = false;
  bool overwrite = false;
  int threads = 0;
  CLI::Option* steps_option = nullptr;
};

int run(TrainArgs& a) {
  if (a.threads > 0) omp_set_num_threads(a.threads);
  const std::filesystem::path ckpt = std::filesystem::path(a.out) / "ckpt.safetensors";
  if (!a.resume && !a.overwrite && std::filesystem::exists(ckpt))
    throw std::invalid_argument(ckpt.string() + " already exists: pass --resume to continue that run, "
                                "--overwrite to start over, or choose another --out");

  gpt::CorpusOptions corpus_options;
  corpus_options.cache_dir = a.cache_dir;
  corpus_options.log = [](const std::string& line) { std::cout << line << "\n" << std::flush; };
  const gpt::Corpus corpus = gpt::load_corpus(a.corpus, corpus_options);
  std::cout << "corpus  " << corpus.describe() << "\n";

  std::unique_ptr<gpt::GPT> model;
  std::optional<gpt::CharTokenizer> tokenizer;
  std::optional<gpt::TrainingState> state;
  gpt::TrainOptions options = a.options;
  if (a.resume) {
    if (!std::filesystem::exists(ckpt))
      throw std::invalid_argument("nothing to resume: " + ckpt.string() + " does not exist");
    const gpt::SafetensorsFile file = gpt::SafetensorsFile::read(ckpt.string());
    const gpt::CheckpointInfo info = gpt::read_checkpoint_info(file);
    if (!info.training) throw std::invalid_argument(ckpt.string() + " holds no training state to resume");
    if (info.tokenizer_kind != "char") throw std::invalid_argument("resuming needs a char-tokenizer checkpoint");
    tokenizer = gpt::CharTokenizer::from_string(info.tokenizer_data);
    model = gpt::load_model(file);
    options = gpt::TrainOptions::from_json(info.training->train_options);
    if (a.steps_option->count() > 0) options.max_steps = a.options.max_steps;  // extend a run
    state = info.training;
    std::cout << "resume  step " << state->step << " of " << ckpt.string() << "\n";
  } else {
    tokenizer = gpt::CharTokenizer::from_text(corpus.text);
    model = std::make_unique<gpt::GPT>(build_config(a.config, tokenizer->vocab_size()), a.init_seed);
  }
  const gpt::GPTConfig& c = model->config();
  const gpt::Dataset data(tokenizer->encode(corpus.text), c.block_size);
  std::printf("model   n_layer %lld, n_head %lld, n_embd %lld, block_size %lld, vocab_size %lld, %s positions: %lld parameters\n",
              static_cast<long long>(c.n_layer), static_cast<long long>(c.n_head), static_cast<long long>(c.n_embd),
              static_cast<long long>(c.block_size), static_cast<long long>(c.vocab_size),
              gpt::pos_encoding_name(c.pos_encoding), static_cast<long long>(model->num_parameters()));
  const double unigram = gpt::unigram_entropy(data.tokens(gpt::Split::val));
  const double bigram = gpt::bigram_cross_entropy(data.tokens(gpt::Split::train), data.tokens(gpt::Split::val), c.vocab_size);
  std::printf("data    %lld train / %lld val tokens; baselines on val: uniform %.4f, unigram %.4f, add-one bigram %.4f nats\n",
              static_cast<long long>(data.size(gpt::Split::train)), static_cast<long long>(data.size(gpt::Split::val)),
              std::log(static_cast<double>(c.vocab_size)), unigram, bigram);
  std::printf("train   %lld steps, batch %lld x %lld tokens, lr %g -> %g, %d threads\n\n",
              static_cast<long long>(options.max_steps), static_cast<long long>(options.batch_size),
              static_cast<long long>(options.block_size > 0 ? options.block_size : c.block_size),
              options.learning_rate, options.min_lr, omp_get_max_threads());
  std::cout << std::flush;

  gpt::Trainer trainer(*model, data, options, "char", tokenizer->to_string(), a.out);
  if (state) trainer.restore(*state);
  gpt::EvalResult r;
  try {
    r = trainer.run(std::cout);
  } catch (const gpt::NonFiniteLoss& e) {
    std::cerr << "attograd: error: " << e.what() << "\n"
              << "the last good checkpoint, if any, is untouched: " << ckpt.string() << "\n";
    return 1;
  }
  std::printf("\nfinal   train loss %.4f (perplexity %.2f) | val loss %.4f (perplexity %.2f)\n", r.train_loss,
              r.train_ppl, r.val_loss, r.val_ppl);
  std::printf("        unigram baseline %.4f (perplexity %.2f): the model is %s it by %.4f nats\n", unigram,
              std::exp(unigram), r.val_loss < unigram ? "below" : "ABOVE", std::abs(unigram - r.val_loss));
  std::printf("saved   %s\n", ckpt.string().c_str());
  return 0;
}

}  // namespace

void add_train_command(CLI::App& app, int& exit_code) {
  auto a = std::make_shared<TrainArgs>();
  CLI::App* cmd = app.add_subcommand("train", "train a GPT on a corpus (char tokenizer)");
  add_config_options(cmd, a->config, false);
  cmd->add_option("--corpus", a->corpus, "kjv (default, offline: Debian's bible-kjv), shakespeare (downloaded "
                                         "once), or a UTF-8 text file")->capture_default_str();
  cmd->add_option("--cache-dir", a->cache_dir, "where fetched corpora are kept (default ~/.cache/attograd)");
  cmd->add_option("--out", a->out, "output directory: logs, plots, ckpt.safetensors")->capture_default_str();
  gpt::TrainOptions& o = a->options;
  a->steps_option = cmd->add_option("--steps", o.max_steps, "optimizer steps")->check(CLI::PositiveNumber)->capture_default_str();
  cmd->add_option("--batch-size", o.batch_size, "sequences per micro-batch (B)")->check(CLI::PositiveNumber)->capture_default_str();
  cmd->add_option("--grad-accum", o.grad_accum, "micro-batches per step")->check(CLI::PositiveNumber)->capture_default_str();
  cmd->add_option("--lr", o.learning_rate, "peak learning rate")->check(CLI::PositiveNumber)->capture_default_str();
  cmd->add_option("--min-lr", o.min_lr, "final learning rate of the cosine decay")->check(CLI::NonNegativeNumber)->capture_default_str();
  cmd->add_option("--warmup", o.warmup_steps, "linear warmup steps")->check(CLI::NonNegativeNumber)->capture_default_str();
  cmd->add_option("--decay-steps", o.lr_decay_steps, "cosine decay length (0 = --steps)")->check(CLI::NonNegativeNumber);
  cmd->add_option("--weight-decay", o.weight_decay, "AdamW decay of 2-D weights")->check(CLI::NonNegativeNumber)->capture_default_str();
  cmd->add_option("--grad-clip", o.grad_clip, "max global gradient norm (0 = off)")->check(CLI::NonNegativeNumber)->capture_default_str();
  cmd->add_option("--seed", o.seed, "seed of the batch sampler")->capture_default_str();
  cmd->add_option("--init-seed", a->init_seed, "seed of the weight initialisation")->capture_default_str();
  cmd->add_option("--eval-interval", o.eval_interval, "evaluate every N steps")->check(CLI::NonNegativeNumber)->capture_default_str();
  cmd->add_option("--eval-iters", o.eval_iters, "batches per split per evaluation")->check(CLI::PositiveNumber)->capture_default_str();
  cmd->add_option("--checkpoint-interval", o.checkpoint_interval, "also checkpoint every N steps")->check(CLI::NonNegativeNumber);
  cmd->add_option("--log-interval", o.log_interval, "progress line every N steps")->check(CLI::PositiveNumber)->capture_default_str();
  cmd->add_option("--threads", a->threads, "OpenMP threads (default: all cores)")->check(CLI::NonNegativeNumber);
  cmd->add_flag("--resume", a->resume, "continue the run in --out from its checkpoint (bit-exact; --steps may extend it)");
  cmd->add_flag("--overwrite", a->overwrite, "start over even if --out already holds a checkpoint");
  cmd->callback([a, &exit_code] { exit_code = run(*a); });
}

}  // namespace attograd::cli
