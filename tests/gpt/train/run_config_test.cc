// gpt/train/run_config.h: a training run's config file read strictly through the three field
// tables, laid under the command line, written back and read again; and the run.json a run
// writes (gpt::start, in-process as `attograd train --config` runs it) repeating the run.
#define BOOST_TEST_MODULE run_config
#include <boost/test/unit_test.hpp>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "gpt/model/open_model.h"
#include "gpt/train/run_config.h"
#include "tests/gpt/train/train_run.h"
#include "tests/test_util.h"

using namespace attograd::gpt;
using namespace attograd::testing;  // expect_throw_with, TempDir, train_to_end, read_file

namespace {

const char* const kFile = R"({
  "run": {"corpus": "shakespeare", "tokenizer": "char", "model": "gpt", "init_seed": 7,
          "threads": 1},
  "model": {"preset": "nano", "n_layer": 2, "dropout": 0.25, "bias": false,
            "pos_encoding": "rope"},
  "train": {"max_steps": 500, "batch_size": 16, "learning_rate": 0.003, "seed": 18446744073709551615}
})";

// Parses `text`, expecting std::invalid_argument with `needle` in its message.
void refused(const std::string& text, const std::string& needle) {
  BOOST_TEST_CONTEXT(text) {
    expect_throw_with<std::invalid_argument>(
        [&] { parse_run_config(text, "config file 'c.json'"); }, needle);
  }
}

// A small run on "to be or not to be" (200 lines): pico with n_embd 12, 6 steps of 4 sequences,
// one evaluation at the end; the same settings as config_file_test's through the binary.
RunConfig small_run(const TempDir& dir) {
  std::string text;
  for (int i = 0; i < 200; ++i) text += "to be or not to be, that is the question.\n";
  return parse_run_config(
      R"({"run": {"corpus": ")" + dir.file("corpus.txt", text) + R"(", "threads": 1},
          "model": {"preset": "pico", "n_embd": 12}, "train": {"max_steps": 6, "batch_size": 4,
          "warmup_steps": 2, "eval_interval": 0, "eval_iters": 1, "log_interval": 2}})",
      "c.json");
}

// The flags of `train --out <out>` (and --resume), to lay over a file as the CLI does.
RunConfig out_flag(const std::string& out, bool resume = false) {
  RunConfig flags;
  flags.request.out_dir = out;
  flags.request.resume = resume;
  flags.run_given = {"out_dir"};
  if (resume) flags.run_given.insert("resume");
  return flags;
}

// The loss column of a train_log.csv (step,loss,lr,grad_norm,tokens_per_s): every step's loss
// as the log prints it.
std::vector<std::string> losses(const std::string& log) {
  std::vector<std::string> out;
  std::istringstream lines(log);
  std::string line;
  std::getline(lines, line);  // the header
  while (std::getline(lines, line)) {
    const size_t a = line.find(','), b = line.find(',', a + 1);
    out.push_back(line.substr(a + 1, b - a - 1));
  }
  return out;
}

// The parameters of the checkpoint in a run directory, as doubles.
std::vector<double> weights(const std::string& dir) {
  return open_checkpoint(dir).model->arena().params().to_vector();
}

}  // namespace

