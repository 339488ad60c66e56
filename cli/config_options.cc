#include "cli/command.h"

#include <cctype>
#include <charconv>
#include <cmath>
#include <functional>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <tuple>

namespace attograd::cli {

void add_config_options(CLI::App* cmd, gpt::ConfigOverrides& a, bool with_vocab) {
  cmd->add_option("--preset", a.preset, "model size: femto, pico, nano or gpt2")
      ->check(CLI::IsMember({"femto", "pico", "nano", "gpt2"}))
      ->capture_default_str();
  namespace limits = gpt::limits;
  cmd->add_option("--n-layer", a.n_layer, "override: number of transformer blocks")
      ->check(integer_in(limits::n_layer));
  cmd->add_option("--n-head", a.n_head, "override: attention heads per block")
      ->check(integer_in(limits::n_head));
  cmd->add_option("--n-embd", a.n_embd, "override: embedding width C")
      ->check(integer_in(limits::n_embd));
  cmd->add_option("--block-size", a.block_size, "override: context length in tokens")
      ->check(integer_in(limits::block_size));
  cmd->add_option("--dropout", a.dropout, "override: dropout probability")
      ->check(number_in(0.0, 0.99));
  cmd->add_option_function<std::string>(
         "--pos-encoding",
         [&a](const std::string& name) { a.pos_encoding = gpt::parse_pos_encoding(name); },
         "learned (GPT-2), sinusoidal or rope")
      ->check(CLI::IsMember({"learned", "sinusoidal", "rope"}));
  cmd->add_flag("--no-bias", a.no_bias, "no biases in Linear and LayerNorm");
  if (with_vocab)
    cmd->add_option("--vocab-size", a.vocab_size, "vocabulary size V")
        ->check(integer_in(limits::vocab_size));
  cmd->footer("At most " + std::to_string(limits::max_parameters) +
              " parameters in all (GPTConfig::num_parameters), and no more than this machine's "
              "memory holds.");
}

}  // namespace attograd::cli
