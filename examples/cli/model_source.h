// Where a CLI command gets its model: an attograd checkpoint (--checkpoint, with the tokenizer
// it was trained with) or a Hugging Face GPT-2 model.safetensors (--hf-gpt2, with GPT-2's BPE;
// n_head from config.json beside it, the standard GPT-2 sizes, or --n-head).
#pragma once

#include <CLI/CLI.hpp>
#include <memory>
#include <string>

#include "gpt/model.h"
#include "gpt/tokenizer.h"

namespace attograd::cli {

/// The options that name a model.
struct ModelSource {
  std::string checkpoint;
  std::string hf_gpt2;
  int64_t n_head = 0;  // 0: from config.json or the standard sizes
};

/// Adds --checkpoint, --hf-gpt2 and --n-head (which needs --hf-gpt2) to cmd.
void add_model_source_options(CLI::App* cmd, ModelSource& source);

/// A model with the tokenizer that goes with it.
struct LoadedModel {
  std::unique_ptr<gpt::GPT> model;
  std::unique_ptr<gpt::Tokenizer> tokenizer;
  std::string path;  // the file it came from, for messages
};

/// Loads the model (f32) and its tokenizer. Throws std::invalid_argument unless exactly one of
/// checkpoint and hf_gpt2 is given, or when the tokenizer has more tokens than the model's
/// vocab_size (GPT-2 may pad its table to more rows, never fewer); std::runtime_error as
/// gpt::load_model and gpt::load_hf_gpt2 for a file that is not a model.
LoadedModel load_model_source(const ModelSource& source);

}  // namespace attograd::cli