BOOST_AUTO_TEST_CASE(each_section_sets_its_tables_rows_and_says_which) {
  const RunConfig c = parse_run_config(kFile, "c.json");
  BOOST_TEST(*c.request.corpus == "shakespeare");
  BOOST_TEST(*c.request.tokenizer == "char");
  BOOST_TEST(c.request.init_seed == 7u);
  BOOST_TEST(c.request.threads == 1);
  BOOST_TEST(!c.request.out_dir.has_value());  // absent: the default
  BOOST_TEST(c.preset_given);
  BOOST_TEST(c.request.config.preset == "nano");
  BOOST_TEST(c.request.config.values.n_layer == 2);
  BOOST_TEST(c.request.config.values.dropout == 0.25);
  BOOST_TEST(!c.request.config.values.bias);
  BOOST_TEST((c.request.config.values.pos_encoding == PosEncoding::rope));
  BOOST_TEST(c.request.options.max_steps == 500);
  BOOST_TEST(c.request.options.batch_size == 16);
  BOOST_TEST(c.request.options.learning_rate == 0.003);
  BOOST_TEST(c.request.options.seed == 18446744073709551615u);
  BOOST_TEST(c.request.options.warmup_steps == TrainOptions().warmup_steps);  // absent: default
  const std::set<std::string> run{"corpus", "tokenizer", "model", "init_seed", "threads"};
  const std::set<std::string> model{"n_layer", "dropout", "bias", "pos_encoding"};
  const std::set<std::string> train{"max_steps", "batch_size", "learning_rate", "seed"};
  BOOST_TEST(c.run_given == run, boost::test_tools::per_element());
  BOOST_TEST(c.request.config.given == model, boost::test_tools::per_element());
  BOOST_TEST(c.train_given == train, boost::test_tools::per_element());
  // An empty file is every default.
  const RunConfig none = parse_run_config("{}", "c.json");
  BOOST_TEST(none.run_given.empty());
  BOOST_TEST(!none.preset_given);
  BOOST_TEST((none.request.options == TrainOptions()));
}

BOOST_AUTO_TEST_CASE(bad_files_are_refused_naming_the_key_and_the_fix) {
  refused("{\"train\": {\"bach_size\": 8}}",
          "config file 'c.json': \"train\" has no key 'bach_size' (did you mean 'batch_size'?)");
  refused("{\"trian\": {}}", "config file 'c.json' has no section 'trian' (did you mean 'train'?)");
  // A flag's own name is answered with its key, however far the spellings are apart.
  refused("{\"train\": {\"lr\": 0.001}}",
          "\"train\" has no key 'lr' (did you mean 'learning_rate'?)");
  refused("{\"model\": {\"no_bias\": true}}", "has no key 'no_bias' (did you mean 'bias'?)");
  refused("{\"run\": {\"out\": \"x\"}}", "has no key 'out' (did you mean 'out_dir'?)");
  refused("{\"train\": {\"max_steps\": 5, \"max_steps\": 6}}", "has the key 'max_steps' twice");
  refused("{\"train\": {\"max_steps\": 5,}}", "is not valid JSON");
  refused("[1, 2]", "is [1,2], not a JSON object with the sections run, model and train");
  refused("{\"train\": 5}", "the section \"train\" is 5, not a JSON object of settings");
  // Types and ranges, as the flags name them.
  refused("{\"train\": {\"batch_size\": 0}}",
          "config file 'c.json': train: batch_size (--batch-size) is 0, expected an integer in "
          "[1, 65536]");
  refused("{\"train\": {\"batch_size\": 8.0}}",
          "batch_size (--batch-size) is 8.0, expected an integer");
  refused("{\"train\": {\"batch_size\": \"8\"}}", "batch_size (--batch-size) is \"8\"");
  refused("{\"train\": {\"learning_rate\": 0}}",
          "learning_rate (--lr) is 0, expected a finite number > 0");
  refused("{\"model\": {\"dropout\": 1}}",
          "dropout (--dropout) is 1, expected a finite number in [0, 1)");
  refused("{\"model\": {\"pos_encoding\": \"alibi\"}}",
          "pos_encoding (--pos-encoding) is \"alibi\", expected learned, sinusoidal or rope");
  refused("{\"model\": {\"preset\": \"huge\"}}", "preset (--preset) is \"huge\", expected femto");
  refused("{\"model\": {\"vocab_size\": 65}}", "the vocabulary is the tokenizer's");
  refused("{\"run\": {\"tokenizer\": \"words\"}}",
          "tokenizer (--tokenizer) is \"words\", expected");
  refused("{\"run\": {\"out_dir\": \"a\\nb\"}}", "holds a control character");
  refused("{\"run\": {\"threads\": -1}}", "threads (--threads) is -1, expected an integer in [0, ");
  refused("{\"run\": {\"bias\": false}}", "\"run\" has no key 'bias'");
  // nanoGPT's configs are flat: a setting at the top level, or in another section, is named with
  // the section it belongs in.
  refused("{\"n_layer\": 2}",
          "config file 'c.json': 'n_layer' is a setting of the \"model\" section, not a section: "
          "write {\"model\": {\"n_layer\": ...}}");
  refused("{\"learning_rate\": 0.001}", "'learning_rate' is a setting of the \"train\" section");
  refused("{\"model\": {\"learning_rate\": 0.001}}",
          "\"model\" has no key 'learning_rate': it is a setting of \"train\" "
          "({\"train\": {\"learning_rate\": ...}})");
  refused("{\"train\": {\"out_dir\": \"x\"}}", "it is a setting of \"run\"");
  // What to do with the run directory is said on each command line, never in a file.
  refused("{\"run\": {\"resume\": true}}", "\"run\" has no key 'resume'");
  refused("{\"run\": {\"overwrite\": true}}", "\"run\" has no key 'overwrite'");
  // Rows the run sets itself have no key either.
  refused("{\"train\": {\"corpus_sha256\": \"00\"}}", "\"train\" has no key 'corpus_sha256'");
}

