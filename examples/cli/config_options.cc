#include "examples/cli/command.h"

#include <cmath>
#include <stdexcept>

namespace attograd::cli {

namespace {
CLI::Validator finite_number_check(bool allow_zero) {
  return CLI::Validator(
      [allow_zero](std::string& text) -> std::string {
        double v;
        try {
          size_t used = 0;
          v = std::stod(text, &used);
          if (used != text.size()) throw std::invalid_argument("trailing characters");
        } catch (const std::exception&) {
          return "expected a number, got '" + text + "'";
        }
        if (!std::isfinite(v) || (allow_zero ? v < 0 : v <= 0))
          return std::string("must be a finite number ") + (allow_zero ? ">= 0" : "> 0") + ", got " + text;
        return std::string();
      },
      allow_zero ? "NUMBER >= 0" : "NUMBER > 0");
}
}  // namespace

const CLI::Validator kPositive = finite_number_check(false);
const CLI::Validator kNonNegative = finite_number_check(true);

void add_config_options(CLI::App* cmd, ConfigArgs& a, bool with_vocab) {
  cmd->add_option("--preset", a.preset, "model size: femto, pico, nano or gpt2")
      ->check(CLI::IsMember({"femto", "pico", "nano", "gpt2"}))
      ->capture_default_str();
  cmd->add_option("--n-layer", a.n_layer, "override: number of transformer blocks")->check(kPositive);
  cmd->add_option("--n-head", a.n_head, "override: attention heads per block")->check(kPositive);
  cmd->add_option("--n-embd", a.n_embd, "override: embedding width C")->check(kPositive);
  cmd->add_option("--block-size", a.block_size, "override: context length in tokens")->check(kPositive);
  cmd->add_option("--dropout", a.dropout, "override: dropout probability")->check(CLI::Range(0.0, 0.99));
  cmd->add_option("--pos-encoding", a.pos_encoding, "learned (GPT-2), sinusoidal or rope")
      ->check(CLI::IsMember({"learned", "sinusoidal", "rope"}));
  cmd->add_flag("--no-bias", a.no_bias, "no biases in Linear and LayerNorm");
  if (with_vocab) cmd->add_option("--vocab-size", a.vocab_size, "vocabulary size V")->check(kPositive);
}

gpt::GPTConfig build_config(const ConfigArgs& a, std::optional<int64_t> tokenizer_vocab) {
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
  c.validate();
  return c;
}

}  // namespace attograd::cli
