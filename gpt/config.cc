#include "gpt/config.h"

#include <stdexcept>

namespace attograd::gpt {

const char* pos_encoding_name(PosEncoding p) {
  switch (p) {
    case PosEncoding::learned: return "learned";
    case PosEncoding::sinusoidal: return "sinusoidal";
    case PosEncoding::rope: return "rope";
  }
  return "?";
}

PosEncoding parse_pos_encoding(const std::string& name) {
  if (name == "learned") return PosEncoding::learned;
  if (name == "sinusoidal") return PosEncoding::sinusoidal;
  if (name == "rope") return PosEncoding::rope;
  throw std::invalid_argument("unknown positional encoding '" + name + "' (expected learned, sinusoidal or rope)");
}

void GPTConfig::validate() const {
  auto positive = [](int64_t v, const char* name) {
    if (v <= 0) throw std::invalid_argument(std::string("GPTConfig: ") + name + " must be positive, got " + std::to_string(v));
  };
  positive(vocab_size, "vocab_size");
  positive(block_size, "block_size");
  positive(n_layer, "n_layer");
  positive(n_head, "n_head");
  positive(n_embd, "n_embd");
  if (n_embd % n_head != 0)
    throw std::invalid_argument("GPTConfig: n_head " + std::to_string(n_head) + " must divide n_embd " +
                                std::to_string(n_embd) + " (head_dim = n_embd / n_head)");
  if (pos_encoding == PosEncoding::rope && head_dim() % 2 != 0)
    throw std::invalid_argument("GPTConfig: rope needs an even head_dim, got " + std::to_string(head_dim()));
  if (pos_encoding == PosEncoding::sinusoidal && n_embd % 2 != 0)
    throw std::invalid_argument("GPTConfig: sinusoidal encodings pair sin/cos channels, so n_embd must be even");
  if (!(dropout >= 0 && dropout < 1))
    throw std::invalid_argument("GPTConfig: dropout must be in [0, 1), got " + std::to_string(dropout));
}

GPTConfig preset(const std::string& name) {
  GPTConfig c;
  if (name == "femto") {
    c.n_layer = 1, c.n_head = 1, c.n_embd = 2, c.block_size = 8, c.vocab_size = 65;
  } else if (name == "pico") {
    c.n_layer = 3, c.n_head = 3, c.n_embd = 6, c.block_size = 8, c.vocab_size = 65;
  } else if (name == "nano") {
    c.n_layer = 4, c.n_head = 4, c.n_embd = 128, c.block_size = 64, c.vocab_size = 65;
  } else if (name == "gpt2") {
    // GPT-2 small as released (Radford et al. 2019): defaults above.
  } else {
    throw std::invalid_argument("unknown preset '" + name + "' (expected femto, pico, nano or gpt2)");
  }
  return c;
}

}  // namespace attograd::gpt