BOOST_AUTO_TEST_CASE(a_missing_file_is_named) {
  const TempDir dir("run_config");
  expect_throw_with<std::invalid_argument>(
      [&] { read_run_config(dir / "none.json"); },
      "config file " + (dir / "none.json") + " does not exist");
  expect_throw_with<std::invalid_argument>([&] { read_run_config(dir.path.string()); },
                                           "is a directory");
  const std::string file = dir.file("c.json", "{\"train\": {\"max_steps\": 9}}");
  BOOST_TEST(read_run_config(file).request.options.max_steps == 9);
  // A preset's name where a file is wanted: the flag that takes it is named.
  BOOST_REQUIRE(!std::filesystem::exists("pico"));
  expect_throw_with<std::invalid_argument>(
      [&] { read_run_config("pico"); },
      "config file pico does not exist; --config reads a JSON file of settings, and the model "
      "size pico is chosen with --preset pico");
  // A name with a newline and an escape byte is printed on one line, the bytes escaped, both
  // when the file is missing and when it is there but not JSON.
  const std::string odd = dir / "a\nb\x1b[2J.json";
  expect_throw_with<std::invalid_argument>(
      [&] { read_run_config(odd); },
      "config file " + (dir / "a\\nb\\x1b[2J.json") + " does not exist");
  dir.file("a\nb\x1b[2J.json", "not json");
  try {
    read_run_config(odd);
    BOOST_ERROR("a file that is not JSON was read");
  } catch (const std::invalid_argument& e) {
    const std::string what = e.what();
    BOOST_TEST(what.find("a\\nb\\x1b[2J.json") != std::string::npos, what);
    BOOST_TEST(what.find('\n') == std::string::npos, what);
    BOOST_TEST(what.find('\x1b') == std::string::npos, what);
  }
}

// The command line over the file: each row it gives wins, the file keeps the others.
BOOST_AUTO_TEST_CASE(flags_override_the_files_values) {
  const RunConfig file = parse_run_config(kFile, "c.json");
  RunConfig flags;
  flags.request.options.batch_size = 4;
  flags.train_given = {"batch_size"};
  flags.request.config.set(&GPTConfig::n_layer, int64_t{3});
  flags.request.config.preset = "pico";
  flags.preset_given = true;
  flags.request.out_dir = "runs/x";
  flags.run_given = {"out_dir"};
  flags.request.options.max_steps = 1;  // not given: the file's stays
  const RunConfig merged = overlay(file, flags);
  BOOST_TEST(merged.request.options.batch_size == 4);
  BOOST_TEST(merged.request.options.max_steps == 500);
  BOOST_TEST(merged.request.config.preset == "pico");
  BOOST_TEST(merged.request.config.values.n_layer == 3);
  BOOST_TEST(merged.request.config.values.dropout == 0.25);
  BOOST_TEST(*merged.request.out_dir == "runs/x");
  BOOST_TEST(*merged.request.corpus == "shakespeare");
  BOOST_TEST(merged.train_given.count("batch_size") == 1u);
  BOOST_TEST(merged.train_given.count("max_steps") == 1u);
  BOOST_TEST(merged.run_given.count("out_dir") == 1u);
  const RunRequest rq = merged.checked_request();
  BOOST_TEST(rq.options_given == merged.train_given, boost::test_tools::per_element());
}

