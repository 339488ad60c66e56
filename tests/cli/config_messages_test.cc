// cli/config_messages: a model config that breaks one of GPTConfig's rules (n_head divides n_embd,
// rope's even head_dim, sinusoidal's even n_embd, the parameter limit) is refused in the words of
// the options the user gave, with the values from elsewhere named by their origin (the preset, the
// tokenizer, a config file, a --hf-gpt2 file) and the fix: the whole line and the exit code,
// through the real binary, for each command that takes model options.
#define BOOST_TEST_MODULE config_messages
#include <boost/test/unit_test.hpp>
#include <filesystem>
#include <string>

#include "gpt/model/language_model.h"
#include "tests/cli/cli_run.h"

using namespace attograd::testing;

namespace {

// Runs `args` and checks that it exits 2 with exactly `message` as its one error, the last line
// (train first says which corpus it read).
void expect_refused(const std::string& args, const std::string& message) {
  const CliRun r = run_cli(args);
  const std::string line = "attograd: error: " + message + "\n";
  BOOST_TEST_CONTEXT("$ attograd " << args << "\n" << r.out) {
    BOOST_TEST(r.exit_code == 2);
    BOOST_TEST(r.out.ends_with(line));
    BOOST_TEST(r.out.find("error:") == r.out.size() - line.size() + 10);  // said once
  }
}

}  // namespace

// The issue's example: one value the user gave (--n-embd), the other the preset's.
BOOST_AUTO_TEST_CASE(a_preset_value_is_named_as_the_presets) {
  expect_refused("info --preset pico --n-embd 1024",
                 "--n-embd 1024: pico's n_head 3 must divide n_embd (head_dim = n_embd / n_head); "
                 "choose an --n-embd that is a multiple of 3 (e.g. 1023 or 1026), or an --n-head "
                 "that divides 1024 (e.g. 2 or 4)");
  expect_refused("info --preset pico --n-head 4",
                 "--n-head 4: n_head must divide pico's n_embd 6 (head_dim = n_embd / n_head); "
                 "choose an --n-head that divides 6 (e.g. 3 or 6), or an --n-embd that is a "
                 "multiple of 4 (e.g. 4 or 8)");
}

// Both values the user gave: both named in front, the fix offers either.
BOOST_AUTO_TEST_CASE(two_values_the_user_gave_are_both_named) {
  expect_refused("info --n-embd 64 --n-head 5",
                 "--n-head 5 --n-embd 64: n_head must divide n_embd (head_dim = n_embd / n_head); "
                 "choose an --n-head that divides 64 (e.g. 4 or 8), or an --n-embd that is a "
                 "multiple of 5 (e.g. 60 or 65)");
}

// rope and sinusoidal: the values suggested keep every rule (n_embd 8 is even but pico's 3 heads
// do not divide it, so 6 and 12), and another encoding is offered only where it is valid.
BOOST_AUTO_TEST_CASE(the_encodings_rules_suggest_values_that_keep_every_rule) {
  expect_refused("info --pos-encoding rope --n-embd 9",
                 "--n-embd 9 --pos-encoding rope: rope rotates channel pairs, so head_dim = n_embd "
                 "/ pico's n_head 3 must be even, not 3; choose an --n-embd that is a multiple of "
                 "2 x n_head = 6 (e.g. 6 or 12), or --pos-encoding learned");
  expect_refused("info --pos-encoding sinusoidal --n-embd 9",
                 "--n-embd 9 --pos-encoding sinusoidal: sinusoidal encodings pair sin and cos "
                 "channels, so n_embd must be even; choose an even --n-embd (e.g. 6 or 12), or "
                 "--pos-encoding learned");
}

// The parameter limit names the sizes that were not given by their origin and suggests only the
// options that alone can fix it (a smaller vocabulary cannot here).
BOOST_AUTO_TEST_CASE(the_parameter_limit_names_the_preset_sizes) {
  expect_refused("info --preset nano --n-embd 32768",
                 "--n-embd 32768: with nano's vocab_size 65, block_size 64 and n_layer 4, the "
                 "model has 51545604096 parameters, more than the limit of 20000000000; choose a "
                 "smaller --n-embd (e.g. 20408), or a smaller --n-layer (e.g. 1)");
}

