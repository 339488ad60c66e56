#include "gpt/model/config.h"

#include <stdexcept>

#include "autograd/size_math.h"
#include "gpt/model/field_ranges.h"
#include "nn/io/utf8.h"

namespace attograd::gpt {

const char* pos_encoding_name(PosEncoding p) { return choice_name(p, Choices{kPosEncodingNames}); }

PosEncoding parse_pos_encoding(const std::string& name) {
  std::vector<std::string> names;
  for (const char* n : kPosEncodingNames) {
    if (name == n) return static_cast<PosEncoding>(names.size());
    names.push_back(n);
  }
  throw std::invalid_argument("unknown positional encoding '" + name + "' (expected " +
                              join_names(names) + ")");
}

int64_t GPTConfig::num_parameters() const {
  auto mul = [](int64_t a, int64_t b) { return checked_mul(a, b, "GPTConfig::num_parameters"); };
  auto add = [](int64_t a, int64_t b) { return checked_add(a, b, "GPTConfig::num_parameters"); };
  const int64_t C = n_embd, with_bias = bias ? 1 : 0;
  // Mirrors GPT's constructor (tests/gpt/model/gpt2_test.cc compares the two for every preset).
  const int64_t layer_norm = mul(C, 1 + with_bias);  // weight (C), bias (C)
  auto linear = [&](int64_t in, int64_t out) { return add(mul(in, out), mul(out, with_bias)); };
  const int64_t attn = add(linear(C, mul(3, C)), linear(C, C));         // c_attn, c_proj
  const int64_t mlp = add(linear(C, mul(4, C)), linear(mul(4, C), C));  // c_fc, c_proj
  const int64_t block = add(add(mul(2, layer_norm), attn), mlp);        // ln_1, attn, ln_2, mlp
  int64_t n = mul(vocab_size, C);                                       // wte (V, C)
  if (pos_encoding == PosEncoding::learned) n = add(n, mul(block_size, C));  // wpe (block_size, C)
  return add(add(n, mul(n_layer, block)), layer_norm);  // h.0 .. h.{n_layer-1}, ln_f
}

namespace {

// GPTConfig's rules between fields, one row each, in the order they are checked: validate(),
// broken_rule(), rule_fields() and rule_message() read this table only.
struct RuleRow {
  ConfigRule rule;
  bool (*broken)(const GPTConfig&);
  std::vector<std::string> (*fields)(const GPTConfig&);
  std::string (*message)(const GPTConfig&);
};

std::string str(int64_t v) { return std::to_string(v); }

const RuleRow kRules[] = {
    {ConfigRule::head_divides_embd, [](const GPTConfig& c) { return c.n_embd % c.n_head != 0; },
     [](const GPTConfig&) {
       return std::vector<std::string>{"n_head", "n_embd"};
     },
     [](const GPTConfig& c) {
       return "n_head " + str(c.n_head) + " must divide n_embd " + str(c.n_embd) +
              " (head_dim = n_embd / n_head)";
     }},
    // RoPE rotates channel pairs (i, i + head_dim / 2) within each head.
    {ConfigRule::rope_even_head_dim,
     [](const GPTConfig& c) {
       return c.pos_encoding == PosEncoding::rope && c.head_dim() % 2 != 0;
     },
     [](const GPTConfig&) {
       return std::vector<std::string>{"n_head", "n_embd", "pos_encoding"};
     },
     [](const GPTConfig& c) { return "rope needs an even head_dim, got " + str(c.head_dim()); }},
    {ConfigRule::sinusoidal_even_embd,
     [](const GPTConfig& c) {
       return c.pos_encoding == PosEncoding::sinusoidal && c.n_embd % 2 != 0;
     },
     [](const GPTConfig&) {
       return std::vector<std::string>{"n_embd", "pos_encoding"};
     },
     [](const GPTConfig&) {
       return std::string("sinusoidal encodings pair sin/cos channels, so n_embd must be even");
     }},
    // Within the fields' ranges the count cannot overflow; it can still be far too large.
    {ConfigRule::parameter_limit,
     [](const GPTConfig& c) { return c.num_parameters() > limits::max_parameters; },
     [](const GPTConfig& c) {
       if (c.pos_encoding != PosEncoding::learned)
         return std::vector<std::string>{"vocab_size", "n_layer", "n_embd"};
       return std::vector<std::string>{"vocab_size", "block_size", "n_layer", "n_embd"};  // wpe
     },
     [](const GPTConfig& c) {
       return "n_layer " + str(c.n_layer) + ", n_embd " + str(c.n_embd) + ", vocab_size " +
              str(c.vocab_size) + " make " + str(c.num_parameters()) +
              " parameters, more than the limit of " + str(limits::max_parameters) +
              "; choose a smaller model";
     }},
};

const RuleRow& row_of(ConfigRule rule) {
  for (const RuleRow& r : kRules)
    if (r.rule == rule) return r;
  throw std::logic_error("GPTConfig: no row for this rule");
}

}  // namespace

std::optional<ConfigRule> GPTConfig::broken_rule() const {
  for (const RuleRow& r : kRules)
    if (r.broken(*this)) return r.rule;
  return std::nullopt;
}

void GPTConfig::validate() const {
  validate_fields(*this, "GPTConfig");  // each field in its range; then the rules between them
  if (const auto rule = broken_rule()) throw ConfigRuleError(*rule, *this);
}

std::vector<std::string> rule_fields(ConfigRule rule, const GPTConfig& config) {
  return row_of(rule).fields(config);
}

std::string rule_message(ConfigRule rule, const GPTConfig& config) {
  return "GPTConfig: " + row_of(rule).message(config);
}

namespace {

// The presets, one row each: preset() and preset_names() read this list only.
struct Preset {
  const char* name;
  int64_t n_layer, n_head, n_embd, block_size, vocab_size;
};
constexpr Preset kPresets[] = {
    {"femto", 1, 1, 2, 8, 65},
    {"pico", 3, 3, 6, 8, 65},
    {"nano", 4, 4, 128, 64, 65},
    {"gpt2", 12, 12, 768, 1024, 50257},  // GPT-2 small as released (Radford et al. 2019)
};

}  // namespace

GPTConfig preset(const std::string& name) {
  for (const Preset& p : kPresets) {
    if (name != p.name) continue;
    GPTConfig c;
    c.n_layer = p.n_layer, c.n_head = p.n_head, c.n_embd = p.n_embd;
    c.block_size = p.block_size, c.vocab_size = p.vocab_size;
    return c;
  }
  throw std::invalid_argument("unknown preset '" + nn::escape_controls(name.substr(0, 40)) +
                              "' (expected " + join_names(preset_names()) + ")");
}

std::vector<std::string> preset_names() {
  std::vector<std::string> names;
  for (const Preset& p : kPresets) names.emplace_back(p.name);
  return names;
}

}  // namespace attograd::gpt
