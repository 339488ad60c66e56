// GPT checkpoints: safetensors files in Hugging Face GPT-2's layout, plus attograd metadata.
// The bigram and average models (gpt/model/bigram_average.h) are stored the same way under their
// own parameter names, with their kind in the metadata "model" (absent: a GPT).
//
// Weights use GPT-2's tensor names (wte.weight, h.0.attn.c_attn.weight, ...) and its Conv1D
// layout: c_attn, attn.c_proj, c_fc and mlp.c_proj weights are stored (in, out), the
// transpose of attograd's Linear (out, in). So one loader reads attograd checkpoints and
// Hugging Face's model.safetensors alike (hf_import.h infers the latter's config). The config,
// the tokenizer and (for resuming) the training state live in the metadata, the AdamW moments in
// tensors "optimizer.m" and "optimizer.v" (in parameter-arena order, in the parameters' dtype:
// F32; checkpoints written before the moments moved to f32 hold F64 ones, which still load).
//
// Memory: saving streams each tensor from the parameter arena and the optimizer into the file,
// and loading converts each tensor from the file's read-only mapping straight into its
// parameter; neither holds a second copy of the model (see safetensors.h). Only resuming
// reads the moments (read_checkpoint_info with Moments::load).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "gpt/model/config.h"
#include "gpt/model/gpt2.h"
#include "gpt/model/language_model.h"
#include "nn/io/safetensors.h"