// What a run writes is what it reads: every row of the written file comes back, given.
BOOST_AUTO_TEST_CASE(the_written_config_reads_back_the_same) {
  RunConfig c = parse_run_config(kFile, "c.json");
  c.request.out_dir = "runs/a b";
  c.request.keep_cr = true;
  c.run_given.insert({"out_dir", "keep_cr"});
  const std::string text = run_config_json(c);
  BOOST_TEST_INFO(text);
  const RunConfig back = parse_run_config(text, "written");
  BOOST_TEST(back.run_given == c.run_given, boost::test_tools::per_element());
  BOOST_TEST(back.train_given == c.train_given, boost::test_tools::per_element());
  BOOST_TEST(back.request.config.given == c.request.config.given, boost::test_tools::per_element());
  BOOST_TEST((back.request.config.values == c.request.config.values));
  BOOST_TEST(back.request.config.preset == "nano");
  BOOST_TEST((back.request.options == c.request.options));
  BOOST_TEST(*back.request.out_dir == "runs/a b");
  BOOST_TEST(*back.request.keep_cr);
  BOOST_TEST(back.request.init_seed == 7u);
  // In the tables' order, an enum by name.
  BOOST_TEST(text.find("\"pos_encoding\": \"rope\"") != std::string::npos);
  BOOST_TEST(text.find("\"preset\"") < text.find("\"n_layer\""));
  BOOST_TEST(text.find("\"max_steps\"") < text.find("\"batch_size\""));
}

// With --resume a file obeys the flags' rules: only resumable rows of the request, and no model.
BOOST_AUTO_TEST_CASE(resume_and_init_from_refuse_what_the_flags_refuse) {
  RunConfig c = parse_run_config(R"({"run": {"threads": 1, "init_seed": 3},
                                     "model": {"n_layer": 2}, "train": {"max_steps": 9}})",
                                 "c.json");
  c.request.resume = true;
  c.run_given.insert("resume");
  expect_throw_with<std::invalid_argument>(
      [&] { c.checked_request(); },
      "--resume continues a run with the model stored in its checkpoint; model.n_layer and "
      "run.init_seed of c.json cannot be given with it (remove them from the file; --resume "
      "--out DIR alone continues a run with the settings its checkpoint stored)");
  // The same rows from the command line are named by their flags; a flag over a file's row
  // takes it over, and the file's other rows keep their keys.
  RunConfig flags;
  flags.request.init_seed = 4;
  flags.run_given.insert("init_seed");
  flags.request.config.values.n_head = 1;
  flags.request.config.given.insert("n_head");
  RunConfig both = overlay(c, flags);
  expect_throw_with<std::invalid_argument>(
      [&] { both.checked_request(); },
      "checkpoint; --n-head, --init-seed and model.n_layer of c.json cannot be given with it");
  flags.request.resume = true;
  flags.run_given.insert("resume");
  flags.request.config.values.n_layer = 1;
  flags.request.config.given.insert("n_layer");
  both = overlay(parse_run_config(R"({"train": {"max_steps": 9}})", "c.json"), flags);
  expect_throw_with<std::invalid_argument>(
      [&] { both.checked_request(); },
      "checkpoint; --n-layer, --n-head and --init-seed cannot be given with it");
  // The keys are the tables' names: --lr's is learning_rate.
  refused(R"({"train": {"lr": 1}})", "\"train\" has no key 'lr'");
}

