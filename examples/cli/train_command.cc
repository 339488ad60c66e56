// `attograd train`: a GPT (or the lecture's bigram or average model) on a corpus, end to end, with
// the homework's outputs: progress, loss and perplexity against the unigram baseline, CSV logs,
// plots and checkpoints.
#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <set>

#include "autograd/kernels/thread_pool.h"
#include "examples/cli/command.h"
#include "gpt/io/atomic_file.h"
#include "gpt/io/sha256.h"
#include "gpt/io/utf8.h"
#include "gpt/model/baselines.h"
#include "gpt/model/session.h"
#include "gpt/text/bpe_tokenizer.h"
#include "gpt/text/char_tokenizer.h"
#include "gpt/text/corpus.h"
#include "gpt/text/dataset.h"
#include "gpt/train/distributed.h"
#include "gpt/train/run.h"
#include "gpt/train/trainer.h"

namespace attograd::cli {

namespace {

struct TrainArgs {
  ConfigArgs config;
  std::string corpus = "kjv";
  std::string tokenizer = "char";
  std::string model = "gpt";
  CLI::Option* tokenizer_option = nullptr;
  std::string cache_dir;
  std::string out = "runs/pico";
  gpt::TrainOptions options;
  uint64_t init_seed = 1337;
  bool resume = false;
  bool overwrite = false;
  bool keep_cr = false;
  int threads = 0;
  CLI::Option* steps_option = nullptr;
  CLI::Option* corpus_option = nullptr;
  CLI::Option* keep_cr_option = nullptr;
  CLI::App* cmd = nullptr;
};

// Options a resumed run takes from its checkpoint; only these may be given with --resume.
const std::set<std::string> kResumeOptions = {"--resume",    "--steps",     "--corpus",
                                              "--cache-dir", "--keep-cr",   "--out",
                                              "--threads",   "--tokenizer", "--help"};

// A fresh run writes its logs, plots and checkpoint into --out, replacing files of those names:
// a directory that holds anything but our lock (the logs of a run killed before its first
// checkpoint, or files that are not ours) is refused without --overwrite, naming what is there.
// A directory holding a checkpoint is left to the caller's own message (--resume or --overwrite).
void refuse_occupied_dir(const std::filesystem::path& out) {
  if (std::filesystem::exists(out / gpt::kCheckpointFile)) return;
  std::vector<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(out))
    if (entry.path().filename() != ".lock") names.push_back(entry.path().filename().string());
  if (names.empty()) return;
  std::sort(names.begin(), names.end());
  std::string listed;
  for (size_t i = 0; i < names.size() && i < 3; ++i)
    listed += (i ? ", " : "") + gpt::escape_bytes(names[i]);
  if (names.size() > 3) listed += " and " + std::to_string(names.size() - 3) + " more";
  throw std::invalid_argument("--out " + out.string() + " already holds " + listed +
                              " but no checkpoint: pass --overwrite to start a run there (its "
                              "logs and plots are replaced), or choose another --out");
}

// Holds an exclusive lock on <out>/.lock for the life of the process: two runs writing the same
// logs and checkpoint would interleave them.
void lock_output_dir(const std::filesystem::path& out) {
  const std::string path = (out / ".lock").string();
  // O_CLOEXEC: a child (gnuplot) must not inherit the lock, or an orphan outliving a killed
  // run would keep --resume out.
  const int fd = ::open(path.c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0644);
  if (fd < 0)
    throw std::invalid_argument("cannot write in --out " + out.string() + ": " +
                                std::strerror(errno));
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0)
    throw std::invalid_argument("another `attograd train` is writing to " + out.string() +
                                "; wait for it to finish or choose another --out");
  // fd stays open on purpose: the lock is released when the process exits.
}

