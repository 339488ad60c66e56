#include "examples/cli/model_source.h"

#include <stdexcept>

#include "examples/cli/command.h"
#include "gpt/checkpoint.h"

namespace attograd::cli {

void add_model_source_options(CLI::App* cmd, ModelSource& s) {
  cmd->add_option("--checkpoint", s.checkpoint, "an attograd checkpoint (e.g. runs/pico/ckpt.safetensors)");
  CLI::Option* hf = cmd->add_option("--hf-gpt2", s.hf_gpt2,
                                    "a Hugging Face GPT-2 model.safetensors (with GPT-2's BPE tokenizer)");
  cmd->add_option("--n-head", s.n_head, "n_head of a --hf-gpt2 file without config.json and non-standard width")
      ->check(integer_in(gpt::limits::n_head))
      ->needs(hf);
}

LoadedModel load_model_source(const ModelSource& s) {
  if (s.checkpoint.empty() == s.hf_gpt2.empty())
    throw std::invalid_argument("give exactly one of --checkpoint (an attograd checkpoint) or --hf-gpt2 "
                                "(a Hugging Face GPT-2 model.safetensors)");
  LoadedModel m;
  m.path = s.hf_gpt2.empty() ? s.checkpoint : s.hf_gpt2;
  const gpt::SafetensorsFile file = gpt::SafetensorsFile::read(m.path);
  if (!s.hf_gpt2.empty()) {
    m.model = gpt::load_hf_gpt2(file, s.n_head);
    m.tokenizer = gpt::load_tokenizer("gpt2", "gpt2");  // HF files carry no tokenizer: GPT-2's own BPE
  } else {
    const gpt::CheckpointInfo info = gpt::read_checkpoint_info(file, gpt::Moments::skip);
    m.tokenizer = gpt::load_tokenizer(info.tokenizer_kind, info.tokenizer_data);
    m.model = gpt::load_model(file);
  }
  if (m.tokenizer->vocab_size() > m.model->config().vocab_size)
    throw std::invalid_argument("the " + m.tokenizer->kind() + " tokenizer has " +
                                std::to_string(m.tokenizer->vocab_size()) + " tokens but the model's vocab_size is " +
                                std::to_string(m.model->config().vocab_size));
  return m;
}

}  // namespace attograd::cli
