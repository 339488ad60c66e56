// How the attograd CLI's subcommands plug into main: each file adds one CLI11 subcommand and
// sets the process exit code from its callback. Shared option groups live here too.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <optional>
#include <string>

#include "examples/cli/option_checks.h"
#include "gpt/model/config.h"
#include "gpt/model/language_model.h"
#include "gpt/model/limits.h"
#include "gpt/train/distributed.h"

namespace attograd::cli {

/// `attograd gradcheck`: finite-difference checks of every op (or one); exit 1 on a failure.
void add_gradcheck_command(CLI::App& app, int& exit_code);
/// `attograd train`: trains a GPT on a corpus, with logs, plots and checkpoints.
void add_train_command(CLI::App& app, int& exit_code);
/// `attograd sample`: generates text from a checkpoint, prompts x temperatures.
void add_sample_command(CLI::App& app, int& exit_code);
/// `attograd eval`: loss and perplexity of a checkpoint on a corpus.
void add_eval_command(CLI::App& app, int& exit_code);
/// `attograd tokenize`: text to token ids (GPT-2 BPE or char), or ids to text with --decode.
void add_tokenize_command(CLI::App& app, int& exit_code);
/// `attograd info`: a config's parameter shapes and counts, and attention's tensor shapes.
void add_info_command(CLI::App& app, int& exit_code);
/// `attograd attention`: a prompt's attention weights per layer and head, as CSV and heatmaps.
void add_attention_command(CLI::App& app, int& exit_code);
/// `attograd graph`: the recorded autograd graph of an expression or a femto step, as DOT/SVG.
void add_graph_command(CLI::App& app, int& exit_code);
/// `attograd figure`: the sinusoidal table, RoPE, the causal mask or the block diagram, as CSV and
/// a drawing.
void add_figure_command(CLI::App& app, int& exit_code);

/// Adds --keep-cr to a command that loads a corpus (gpt::CorpusOptions::keep_cr): a user's
/// file keeps its CRLF and CR line ends instead of having them made LF. Returns the option.
CLI::Option* add_keep_cr_flag(CLI::App* cmd, bool& keep_cr);

/// Throws std::invalid_argument when a launcher (mpirun, srun) started this command as one of
/// several ranks: only `train` is data-parallel, and `command` would run once per rank, all
/// printing and writing the same files.
inline void refuse_several_ranks(const std::string& command) {
  if (const int n = gpt::launched_ranks(); n > 1)
    throw std::invalid_argument("`attograd " + command + "` runs in one process, but " +
                                std::to_string(n) +
                                " ranks were launched (mpirun -np / srun): run it without the "
                                "launcher; only `attograd train` is data-parallel");
}

/// --preset and the per-field overrides of a GPTConfig.
struct ConfigArgs {
  std::string preset = "pico";
  std::optional<int64_t> n_layer, n_head, n_embd, block_size, vocab_size;
  std::optional<double> dropout;
  std::optional<std::string> pos_encoding;
  bool no_bias = false;
};

/// Adds --preset, --n-layer, --n-head, --n-embd, --block-size, --dropout, --pos-encoding,
/// --no-bias (and --vocab-size when with_vocab) to cmd.
void add_config_options(CLI::App* cmd, ConfigArgs& args, bool with_vocab);

/// Throws std::invalid_argument naming the first override the model of `kind` would ignore: a
/// bigram reads only --block-size (and the vocabulary); the average model also --n-embd,
/// --pos-encoding and --no-bias; the GPT reads them all.
void refuse_unused_config_options(const ConfigArgs& args, gpt::ModelKind kind);

/// The preset with the overrides applied; vocab_size from the tokenizer unless overridden. For
/// the bigram and average models, which have no heads, n_head is 1 (so any --n-embd is valid).
/// Throws std::invalid_argument for an inconsistent result (GPTConfig::validate).
gpt::GPTConfig build_config(const ConfigArgs& args, std::optional<int64_t> tokenizer_vocab,
                            gpt::ModelKind kind = gpt::ModelKind::gpt);

}  // namespace attograd::cli