// --threads for this rank: the size of the engine's thread pool. 0 means the CPUs this process
// may run on: all of them when the launcher gave the rank its own (mpirun's core per rank, srun's
// --cpus-per-task, --map-by ...:pe=N), and an equal share when ranks on one machine may all
// run on every CPU (unbound), rather than all CPUs each. A rank asked for more threads than it
// may run on says so: they would take turns.
void set_threads(int threads, const gpt::Communicator& comm) {
  const int online = static_cast<int>(::sysconf(_SC_NPROCESSORS_ONLN));
  const int cpus = kernels::available_cpus();
  if (threads == 0) threads = cpus < online ? cpus : std::max(1, cpus / comm.local_size());
  kernels::set_num_threads(threads);
  if (threads <= cpus) return;
  const std::string note =
      std::to_string(threads) + " threads" + (comm.size() > 1 ? " per rank" : "") +
      ", but this process may run on " + std::to_string(cpus) + " CPU" + (cpus == 1 ? "" : "s") +
      " only" +
      (comm.size() > 1 ? " (mpirun binds each rank to a core unless told otherwise: add "
                         "--bind-to none, or --map-by ...:pe=N to give each rank N cores)"
                       : "");
  if (comm.is_root())
    std::printf("note    %s\n", note.c_str());
  else  // its stdout goes nowhere
    std::cerr << "note    rank " + std::to_string(comm.rank()) + ": " + note + "\n" << std::flush;
}

// Thrown by run() on a rank that set up well when another did not: that one says why.
struct SetupFailedElsewhere {};

