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
#include "cli/config_messages.h"
#include "gpt/model/language_model.h"
#include "gpt/train/interrupt.h"
#include "gpt/train/run.h"
#include "gpt/train/run_config.h"
#include "gpt/train/run_dir.h"
#include "options/field_options.h"

namespace attograd::cli {

namespace {

// The end of a run that trained to its last step: the final losses against the baselines.
void print_result(gpt::TrainingRun& run) {
  const gpt::EvalResult& r = run.result();
  std::printf("\nfinal   train loss %.4f (perplexity %.2f) | val loss %.4f (perplexity %.2f)\n",
              r.train_loss, r.train_ppl, r.val_loss, r.val_ppl);
  const gpt::Baselines& b = run.baselines();
  for (const auto& [name, baseline] :
       {std::pair{"unigram baseline", b.unigram}, std::pair{"add-one bigram", b.bigram}}) {
    // An add-one bigram above the unigram is no target: its V x V table (2.5 billion cells with
    // GPT-2's BPE) is so sparse against the corpus that the one count added to every cell
    // outweighs the counts seen.
    if (baseline == b.bigram && b.bigram > b.unigram) {
      std::printf(
          "        %s %.4f: above the unigram, so no target (add-one smoothing spreads its mass "
          "over a %lld x %lld table this corpus barely fills)\n",
          name, baseline, static_cast<long long>(run.model().config().vocab_size),
          static_cast<long long>(run.model().config().vocab_size));
      continue;
    }
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

// Where the model's values came from, for a config that breaks one of GPTConfig's rules: the
// options and the config file's keys the user gave, the preset; vocab_size is the tokenizer's, a
// bigram's or average model's one head its own, and with --init-from the file decides the rest.
ConfigOrigins origins_of(const gpt::RunConfig& config) {
  const gpt::RunRequest& rq = config.request;
  ConfigOrigins origins(rq.config);
  const auto file_keys = [&] {
    for (const auto& [row, file] : config.from_file)
      if (row.rfind("model.", 0) == 0 && row != "model.preset")
        origins.in_file(row.substr(6), file);
  };
  if (rq.init_from) {
    file_keys();
    return origins.others_fixed("the --init-from file's");
  }
  origins.fixed("vocab_size", "the tokenizer's");
  // A bigram or average model's fields that its options cannot set (--n-layer does not apply to
  // it) are its own: never suggested as a fix.
  if (rq.model != gpt::ModelKind::gpt)
    gpt::GPTConfig::for_each_field([&](const auto& f) {
      if (!gpt::reads_field(rq.model, f.name) || std::string(f.name) == "n_head")
        origins.fixed(f.name, "the " + std::string(gpt::model_kind_name(rq.model)) + " model's");
    });
  // Last, so that a key the file gives is named as the file's even where the model kind does not
  // read it (the refusal of that key says so).
  file_keys();
  // A size the fix suggests must also leave training room in this machine's memory (prepare_new's
  // check, with room to spare for the activations), or following the message would meet that
  // refusal, or the kernel's, next: the parameter limit's nearest sizes (20 billion parameters,
  // 320 GB to train) fit no machine this runs on.
  const gpt::ModelKind kind = rq.model;
  return origins.accepting([kind](const gpt::GPTConfig& c) {
    return gpt::fits_in_memory(gpt::num_parameters(kind, c), DType::f32,
                               gpt::kSuggestedTrainingCopies);
  });
}

}  // namespace

void add_train_command(CLI::App& app, int& exit_code) {
  auto rq = std::make_shared<gpt::RunRequest>();
  auto config_file = std::make_shared<std::string>();
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
  cmd->add_option(
      "--config", *config_file,
      "a JSON file of settings: sections \"run\", \"model\" and \"train\" keyed by the "
      "options' names (max_steps for --steps); a flag given overrides the file's value. "
      "Every run writes its effective config to <out>/" +
          std::string(gpt::RunDir::kConfig) + ", which --config repeats");
  cmd->callback([rq, cmd, config_file, &exit_code] {
    const gpt::Communicator& comm = gpt::Communicator::world();
    // What the command line gave, over the config file's values.
    const auto run_config = [&] {
      gpt::RunConfig flags{*rq, given_fields<gpt::RunRequest>(*cmd),
                           given_fields<gpt::TrainOptions>(*cmd), cmd->count("--preset") > 0,
                           /*from_file=*/{}};
      if (config_file->empty()) return flags;
      return gpt::overlay(gpt::read_run_config(*config_file), flags);
    };
    const auto set_up = [&] {
      const gpt::RunConfig config = run_config();
      return naming_options(origins_of(config),
                            [&] { return gpt::start(config.checked_request(), comm, std::cout); });
    };
    try {
      const std::unique_ptr<gpt::TrainingRun> run = gpt::set_up_together(comm, std::cerr, set_up);
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
