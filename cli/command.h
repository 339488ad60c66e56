// How the attograd CLI's subcommands plug into main: each file adds one CLI11 subcommand and
// sets the process exit code from its callback. Shared option groups live here too.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <optional>
#include <string>

#include "gpt/model/config.h"
#include "gpt/model/field_ranges.h"
#include "gpt/model/language_model.h"
#include "gpt/train/distributed.h"
#include "options/option_checks.h"

namespace attograd::cli {

/// `attograd gradcheck`: finite-difference checks of every op (or one); exit 1 on a failure.
void add_gradcheck_command(CLI::App& app, int& exit_code);
/// `attograd train`: trains a GPT on a corpus, with logs, plots and checkpoints.
void add_train_command(CLI::App& app, int& exit_code);
/// `attograd sample`: generates text from a checkpoint, prompts x temperatures.
void add_sample_command(CLI::App& app, int& exit_code);
/// `attograd eval`: loss and perplexity of a checkpoint on a corpus.
void add_eval_command(CLI::App& app, int& exit_code);
/// `attograd export`: a checkpoint's GPT as a Hugging Face GPT-2 directory.
void add_export_command(CLI::App& app, int& exit_code);
/// `attograd ngram`: val loss of counted n-gram models on a corpus's splits.
void add_ngram_command(CLI::App& app, int& exit_code);
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

/// Adds --preset, --n-layer, --n-head, --n-embd, --block-size, --dropout, --pos-encoding,
/// --no-bias (and --vocab-size when with_vocab) to cmd, setting `overrides`.
void add_config_options(CLI::App* cmd, gpt::ConfigOverrides& overrides, bool with_vocab);

}  // namespace attograd::cli
