#include <set>
#include <string>

#include "cli/command.h"
#include "options/field_options.h"

namespace attograd::cli {

void add_config_options(CLI::App* cmd, gpt::ConfigOverrides& a, bool with_vocab) {
  cmd->add_option("--preset", a.preset, "model size: " + gpt::join_names(gpt::preset_names()))
      ->check(one_of(gpt::preset_names()))
      ->capture_default_str();
  // Every field of GPTConfig's table, over the preset; vocab_size is the tokenizer's in train.
  add_override_options(cmd, a.values, a.given, "override: ",
                       with_vocab ? std::set<std::string>{} : std::set<std::string>{"vocab_size"});
  cmd->footer("At most " + std::to_string(gpt::limits::max_parameters) +
              " parameters in all (GPTConfig::num_parameters), and no more than this machine's "
              "memory holds.");
}

}  // namespace attograd::cli
