// gpt/model/config: the rules between GPTConfig's fields (ConfigRule), in the order validate()
// checks them, each with the fields it reads and the library's message, thrown as
// ConfigRuleError so that a front end can say it in its own words (cli/config_messages.h).
#define BOOST_TEST_MODULE config
#include <boost/test/unit_test.hpp>
#include <stdexcept>
#include <string>
#include <vector>

#include "gpt/model/config.h"
#include "gpt/model/field_ranges.h"

using namespace attograd::gpt;

namespace {

// The ConfigRuleError validate() throws for `c`; fails the test when it throws none.
ConfigRuleError rule_error(const GPTConfig& c) {
  try {
    c.validate();
  } catch (const ConfigRuleError& e) {
    return e;
  }
  BOOST_FAIL("expected a ConfigRuleError");
  throw std::logic_error("unreachable");
}

GPTConfig pico_with(void (*change)(GPTConfig&)) {
  GPTConfig c = preset("pico");
  change(c);
  return c;
}

}  // namespace

// Each rule: broken_rule() names it, validate() throws it with the config and the library's
// message, which names fields and values only (a library user has no CLI options).
BOOST_AUTO_TEST_CASE(each_rule_is_reported_with_its_fields_and_the_library_message) {
  struct Case {
    GPTConfig config;
    ConfigRule rule;
    std::vector<std::string> fields;
    std::string message;
  };
  const std::vector<Case> cases = {
      {pico_with([](GPTConfig& c) { c.n_embd = 1024; }),
       ConfigRule::head_divides_embd,
       {"n_head", "n_embd"},
       "GPTConfig: n_head 3 must divide n_embd 1024 (head_dim = n_embd / n_head)"},
      {pico_with([](GPTConfig& c) { c.n_embd = 9, c.pos_encoding = PosEncoding::rope; }),
       ConfigRule::rope_even_head_dim,
       {"n_head", "n_embd", "pos_encoding"},
       "GPTConfig: rope needs an even head_dim, got 3"},
      {pico_with([](GPTConfig& c) { c.n_embd = 9, c.pos_encoding = PosEncoding::sinusoidal; }),
       ConfigRule::sinusoidal_even_embd,
       {"n_embd", "pos_encoding"},
       "GPTConfig: sinusoidal encodings pair sin/cos channels, so n_embd must be even"},
      {pico_with([](GPTConfig& c) { c.n_layer = 1024, c.n_embd = 4096, c.n_head = 16; }),
       ConfigRule::parameter_limit,
       {"vocab_size", "block_size", "n_layer", "n_embd"},
       "GPTConfig: n_layer 1024, n_embd 4096, vocab_size 65 make 206213263360 parameters, more "
       "than the limit of 20000000000; choose a smaller model"},
  };
  for (const Case& k : cases) {
    BOOST_TEST_CONTEXT(k.message) {
      BOOST_TEST((k.config.broken_rule() == k.rule));
      BOOST_TEST(rule_fields(k.rule, k.config) == k.fields, boost::test_tools::per_element());
      BOOST_TEST(rule_message(k.rule, k.config) == k.message);
      const ConfigRuleError e = rule_error(k.config);
      BOOST_TEST((e.rule() == k.rule));
      BOOST_TEST((e.config() == k.config));
      BOOST_TEST(std::string(e.what()) == k.message);
    }
  }
  for (const std::string& name : preset_names()) BOOST_TEST(!preset(name).broken_rule());
}

// The first rule broken is named: n_embd 9 with pico's 3 heads and rope breaks only rope's; with
// 4 heads the heads do not divide n_embd at all, which is said first.
BOOST_AUTO_TEST_CASE(the_first_broken_rule_is_the_one_named) {
  GPTConfig c = preset("pico");
  c.n_embd = 9, c.pos_encoding = PosEncoding::rope;
  BOOST_TEST((c.broken_rule() == ConfigRule::rope_even_head_dim));
  c.n_head = 4;
  BOOST_TEST((c.broken_rule() == ConfigRule::head_divides_embd));
}

// The parameter count reads block_size only where positions are learned (wpe).
BOOST_AUTO_TEST_CASE(the_parameter_limit_reads_block_size_only_for_learned_positions) {
  GPTConfig c = preset("pico");
  c.pos_encoding = PosEncoding::rope;
  BOOST_TEST(rule_fields(ConfigRule::parameter_limit, c) ==
                 (std::vector<std::string>{"vocab_size", "n_layer", "n_embd"}),
             boost::test_tools::per_element());
}

// A value outside its field's range is no rule between fields: a plain std::invalid_argument,
// checked before the rules.
BOOST_AUTO_TEST_CASE(a_range_error_comes_before_the_rules_and_is_no_rule_error) {
  GPTConfig c = preset("pico");
  c.n_head = 0;
  try {
    c.validate();
    BOOST_FAIL("expected std::invalid_argument");
  } catch (const ConfigRuleError&) {
    BOOST_FAIL("a range error is no ConfigRuleError");
  } catch (const std::invalid_argument& e) {
    BOOST_TEST(std::string(e.what()).find("n_head") != std::string::npos);
  }
}