// Sets set_up once every rank has set up, just before training: an error after that is met
// by the ranks at different points (rank 0 writing a file) unless it is a CollectiveError.
int run(TrainArgs& a, const gpt::Communicator& comm, bool& set_up) {
  set_threads(a.threads, comm);
  // Rank 0 alone prints; the others' errors still reach stderr.
  if (!comm.is_root()) std::freopen("/dev/null", "w", stdout);
  if (a.resume) {
    std::vector<std::string> ignored;
    for (const CLI::Option* opt : a.cmd->get_options())
      if (opt->count() > 0 && !kResumeOptions.count(opt->get_name()))
        ignored.push_back(opt->get_name());
    if (!ignored.empty()) {
      std::string list;
      for (const std::string& n : ignored) list += (list.empty() ? "" : ", ") + n;
      throw std::invalid_argument(
          "--resume continues a run with the options stored in its checkpoint; " + list +
          " cannot change (only --steps can extend the run)");
    }
  }
  // Checked before --out is made: a refused run leaves no empty directory behind.
  if (!a.resume) a.options.validate();
  const std::filesystem::path out_dir(a.out);
  if (std::filesystem::exists(out_dir) && !std::filesystem::is_directory(out_dir))
    throw std::invalid_argument("--out " + a.out + " exists and is not a directory");
  if (comm.is_root()) {  // the one writer: the other ranks only read the checkpoint to resume
    std::filesystem::create_directories(out_dir);
    lock_output_dir(out_dir);
    // A run killed while saving leaves its temporary checkpoint (or plot) behind; ours are gone
    // only with our process, so those of processes that no longer exist are stale.
    for (const std::filesystem::path& stale : gpt::remove_stale_temp_files(out_dir))
      std::cout << "cleanup removed " << stale.string() << ", left by an interrupted run\n";
    if (!a.resume && !a.overwrite) refuse_occupied_dir(out_dir);
  }
  const std::filesystem::path ckpt = out_dir / gpt::kCheckpointFile;
  if (!a.resume && !a.overwrite && std::filesystem::exists(ckpt))
    throw std::invalid_argument(ckpt.string() +
                                " already exists: pass --resume to continue that run, "
                                "--overwrite to start over, or choose another --out");

  std::unique_ptr<gpt::LanguageModel> model;
  std::unique_ptr<gpt::Tokenizer> tokenizer;
  std::optional<gpt::TrainingState> state;
  std::optional<int64_t> resumed_step;  // the checkpoint on disk when a diverged run stops
  gpt::TrainOptions options = a.options;
  std::string corpus_spec = a.corpus;  // with --resume and no --corpus: the checkpoint's
  bool recorded_corpus = false;
  gpt::CorpusOptions corpus_options;
  corpus_options.cache_dir = a.cache_dir;
  corpus_options.keep_cr = a.keep_cr;
  corpus_options.log = [](const std::string& line) { std::cout << line << "\n" << std::flush; };
  // The checkpoint is read before the corpus: a resumed run takes its corpus from it.
  if (a.resume) {
    gpt::ResumedRun run = gpt::resume_run(a.out);
    if (a.tokenizer_option->count() > 0 && a.tokenizer != run.session.tokenizer->kind())
      throw std::invalid_argument(
          "--tokenizer " + a.tokenizer + " does not match " + ckpt.string() + ", trained with '" +
          run.session.tokenizer->kind() + "'; drop --tokenizer when resuming");
    options = run.options;
    if (a.corpus_option->count() == 0) {
      if (options.corpus.empty())
        throw std::invalid_argument(ckpt.string() +
                                    " does not record the corpus it was trained on (an older "
                                    "checkpoint); pass the same --corpus to resume it");
      corpus_spec = options.corpus;
      recorded_corpus = true;
      if (a.keep_cr_option->count() == 0) corpus_options.keep_cr = options.keep_cr;
    }
    if (a.steps_option->count() > 0 && a.options.max_steps != options.max_steps) {
      // Extending a run keeps its schedule: the cosine still ends where it did (then min_lr),
      // rather than stretching to the new length and jumping back up.
      if (options.lr_decay_steps == 0) options.lr_decay_steps = options.max_steps;
      options.max_steps = a.options.max_steps;
    }
    // Any number of ranks resumes the run, as long as they can share its global batch.
    options = options.on_ranks(comm.size());
    model = std::move(run.session.model);
    tokenizer = std::move(run.session.tokenizer);
    state = std::move(run.state);
    resumed_step = state->step;
  }
  const gpt::Corpus corpus = [&] {
    if (!recorded_corpus) return gpt::load_corpus(corpus_spec, corpus_options);
    try {
      return gpt::load_corpus(corpus_spec, corpus_options);
    } catch (
        const std::runtime_error& e) {  // a corpus file moved since: say where the name came from
      throw std::runtime_error("the corpus recorded in " + ckpt.string() + ": " + e.what() +
                               "; or pass --corpus with the same text");
    }
  }();
  std::cout << "corpus  " << corpus.describe() << "\n";
  if (a.resume) {
    const std::string digest = gpt::sha256_hex(corpus.text);
    if (!options.corpus_sha256.empty() && options.corpus_sha256 != digest) {
      const std::string trained = "(sha256 " + options.corpus_sha256.substr(0, 16) + "...)";
      if (recorded_corpus)
        throw std::invalid_argument("the corpus '" + corpus_spec + "' recorded in " +
                                    ckpt.string() +
                                    " has changed since the run was trained on it " + trained +
                                    "; restore it, or pass --corpus with the text it had");
      throw std::invalid_argument(
          "this run was trained on corpus '" + options.corpus + "' " + trained + ", not on '" +
          corpus_spec + "'; pass the same --corpus to resume it, or none to use the recorded one" +
          (corpus.line_ends_normalized > 0 ? std::string(" (a run trained before CRLF line ends "
                                                         "were made LF needs --keep-cr)")
                                           : std::string()));
    }
    gpt::require_memory(model->num_parameters(), model->dtype(), 4,
                        "weights, gradients and AdamW's two moments", "train --resume");
    std::cout << "resume  step " << state->step << " of " << ckpt.string() << "\n";
  } else {
    if (a.tokenizer == "gpt2")
      tokenizer = std::make_unique<gpt::BpeTokenizer>(gpt::BpeTokenizer::gpt2());
    else
      tokenizer = std::make_unique<gpt::CharTokenizer>(gpt::CharTokenizer::from_text(corpus.text));
    const gpt::ModelKind kind = gpt::parse_model_kind(a.model);
    refuse_unused_config_options(a.config, kind);
    const gpt::GPTConfig config = build_config(a.config, tokenizer->vocab_size(), kind);
    config.validate();
    gpt::require_memory(gpt::num_parameters(kind, config), DType::f32, 4,
                        "weights, gradients and AdamW's two moments", "train");
    model = gpt::make_model(kind, config, a.init_seed);
    options.ranks = comm.size();  // as the Trainer records it; the header's global batch
    options.corpus = gpt::recorded_corpus_spec(a.corpus);
    options.keep_cr = a.keep_cr;
    options.corpus_sha256 = gpt::sha256_hex(corpus.text);
  }
  const gpt::GPTConfig& c = model->config();
  // GPT-2's BPE treats "<|endoftext|>" in the corpus as plain text (encode's default): a
  // corpus file cannot inject document boundaries nobody asked for.
  const auto encode_start = std::chrono::steady_clock::now();
  std::vector<int64_t> ids = tokenizer->encode(corpus.text);
  const double encode_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - encode_start).count();
  std::printf(
      "tokens  %s tokenizer (vocab %lld): %zu tokens, %.2f bytes per token, encoded in %.2f s\n",
      tokenizer->kind().c_str(), static_cast<long long>(tokenizer->vocab_size()), ids.size(),
      static_cast<double>(corpus.text.size()) /
          static_cast<double>(std::max<size_t>(ids.size(), 1)),
      encode_seconds);
  const gpt::Dataset data(std::move(ids), c.block_size);
  // Check now, not at the first evaluation after all the training: both splits need a window.
  const int64_t T = options.block_size > 0 ? options.block_size : c.block_size;
  for (gpt::Split split : {gpt::Split::train, gpt::Split::val})
    if (data.num_windows(split, T) < 1)
      throw std::invalid_argument(
          "the corpus is too short: its " + std::string(gpt::split_name(split)) + " split has " +
          std::to_string(data.size(split)) + " tokens, but a window of block_size " +
          std::to_string(T) + " needs " + std::to_string(T + 1) +
          " (the val split is the last 10%); use a longer corpus or a smaller --block-size");
  if (options.warmup_steps >= options.max_steps)
    std::printf(
        "note    --warmup %lld >= --steps %lld: the learning rate never reaches its peak %g\n",
        static_cast<long long>(options.warmup_steps), static_cast<long long>(options.max_steps),
        options.learning_rate);
  const long long n_params = model->num_parameters();
  switch (model->kind()) {
    case gpt::ModelKind::gpt:
      std::printf(
          "model   gpt: n_layer %lld, n_head %lld, n_embd %lld, block_size %lld, vocab_size %lld, "
          "%s positions: %lld parameters\n",
          static_cast<long long>(c.n_layer), static_cast<long long>(c.n_head),
          static_cast<long long>(c.n_embd), static_cast<long long>(c.block_size),
          static_cast<long long>(c.vocab_size), gpt::pos_encoding_name(c.pos_encoding), n_params);
      break;
    case gpt::ModelKind::bigram:
      std::printf(
          "model   bigram: a %lld x %lld table of logits, block_size %lld: %lld parameters\n",
          static_cast<long long>(c.vocab_size), static_cast<long long>(c.vocab_size),
          static_cast<long long>(c.block_size), n_params);
      break;
    case gpt::ModelKind::average:
      std::printf(
          "model   average (causal mean of the context, no attention): n_embd %lld, block_size "
          "%lld, "
          "vocab_size %lld, %s positions: %lld parameters\n",
          static_cast<long long>(c.n_embd), static_cast<long long>(c.block_size),
          static_cast<long long>(c.vocab_size), gpt::pos_encoding_name(c.pos_encoding), n_params);
      break;
  }
  const double unigram = gpt::unigram_entropy(data.tokens(gpt::Split::val));
  const double bigram = gpt::bigram_cross_entropy(data.tokens(gpt::Split::train),
                                                  data.tokens(gpt::Split::val), c.vocab_size);
  std::printf(
      "data    %lld train / %lld val tokens; baselines on val: uniform %.4f, unigram %.4f, add-one "
      "bigram %.4f nats\n",
      static_cast<long long>(data.size(gpt::Split::train)),
      static_cast<long long>(data.size(gpt::Split::val)),
      std::log(static_cast<double>(c.vocab_size)), unigram, bigram);
  const int threads = kernels::num_threads();
  std::printf("train   %lld steps, batch %lld x %lld tokens, lr %g -> %g, %d thread%s",
              static_cast<long long>(options.max_steps), static_cast<long long>(options.batch_size),
              static_cast<long long>(options.block_size > 0 ? options.block_size : c.block_size),
              options.learning_rate, options.min_lr, threads, threads == 1 ? "" : "s");
  if (comm.size() > 1)
    std::printf(" per rank; %d ranks: global batch %d x %lld x %lld = %lld sequences per step",
                comm.size(), comm.size(), static_cast<long long>(options.batch_size),
                static_cast<long long>(options.grad_accum),
                static_cast<long long>(options.global_batch()));
  std::printf("\n\n");
  std::cout << std::flush;

  gpt::Trainer trainer(*model, data, options, tokenizer->kind(), tokenizer->serialize(), a.out,
                       comm);
  if (state) {
    trainer.restore(*state);
    state.reset();  // the optimizer holds its own copy of the moments now: free these (two model
                    // sizes)
  }
  // Every rank has set up (or thrown, and joined this same collective from its catch).
  if (comm.agree_on_setup(false) > 0) throw SetupFailedElsewhere();
  set_up = true;
  gpt::EvalResult r;
  try {
    r = trainer.run(std::cout);
  } catch (const gpt::CollectiveError& e) {
    // Every rank meets it at the same step (the loss, the gradients, the evaluation and the
    // replica checks are reduced before they are judged): rank 0 speaks for all, and the others
    // wait at a barrier until it has, since mpirun ends the job as soon as one rank exits
    // non-zero.
    if (comm.is_root()) {
      std::string message = "attograd: error: " + std::string(e.what()) + "\n";
      // Only a checkpoint of this run is worth naming: save() writes none with a non-finite
      // parameter, and run() none after a non-finite evaluation.
      if (const std::optional<int64_t> good =
              trainer.last_saved_step() ? trainer.last_saved_step() : resumed_step)
        message += "the last checkpoint, step " + std::to_string(*good) +
                   (dynamic_cast<const gpt::NonFiniteLoss*>(&e) ? " (all parameters finite)" : "") +
                   ", is untouched: " + ckpt.string() + "\n";
      else
        message +=
            "no checkpoint of this run was written" +
            (std::filesystem::exists(ckpt) ? " (" + ckpt.string() + " is from an earlier run)"
                                           : std::string()) +
            "\n";
      std::cerr << message << std::flush;
    }
    comm.barrier();
    return e.exit_code();
  }

  std::printf("\nfinal   train loss %.4f (perplexity %.2f) | val loss %.4f (perplexity %.2f)\n",
              r.train_loss, r.train_ppl, r.val_loss, r.val_ppl);
  for (const auto& [name, baseline] :
       {std::pair{"unigram baseline", unigram}, std::pair{"add-one bigram", bigram}}) {
    // Level within the printed precision (a one-character corpus: both are 0) is neither.
    const double gap = r.val_loss - baseline;
    if (std::abs(gap) < 5e-5)
      std::printf("        %s %.4f (perplexity %.2f): the model is level with it\n", name, baseline,
                  std::exp(baseline));
    else
      std::printf("        %s %.4f (perplexity %.2f): the model is %s it by %.4f nats\n", name,
                  baseline, std::exp(baseline), gap < 0 ? "below" : "ABOVE", std::abs(gap));
  }
  std::printf("saved   %s\n", ckpt.string().c_str());
  return 0;
}

}  // namespace