// train: the same words after the corpus is read; vocab_size is the tokenizer's, which no option
// changes; a value from a config file is named by its key and file; a refused run leaves no
// directory.
BOOST_AUTO_TEST_CASE(train_names_its_options_the_tokenizer_and_the_config_file) {
  const TempDir dir("config_messages_train");
  const std::string corpus = write_corpus(dir), out = dir / "run";
  const std::string train = "train --corpus " + corpus + " --out " + out + " --steps 1 ";
  expect_refused(train + "--preset pico --n-embd 1024",
                 "--n-embd 1024: pico's n_head 3 must divide n_embd (head_dim = n_embd / n_head); "
                 "choose an --n-embd that is a multiple of 3 (e.g. 1023 or 1026), or an --n-head "
                 "that divides 1024 (e.g. 2 or 4)");
  BOOST_TEST(!std::filesystem::exists(out));
  // The sizes train suggests must also leave training room in this machine's memory, half of it
  // to spare (info's 20408 at the limit would need 320 GB): the largest n_embd that fits, so the
  // next multiple of nano's 4 heads does not, and no n_layer, since one layer of n_embd 32768
  // does not fit either.
  const CliRun limit = run_cli(train + "--preset nano --n-embd 32768");
  const std::string front =
      "attograd: error: --n-embd 32768: with the tokenizer's vocab_size 16 and nano's block_size "
      "64 and n_layer 4, the model has 51543998464 parameters, more than the limit of "
      "20000000000; choose a smaller --n-embd (e.g. ";
  BOOST_TEST_CONTEXT(limit.out) {
    BOOST_TEST(limit.exit_code == 2);
    const size_t at = limit.out.find(front);
    BOOST_REQUIRE(at != std::string::npos);
    const std::string rest = limit.out.substr(at + front.size());
    BOOST_TEST(rest.find(")\n") == rest.find(')'));  // the message ends there: no --n-layer
    const int64_t suggested = std::stoll(rest);
    const auto fits = [](int64_t n_embd) {
      attograd::gpt::GPTConfig c = attograd::gpt::preset("nano");
      c.vocab_size = 16;
      c.n_embd = n_embd;
      return attograd::gpt::fits_in_memory(c.num_parameters(), attograd::DType::f32,
                                           attograd::gpt::kSuggestedTrainingCopies);
    };
    BOOST_TEST(suggested % 4 == 0);
    BOOST_TEST(fits(suggested));
    BOOST_TEST(!fits(suggested + 4));
    BOOST_TEST(suggested < 20408);
  }
  const std::string config = dir.file("run.json", R"({"model": {"n_embd": 1024}})");
  expect_refused(train + "--config " + config,
                 "model.n_embd 1024 of config file '" + config +
                     "': pico's n_head 3 must divide n_embd (head_dim = n_embd / n_head); choose "
                     "an --n-embd that is a multiple of 3 (e.g. 1023 or 1026), or an --n-head "
                     "that divides 1024 (e.g. 2 or 4)");
  // A key the model kind does not read is named as the file gives it, and the fix is the file's;
  // the same field as an option keeps its flag.
  const std::string layers = dir.file("layers.json", R"({"model": {"n_layer": 2}})");
  expect_refused(train + "--model bigram --config " + layers,
                 "model.n_layer of config file '" + layers +
                     "' does not apply to --model bigram (a table of next-token logits: it reads "
                     "only --block-size); remove the key from that file, or train --model gpt");
  BOOST_TEST(!std::filesystem::exists(out));
  expect_refused(train + "--model bigram --n-layer 2",
                 "--n-layer does not apply to --model bigram (a table of next-token logits: it "
                 "reads only --block-size); drop it, or train --model gpt");
  // With --init-from the kind is the file's: the refusal names the file and offers no other
  // model, for a config file's key and for a flag alike.
  const std::string bigram = dir / "bigram";
  BOOST_REQUIRE(
      run_cli("train --corpus " + corpus + " --out " + bigram + " --steps 1 --model bigram")
          .exit_code == 0);
  const std::string rate = dir.file("rate.json", R"({"model": {"dropout": 0.1}})");
  const std::string why =
      " does not apply to --model bigram (a table of next-token logits: it reads only "
      "--block-size; the model in " +
      bigram + "/ckpt.safetensors is one); ";
  expect_refused(
      train + "--init-from " + bigram + " --config " + rate,
      "model.dropout of config file '" + rate + "'" + why + "remove the key from that file");
  expect_refused(train + "--init-from " + bigram + " --dropout 0.1", "--dropout" + why + "drop it");
  // The average model has one "head" of its own (no attention): not an option to suggest.
  expect_refused(train + "--model average --pos-encoding sinusoidal --n-embd 5",
                 "--n-embd 5 --pos-encoding sinusoidal: sinusoidal encodings pair sin and cos "
                 "channels, so n_embd must be even; choose an even --n-embd (e.g. 4 or 6), or "
                 "--pos-encoding learned");
}