namespace attograd::gpt {

/// The name of the checkpoint inside a run's output directory (what Trainer::run writes; the
/// run directory's other files are named by gpt/train/run_dir.h's RunDir).
inline constexpr char kCheckpointFile[] = "ckpt.safetensors";

/// Everything needed to continue training bit for bit.
struct TrainingState {
  int64_t step = 0;       // optimizer steps completed
  std::string batch_rng;  // Generator::state() of the batch sampler
  Tensor adam_m, adam_v;  // AdamW moments, (N,) in arena order, the parameters' dtype
  int64_t adam_t = 0;
  std::string train_options;  // the trainer's options as JSON, so --resume reuses them
  /// The val loss of the evaluation at `step`, for a checkpoint written at one (metadata
  /// "val_loss", a finite number written to round-trip): so best.safetensors, a hard link to
  /// such a checkpoint, knows the val loss it is best by even when the eval log is gone.
  /// nullopt at a step without an evaluation, and in checkpoints written before the key existed
  /// (a reader that knows no such key ignores it, as every reader of a safetensors file does).
  std::optional<double> val_loss;
};

/// The non-weight contents of a checkpoint.
struct CheckpointInfo {
  ModelKind kind = ModelKind::gpt;  // metadata "model"; checkpoints written before it are GPTs
  GPTConfig config;
  std::string tokenizer_kind;  // "char" (or "gpt2" for BPE)
  std::string tokenizer_data;  // the tokenizer's own serialisation
  std::optional<TrainingState> training;
};

/// The config as a checkpoint's "config" metadata: a JSON object with one key per GPTConfig
/// field (pos_encoding by name).
std::string config_to_json(const GPTConfig& config);

/// The config a checkpoint's "config" metadata holds, every field read strictly (3.9 is not an
/// n_head, 2^64 is not a size, a missing or unknown field is refused), then checked as the model
/// of `kind` is built (validate_for: GPTConfig::validate, with the parameter limit counting that
/// kind's own parameters). Throws std::runtime_error starting with `what` (naming the document).
GPTConfig config_from_json(const std::string& text, const std::string& what,
                           ModelKind kind = ModelKind::gpt);

/// True for the four GPT-2 weights Hugging Face stores as Conv1D (in, out), the transpose of
/// attograd's Linear: attn.c_attn, attn.c_proj, mlp.c_fc and mlp.c_proj. attn.c_proj is
/// square, so no shape check would catch a missing transpose: the name decides.
bool is_conv1d_weight(const std::string& name);

/// Writes model weights, kind, config, tokenizer and optional training state atomically (a
/// temporary file renamed into place). The dropout generator's state is saved too. Throws
/// std::runtime_error naming the path on any I/O failure (a full disk included); the previous
/// checkpoint is then intact.
void save_checkpoint(const std::string& path, LanguageModel& model,
                     const std::string& tokenizer_kind, const std::string& tokenizer_data,
                     const TrainingState* training = nullptr);

/// Whether read_checkpoint_info copies the AdamW moments (two tensors the size of the model,
/// needed only to resume training) into TrainingState::adam_m / adam_v.
enum class Moments { load, skip };

/// Reads the config, tokenizer and training state; with Moments::skip the training state's
/// adam_m and adam_v stay undefined (sampling and evaluation need neither), with Moments::load
/// they are read and must be finite (SafetensorsFile::require_finite). Every value is
/// read strictly (see gpt/io/json_fields.h): the model kind is one of model_kind_name's, the
/// config's sizes are integers (3.9 and 2^64 are refused, not truncated or cast) that
/// GPTConfig::validate accepts, an unknown config or tokenizer field is refused, "step" and
/// "adam_t" are decimal counts, "val_loss" (optional) a finite number. Throws std::runtime_error
/// naming the path, the key and the value for a file that is not an attograd checkpoint (no config
/// in its metadata) or is malformed/truncated.
CheckpointInfo read_checkpoint_info(const nn::SafetensorsFile& file,
                                    Moments moments = Moments::load);

/// Copies the weights of `file` into `model`'s state dict, all or nothing, through the check
/// every state dict load makes (nn::Module::check_state_dict): every name, shape and dtype is
/// checked from the header before any parameter is written; then each tensor is converted
/// straight from the file's mapping into its parameter (no full-size temporary). Accepts keys
/// with or without the "transformer." prefix. Every other tensor must be known and is checked,
/// never dropped in silence: GPT-2's h.N.attn.bias / h.N.attn.masked_bias buffers
/// (N < n_layer), an lm_head.weight tied to wte (the same dtype, shape and bytes) and a
/// checkpoint's optimizer.m / optimizer.v. Throws std::runtime_error naming, in one message,
/// every missing, unexpected, wrongly shaped (both shapes, and the stored one of a Conv1D
/// weight) or unconvertible tensor; for an lm_head.weight that differs from wte (an untied
/// head, which attograd's GPT cannot compute); for an attograd checkpoint of another model
/// kind than `model` ("holds the model kind 'bigram' ..., not 'gpt'"); and for a weight that
/// holds NaN or an infinity (SafetensorsFile::require_finite, before any parameter is written);
/// the model is then unchanged.
void load_weights(LanguageModel& model, const nn::SafetensorsFile& file);

/// A tensor of `file` by its GPT-2 name ("wte.weight"), with or without Hugging Face's
/// "transformer." prefix; nullptr when it has neither: attograd checkpoints and Hugging Face
/// files name their tensors the same way (hf_import.h reads the latter).
const nn::SafetensorsEntry* find_gpt2_tensor(const nn::SafetensorsFile& file,
                                             const std::string& name);

/// Checks, from the header alone and before a model of `kind` and config c is allocated, that
/// the file can be that model (`source` says where c came from, "its config"): wte is
/// (vocab_size, n_embd), wpe (block_size, n_embd) exactly when positions are learned, the blocks
/// are h.0 .. h.{n_layer-1}, and the file holds at least the values every block needs. So a config
/// that lies (n_layer 1,000,000 in a 57 KB file) is refused naming both numbers, instead of
/// allocating until memory runs out; load_weights then checks every tensor's name, shape and dtype.
/// Throws std::runtime_error naming the file, c's value and what the file holds.
void check_config_against_tensors(ModelKind kind, const GPTConfig& c,
                                  const nn::SafetensorsFile& file, const std::string& source);

/// Refuses a file with a tensor attograd cannot convert into `dtype` before any model is built:
/// a model is allocated from the shapes alone, and a sparse 4 KB file of U8 tensors with GPT-2's
/// shapes made eval allocate over 1 GB before load_weights named the dtype. The mask buffers
/// of Hugging Face files (attn.bias, attn.masked_bias) are constants never loaded.
/// Throws std::runtime_error naming the tensor and its dtype.
void refuse_unconvertible_dtypes(const nn::SafetensorsFile& file, DType dtype);

/// Builds the model a checkpoint holds, of the kind its metadata names (GPT, BigramModel or
/// AverageModel), and loads its weights (and dropout state), not the optimizer moments. Before
/// anything is allocated, the config is checked against the tensors present: wte
/// (vocab_size, n_embd) ((vocab_size, vocab_size) for a bigram), wpe (block_size, n_embd)
/// exactly with learned positions, blocks h.0 .. h.{n_layer-1} for a GPT (none otherwise), and
/// enough values in the file for every parameter; a mismatch is std::runtime_error naming both
/// values. Otherwise throws std::runtime_error as read_checkpoint_info and load_weights.
/// `dropout`, when given, replaces the config's dropout rate (train --init-from --dropout);
/// GPTConfig::validate checks it (std::invalid_argument outside [0, 1)).
std::unique_ptr<LanguageModel> load_language_model(const nn::SafetensorsFile& file,
                                                   DType dtype = DType::f32,
                                                   std::optional<double> dropout = std::nullopt);

/// Refuses to train the model `file` holds when this machine's memory cannot hold its weights,
/// gradients and AdamW's two moments (f32: 16 bytes per parameter), from the header alone:
/// the config of an attograd checkpoint (checked against its tensors first) or the shapes of a
/// Hugging Face GPT-2 file (n_head_override as in infer_hf_gpt2_config, hf_import.h). Called before
/// any tensor is read: a sparse file of a few KB whose header claims billions of parameters made
/// `train --resume` read its moments, and `--init-from` its weights, for minutes before the
/// same check refused (issue 31, kind 4). Throws std::runtime_error (require_memory's message,
/// which starts with `label`, or that of reading the header).
void require_training_memory(const nn::SafetensorsFile& file, const std::string& label,
                             int64_t n_head_override = 0);

/// load_language_model for a caller that needs a GPT (its attention, its KV cache): throws
/// std::runtime_error naming the kind the checkpoint holds when it is not a GPT.
std::unique_ptr<GPT> load_model(const nn::SafetensorsFile& file, DType dtype = DType::f32);

}  // namespace attograd::gpt
