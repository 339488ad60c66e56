// GPTConfig: the hyper-parameters that define a GPT, and the named presets.
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "gpt/io/fields.h"
#include "gpt/model/field_ranges.h"

namespace attograd::gpt {

/// How positions enter the model (the lecture's three choices).
enum class PosEncoding {
  learned,     // GPT-2's wpe: a trained (block_size, n_embd) table added to the token embeddings
  sinusoidal,  // Vaswani et al. 2017, section 3.5: a fixed table added to the token embeddings
  rope,        // Su et al. 2021: q and k rotated by position inside every attention layer
};

/// PosEncoding's names, in the enum's order: the one list the CLI, JSON and messages use.
inline constexpr const char* kPosEncodingNames[] = {"learned", "sinusoidal", "rope"};

/// "learned", "sinusoidal" or "rope".
const char* pos_encoding_name(PosEncoding p);
/// Parses a name; throws std::invalid_argument listing the valid names.
PosEncoding parse_pos_encoding(const std::string& name);

/// The rules between GPTConfig's fields, in the order GPTConfig::validate checks them (after each
/// field's range). Each is one row of config.cc's table (the fields it reads, its test, the
/// library's message): the one list both the library's messages and the CLI's, which name the
/// user's options (cli/config_messages.h), are made from.
enum class ConfigRule {
  head_divides_embd,     // n_head divides n_embd: head_dim = n_embd / n_head
  rope_even_head_dim,    // rope rotates channel pairs within a head: head_dim is even
  sinusoidal_even_embd,  // the sinusoidal table pairs sin and cos channels: n_embd is even
  parameter_limit,       // at most limits::max_parameters parameters
};

/// A GPT-2 shaped model: n_layer pre-LayerNorm blocks of n_head-head causal self-attention
/// and a 4x MLP, embedding width n_embd, vocabulary vocab_size, context block_size tokens.
struct GPTConfig {
  int64_t vocab_size = 50257;
  int64_t block_size = 1024;
  int64_t n_layer = 12;
  int64_t n_head = 12;
  int64_t n_embd = 768;
  double dropout = 0.0;
  bool bias = true;  // biases in Linear and LayerNorm, as GPT-2
  PosEncoding pos_encoding = PosEncoding::learned;

  bool operator==(const GPTConfig&) const = default;

  /// The table of fields (gpt/io/fields.h): v(Field{member, name = JSON key, CLI flag, help,
  /// range, traits}) once per field, in the JSON's order. validate(), the checkpoint's JSON, the
  /// CLI's options (over a preset: ConfigOverrides) and the tests walk it; a new field is one row.
  /// kKeepsWeights marks the fields train --init-from may be given (no weight depends on them).
  template <class V>
  static void for_each_field(V&& v) {
    using C = GPTConfig;
    v(Field(&C::vocab_size, "vocab_size", "--vocab-size", "vocabulary size V", limits::vocab_size));
    v(Field(&C::block_size, "block_size", "--block-size", "context length in tokens",
            limits::block_size, kKeepsWeights));
    v(Field(&C::n_layer, "n_layer", "--n-layer", "number of transformer blocks", limits::n_layer));
    v(Field(&C::n_head, "n_head", "--n-head", "attention heads per block", limits::n_head,
            kKeepsWeights));
    v(Field(&C::n_embd, "n_embd", "--n-embd", "embedding width C", limits::n_embd));
    v(Field(&C::dropout, "dropout", "--dropout", "dropout probability", limits::below_one,
            kKeepsWeights));
    v(Field(&C::bias, "bias", "--no-bias", "no biases in Linear and LayerNorm", AnyValue{}));
    v(Field(&C::pos_encoding, "pos_encoding", "--pos-encoding",
            "learned (GPT-2), sinusoidal or rope", Choices{kPosEncodingNames}));
  }

