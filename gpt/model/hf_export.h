// Exporting a GPT to Hugging Face: a directory that transformers' GPT2LMHeadModel.from_pretrained
// loads as it is, the reverse of load_hf_gpt2 (hf_import.h).
//
// The directory holds these files, each written atomically (a temporary renamed into place):
//   model.safetensors  the weights only (no optimizer state), F32, under the names
//                      GPT2LMHeadModel.save_pretrained writes: "transformer.wte.weight",
//                      "transformer.h.0.attn.c_attn.weight", ..., "transformer.ln_f.bias";
//                      Conv1D weights (attn.c_attn, attn.c_proj, mlp.c_fc, mlp.c_proj) in HF's
//                      (in, out) layout; no lm_head.weight (tied to wte, which transformers ties
//                      again on load) and no attn.bias mask buffers (transformers builds them);
//                      metadata {"format": "pt"}, which from_pretrained requires.
//   config.json        GPT2Config's fields: model_type gpt2, architectures [GPT2LMHeadModel],
//                      the sizes (n_positions = n_ctx = block_size), activation_function
//                      gelu_new (GELU's tanh form), layer_norm_epsilon 1e-5, n_inner null
//                      (4 * n_embd), the model's dropout as resid/embd/attn_pdrop,
//                      tie_word_embeddings true; bos/eos 50256 (<|endoftext|>) for a model with
//                      GPT-2's BPE, null for attograd's char tokenizer.
//   generation_config.json   GenerationConfig's: bos/eos 50256 with GPT-2's BPE, none for char.
// and the tokenizer beside the weights:
//   vocab.json, merges.txt   with GPT-2's BPE: OpenAI's encoder.json and vocab.bpe, which are
//                      Hugging Face's GPT2Tokenizer files (GPT2Tokenizer.from_pretrained(dir)).
//   char_vocab.json    with attograd's char tokenizer: {"type": "char", "vocab": [the V
//                      characters in id order]}, which a Python user reads with json
//                      (docs/04-gpt.md shows encode and decode); GPT2Tokenizer does not apply.
//
// A model trained without biases (--no-bias) is written with zero biases: GPT-2 always has them,
// and a zero bias computes exactly what no bias does.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "gpt/model/language_model.h"
#include "gpt/model/open_model.h"

namespace attograd::gpt {

/// The files of a Hugging Face GPT-2 directory.
inline constexpr char kHfWeightsFile[] = "model.safetensors";
inline constexpr char kHfConfigFile[] = "config.json";
inline constexpr char kHfGenerationConfigFile[] = "generation_config.json";
inline constexpr char kHfVocabFile[] = "vocab.json";         // GPT-2's BPE
inline constexpr char kHfMergesFile[] = "merges.txt";        // GPT-2's BPE
inline constexpr char kCharVocabFile[] = "char_vocab.json";  // attograd's char tokenizer

/// Throws std::invalid_argument, naming `what` (the file the model came from) and why, unless
/// a model of this kind and config can be written as Hugging Face's GPT-2: a GPT (not the
/// bigram or average model, which have no GPT-2 counterpart) with learned positions (GPT-2's
/// wpe table; RoPE and sinusoidal positions have none in GPT2LMHeadModel). Reads nothing but
/// its arguments, so a checkpoint can be refused before its weights are loaded.
void require_hf_gpt2_exportable(ModelKind kind, const GPTConfig& config, const std::string& what);

/// The config.json of `config` (see the file comment), pretty-printed JSON with keys sorted.
/// tokenizer_kind ("char" or "gpt2") sets bos_token_id / eos_token_id.
std::string hf_gpt2_config_json(const GPTConfig& config, const std::string& tokenizer_kind);

/// What export_hf_gpt2 wrote.
struct HfExport {
  std::vector<std::string> files;  // the paths written, model.safetensors first
  int64_t tensors = 0;             // tensors in model.safetensors
  int64_t parameters = 0;          // values in them (zero biases of a --no-bias model included)
};

/// Throws std::invalid_argument unless `dir` may receive an export: absent, or a directory that
/// is empty or, with `overwrite`, holds other files (the message lists up to three and names
/// --overwrite, as `train` refuses an occupied --out), and in either case whose
/// model.safetensors and config.json are none of `inputs` (the same file, a hard link or a
/// symlink to it: writing it would destroy what is being exported). Writes nothing.
void check_hf_export_dir(const std::string& dir, bool overwrite,
                         const std::vector<std::filesystem::path>& inputs);

/// Writes `model` and its `tokenizer` as a Hugging Face GPT-2 directory `dir` (created with its
/// parents when absent). A directory holding anything is refused unless `overwrite`; then files of
/// other names in it are left alone and those of ours replaced. `inputs` are the files the model
/// came from, refused as outputs (check_hf_export_dir). The temporaries of our two files that an
/// interrupted export left (their process gone) are removed first. Throws std::runtime_error as
/// BpeTokenizer::gpt2_files when GPT-2's vocabulary files are missing. Throws std::invalid_argument
/// as require_hf_gpt2_exportable (`what` names the source) and check_hf_export_dir,
/// std::runtime_error naming the path on an I/O failure (each file is then left as it was).
HfExport export_hf_gpt2(LanguageModel& model, const Tokenizer& tokenizer, const std::string& dir,
                        const std::string& what, bool overwrite = false,
                        const std::vector<std::filesystem::path>& inputs = {});

/// `attograd export`: the attograd checkpoint `checkpoint` (a file or a run directory) written
/// as a Hugging Face GPT-2 directory `dir`. Its kind and config are checked from the metadata
/// (require_hf_gpt2_exportable) before any weight is read, and only the weights are loaded, never
/// the optimizer moments. The directory is checked first (check_hf_export_dir, the checkpoint
/// as the input), so a refused export reads nothing. Throws as open_checkpoint and
/// export_hf_gpt2.
HfExport export_checkpoint_to_hf(const std::string& checkpoint, const std::string& dir,
                                 bool overwrite = false);

}  // namespace attograd::gpt
