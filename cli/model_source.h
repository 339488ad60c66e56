// The options that name a CLI command's model: an attograd checkpoint (--checkpoint, a file or a
// run directory, with the tokenizer it was trained with) or a Hugging Face GPT-2
// model.safetensors (--hf-gpt2, with GPT-2's BPE; n_head from config.json beside it, the
// standard GPT-2 sizes, or --n-head). gpt::open_model loads what they name.
#pragma once

#include <CLI/CLI.hpp>

#include "gpt/model/open_model.h"

namespace attograd::cli {

/// Adds --checkpoint, --hf-gpt2 and --n-head (which needs --hf-gpt2) to cmd; `hf_note` ends
/// --hf-gpt2's help text. Returns the --hf-gpt2 option.
CLI::Option* add_model_source_options(CLI::App* cmd, gpt::ModelSource& source,
                                      const std::string& hf_note = "with GPT-2's BPE tokenizer");

/// gpt::open_model(source), a --hf-gpt2 file whose config breaks a rule with --n-head (3 for
/// n_embd 8) said in the options' words (cli/config_messages.h): "--n-head 3: n_head must divide
/// the --hf-gpt2 file's n_embd 8 ...".
gpt::Session open_model_source(const gpt::ModelSource& source);

}  // namespace attograd::cli
