// Importing GPT-2 from Hugging Face: a model.safetensors (124M and larger, F32/F16/BF16) read
// into attograd's GPT, its config inferred from the tensors' shapes and the config.json beside
// the file, the Conv1D weights transposed by the loader every checkpoint goes through
// (load_weights, checkpoint.h). The reverse is hf_export.h; opening such a file with GPT-2's
// tokenizer is open_hf_gpt2 (open_model.h).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>

#include "gpt/model/config.h"
#include "gpt/model/gpt2.h"
#include "nn/io/safetensors.h"

namespace attograd::gpt {

/// Infers the GPTConfig of a Hugging Face GPT-2 file from its tensor shapes: vocab_size and
/// n_embd from wte, block_size from wpe, n_layer from the h.N blocks. n_head is not stored in
/// the weights: it is n_head_override when positive, else "n_head" from a config.json in the
/// same directory, else the standard GPT-2 size for n_embd (768 -> 12, 1024 -> 16,
/// 1280 -> 20, 1600 -> 25). Throws std::runtime_error when none applies ("pass --n-head").
/// A config.json that exists is read strictly, whether or not n_head is overridden: it must be
/// valid JSON, its n_layer, n_embd, vocab_size, n_positions and n_ctx must equal what the
/// tensors give, n_head must be an integer, and activation_function, layer_norm_epsilon,
/// n_inner, scale_attn_weights, scale_attn_by_inverse_layer_idx, tie_word_embeddings and
/// model_type must describe the GPT-2 attograd computes; else std::runtime_error naming the
/// field and both values. A config that breaks a rule between fields (GPTConfig::validate; --n-head
/// 3 for n_embd 8) is a std::runtime_error naming the file, with the ConfigRuleError nested.
GPTConfig infer_hf_gpt2_config(const nn::SafetensorsFile& file, int64_t n_head_override = 0);

/// Loads a Hugging Face GPT-2 model.safetensors (124M and larger, F32/F16/BF16) into a new
/// model, transposing exactly the Conv1D weights (see load_weights). The model's dropout is 0,
/// or `dropout` when given (train --init-from --dropout: a rate changes no weight).
std::unique_ptr<GPT> load_hf_gpt2(const nn::SafetensorsFile& file, int64_t n_head_override = 0,
                                  DType dtype = DType::f32,
                                  std::optional<double> dropout = std::nullopt);

}  // namespace attograd::gpt
