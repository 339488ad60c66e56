#include "cli/config_messages.h"

#include <exception>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "gpt/model/field_ranges.h"
#include "gpt/model/language_model.h"

namespace attograd::cli {

ConfigOrigins::ConfigOrigins(const gpt::ConfigOverrides& overrides)
    : preset_(overrides.preset), options_(overrides.given) {}

ConfigOrigins& ConfigOrigins::in_file(const std::string& field, const std::string& file) {
  origins_[field] = {Kind::file, file};
  return *this;
}

ConfigOrigins& ConfigOrigins::fixed(const std::string& field, const std::string& owner) {
  origins_[field] = {Kind::fixed, owner};
  return *this;
}

ConfigOrigins& ConfigOrigins::others_fixed(const std::string& owner) {
  others_ = owner;
  return *this;
}

ConfigOrigins& ConfigOrigins::in_command(const std::string& command) {
  command_ = command;
  return *this;
}

ConfigOrigins& ConfigOrigins::accepting(std::function<bool(const gpt::GPTConfig&)> accepts) {
  accepts_ = std::move(accepts);
  return *this;
}

ConfigOrigins::Origin ConfigOrigins::of(const std::string& field) const {
  if (const auto it = origins_.find(field); it != origins_.end()) return it->second;
  if (options_.count(field)) return {Kind::option, ""};
  if (others_) return {Kind::fixed, *others_};
  return {Kind::preset, preset_};
}

namespace {

using gpt::ConfigRule;
using gpt::GPTConfig;
using Kind = ConfigOrigins::Kind;

std::string str(int64_t v) { return std::to_string(v); }

// A field of a config as a message names it: its table name, flag, value and origin.
struct Named {
  std::string field, flag, value;
  ConfigOrigins::Origin origin;
  bool given() const { return origin.kind == Kind::option || origin.kind == Kind::file; }
  // Whose value it is, when the user did not give it: "pico's ", "the tokenizer's ".
  std::string owner() const {
    if (origin.kind == Kind::preset) return origin.where + "'s ";
    if (origin.kind == Kind::fixed) return origin.where + " ";
    return "";
  }
  // With its value and origin: "--n-embd 1024", "model.n_embd 1024 of config file 'run.json'",
  // "pico's n_head 3", "the tokenizer's vocab_size 65".
  std::string full() const {
    if (origin.kind == Kind::option) return flag + " " + value;
    if (origin.kind == Kind::file) return "model." + field + " " + value + " of " + origin.where;
    return owner() + field + " " + value;
  }
  // Inside the rule: a value the user gave is named in front of the message, so its name is
  // enough there; the others are named with their value and origin.
  std::string in_rule() const { return given() ? field : full(); }
};

// The value of `field` in `c` as a message writes it.
std::string value_text(const GPTConfig& c, const std::string& field) {
  std::string text;
  GPTConfig::for_each_field([&](const auto& f) {
    if (field != f.name) return;
    using T = typename std::decay_t<decltype(f)>::Type;
    using R = typename std::decay_t<decltype(f)>::Range;
    const T& v = c.*f.member;
    if constexpr (std::is_same_v<T, bool>)
      text = v ? "true" : "false";
    else if constexpr (std::is_same_v<R, gpt::Choices>)
      text = gpt::choice_name(v, f.range);
    else
      text = std::to_string(v);
  });
  return text;
}

Named named(const GPTConfig& c, const std::string& field, const ConfigOrigins& origins) {
  Named n{field, "", value_text(c, field), origins.of(field)};
  GPTConfig::for_each_field([&](const auto& f) {
    if (field == f.name) n.flag = f.flag;
  });
  return n;
}

// The values of `field` nearest to its value in `c` (an integer: the nearest below and above in
// its range; a choice: every other one) with which the config breaks no rule and the command
// takes it (ConfigOrigins::accepts): what a fix can suggest. The rules are GPTConfig's own
// (broken_rule), not restated here.
std::vector<std::string> valid_values(const GPTConfig& c, const std::string& field,
                                      const ConfigOrigins& origins) {
  std::vector<std::string> values;
  GPTConfig::for_each_field([&](const auto& f) {
    if (field != f.name) return;
    using T = typename std::decay_t<decltype(f)>::Type;
    using R = typename std::decay_t<decltype(f)>::Range;
    GPTConfig t = c;
    const auto valid = [&](T v) {
      t.*f.member = v;
      return !t.broken_rule() && origins.accepts(t);
    };
    if constexpr (std::is_same_v<R, gpt::IntRange>) {
      const T v = c.*f.member;
      for (T x = v - 1; x >= f.range.min; --x)
        if (valid(x)) {
          values.push_back(str(x));
          break;
        }
      for (T x = v + 1; x <= f.range.max; ++x)
        if (valid(x)) {
          values.push_back(str(x));
          break;
        }
    } else if constexpr (std::is_same_v<R, gpt::Choices>) {
      for (size_t i = 0; i < f.range.names.size(); ++i)
        if (static_cast<T>(i) != c.*f.member && valid(static_cast<T>(i)))
          values.emplace_back(f.range.names[i]);
    }
  });
  return values;
}

// What the fix asks of field `n` for `rule` ("an --n-embd that is a multiple of 3"), before the
// values suggested.
std::string wanted(ConfigRule rule, const Named& n, const GPTConfig& c) {
  switch (rule) {
    case ConfigRule::head_divides_embd:
      // With rope the head_dim must be even too: the values suggested keep both rules.
      if (n.field == "n_embd" && c.pos_encoding == gpt::PosEncoding::rope)
        return "an " + n.flag + " that is a multiple of 2 x n_head = " + str(2 * c.n_head);
      if (n.field == "n_embd") return "an " + n.flag + " that is a multiple of " + str(c.n_head);
      if (n.field == "n_head") return "an " + n.flag + " that divides " + str(c.n_embd);
      break;
    case ConfigRule::rope_even_head_dim:
      if (n.field == "n_embd")
        return "an " + n.flag + " that is a multiple of 2 x n_head = " + str(2 * c.n_head);
      if (n.field == "n_head") return "an " + n.flag + " that leaves an even n_embd / n_head";
      break;
    case ConfigRule::sinusoidal_even_embd:
      if (n.field == "n_embd") return "an even " + n.flag;
      break;
    case ConfigRule::parameter_limit:
      return "a smaller " + n.flag;
  }
  return "another " + n.flag;
}

// The rule in words, the values the user gave named by their fields (the message names them in
// front), the others with their origin.
std::string statement(ConfigRule rule, const GPTConfig& c, const std::vector<Named>& fields) {
  const auto field = [&](const std::string& name) -> const Named& {
    for (const Named& n : fields)
      if (n.field == name) return n;
    throw std::logic_error("config_rule_message: the rule reads no field " + name);
  };
  switch (rule) {
    case ConfigRule::head_divides_embd:
      return field("n_head").in_rule() + " must divide " + field("n_embd").in_rule() +
             " (head_dim = n_embd / n_head)";
    case ConfigRule::rope_even_head_dim:
      return "rope rotates channel pairs, so head_dim = " + field("n_embd").in_rule() + " / " +
             field("n_head").in_rule() + " must be even, not " + str(c.head_dim());
    case ConfigRule::sinusoidal_even_embd:
      return "sinusoidal encodings pair sin and cos channels, so " + field("n_embd").in_rule() +
             " must be even";
    case ConfigRule::parameter_limit: {
      // The sizes the user did not give, grouped by origin: "with nano's n_layer 4 and
      // block_size 64 and the tokenizer's vocab_size 65".
      std::vector<std::string> owners, groups;
      std::vector<std::vector<std::string>> items;
      for (const Named& n : fields) {
        if (n.given()) continue;
        size_t i = 0;
        while (i < owners.size() && owners[i] != n.owner()) ++i;
        if (i == owners.size()) owners.push_back(n.owner()), items.emplace_back();
        items[i].push_back(n.field + " " + n.value);
      }
      for (size_t i = 0; i < owners.size(); ++i)
        groups.push_back(owners[i] + gpt::join_names(items[i], "and"));
      return (groups.empty() ? "" : "with " + gpt::join_names(groups, "and") + ", ") +
             "the model has " + str(c.num_parameters()) + " parameters, more than the limit of " +
             str(gpt::limits::max_parameters);
    }
  }
  return gpt::rule_message(rule, c);
}

}  // namespace

std::string config_rule_message(ConfigRule rule, const GPTConfig& c, const ConfigOrigins& origins) {
  std::vector<Named> fields;
  for (const std::string& f : gpt::rule_fields(rule, c)) fields.push_back(named(c, f, origins));
  // In front, the values the user gave; the fix changes those first, then the preset's.
  std::string options;  // as typed: "--n-embd 64 --n-head 5"
  std::vector<std::string> given;
  std::vector<const Named*> order;
  for (const Named& n : fields) {
    if (!n.given()) continue;
    if (n.origin.kind == Kind::option)
      options += (options.empty() ? "" : " ") + n.full();
    else
      given.push_back(n.full());
    order.push_back(&n);
  }
  if (!options.empty()) given.insert(given.begin(), options);
  for (const Named& n : fields)
    if (!n.given() && n.origin.kind != Kind::fixed) order.push_back(&n);
  std::string fix;
  for (const Named* n : order) {
    const std::vector<std::string> values = valid_values(c, n->field, origins);
    if (values.empty()) continue;  // no value of this option alone keeps every rule
    fix += fix.empty() ? "; choose " : ", or ";
    // A choice is named as it is given ("--pos-encoding learned"); a size by what it must be.
    if (n->field == "pos_encoding")
      fix += n->flag + " " + gpt::join_names(values);
    else
      fix += wanted(rule, *n, c) + " (e.g. " + gpt::join_names(values) + ")";
  }
  std::string front = origins.command();
  if (!given.empty()) front += (front.empty() ? "" : " ") + gpt::join_names(given, "and");
  return (front.empty() ? "" : front + ": ") + statement(rule, c, fields) + fix;
}

void throw_in_option_words(const std::exception& e, const ConfigOrigins& origins) {
  // A field the model kind does not read, given in a config file: named by its key and file, and
  // the fix is the file's ("--n-layer does not apply" sent the user looking for a flag never
  // typed).
  if (const auto* unused = dynamic_cast<const gpt::UnusedOverrideError*>(&e)) {
    const ConfigOrigins::Origin origin = origins.of(unused->field());
    if (origin.kind == Kind::file)
      throw std::invalid_argument(unused->said_of(
          "model." + unused->field() + " of " + origin.where, "remove the key from that file"));
    return;  // an option: the library's message names its flag
  }
  if (const auto* broken = dynamic_cast<const gpt::ConfigRuleError*>(&e)) {
    for (const std::string& f : gpt::rule_fields(broken->rule(), broken->config())) {
      const Kind kind = origins.of(f).kind;
      if (kind == Kind::option || kind == Kind::file)
        throw std::invalid_argument(config_rule_message(broken->rule(), broken->config(), origins));
    }
    return;  // no value the user gave: the library's message (with its file's name) says it
  }
  try {
    std::rethrow_if_nested(e);
  } catch (const std::exception& inner) {
    throw_in_option_words(inner, origins);
  } catch (...) {  // nested, but no std::exception: nothing to say in other words
  }
}

}  // namespace attograd::cli
