// The first stage of a training run: from a text in memory to what a Trainer trains, a model with
// its tokenizer, the text as a dataset of token ids, and the baselines the model must beat. One
// call for every front end: start() (the CLI's `attograd train`, any program's run) and the
// companion page's model_new set up through it, so whatever one does the other does alike.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "gpt/model/config.h"
#include "gpt/model/language_model.h"
#include "gpt/text/dataset.h"
#include "gpt/text/tokenizer.h"
#include "gpt/train/report.h"

namespace attograd::gpt {

/// A new model, as `attograd train` builds one: its kind, its preset and overrides (vocab_size is
/// the tokenizer's), the tokenizer built from the text, and the seed of its weights.
struct ModelRecipe {
  ModelKind kind = ModelKind::gpt;
  ConfigOverrides config;
  std::string tokenizer = "char";  // a tokenizer_kinds() name
  uint64_t init_seed = 1337;
};

/// What a Trainer trains on: the model and its tokenizer, the text's token ids as a Dataset
/// (train and val split), and the baselines counted on it.
struct Prepared {
  std::unique_ptr<LanguageModel> model;
  std::unique_ptr<Tokenizer> tokenizer;
  std::unique_ptr<Dataset> data;
  Baselines baselines;
};

/// A new model for `text` (which must be non-empty UTF-8, as load_corpus and the page check):
/// the tokenizer from the text, the config from the recipe (refused: a setting its kind never
/// reads, refuse_unused_overrides), refused when weights, gradients and AdamW's moments would
/// not fit in memory; then as prepare() below. Says the "tokens" line on `report`. Throws
/// std::invalid_argument naming the setting or the split that is too short, with the fix.
Prepared prepare_new(const std::string& text, const ModelRecipe& recipe, int64_t block_size,
                     SetUpReport& report);

/// The data for a model that exists (resumed, or fine-tuned from a file's weights): `text`
/// encoded by `tokenizer` ("<|endoftext|>" in a corpus is plain text: a corpus file cannot
/// inject document boundaries nobody asked for), said on `report` ("tokens"), split 90/10 into
/// a Dataset of the model's block_size, both splits checked to hold a window of T tokens (T:
/// sequence_length(block_size, the model's config), block_size being TrainOptions'), and the
/// baselines counted. Throws std::invalid_argument when a split is too short: "the corpus is too
/// short: its val split has 4 tokens, but a window of block_size 8 needs 9 (...); use a longer
/// corpus or a smaller block_size" (the setting's name, not a flag: the page has no flags).
Prepared prepare(const std::string& text, std::unique_ptr<LanguageModel> model,
                 std::unique_ptr<Tokenizer> tokenizer, int64_t block_size, SetUpReport& report);

}  // namespace attograd::gpt