BOOST_AUTO_TEST_CASE(resumable_rows_pass_with_resume) {
  RunConfig c = parse_run_config(R"({"run": {"threads": 1, "corpus": "kjv"},
                                     "train": {"max_steps": 9, "learning_rate": 0.5}})",
                                 "c.json");
  c.request.resume = true;
  const RunRequest rq = c.checked_request();
  BOOST_TEST(rq.options_given.count("max_steps") == 1u);
  BOOST_TEST(rq.options_given.count("learning_rate") == 1u);  // compared with the checkpoint's
  c.request.resume = false;
  c.request.init_from = "gpt2.safetensors";
  c.run_given.insert({"init_from", "init_seed"});
  c.preset_given = true;
  expect_throw_with<std::invalid_argument>(
      [&] { c.checked_request(); },
      "--init-from takes the model from gpt2.safetensors; --preset and --init-seed cannot be "
      "given with it");
}

// The run.json a run writes, given back as its config, repeats the run: the same loss at every
// step and the same weights, bit for bit. (`train --config FILE --lr 0.02 --init-seed 5`.)
BOOST_AUTO_TEST_CASE(the_written_config_repeats_the_run) {
  const TempDir dir("run_config_repeat");
  const RunConfig file = small_run(dir);
  RunConfig flags = out_flag(dir / "a");
  flags.request.options.learning_rate = 0.02;
  flags.train_given = {"learning_rate"};
  flags.request.init_seed = 5;
  flags.run_given.insert("init_seed");
  train_to_end(overlay(file, flags).checked_request());
  train_to_end(overlay(read_run_config(dir / "a/run.json"), out_flag(dir / "b")).checked_request());
  const std::vector<std::string> a = losses(read_file(dir / "a/train_log.csv"));
  const std::vector<std::string> b = losses(read_file(dir / "b/train_log.csv"));
  BOOST_TEST(a.size() == 6u);
  BOOST_TEST(a == b, boost::test_tools::per_element());
  const std::vector<double> wa = weights(dir / "a"), wb = weights(dir / "b");
  BOOST_TEST(wa == wb, boost::test_tools::per_element());
  // Without the seed it would have been another run: another seed gives other weights.
  flags = out_flag(dir / "c");
  flags.request.options.learning_rate = 0.02;
  flags.train_given = {"learning_rate"};
  train_to_end(overlay(file, flags).checked_request());
  BOOST_TEST((weights(dir / "c") != wa));
}

// With resume a file obeys the rules of the flags: resumable rows change the run, a changed
// non-resumable option is refused (a model row: resume_and_init_from_refuse_what_the_flags_refuse);
// run.json follows the resumed run and keeps the model and seed of the first.
BOOST_AUTO_TEST_CASE(resume_takes_a_files_resumable_rows_only) {
  const TempDir dir("run_config_resume");
  const std::string out = dir / "a";
  train_to_end(overlay(small_run(dir), out_flag(out)).checked_request());
  std::string log;
  train_to_end(
      overlay(parse_run_config(R"({"train": {"max_steps": 8}})", "more.json"), out_flag(out, true))
          .checked_request(),
      &log);
  BOOST_TEST(log.find("resume  step 6") != std::string::npos);
  BOOST_TEST(log.find("step 8/8 | loss") != std::string::npos);
  const RunConfig written = read_run_config(out + "/run.json");
  BOOST_TEST(written.request.options.max_steps == 8);
  BOOST_TEST(written.request.config.values.n_embd == 12);  // the model, kept from the first run
  BOOST_TEST(written.request.init_seed == 1337u);
  const RunRequest lr = overlay(parse_run_config(R"({"train": {"learning_rate": 0.5}})", "lr.json"),
                                out_flag(out, true))
                            .checked_request();
  std::ostringstream refused;
  expect_throw_with<std::invalid_argument>([&] { start(lr, Communicator::world(), refused); },
                                           "learning_rate (--lr) is 0.01 in its checkpoint");
}
