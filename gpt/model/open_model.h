// Opening what the attograd commands work on: a trained model with its tokenizer, from an
// attograd checkpoint (a file, or the run directory that holds ckpt.safetensors) or from a
// Hugging Face GPT-2 model.safetensors; and the loss of a token sequence.
// The CLI's commands only parse their options and print: sample, eval, attention and
// train --resume (gpt/train/run.h) all load through here.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "gpt/model/checkpoint.h"
#include "gpt/model/gpt2.h"
#include "gpt/model/hf_import.h"
#include "gpt/model/language_model.h"
#include "gpt/text/tokenizer.h"

namespace attograd::gpt {

/// Where a model comes from: exactly one of checkpoint (an attograd checkpoint file or run
/// directory) and hf_gpt2 (a Hugging Face GPT-2 model.safetensors). n_head applies to hf_gpt2
/// only (0: from config.json beside it, else the standard GPT-2 sizes; see
/// infer_hf_gpt2_config).
struct ModelSource {
  std::string checkpoint;
  std::string hf_gpt2;
  int64_t n_head = 0;

  /// Throws std::invalid_argument unless exactly one of checkpoint and hf_gpt2 is given.
  void validate() const;
};

/// The result of evaluate(): the mean next-token loss of one token sequence.
struct SequenceLoss {
  double mean_nll = 0;      // nats per prediction, over all predictions
  double perplexity = 0;    // exp(mean_nll)
  int64_t predictions = 0;  // tokens.size() - 1
  int64_t windows = 0;      // block_size windows the sequence was cut into
};

/// A loaded model (f32) and the tokenizer that goes with it. A Hugging Face file carries no
/// tokenizer: it gets GPT-2's BPE.
struct Session {
  std::unique_ptr<LanguageModel> model;
  std::unique_ptr<Tokenizer> tokenizer;
  std::string path;  // the file the model came from, for messages

  const GPTConfig& config() const { return model->config(); }
  ModelKind kind() const { return model->kind(); }
  /// The model as a GPT (its attention weights, its KV cache). Throws std::runtime_error naming
  /// the kind the checkpoint holds when it is a bigram or average model.
  GPT& gpt() const;

  /// Throws std::invalid_argument when the tokenizer has more tokens than the model's
  /// vocab_size (GPT-2 may pad its table to more rows, never fewer): its ids would have no
  /// embedding. `hint` is appended to the message.
  void require_tokenizer_fits(const std::string& hint = "") const;
  /// Throws std::invalid_argument unless the tokenizer and the model have the same number of
  /// tokens (sampling: a sampled id beyond the tokenizer's vocabulary cannot be printed).
  void require_tokenizer_matches() const;

  /// The mean loss of predicting tokens[1..n) from tokens[0..n-1), in eval mode without a
  /// graph. A sequence longer than block_size is cut into consecutive, non-overlapping windows
  /// of block_size predictions (window k predicts tokens[kT+1 .. kT+T] from tokens[kT .. kT+T-1];
  /// the last may be shorter), each starting from an empty context; the mean weights each
  /// window by its length. Throws std::invalid_argument for fewer than 2 tokens,
  /// std::out_of_range for an id outside [0, vocab_size) (as forward), and std::runtime_error
  /// naming `path` when the loss is not finite (broken weights).
  ///
  /// The full windows go through the model kEvalTokensPerBatch / block_size at a time (one
  /// forward of (B, T)), the shorter last one alone; `progress`, when given, is called after
  /// each forward with the windows done and their total (the CLI's progress line).
  SequenceLoss evaluate(
      const std::vector<int64_t>& tokens,
      const std::function<void(int64_t windows_done, int64_t windows)>& progress = {}) const;

  /// Tokens per forward of evaluate(): enough rows to fill the kernels, few enough that a
  /// GPT-2 small batch's activations stay in hundreds of MiB (8 windows of 1,024 tokens).
  static constexpr int64_t kEvalTokensPerBatch = 8192;
};

/// The checkpoint file `path` names: itself, or <path>/kCheckpointFile when it is a run
/// directory. Throws std::invalid_argument for a directory without kCheckpointFile.
std::string checkpoint_file(const std::string& path);

/// Opens an attograd checkpoint: `path` is the file or a run directory holding
/// kCheckpointFile. Builds the model kind the checkpoint holds (see load_language_model),
/// without the optimizer moments. Throws std::invalid_argument for a directory without
/// kCheckpointFile, std::runtime_error as SafetensorsFile::read, read_checkpoint_info and
/// load_language_model do.
Session open_checkpoint(const std::string& path);

/// open_checkpoint for a checkpoint file already read (train --resume reads its training state
/// from the same file). Throws as open_checkpoint.
Session open_checkpoint_file(const nn::SafetensorsFile& file);

/// The tokenizer of the checkpoint `path` (a file or run directory, as open_checkpoint), without
/// loading the model. Throws as open_checkpoint.
std::unique_ptr<Tokenizer> open_checkpoint_tokenizer(const std::string& path);

/// Opens a Hugging Face GPT-2 model.safetensors (see load_hf_gpt2) with GPT-2's BPE tokenizer.
Session open_hf_gpt2(const std::string& path, int64_t n_head_override = 0);

/// The weights `attograd train --init-from` starts from, with the tokenizer they read.
struct InitWeights {
  Session session;       // the model (f32) and its tokenizer; session.path is the file read
  bool hf_gpt2 = false;  // a Hugging Face GPT-2 file (GPT-2's BPE), else an attograd checkpoint
  std::optional<int64_t> step;  // the checkpoint's training steps, when it records them
  /// One line for the run's log: what the file is and what it holds.
  std::string describe() const;
};

/// Opens what train --init-from names: an attograd checkpoint (a file whose metadata holds its
/// config, or a run directory holding kCheckpointFile), with its stored config and tokenizer,
/// or a Hugging Face GPT-2 model.safetensors (a file, or a directory holding one), with its
/// config from its tensors and the config.json beside it (n_head_override as load_hf_gpt2) and
/// GPT-2's BPE. Only the weights are read, never the optimizer moments, and only once the
/// header showed that this machine can train the model (require_training_memory). `dropout`,
/// when given, replaces the model's rate. Throws std::invalid_argument for a directory holding
/// neither file, or an n_head_override for an attograd checkpoint (its config fixes n_head);
/// otherwise as require_training_memory, open_checkpoint and open_hf_gpt2.
InitWeights open_init_weights(const std::string& path, int64_t n_head_override = 0,
                              std::optional<double> dropout = std::nullopt);

/// open_checkpoint or open_hf_gpt2, whichever the source names (checked by validate()).
Session open_model(const ModelSource& source);

}  // namespace attograd::gpt
