// GPTConfig: the hyper-parameters that define a GPT, and the named presets.
#pragma once

#include <cstdint>
#include <string>

namespace attograd::gpt {

/// How positions enter the model (the lecture's three choices).
enum class PosEncoding {
  learned,     // GPT-2's wpe: a trained (block_size, n_embd) table added to the token embeddings
  sinusoidal,  // Vaswani et al. 2017, section 3.5: a fixed table added to the token embeddings
  rope,        // Su et al. 2021: q and k rotated by position inside every attention layer
};

/// "learned", "sinusoidal" or "rope".
const char* pos_encoding_name(PosEncoding p);
/// Parses a name; throws std::invalid_argument listing the valid names.
PosEncoding parse_pos_encoding(const std::string& name);

/// A GPT-2 shaped model: n_layer pre-LayerNorm blocks of n_head-head causal self-attention
/// and a 4x MLP, embedding width n_embd, vocabulary vocab_size, context block_size tokens.
struct GPTConfig {
  int64_t vocab_size = 50257;
  int64_t block_size = 1024;
  int64_t n_layer = 12;
  int64_t n_head = 12;
  int64_t n_embd = 768;
  double dropout = 0.0;
  bool bias = true;  // biases in Linear and LayerNorm, as GPT-2
  PosEncoding pos_encoding = PosEncoding::learned;

  bool operator==(const GPTConfig&) const = default;

  /// head_dim = n_embd / n_head.
  int64_t head_dim() const { return n_embd / n_head; }
  /// The number of trainable parameters of the GPT this config builds (wte, wpe when learned,
  /// n_layer blocks, ln_f; the LM head is tied to wte), computed from the sizes alone, before
  /// anything is allocated. Throws std::overflow_error if the count does not fit int64_t.
  int64_t num_parameters() const;
  /// Throws std::invalid_argument naming the first bad field: a size outside its range in
  /// gpt/model/limits.h (stated in the message), n_head not dividing n_embd, dropout outside [0,
  /// 1), or more than limits::max_parameters parameters in all.
  void validate() const;
};

/// The teaching and reference presets:
///   femto: 1 layer, 1 head, n_embd 2, block 8      (the lecture's smallest, 224 params at V = 65)
///   pico:  3 layers, 3 heads, n_embd 6, block 8    (1,980 params at V = 65)
///   nano:  4 layers, 4 heads, n_embd 128, block 64 (nanoGPT's CPU config)
///   gpt2:  12 layers, 12 heads, n_embd 768, block 1024, vocab 50257 (GPT-2 small, 124M)
/// vocab_size is the tokenizer's and is set by the caller except for gpt2.
/// Throws std::invalid_argument for an unknown name, listing the presets.
GPTConfig preset(const std::string& name);

}  // namespace attograd::gpt
