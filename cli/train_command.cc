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
#include "gpt/train/interrupt.h"
#include "gpt/train/run.h"

namespace attograd::cli {

namespace {

// The run the command line asks for, checked as far as it can be here. A resumed run may be
// given the options of RunRequest's rows marked kResumable (where to find the run, its corpus,
// its threads) and TrainOptions' rows, which the library compares with the checkpoint's
// (gpt/train/run.h). Every other option, a new one too, is refused with --resume: the run keeps
// what its checkpoint stored rather than silently ignoring what was asked.
gpt::RunRequest request_of(gpt::RunRequest rq, const CLI::App& cmd) {
  rq.options_given = given_fields<gpt::TrainOptions>(cmd);
  if (rq.init_from && !rq.resume) {
    // The file decides the model: these would be ignored (the library refuses the config
    // options that would change its architecture, naming them).
    std::vector<std::string> refused;
    for (const char* name : {"--preset", "--model", "--init-seed"})
      if (cmd.get_option(name)->count() > 0) refused.push_back(name);
    if (!refused.empty())
      throw std::invalid_argument("--init-from takes the model from " + *rq.init_from + "; " +
                                  gpt::join_names(refused, "and") + " cannot be given with it");
  }
  if (!rq.resume) return rq;
  std::set<std::string> allowed = resumable_flags<gpt::RunRequest>();
  allowed.insert("--overwrite");  // refused by the library, with a message of its own
  std::vector<std::string> refused;
  for (const CLI::Option* opt : cmd.get_options()) {
    const std::string& name = opt->get_name();
    if (opt->count() > 0 && !allowed.count(name) && !field_flags<gpt::TrainOptions>().count(name))
      refused.push_back(name);
  }
  if (!refused.empty())
    throw std::invalid_argument(
        "--resume continues a run with the model stored in its checkpoint; " +
        gpt::join_names(refused, "and") + " cannot be given with it");
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
  auto rq = std::make_shared<gpt::RunRequest>();
  CLI::App* cmd =
      app.add_subcommand("train",
                         "train a GPT (or a bigram or average baseline) on a corpus (char or "
                         "GPT-2 BPE tokenizer)");
  // A repeated option takes its last value, so a script's defaults can be overridden by
  // arguments appended after them (examples/train_pico.sh "$@").
  cmd->option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  add_config_options(cmd, rq->config, false);
  // Every row with a flag of the request's table (--model, --corpus, --out, --threads,
  // --resume, ...) and of TrainOptions' (--steps, --lr, ...), with its range and default.
  add_field_options(cmd, *rq);
  add_field_options(cmd, rq->options);
  cmd->callback([rq, cmd, &exit_code] {
    const gpt::Communicator& comm = gpt::Communicator::world();
    try {
      const std::unique_ptr<gpt::TrainingRun> run = gpt::set_up_together(
          comm, std::cerr, [&] { return gpt::start(request_of(*rq, *cmd), comm, std::cout); });
      // Ctrl-C or SIGTERM while training: finish the step, checkpoint, exit 130 or 143.
      const gpt::StopOnSignals stop;
      exit_code = run->train(std::cout, std::cerr, &gpt::StopOnSignals::signal());
      if (exit_code == 0 && comm.is_root()) print_result(*run);
    } catch (const gpt::SetupFailed& e) {  // said by the rank that failed
      exit_code = e.exit_code();
    }
  });
}

}  // namespace attograd::cli
