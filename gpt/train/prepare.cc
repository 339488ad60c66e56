#include "gpt/train/prepare.h"

#include <chrono>
#include <stdexcept>
#include <utility>
#include <vector>

#include "gpt/model/bigram_average.h"

namespace attograd::gpt {

Prepared prepare_new(const std::string& text, const ModelRecipe& recipe, int64_t block_size,
                     SetUpReport& report) {
  std::unique_ptr<Tokenizer> tokenizer = make_tokenizer(recipe.tokenizer, text);
  refuse_unused_overrides(recipe.config, recipe.kind);
  const GPTConfig config = build_config(recipe.config, tokenizer->vocab_size(), recipe.kind);
  require_memory(num_parameters(recipe.kind, config), DType::f32, kTrainingCopies,
                 "weights, gradients and AdamW's two moments", "train");
  return prepare(text, make_model(recipe.kind, config, recipe.init_seed), std::move(tokenizer),
                 block_size, report);
}

Prepared prepare(const std::string& text, std::unique_ptr<LanguageModel> model,
                 std::unique_ptr<Tokenizer> tokenizer, int64_t block_size, SetUpReport& report) {
  const auto encode_start = std::chrono::steady_clock::now();
  std::vector<int64_t> ids = tokenizer->encode(text);
  const double encode_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - encode_start).count();
  report.tokens(*tokenizer, ids.size(), text.size(), encode_seconds);
  const GPTConfig& c = model->config();
  auto data = std::make_unique<Dataset>(std::move(ids), c.block_size);
  // Checked now, not at the first evaluation after all the training: both splits need a window.
  const int64_t T = sequence_length(block_size, c);
  for (Split split : {Split::train, Split::val})
    if (data->num_windows(split, T) < 1)
      throw std::invalid_argument(
          "the corpus is too short: its " + std::string(split_name(split)) + " split has " +
          std::to_string(data->size(split)) + " tokens, but a window of block_size " +
          std::to_string(T) + " needs " + std::to_string(T + 1) +
          " (the val split is the last 10%); use a longer corpus or a smaller block_size");
  const Baselines baselines = Baselines::of(*data, c.vocab_size);
  return {std::move(model), std::move(tokenizer), std::move(data), baselines};
}

}  // namespace attograd::gpt
