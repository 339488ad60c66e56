// `attograd train --config FILE` (gpt/train/run_config.h) through the real binary: the file's
// values under the flags, the effective config the run writes (run.json), and the file's errors.
// That run.json repeats a run, and the resume rules, are run_config_test's (in-process).
#define BOOST_TEST_MODULE config_file
#include <boost/test/unit_test.hpp>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "gpt/train/run_config.h"
#include "tests/cli/cli_run.h"

using namespace attograd::testing;

namespace {

// A small run's settings: pico, 6 steps of 4 sequences, one evaluation at the end.
std::string small_config(const std::string& corpus) {
  return R"({"run": {"corpus": ")" + corpus + R"(", "threads": 1},
  "model": {"preset": "pico", "n_embd": 12},
  "train": {"max_steps": 6, "batch_size": 4, "warmup_steps": 2, "eval_interval": 0,
            "eval_iters": 1, "log_interval": 2}})";
}

}  // namespace

BOOST_AUTO_TEST_CASE(flags_override_the_file_and_the_effective_config_is_written) {
  const TempDir dir("config_file");
  const std::string corpus = write_corpus(dir);
  const std::string config = dir.file("c.json", small_config(corpus));
  const auto r = run_cli("train --config " + config + " --steps 4 --out " + (dir / "a"));
  BOOST_TEST_INFO(r.out);
  BOOST_REQUIRE(r.exit_code == 0);
  BOOST_TEST(contains(r.out, "step 4/4 | loss"));          // --steps over the file's 6
  BOOST_TEST(contains(r.out, "batch 4 x 8 tokens"));       // the file's batch_size
  BOOST_TEST(contains(r.out, "n_embd 12, block_size 8"));  // the file's n_embd over pico
  // Every setting, after the file and the flags.
  const attograd::gpt::RunConfig written = attograd::gpt::read_run_config(dir / "a/run.json");
  BOOST_TEST(written.request.options.max_steps == 4);
  BOOST_TEST(written.request.options.batch_size == 4);
  BOOST_TEST(written.request.options.learning_rate == attograd::gpt::TrainOptions().learning_rate);
  BOOST_TEST(written.train_given.count("beta2") == 1u);  // given or not, every row
  BOOST_TEST(written.request.config.values.n_embd == 12);
  BOOST_TEST(written.request.config.values.n_layer == 3);
  BOOST_TEST(written.request.config.preset == "pico");
  BOOST_TEST(*written.request.out_dir == dir / "a");
  BOOST_TEST(*written.request.tokenizer == "char");
  BOOST_TEST(*written.request.corpus == corpus);
}

BOOST_AUTO_TEST_CASE(a_bad_file_is_refused_with_the_key_named) {
  const TempDir dir("config_file");
  const std::string corpus = write_corpus(dir);
  const std::vector<std::pair<std::string, std::string>> cases = {
      {R"({"train": {"bach_size": 4}})",
       "\"train\" has no key 'bach_size' (did you mean 'batch_size'?)"},
      {R"({"train": {"batch_size": 0}})",
       "train: batch_size (--batch-size) is 0, expected an integer in [1, 65536]"},
      {R"({"model": {"n_layer": 2.5}})", "model: n_layer (--n-layer) is 2.5, expected an integer"},
      {R"({"train": )", "is not valid JSON"},
      // A NUL in a key is printed as its escape, and the message goes on after it.
      {R"({"train": {"bach\u0000size": 4}})",
       "\"train\" has no key 'bach\\u0000size' (did you mean 'batch_size'?); its keys are"},
      // So is a C1 control character (U+0085, NEL), which JSON may hold raw and a terminal
      // would take as a line break.
      {"{\"train\": {\"bach\u0085size\": 4}}",
       "\"train\" has no key 'bach\\u0085size'; its keys are"},
      // A NUL in a path ended it early where it was opened: another file was read.
      {R"({"run": {"corpus": "/tmp/corpus.txt\u0000junk"}})",
       R"(run: corpus (--corpus) is "/tmp/corpus.txt\u0000junk", expected a string without )"
       "control characters"},
      // Keys and sections named in the reader's own messages are escaped, and values too.
      {R"({"train": {"a\u0000b": 1, "a\u0000b": 2}})", "has the key 'a\\u0000b' twice"},
      {R"({"tra\u0000in": {}})", "has no section 'tra\\u0000in'"},
      {"{\"model\": {\"pos_encoding\": \"r\u0085ope\"}}",
       "model: pos_encoding (--pos-encoding) is \"r\\u0085ope\", expected"},
      // A long value is cut, never inside a character: 55 'a' then 'é' (2 bytes) at 56-57.
      {"{\"train\": {\"batch_size\": \"" + std::string(55, 'a') + "\u00e9\u00e9\"}}",
       "batch_size (--batch-size) is \"" + std::string(55, 'a') + "...,"},
  };
  for (const auto& [text, message] : cases) {
    const auto r = run_cli("train --config " + dir.file("bad.json", text) + " --out " +
                           (dir / "never") + " --corpus " + corpus);
    BOOST_TEST_CONTEXT(text << "\n" << r.out) {
      BOOST_TEST(r.exit_code == 2);
      BOOST_TEST(contains(r.out, message));
    }
  }
  // Over the 1 MiB limit (a sparse file): a config is held in memory, but has no token ids
  // (issue 31, kind 14: the corpus's message was used).
  const std::string huge = dir.file("huge.json", "");
  std::filesystem::resize_file(huge, 2'000'000);
  const auto too_big = run_cli("train --config " + huge + " --out " + (dir / "never"));
  BOOST_TEST(too_big.exit_code == 2);
  BOOST_TEST(too_big.out ==
             "attograd: error: config file " + huge +
                 " is 2,000,000 bytes, over the 1,048,576-byte limit for a config "
                 "file (it is held in memory); use a smaller file or a part of it\n");
  const auto missing = run_cli("train --config " + (dir / "none.json"));
  BOOST_TEST(missing.exit_code == 2);
  BOOST_TEST(contains(missing.out, "config file " + (dir / "none.json") + " does not exist"));
  BOOST_TEST(!std::filesystem::exists(dir / "never"));
}
