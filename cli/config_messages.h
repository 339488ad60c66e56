// The CLI's words for a model config that breaks one of GPTConfig's rules between fields
// (gpt::ConfigRule: n_head divides n_embd, rope's even head_dim, sinusoidal's even n_embd, the
// parameter limit). The library's message names fields and values ("GPTConfig: n_head 3 must
// divide n_embd 1024"), some of which the user never typed; here the same rule names the options
// as the user wrote them, says where the other values came from (the preset, the tokenizer, a
// file) and the fix:
//
//   --n-embd 1024: pico's n_head 3 must divide n_embd (head_dim = n_embd / n_head); choose an
//   --n-embd that is a multiple of 3 (e.g. 1023 or 1026), or an --n-head that divides 1024 ...
//
// The rules themselves stay the library's (GPTConfig::broken_rule, rule_fields): this file only
// says them, and finds the values it suggests by asking broken_rule() of nearby configs.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>

#include "gpt/model/config.h"

namespace attograd::cli {

/// Where the values of a model config came from, so that a message names each as it was given.
class ConfigOrigins {
 public:
  enum class Kind {
    option,  // on the command line: "--n-embd 1024"
    file,    // in a config file (train --config): "model.n_embd 1024 of config file 'run.json'"
    preset,  // the preset's: "pico's n_head 3", which its option can change
    fixed,   // the command's own (the tokenizer's vocab_size), which no option changes
  };
  struct Origin {
    Kind kind;
    std::string where;  // file: the file as errors name it; preset: its name; fixed: the owner
  };

  /// The config `overrides` asks for: the fields it gives came as options, the others from its
  /// preset.
  explicit ConfigOrigins(const gpt::ConfigOverrides& overrides);
  /// `field` came from the key "model.<field>" of `file` (as errors name it: "config file
  /// 'run.json'"), not from the command line.
  ConfigOrigins& in_file(const std::string& field, const std::string& file);
  /// `field` is the command's own, named after `owner` ("the tokenizer's" vocab_size 65).
  ConfigOrigins& fixed(const std::string& field, const std::string& owner);
  /// Every field not given as an option is `owner`'s ("the --hf-gpt2 file's"), not a preset's.
  ConfigOrigins& others_fixed(const std::string& owner);
  /// Words put before the options in a message, for a command whose own choice a rule follows
  /// ("figure sinusoidal" draws sinusoidal encodings: "figure sinusoidal --n-embd 3: ...").
  ConfigOrigins& in_command(const std::string& command);
  /// The command's own limits beyond GPTConfig's rules (a figure's sizes): a value the fix
  /// suggests must also pass `accepts`, so that following a message never meets the next refusal.
  ConfigOrigins& accepting(std::function<bool(const gpt::GPTConfig&)> accepts);
  /// Whether the command takes `config` (true when it set no limits of its own).
  bool accepts(const gpt::GPTConfig& config) const { return !accepts_ || accepts_(config); }

  /// Where `field` (a name of GPTConfig's table) came from.
  Origin of(const std::string& field) const;
  /// The words in_command() set, or "".
  const std::string& command() const { return command_; }

 private:
  std::string preset_;
  std::set<std::string> options_;
  std::map<std::string, Origin> origins_;  // in_file() and fixed()
  std::optional<std::string> others_;
  std::string command_;
  std::function<bool(const gpt::GPTConfig&)> accepts_;
};

/// The one-line message for `config` breaking `rule`: the values the user gave (options, config
/// file keys), the rule with the other values named by their origin, and the fix: for each field
/// an option can change, the nearest values with which the config breaks no rule, e.g.
/// "--n-head 4: n_head must divide pico's n_embd 6 (head_dim = n_embd / n_head); choose an
/// --n-head that divides 6 (e.g. 3 or 6), or an --n-embd that is a multiple of 4 (e.g. 4 or 8)".
std::string config_rule_message(gpt::ConfigRule rule, const gpt::GPTConfig& config,
                                const ConfigOrigins& origins);

/// Throws std::invalid_argument with config_rule_message when `e`, or an exception nested in it
/// (std::throw_with_nested), is a gpt::ConfigRuleError about a value the user gave (an option or
/// a config file's key). Returns otherwise: the library's message then stands.
void throw_in_option_words(const std::exception& e, const ConfigOrigins& origins);

/// Returns f(); a broken config rule it throws is said in the options' words
/// (throw_in_option_words), any other exception passes unchanged.
template <class F>
auto naming_options(const ConfigOrigins& origins, F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const std::exception& e) {
    throw_in_option_words(e, origins);
    throw;
  }
}

}  // namespace attograd::cli
