#include "cli/model_source.h"

#include "cli/command.h"
#include "gpt/model/config.h"
#include "options/field_options.h"

namespace attograd::cli {

CLI::Option* add_model_source_options(CLI::App* cmd, gpt::ModelSource& s,
                                      const std::string& hf_note) {
  cmd->add_option(
      "--checkpoint", s.checkpoint,
      "an attograd checkpoint (e.g. runs/pico/ckpt.safetensors, or the run directory runs/pico)");
  CLI::Option* hf = cmd->add_option("--hf-gpt2", s.hf_gpt2,
                                    "a Hugging Face GPT-2 model.safetensors (" + hf_note + ")");
  // GPTConfig's n_head row: its flag and its range, for a file that does not store n_head.
  add_row_option(cmd, &gpt::GPTConfig::n_head, s.n_head,
                 "n_head of a --hf-gpt2 file without config.json and non-standard width")
      ->needs(hf);
  return hf;
}

}  // namespace attograd::cli