void add_train_command(CLI::App& app, int& exit_code) {
  auto a = std::make_shared<TrainArgs>();
  CLI::App* cmd =
      app.add_subcommand("train",
                         "train a GPT (or a bigram or average baseline) on a corpus (char or "
                         "GPT-2 BPE tokenizer)");
  a->cmd = cmd;
  // A repeated option takes its last value, so a script's defaults can be overridden by
  // arguments appended after them (examples/train_pico.sh "$@").
  cmd->option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  add_config_options(cmd, a->config, false);
  cmd->add_option("--model", a->model,
                  "gpt (default), bigram (a V x V table of logits: logits = W[token]) or average "
                  "(the causal mean of the context's token + position embeddings, then ln_f and "
                  "the tied head, no attention); the config options give their sizes")
      ->check(CLI::IsMember({"gpt", "bigram", "average"}))
      ->capture_default_str();
  a->corpus_option =
      cmd->add_option("--corpus", a->corpus,
                      "kjv (default, offline: Debian's bible-kjv), shakespeare (downloaded "
                      "once), or a UTF-8 text file")
          ->capture_default_str();
  a->tokenizer_option = cmd->add_option("--tokenizer", a->tokenizer,
                                        "char (one token per character of the corpus) or "
                                        "gpt2 (GPT-2's 50,257-token BPE; vocab_size becomes 50257)")
                            ->check(CLI::IsMember({"char", "gpt2"}))
                            ->capture_default_str();
  cmd->add_option("--cache-dir", a->cache_dir,
                  "where fetched corpora are kept (default ~/.cache/attograd)")
      ->check(kOutputPath);
  a->keep_cr_option = add_keep_cr_flag(cmd, a->keep_cr);
  cmd->add_option("--out", a->out, "output directory: logs, plots, ckpt.safetensors")
      ->check(kOutputPath)
      ->capture_default_str();
  gpt::TrainOptions& o = a->options;
  namespace limits = gpt::limits;
  a->steps_option = cmd->add_option("--steps", o.max_steps, "optimizer steps")
                        ->check(integer_in(limits::steps))
                        ->capture_default_str();
  cmd->add_option("--batch-size", o.batch_size,
                  "sequences per micro-batch (B), per rank under mpirun")
      ->check(integer_in(limits::batch_size))
      ->capture_default_str();
  cmd->add_option("--grad-accum", o.grad_accum, "micro-batches per step")
      ->check(integer_in(limits::grad_accum))
      ->capture_default_str();
  cmd->add_option("--lr", o.learning_rate, "peak learning rate")
      ->check(kPositive)
      ->capture_default_str();
  cmd->add_option("--min-lr", o.min_lr, "final learning rate of the cosine decay")
      ->check(kNonNegative)
      ->capture_default_str();
  cmd->add_option("--warmup", o.warmup_steps, "linear warmup steps")
      ->check(integer_in(limits::count))
      ->capture_default_str();
  cmd->add_option("--decay-steps", o.lr_decay_steps, "cosine decay length (0 = --steps)")
      ->check(integer_in(limits::count))
      ->capture_default_str();
  cmd->add_option("--weight-decay", o.weight_decay, "AdamW decay of 2-D weights")
      ->check(kNonNegative)
      ->capture_default_str();
  cmd->add_option("--grad-clip", o.grad_clip, "max global gradient norm (0 = off)")
      ->check(kNonNegative)
      ->capture_default_str();
  cmd->add_option("--seed", o.seed, "seed of the batch sampler")
      ->check(kSeed)
      ->capture_default_str();
  cmd->add_option("--init-seed", a->init_seed, "seed of the weight initialisation")
      ->check(kSeed)
      ->capture_default_str();
  cmd->add_option("--eval-interval", o.eval_interval, "evaluate every N steps")
      ->check(integer_in(limits::count))
      ->capture_default_str();
  cmd->add_option("--eval-iters", o.eval_iters, "batches per split per evaluation")
      ->check(integer_in(limits::positive_count))
      ->capture_default_str();
  cmd->add_option("--checkpoint-interval", o.checkpoint_interval,
                  "also checkpoint every N steps (0 = at evaluations and the end)")
      ->check(integer_in(limits::count))
      ->capture_default_str();
  cmd->add_option("--log-interval", o.log_interval, "progress line every N steps")
      ->check(integer_in(limits::positive_count))
      ->capture_default_str();
  cmd->add_option("--threads", a->threads,
                  "threads of the engine's pool (0 = every CPU this process may run on, shared "
                  "among the ranks on one machine)")
      ->check(integer_in({0, gpt::max_threads()}, "at most 4 x this machine's cores"))
      ->capture_default_str();
  cmd->add_flag("--resume", a->resume,
                "continue the run in --out from its checkpoint, bit-exact, with its stored options "
                "and corpus (--steps may extend it; the learning-rate schedule keeps its end; a "
                "--corpus given must hold the same text)");
  cmd->add_flag("--overwrite", a->overwrite, "start over even if --out already holds a checkpoint");
  cmd->callback([a, &exit_code] {
    const gpt::Communicator& comm = gpt::Communicator::world();
    bool set_up = false;
    if (comm.size() == 1) {
      exit_code = run(*a, comm, set_up);
      return;
    }
    try {
      exit_code = run(*a, comm, set_up);
    } catch (const SetupFailedElsewhere&) {
      comm.barrier();  // until the failed ranks have printed
      exit_code = 2;
    } catch (const std::exception& e) {
      // One write: mpirun interleaves the ranks' output at the granularity of their writes.
      const std::string from_rank = "attograd: error: rank " + std::to_string(comm.rank()) +
                                    " of " + std::to_string(comm.size()) + ": " + e.what() + "\n";
      if (set_up) {
        // An error this rank alone meets while the others train would leave them waiting at
        // the next collective for ever: end them all (rank 0's last checkpoint was written
        // atomically, so it is intact).
        std::cerr << from_rank << std::flush;
        comm.abort(2);
      }
      const auto say_alone = [&] {
        std::cerr << "attograd: error: " + std::string(e.what()) + "\n" << std::flush;
      };
      exit_code = comm.fail_setup(e.what(), say_alone, std::cerr);
    }
  });
}

}  // namespace attograd::cli
