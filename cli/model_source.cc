#include "cli/model_source.h"

#include "cli/command.h"
#include "cli/config_messages.h"
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

gpt::Session open_model_source(const gpt::ModelSource& source) {
  gpt::ConfigOverrides given;  // only --n-head is an option; the file decides the rest
  if (source.n_head > 0) given.set(&gpt::GPTConfig::n_head, source.n_head);
  return naming_options(ConfigOrigins(given).others_fixed("the --hf-gpt2 file's"),
                        [&] { return gpt::open_model(source); });
}

}  // namespace attograd::cli