  /// head_dim = n_embd / n_head.
  int64_t head_dim() const { return n_embd / n_head; }
  /// The number of trainable parameters of the GPT this config builds (wte, wpe when learned,
  /// n_layer blocks, ln_f; the LM head is tied to wte), computed from the sizes alone, before
  /// anything is allocated. Throws std::overflow_error if the count does not fit int64_t.
  int64_t num_parameters() const;
  /// The first rule between fields (ConfigRule, in its order) this config breaks, or nullopt when
  /// it keeps them all. Expects each field in its range (validate_fields): within the ranges the
  /// parameter count cannot overflow.
  std::optional<ConfigRule> broken_rule() const;
  /// Throws std::invalid_argument naming the first bad field: a value outside its range in the
  /// table (stated in the message: sizes as in gpt/model/field_ranges.h, dropout in [0, 1)), or,
  /// as ConfigRuleError, the first broken rule between fields (broken_rule): n_head not dividing
  /// n_embd, an odd head_dim with rope or n_embd with sinusoidal, or more than
  /// limits::max_parameters parameters in all.
  void validate() const;
};

/// The fields (GPTConfig's table names) whose values decide `rule` for `config`, in the table's
/// order: {n_head, n_embd}; {n_head, n_embd, pos_encoding}; {n_embd, pos_encoding}; {vocab_size,
/// block_size (only where positions are learned: wpe), n_layer, n_embd}.
std::vector<std::string> rule_fields(ConfigRule rule, const GPTConfig& config);

/// The library's message for `config` breaking `rule`, naming the fields by their names
/// ("GPTConfig: n_head 3 must divide n_embd 1024 (head_dim = n_embd / n_head)").
std::string rule_message(ConfigRule rule, const GPTConfig& config);

/// What GPTConfig::validate throws for a broken rule between fields: std::invalid_argument with
/// rule_message, carrying the rule and the config it was found in, so that a front end can say
/// it in its own words (the CLI names its options and where the other values came from). A
/// caller that adds context (a file's name) keeps the rule with std::throw_with_nested.
class ConfigRuleError : public std::invalid_argument {
 public:
  ConfigRuleError(ConfigRule rule, const GPTConfig& config)
      : std::invalid_argument(rule_message(rule, config)), rule_(rule), config_(config) {}
  /// The rule broken.
  ConfigRule rule() const { return rule_; }
  /// The config that breaks it.
  const GPTConfig& config() const { return config_; }

 private:
  ConfigRule rule_;
  GPTConfig config_;
};

/// The teaching and reference presets:
///   femto: 1 layer, 1 head, n_embd 2, block 8      (the lecture's smallest, 224 params at V = 65)
///   pico:  3 layers, 3 heads, n_embd 6, block 8    (1,980 params at V = 65)
///   nano:  4 layers, 4 heads, n_embd 128, block 64 (nanoGPT's CPU config)
///   gpt2:  12 layers, 12 heads, n_embd 768, block 1024, vocab 50257 (GPT-2 small, 124M)
/// vocab_size is the tokenizer's and is set by the caller except for gpt2.
/// Throws std::invalid_argument for an unknown name, listing the presets.
GPTConfig preset(const std::string& name);

/// T, the length of the sequences a model trains on: the training option block_size
/// (`train --block-size`, TrainOptions::block_size), or the model's own block_size when that
/// option is 0. Any T up to the model's block_size trains the same weights (the learned position
/// embeddings past T are simply not used).
inline int64_t sequence_length(int64_t block_size_option, const GPTConfig& model) {
  return block_size_option > 0 ? block_size_option : model.block_size;
}

/// The presets' names, in order ("femto", "pico", "nano", "gpt2"): the list the CLI checks
/// --preset against and shows in --help.
std::vector<std::string> preset_names();

/// A preset and the fields a user sets over it (the CLI's --preset, --n-layer, ...): a config
/// as asked for before the tokenizer fixes vocab_size. build_config (language_model.h) makes
/// the GPTConfig. Any field of GPTConfig's table can be overridden, with no code of its own.
struct ConfigOverrides {
  std::string preset = "pico";
  GPTConfig values;             // the values of the overridden fields (the others are unread)
  std::set<std::string> given;  // the names (GPTConfig's table) of the overridden fields

  /// Overrides the field `member` with `value`.
  template <class T>
  ConfigOverrides& set(T GPTConfig::*member, T value) {
    values.*member = value;
    GPTConfig::for_each_field([&](const auto& f) {
      if constexpr (std::is_same_v<typename std::decay_t<decltype(f)>::Type, T>)
        if (f.member == member) given.insert(f.name);
    });
    return *this;
  }
  /// Whether the field named `name` (its JSON key) is overridden.
  bool has(const std::string& name) const { return given.count(name) > 0; }
  /// `config` with the overridden fields replaced.
  GPTConfig applied_to(GPTConfig config) const {
    GPTConfig::for_each_field([&](const auto& f) {
      if (has(f.name)) config.*f.member = values.*f.member;
    });
    return config;
  }
};

}  // namespace attograd::gpt
