// A small GPT-2 with random weights written in Hugging Face's layout, for the --hf-gpt2 tests.
#pragma once

#include <filesystem>
#include <fstream>
#include <memory>
#include <string>

#include "autograd/ops.h"
#include "gpt/model/checkpoint.h"
#include "tests/test_util.h"

namespace attograd::testing {

/// Builds a GPT-2 with GPT-2's 50257-token vocabulary, block_size 16, 2 layers, 2 heads,
/// n_embd 8 (seed 3) and weights N(0, 0.5²) (large enough that greedy choices and attention
/// vary), and writes it as dir/model.safetensors the way Hugging Face stores GPT-2: the
/// "transformer." prefix, Conv1D weights (in, out), attn.bias buffers, and a config.json beside
/// it with n_head. Returns the model.
inline std::unique_ptr<gpt::GPT> write_small_hf_gpt2(const std::filesystem::path& dir) {
  gpt::GPTConfig c;
  c.vocab_size = 50257;
  c.block_size = 16;
  c.n_layer = 2;
  c.n_head = 2;
  c.n_embd = 8;
  auto model = std::make_unique<gpt::GPT>(c, 3);
  Generator gen(4);
  randomize_parameters(model->parameters(), gen, 0.5);
  nn::SafetensorsWriter w;
  for (const auto& [name, t] : model->named_parameters())
    w.add("transformer." + name,
          gpt::is_conv1d_weight(name) ? transpose(t.detach(), 0, 1) : t.detach());
  for (int i = 0; i < 2; ++i)
    w.add("transformer.h." + std::to_string(i) + ".attn.bias", Tensor::ones({1, 1, 16, 16}));
  w.write((dir / "model.safetensors").string());
  std::ofstream(dir / "config.json")
      << R"({"n_head": 2, "n_layer": 2, "n_embd": 8, "vocab_size": 50257})";
  return model;
}

}  // namespace attograd::testing