// figure sinusoidal and rope draw the model's encodings, so the model's rules hold for them and
// are said the same way; an odd n_embd once drew a table the model refuses. Nothing is written.
BOOST_AUTO_TEST_CASE(figures_of_the_encodings_keep_the_models_rules) {
  const TempDir dir("config_messages_figure");
  const std::string out = dir / "figures";
  expect_refused("figure sinusoidal --n-embd 3 --out " + out,
                 "figure sinusoidal --n-embd 3: sinusoidal encodings pair sin and cos channels, so "
                 "n_embd must be even; choose an even --n-embd (e.g. 2 or 4)");
  expect_refused("figure rope --n-embd 6 --n-head 2 --out " + out,
                 "figure rope --n-head 2 --n-embd 6: rope rotates channel pairs, so head_dim = "
                 "n_embd / n_head must be even, not 3; choose an --n-head that leaves an even "
                 "n_embd / n_head (e.g. 1 or 3), or an --n-embd that is a multiple of 2 x n_head "
                 "= 4 (e.g. 4 or 8)");
  expect_refused("figure blocks --n-embd 7 --out " + out,
                 "figure blocks --n-embd 7: pico's n_head 3 must divide n_embd (head_dim = n_embd "
                 "/ n_head); choose an --n-embd that is a multiple of 3 (e.g. 6 or 9), or an "
                 "--n-head that divides 7 (e.g. 1 or 7)");
  BOOST_TEST(!std::filesystem::exists(out));
  BOOST_TEST(run_cli("figure sinusoidal --n-embd 4 --block-size 4 --out " + out).exit_code == 0);
}

// A fix never leads into the next refusal (a newcomer's check): a figure suggests only values its
// own limits take (heads draws at most 4 heads and n_embd 12: not --n-head 9 or 5, nor --n-embd
// 16), a model that does not read a size is not told to change it (the average model has no
// --n-layer), and with rope a multiple of n_head is not enough (9 heads pico's 3, odd head_dim).
BOOST_AUTO_TEST_CASE(a_suggested_value_passes_the_commands_own_checks) {
  expect_refused("figure heads --n-embd 9 --n-head 4 --out never",
                 "figure heads --n-head 4 --n-embd 9: n_head must divide n_embd (head_dim = n_embd "
                 "/ n_head); choose an --n-head that divides 9 (e.g. 3), or an --n-embd that is a "
                 "multiple of 4 (e.g. 8 or 12)");
  expect_refused("figure heads --n-embd 10 --out never",
                 "figure heads --n-embd 10: pico's n_head 3 must divide n_embd (head_dim = n_embd "
                 "/ n_head); choose an --n-embd that is a multiple of 3 (e.g. 9 or 12), or an "
                 "--n-head that divides 10 (e.g. 2)");
  expect_refused("figure rope --preset gpt2 --n-embd 1020 --out never",
                 "figure rope --n-embd 1020: rope rotates channel pairs, so head_dim = n_embd / "
                 "gpt2's n_head 12 must be even, not 85; choose an --n-embd that is a multiple of "
                 "2 x n_head = 24 (e.g. 1008), or an --n-head that leaves an even n_embd / n_head "
                 "(e.g. 10 or 15)");
  BOOST_TEST(!std::filesystem::exists("never"));
  expect_refused("info --preset pico --n-embd 7 --pos-encoding rope",
                 "--n-embd 7: pico's n_head 3 must divide n_embd (head_dim = n_embd / n_head); "
                 "choose an --n-embd that is a multiple of 2 x n_head = 6 (e.g. 6 or 12)");
  const TempDir dir("config_messages_average");
  const std::string corpus = write_corpus(dir);
  // The parameter limit counts the average model's own parameters (validate_for): n_embd 24,000
  // is 1.8 M of them, not the 20.7e9 of a GPT with pico's 3 layers it was refused as, and its
  // checkpoint reads back.
  const CliRun r =
      run_cli("train --model average --preset pico --n-embd 24000 --steps 1 --corpus " + corpus +
              " --out " + dir / "run");
  BOOST_TEST_CONTEXT(r.out) {
    BOOST_TEST(r.exit_code == 0);
    BOOST_TEST(r.out.find("20738736000") == std::string::npos);
  }
  const CliRun sampled =
      run_cli("sample --checkpoint " + dir / "run/ckpt.safetensors" + " --max-new-tokens 3");
  BOOST_TEST(sampled.exit_code == 0, sampled.out);
}
