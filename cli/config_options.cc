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

void add_config_options(CLI::App* cmd, ConfigArgs& a, bool with_vocab) {
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
  cmd->add_option("--pos-encoding", a.pos_encoding, "learned (GPT-2), sinusoidal or rope")
      ->check(CLI::IsMember({"learned", "sinusoidal", "rope"}));
  cmd->add_flag("--no-bias", a.no_bias, "no biases in Linear and LayerNorm");
  if (with_vocab)
    cmd->add_option("--vocab-size", a.vocab_size, "vocabulary size V")
        ->check(integer_in(limits::vocab_size));
  cmd->footer("At most " + std::to_string(limits::max_parameters) +
              " parameters in all (GPTConfig::num_parameters), and no more than this machine's "
              "memory holds.");
}

void refuse_unused_config_options(const ConfigArgs& a, gpt::ModelKind kind) {
  if (kind == gpt::ModelKind::gpt) return;
  const bool bigram = kind == gpt::ModelKind::bigram;
  // (option, given, read by the average model); the bigram reads none of these.
  const std::tuple<const char*, bool, bool> overrides[] = {
      {"--n-layer", a.n_layer.has_value(), false},
      {"--n-head", a.n_head.has_value(), false},
      {"--dropout", a.dropout.has_value(), false},
      {"--n-embd", a.n_embd.has_value(), true},
      {"--pos-encoding", a.pos_encoding.has_value(), true},
      {"--no-bias", a.no_bias, true},
  };
  for (const auto& [option, given, average_reads] : overrides)
    if (given && (bigram || !average_reads))
      throw std::invalid_argument(
          std::string(option) + " does not apply to --model " + gpt::model_kind_name(kind) +
          (bigram ? " (a table of next-token logits: it reads only --block-size)"
                  : " (embeddings averaged over the context: no blocks, heads or dropout)") +
          "; drop it, or train --model gpt");
}

gpt::GPTConfig build_config(const ConfigArgs& a, std::optional<int64_t> tokenizer_vocab,
                            gpt::ModelKind kind) {
  gpt::GPTConfig c = gpt::preset(a.preset);
  if (tokenizer_vocab) c.vocab_size = *tokenizer_vocab;
  if (a.vocab_size) c.vocab_size = *a.vocab_size;
  if (a.n_layer) c.n_layer = *a.n_layer;
  if (a.n_head) c.n_head = *a.n_head;
  if (a.n_embd) c.n_embd = *a.n_embd;
  if (a.block_size) c.block_size = *a.block_size;
  if (a.dropout) c.dropout = *a.dropout;
  if (a.pos_encoding) c.pos_encoding = gpt::parse_pos_encoding(*a.pos_encoding);
  if (a.no_bias) c.bias = false;
  if (kind != gpt::ModelKind::gpt) c.n_head = 1;  // else the preset's 3 heads must divide n_embd
  c.validate();
  return c;
}

}  // namespace attograd::cli
