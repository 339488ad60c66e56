// `attograd train`: a GPT on a corpus, end to end, with the homework's outputs: progress,
// loss and perplexity against the unigram baseline, CSV logs, plots and checkpoints.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <omp.h>

#include "examples/cli/command.h"
#include "gpt/bpe_tokenizer.h"
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
  std::string tokenizer = "char";
  CLI::Option* tokenizer_option = nullptr;
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
  std::unique_ptr<gpt::Tokenizer> tokenizer;
  std::optional<gpt::TrainingState> state;
  gpt::TrainOptions options = a.options;
  if (a.resume) {
    if (!std::filesystem::exists(ckpt))
      throw std::invalid_argument("nothing to resume: " + ckpt.string() + " does not exist");
    const gpt::SafetensorsFile file = gpt::SafetensorsFile::read(ckpt.string());
    const gpt::CheckpointInfo info = gpt::read_checkpoint_info(file);
    if (!info.training) throw std::invalid_argument(ckpt.string() + " holds no training state to resume");
    if (a.tokenizer_option->count() > 0 && a.tokenizer != info.tokenizer_kind)
      throw std::invalid_argument("--tokenizer " + a.tokenizer + " does not match " + ckpt.string() + ", trained with '" +
                                  info.tokenizer_kind + "'; drop --tokenizer when resuming");
    tokenizer = gpt::load_tokenizer(info.tokenizer_kind, info.tokenizer_data);
    model = gpt::load_model(file);
    options = gpt::TrainOptions::from_json(info.training->train_options);
    if (a.steps_option->count() > 0) options.max_steps = a.options.max_steps;  // extend a run
    state = info.training;
    std::cout << "resume  step " << state->step << " of " << ckpt.string() << "\n";
  } else {
    if (a.tokenizer == "gpt2")
      tokenizer = std::make_unique<gpt::BpeTokenizer>(gpt::BpeTokenizer::gpt2());
    else
      tokenizer = std::make_unique<gpt::CharTokenizer>(gpt::CharTokenizer::from_text(corpus.text));
    model = std::make_unique<gpt::GPT>(build_config(a.config, tokenizer->vocab_size()), a.init_seed);
  }
  const gpt::GPTConfig& c = model->config();
  // GPT-2's BPE treats "<|endoftext|>" in the corpus as plain text (encode's default): a
  // corpus file cannot inject document boundaries nobody asked for.
  const auto encode_start = std::chrono::steady_clock::now();
  std::vector<int64_t> ids = tokenizer->encode(corpus.text);
  const double encode_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - encode_start).count();
  std::printf("tokens  %s tokenizer (vocab %lld): %zu tokens, %.2f bytes per token, encoded in %.2f s\n",
              tokenizer->kind().c_str(), static_cast<long long>(tokenizer->vocab_size()), ids.size(),
              static_cast<double>(corpus.text.size()) / static_cast<double>(std::max<size_t>(ids.size(), 1)),
              encode_seconds);
  const gpt::Dataset data(std::move(ids), c.block_size);
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

  gpt::Trainer trainer(*model, data, options, tokenizer->kind(), tokenizer->serialize(), a.out);
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
  CLI::App* cmd = app.add_subcommand("train", "train a GPT on a corpus (char or GPT-2 BPE tokenizer)");
  add_config_options(cmd, a->config, false);
  cmd->add_option("--corpus", a->corpus, "kjv (default, offline: Debian's bible-kjv), shakespeare (downloaded "
                                         "once), or a UTF-8 text file")->capture_default_str();
  a->tokenizer_option = cmd->add_option("--tokenizer", a->tokenizer, "char (one token per character of the corpus) or "
                                       "gpt2 (GPT-2's 50,257-token BPE; vocab_size becomes 50257)")
                            ->check(CLI::IsMember({"char", "gpt2"}))->capture_default_str();
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
