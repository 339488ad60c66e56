#include "gpt/model/config.h"

#include <stdexcept>

#include "autograd/size_math.h"
#include "gpt/model/limits.h"

namespace attograd::gpt {

const char* pos_encoding_name(PosEncoding p) {
  switch (p) {
    case PosEncoding::learned:
      return "learned";
    case PosEncoding::sinusoidal:
      return "sinusoidal";
    case PosEncoding::rope:
      return "rope";
  }
  return "?";
}

PosEncoding parse_pos_encoding(const std::string& name) {
  if (name == "learned") return PosEncoding::learned;
  if (name == "sinusoidal") return PosEncoding::sinusoidal;
  if (name == "rope") return PosEncoding::rope;
  throw std::invalid_argument("unknown positional encoding '" + name +
                              "' (expected learned, sinusoidal or rope)");
}

int64_t GPTConfig::num_parameters() const {
  auto mul = [](int64_t a, int64_t b) { return checked_mul(a, b, "GPTConfig::num_parameters"); };
  auto add = [](int64_t a, int64_t b) { return checked_add(a, b, "GPTConfig::num_parameters"); };
  const int64_t C = n_embd, with_bias = bias ? 1 : 0;
  // Mirrors GPT's constructor (tests/gpt/model/model_test.cc compares the two for every preset).
  const int64_t layer_norm = mul(C, 1 + with_bias);  // weight (C), bias (C)
  auto linear = [&](int64_t in, int64_t out) { return add(mul(in, out), mul(out, with_bias)); };
  const int64_t attn = add(linear(C, mul(3, C)), linear(C, C));         // c_attn, c_proj
  const int64_t mlp = add(linear(C, mul(4, C)), linear(mul(4, C), C));  // c_fc, c_proj
  const int64_t block = add(add(mul(2, layer_norm), attn), mlp);        // ln_1, attn, ln_2, mlp
  int64_t n = mul(vocab_size, C);                                       // wte (V, C)
  if (pos_encoding == PosEncoding::learned) n = add(n, mul(block_size, C));  // wpe (block_size, C)
  return add(add(n, mul(n_layer, block)), layer_norm);  // h.0 .. h.{n_layer-1}, ln_f
}

void GPTConfig::validate() const {
  check_range("GPTConfig", "vocab_size", vocab_size, limits::vocab_size);
  check_range("GPTConfig", "block_size", block_size, limits::block_size);
  check_range("GPTConfig", "n_layer", n_layer, limits::n_layer);
  check_range("GPTConfig", "n_head", n_head, limits::n_head);
  check_range("GPTConfig", "n_embd", n_embd, limits::n_embd);
  if (n_embd % n_head != 0)
    throw std::invalid_argument("GPTConfig: n_head " + std::to_string(n_head) +
                                " must divide n_embd " + std::to_string(n_embd) +
                                " (head_dim = n_embd / n_head)");
  if (pos_encoding == PosEncoding::rope && head_dim() % 2 != 0)
    throw std::invalid_argument("GPTConfig: rope needs an even head_dim, got " +
                                std::to_string(head_dim()));
  if (pos_encoding == PosEncoding::sinusoidal && n_embd % 2 != 0)
    throw std::invalid_argument(
        "GPTConfig: sinusoidal encodings pair sin/cos channels, so n_embd must be even");
  if (!(dropout >= 0 && dropout < 1))
    throw std::invalid_argument("GPTConfig: dropout must be in [0, 1), got " +
                                std::to_string(dropout));
  // Within the ranges above the count cannot overflow; it can still be far too large.
  if (num_parameters() > limits::max_parameters)
    throw std::invalid_argument(
        "GPTConfig: n_layer " + std::to_string(n_layer) + ", n_embd " + std::to_string(n_embd) +
        ", vocab_size " + std::to_string(vocab_size) + " make " + std::to_string(num_parameters()) +
        " parameters, more than the limit of " + std::to_string(limits::max_parameters) +
        "; choose a smaller model");
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
    throw std::invalid_argument("unknown preset '" + name +
                                "' (expected femto, pico, nano or gpt2)");
  }
  return c;
}

}  // namespace attograd::gpt
