// `attograd train`: a GPT (or the lecture's bigram or average model) on a corpus, end to end, with
// the homework's outputs: progress, loss and perplexity against the unigram baseline, CSV logs,
// plots and checkpoints. The run itself is the library's (gpt/train/run.h): this file turns the
// command line into a RunRequest and prints the result.
#include <cmath>
#include <cstdio>
#include <iostream>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "cli/command.h"
#include "cli/field_options.h"
#include "gpt/text/tokenizer.h"
#include "gpt/train/run.h"

namespace attograd::cli {

namespace {

struct TrainArgs {
  gpt::RunRequest request;  // what the options below set directly
  std::string corpus = "kjv";
  std::string tokenizer = "char";
  std::string model = "gpt";
  bool keep_cr = false;
  CLI::Option* tokenizer_option = nullptr;
  CLI::Option* steps_option = nullptr;
  CLI::Option* corpus_option = nullptr;
  CLI::Option* keep_cr_option = nullptr;
  CLI::App* cmd = nullptr;
};

// The options a resumed run may be given: those of the run itself that this file adds (where to
// find the run, its corpus, its threads) and the rows of TrainOptions' table marked kResumable
// (--steps). Every other option, a new one too, is refused with --resume: the run keeps what its
// checkpoint stored rather than silently ignoring what was asked.
std::set<std::string> resume_options() {
  std::set<std::string> allowed = {"--resume", "--corpus",  "--cache-dir", "--keep-cr",
                                   "--out",    "--threads", "--tokenizer", "--help"};
  allowed.merge(resumable_flags<gpt::TrainOptions>());
  return allowed;
}

// The run the command line asks for. The options a resumed run takes from its checkpoint are
// present in the request only when given (and only those of resume_options() may be).
gpt::RunRequest request_of(const TrainArgs& a) {
  gpt::RunRequest rq = a.request;
  if (rq.resume) {
    const std::set<std::string> allowed = resume_options();
    std::vector<std::string> ignored;
    for (const CLI::Option* opt : a.cmd->get_options())
      if (opt->count() > 0 && !allowed.count(opt->get_name())) ignored.push_back(opt->get_name());
    if (!ignored.empty()) {
      std::string list;
      for (const std::string& n : ignored) list += (list.empty() ? "" : ", ") + n;
      throw std::invalid_argument(
          "--resume continues a run with the options stored in its checkpoint; " + list +
          " cannot change (only --steps can extend the run)");
    }
    if (a.steps_option->count() > 0) rq.max_steps = rq.options.max_steps;
  }
  if (a.corpus_option->count() > 0) rq.corpus = a.corpus;
  if (a.tokenizer_option->count() > 0) rq.tokenizer = a.tokenizer;
  if (a.keep_cr_option->count() > 0) rq.keep_cr = a.keep_cr;
  rq.model = gpt::parse_model_kind(a.model);
  return rq;
}

// The end of a run that trained to its last step: the final losses against the baselines.
void print_result(const gpt::TrainingRun& run) {
  const gpt::EvalResult& r = run.result();
  std::printf("\nfinal   train loss %.4f (perplexity %.2f) | val loss %.4f (perplexity %.2f)\n",
              r.train_loss, r.train_ppl, r.val_loss, r.val_ppl);
  for (const auto& [name, baseline] : {std::pair{"unigram baseline", run.unigram_baseline()},
                                       std::pair{"add-one bigram", run.bigram_baseline()}}) {
    // Level within the printed precision (a one-character corpus: both are 0) is neither.
    const double gap = r.val_loss - baseline;
    if (std::abs(gap) < 5e-5)
      std::printf("        %s %.4f (perplexity %.2f): the model is level with it\n", name, baseline,
                  std::exp(baseline));
    else
      std::printf("        %s %.4f (perplexity %.2f): the model is %s it by %.4f nats\n", name,
                  baseline, std::exp(baseline), gap < 0 ? "below" : "ABOVE", std::abs(gap));
  }
  std::printf("saved   %s\n", run.checkpoint_path().c_str());
}

}  // namespace

void add_train_command(CLI::App& app, int& exit_code) {
  auto a = std::make_shared<TrainArgs>();
  gpt::RunRequest& rq = a->request;
  CLI::App* cmd =
      app.add_subcommand("train",
                         "train a GPT (or a bigram or average baseline) on a corpus (char or "
                         "GPT-2 BPE tokenizer)");
  a->cmd = cmd;
  // A repeated option takes its last value, so a script's defaults can be overridden by
  // arguments appended after them (examples/train_pico.sh "$@").
  cmd->option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  add_config_options(cmd, rq.config, false);
  std::vector<std::string> kinds;
  for (const std::string& name : gpt::model_kind_names())
    kinds.push_back(name + " (" + gpt::model_kind_description(gpt::parse_model_kind(name)) + ")");
  cmd->add_option("--model", a->model,
                  gpt::join_names(kinds) + "; the config options give their sizes")
      ->check(CLI::IsMember(gpt::model_kind_names()))
      ->capture_default_str();
  a->corpus_option =
      cmd->add_option("--corpus", a->corpus,
                      "kjv (default, offline: Debian's bible-kjv), shakespeare (downloaded "
                      "once), or a UTF-8 text file")
          ->capture_default_str();
  std::vector<std::string> tokenizers;
  for (const std::string& kind : gpt::tokenizer_kinds())
    tokenizers.push_back(kind + " (" + gpt::tokenizer_description(kind) + ")");
  a->tokenizer_option = cmd->add_option("--tokenizer", a->tokenizer, gpt::join_names(tokenizers))
                            ->check(CLI::IsMember(gpt::tokenizer_kinds()))
                            ->capture_default_str();
  cmd->add_option("--cache-dir", rq.cache_dir,
                  "where fetched corpora are kept (default ~/.cache/attograd)")
      ->check(kOutputPath);
  a->keep_cr_option = add_keep_cr_flag(cmd, a->keep_cr);
  cmd->add_option("--out", rq.out_dir, "output directory: logs, plots, ckpt.safetensors")
      ->check(kOutputPath)
      ->capture_default_str();
  // Every row of TrainOptions' table with a flag (--steps, --lr, ...), its range and default.
  for (CLI::Option* option : add_field_options(cmd, rq.options))
    if (option->get_name() == "--steps") a->steps_option = option;
  cmd->add_option("--init-seed", rq.init_seed, "seed of the weight initialisation")
      ->check(kSeed)
      ->capture_default_str();
  cmd->add_option("--threads", rq.threads,
                  "threads of the engine's pool (0 = every CPU this process may run on, shared "
                  "among the ranks on one machine)")
      ->check(integer_in({0, gpt::max_threads()}, "at most 4 x this machine's cores"))
      ->capture_default_str();
  cmd->add_flag("--resume", rq.resume,
                "continue the run in --out from its checkpoint, bit-exact, with its stored options "
                "and corpus (--steps may extend it; the learning-rate schedule keeps its end; a "
                "--corpus given must hold the same text)");
  cmd->add_flag("--overwrite", rq.overwrite, "start over even if --out already holds a checkpoint");
  cmd->callback([a, &exit_code] {
    const gpt::Communicator& comm = gpt::Communicator::world();
    try {
      const std::unique_ptr<gpt::TrainingRun> run = gpt::set_up_together(
          comm, std::cerr, [&] { return gpt::start(request_of(*a), comm, std::cout); });
      exit_code = run->train(std::cout, std::cerr);
      if (exit_code == 0 && comm.is_root()) print_result(*run);
    } catch (const gpt::SetupFailed& e) {  // said by the rank that failed
      exit_code = e.exit_code();
    }
  });
}

}  // namespace attograd::cli
