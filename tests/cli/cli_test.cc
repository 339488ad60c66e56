// The attograd CLI end to end: info's dimension exercise, a small train run and sampling from it,
// and clear errors for bad input. (The run's own logic is tested in-process: tests/gpt/train.)
#define BOOST_TEST_MODULE cli
#include <algorithm>
#include <boost/test/unit_test.hpp>
#include <cstdlib>
#include <filesystem>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "autograd/kernels/targets.h"
#include "tests/cli/cli_run.h"

using attograd::testing::contains;
using attograd::testing::read_file;
using attograd::testing::run_cli;
using attograd::testing::TempDir;
using attograd::testing::write_corpus;

namespace {

// Runs each (arguments, message) case: exit code 2 and the message in the output.
void expect_refused(const std::vector<std::pair<std::string, std::string>>& cases) {
  for (const auto& [args, message] : cases) {
    const auto r = run_cli(args);
    BOOST_TEST_CONTEXT(args << "\n" << r.out) {  // for both checks (BOOST_TEST_INFO is for one)
      BOOST_TEST(r.exit_code == 2);
      BOOST_TEST(contains(r.out, message));
    }
  }
}

}  // namespace

// The README's command table has one row per subcommand that `attograd --help` lists, and no
// other rows: a new command is documented where a reader looks for the list.
BOOST_AUTO_TEST_CASE(the_readme_command_table_lists_every_command) {
  const auto help = run_cli("--help");
  BOOST_TEST_INFO(help.out);
  BOOST_REQUIRE(help.exit_code == 0);
  const size_t at = help.out.find("\nSubcommands:\n");
  BOOST_REQUIRE(at != std::string::npos);
  std::set<std::string> commands;
  std::istringstream lines(help.out.substr(at + 14));
  for (std::string line; std::getline(lines, line) && line.starts_with("  ");) {
    if (line.size() < 3 || line[2] == ' ') continue;  // a description's second line
    std::istringstream words(line);
    std::string name;
    words >> name;
    commands.insert(name);
  }
  BOOST_TEST(commands.size() >= 9u);
  BOOST_TEST(commands.count("figure") == 1u);
  const std::string readme = read_file(std::string(ATTOGRAD_SOURCE_DIR) + "/README.md");
  const size_t table = readme.find("| command | what it does |");
  BOOST_REQUIRE(table != std::string::npos);
  std::set<std::string> rows;
  std::istringstream table_lines(readme.substr(table));
  std::string line;
  std::getline(table_lines, line);  // the header
  std::getline(table_lines, line);  // |---|---|
  while (std::getline(table_lines, line) && line.starts_with("| `"))
    rows.insert(line.substr(3, line.find('`', 3) - 3));
  BOOST_TEST(rows == commands, boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(info_counts_femto_and_pico) {
  const auto femto = run_cli("info --preset femto");
  BOOST_TEST_INFO(femto.out);
  BOOST_TEST(femto.exit_code == 0);
  BOOST_TEST(contains(femto.out, "total                                     224"));
  BOOST_TEST(contains(femto.out, "Q K^T / sqrt(HS)  (B, NH, T, T)    = (1, 1, 8, 8)"));
  const auto pico = run_cli("info --preset pico --T 5");
  BOOST_TEST(contains(pico.out, "total                                    1980"));
  BOOST_TEST(contains(pico.out, "Q, K, V in heads  (B, NH, T, HS)   = (1, 3, 5, 2)"));
  BOOST_TEST(contains(pico.out, "attention weights (B, NH, T, T)    = (1, 3, 5, 5)"));
  const auto bad = run_cli("info --preset pico --n-head 4");
  BOOST_TEST(bad.exit_code == 2);
  BOOST_TEST(contains(bad.out, "--n-head 4: n_head must divide pico's n_embd 6"));
  BOOST_TEST(run_cli("info --preset pico --T 9").exit_code == 2);
}

// The run itself (guards, resume, corpus checks) is tested in-process by
// tests/gpt/train/run_test.cc; here the command prints its progress and result, and sample reads
// what it wrote.
BOOST_AUTO_TEST_CASE(train_and_sample_end_to_end) {
  const TempDir dir("cli_test");
  const std::string corpus = write_corpus(dir), out = dir / "run";
  const std::string train =
      "train --preset pico --corpus " + corpus + " --out " + out +
      " --steps 40 --batch-size 8 --eval-interval 20 --eval-iters 2 --log-interval 10 --warmup 5";
  const auto r = run_cli(train);
  BOOST_TEST_INFO(r.out);
  BOOST_REQUIRE(r.exit_code == 0);
  BOOST_TEST(contains(r.out, "step 40/40 | loss"));
  BOOST_TEST(contains(r.out, "unigram baseline"));
  BOOST_TEST(std::filesystem::exists(out + "/ckpt.safetensors"));
  BOOST_TEST(std::filesystem::exists(out + "/train_log.csv"));

  const auto s = run_cli("sample --checkpoint " + out +
                         "/ckpt.safetensors --prompt \"to be\" --prompt \"the\" "
                         "--temperature 0 --temperature 1 --max-new-tokens 20");
  BOOST_TEST_INFO(s.out);
  BOOST_TEST(s.exit_code == 0);
  BOOST_TEST(contains(s.out, "=== prompt \"to be\" | temperature 0 (greedy) ==="));
  BOOST_TEST(contains(s.out, "=== prompt \"the\" | temperature 1 ==="));
  BOOST_TEST(contains(s.out, "tokens/s (KV cache on)"));
  // Greedy output is the same with and without the KV cache.
  const auto g1 =
      run_cli("sample --checkpoint " + out +
              "/ckpt.safetensors --prompt \"to be\" --temperature 0 --max-new-tokens 30");
  const auto g2 = run_cli(
      "sample --checkpoint " + out +
      "/ckpt.safetensors --prompt \"to be\" --temperature 0 --max-new-tokens 30 --no-kv-cache");
  BOOST_TEST(g1.out.substr(0, g1.out.find("tokens in")) ==
             g2.out.substr(0, g2.out.find("tokens in")));

  // --num-samples 3: three samples per prompt and temperature, the first the one a single
  // sample gives, the next ones drawn after it from the same stream (so different at T = 1).
  const std::string sample_to_be = "sample --checkpoint " + out +
                                   "/ckpt.safetensors --prompt \"to be\" --temperature 1 "
                                   "--max-new-tokens 30";
  const auto one = run_cli(sample_to_be);
  const auto three = run_cli(sample_to_be + " --num-samples 3");
  BOOST_TEST_INFO(three.out);
  BOOST_TEST(three.exit_code == 0);
  std::vector<std::string> samples;  // the text under each header
  const std::string header = "=== prompt \"to be\" | temperature 1";
  for (int n = 1; n <= 3; ++n) {
    const std::string h = header + " | sample " + std::to_string(n) + " of 3 ===\n";
    const size_t at = three.out.find(h);
    BOOST_REQUIRE(at != std::string::npos);
    samples.push_back(three.out.substr(at + h.size(), three.out.find("\n\n", at) - at - h.size()));
  }
  const size_t one_at = one.out.find(header + " ===\n") + header.size() + 5;
  BOOST_TEST(samples[0] == one.out.substr(one_at, one.out.find("\n\n", one_at) - one_at));
  BOOST_TEST(samples[1] != samples[0]);
  BOOST_TEST(samples[2] != samples[1]);
  BOOST_TEST(contains(three.out, "90 tokens in"));
  const auto none = run_cli(sample_to_be + " --num-samples 0");
  BOOST_TEST(none.exit_code == 2);
  BOOST_TEST(contains(none.out, "--num-samples: must be an integer in [1, "));

  const auto unknown = run_cli("sample --checkpoint " + out + "/ckpt.safetensors --prompt \"XYZ\"");
  BOOST_TEST(unknown.exit_code == 2);
  BOOST_TEST(contains(unknown.out, "'X' (U+0058)"));
  const auto negative =
      run_cli("sample --checkpoint " + out + "/ckpt.safetensors --temperature -1");
  BOOST_TEST(negative.exit_code == 2);
  BOOST_TEST(contains(negative.out, "--temperature: must be a finite number >= 0, got -1"));
}

// A repeated option takes its last value (scripts append overrides after their defaults), and an
// empty --out is refused by the parser. The run directory's guards, resume and the corpus checks
// are the run's: tests/gpt/train/run_test.cc.
BOOST_AUTO_TEST_CASE(a_repeated_option_takes_its_last_value) {
  const TempDir dir("cli_test");
  const std::string corpus = write_corpus(dir);
  const auto repeated =
      run_cli("train --preset femto --corpus " + corpus + " --out " + (dir / "run") +
              " --steps 5 --batch-size 4 --eval-iters 1 --steps 2");
  BOOST_TEST_INFO(repeated.out);
  BOOST_TEST(repeated.exit_code == 0);
  BOOST_TEST(contains(repeated.out, "step 2/2"));
  BOOST_TEST(contains(run_cli("train --corpus " + corpus + " --out \"\"").out, "--out: is empty"));
}

// A refusal is one line on stderr and exit code 2, from sample as from train (what the run
// refuses, and why, is run_test's).
BOOST_AUTO_TEST_CASE(bad_inputs_are_one_line_errors) {
  const TempDir dir("cli_test");
  const auto missing = run_cli("sample --checkpoint " + (dir / "nope.safetensors"));
  BOOST_TEST(missing.exit_code == 2);
  BOOST_TEST(contains(missing.out, "does not exist"));
  const auto zero = run_cli("train --preset pico --corpus /dev/zero --out " + (dir / "z"));
  BOOST_TEST(zero.exit_code == 2);
  BOOST_TEST(
      zero.out ==
      "attograd: error: corpus file /dev/zero is a character device, not a text file; pass kjv, "
      "shakespeare or the path of a UTF-8 text file\n");
}

// An unknown option close to a known one names it: nanoGPT's and argparse's underscores, a
// typo, nanoGPT's own names; one close to nothing keeps CLI11's message.
BOOST_AUTO_TEST_CASE(an_unknown_option_suggests_the_one_meant) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"train --batch_size=16", "unknown option --batch_size (did you mean --batch-size?)"},
      {"train --batch_size 16 --stepps 3 --max_iters=2",
       "unknown options --batch_size (did you mean --batch-size?); --stepps (did you mean "
       "--steps?); --max_iters (did you mean --steps, attograd's name for nanoGPT's max_iters?)"},
      {"train --n_layer 2", "unknown option --n_layer (did you mean --n-layer?)"},
      {"sample --temprature 0.5", "unknown option --temprature (did you mean --temperature?)"},
      {"train --max_iters=20",
       "unknown option --max_iters (did you mean --steps, attograd's name for nanoGPT's "
       "max_iters?)"},
      {"train --learning_rate=3e-4",
       "unknown option --learning_rate (did you mean --lr, attograd's name for nanoGPT's "
       "learning_rate?)"},
      {"train --frobnicate", "The following argument was not expected: --frobnicate"},
  };
  expect_refused(cases);
}

// Issue 8, kind 1: a size whose products would wrap (T x C, B x T, the parameter count) is
// refused at once with its range, before anything is allocated, never by a crash or by
// running out of memory.
BOOST_AUTO_TEST_CASE(sizes_whose_products_would_overflow_are_refused_at_once) {
  const TempDir dir("cli_sizes");
  const std::string corpus = write_corpus(dir),
                    train = "train --preset pico --corpus " + corpus + " --out " + (dir / "r");
  const std::string cores = std::to_string(4 * std::max(1u, std::thread::hardware_concurrency()));
  const std::vector<std::pair<std::string, std::string>> cases = {
      // SIGSEGV before: sinusoidal_table allocated T x C after it had wrapped.
      {"info --pos-encoding sinusoidal --n-embd 6 --n-head 3 --block-size 3074457345618258603 --T "
       "8",
       "--block-size: must be an integer in [1, 131072], got 3074457345618258603"},
      // SIGSEGV before, in Dataset::get_batch, where B x T wrapped.
      {train + " --batch-size 2305843009213693952",
       "--batch-size: must be an integer in [1, 65536], got 2305843009213693952"},
      {"info --n-layer 1000000000", "--n-layer: must be an integer in [1, 1024], got 1000000000"},
      {"info --vocab-size 1099511627776",
       "--vocab-size: must be an integer in [1, 1048576], got 1099511627776"},
      {"info --n-embd 99999999999999999999",
       "--n-embd: must be an integer in [1, 32768], got 99999999999999999999"},
      {"info --n-head 2000", "--n-head: must be an integer in [1, 1024], got 2000"},
      {train + " --grad-accum 100000",
       "--grad-accum: must be an integer in [1, 65536], got 100000"},
      // Crashed inside libgomp before.
      {train + " --threads 100000", "--threads: must be an integer in [0, " + cores +
                                        "] (at most 4 x this machine's cores), got 100000"},
      // Each size in range, the product not.
      {"info --preset gpt2 --n-layer 1024 --n-embd 4096 --n-head 16",
       "--n-layer 1024 --n-embd 4096: with gpt2's vocab_size 50257 and block_size 1024, the model "
       "has 206423011328 parameters, more than the limit of 20000000000"},
  };
  expect_refused(cases);
  // 18 billion parameters pass every limit but would need 147 GB to build: info is a table of
  // shapes and counts, computed without building the model, so it prints in megabytes.
  const auto big = run_cli("info --preset gpt2 --n-layer 90 --n-embd 4096 --n-head 16");
  BOOST_TEST_INFO(big.out);
  BOOST_TEST(big.exit_code == 0);
  BOOST_TEST(contains(big.out, "h.89.mlp.c_proj.weight           (4096, 16384)        67108864"));
  BOOST_TEST(contains(big.out, "total                             18334240768"));
}

// The bounds live in one table (gpt/model/field_ranges.h) and --help states them.
BOOST_AUTO_TEST_CASE(help_states_the_bounds) {
  const auto info = run_cli("info --help");
  BOOST_TEST_INFO(info.out);
  BOOST_TEST(contains(info.out, "--n-layer INT:INT in [1, 1024]"));
  BOOST_TEST(contains(info.out, "--n-head INT:INT in [1, 1024]"));
  BOOST_TEST(contains(info.out, "--n-embd INT:INT in [1, 32768]"));
  BOOST_TEST(contains(info.out, "--block-size INT:INT in [1, 131072]"));
  BOOST_TEST(contains(info.out, "--vocab-size INT:INT in [1, 1048576]"));
  BOOST_TEST(contains(info.out, "At most 20000000000 parameters in all"));
  const auto train = run_cli("train --help");
  BOOST_TEST_INFO(train.out);
  BOOST_TEST(contains(train.out, "--batch-size INT:INT in [1, 65536]"));
  BOOST_TEST(contains(
      train.out, "--threads INT:INT in [0, " +
                     std::to_string(4 * std::max(1u, std::thread::hardware_concurrency())) + "]"));
  BOOST_TEST(contains(train.out, "--seed UINT:INT in [0, 2^64 - 1]"));
}

// Issue 8, kind 6: a numeric option is taken exactly as written or refused with its range:
// never clamped (--steps 99999999999999999999 was 2^63 - 1), wrapped (--seed -1 was 2^64 - 1),
// truncated (1.5), read as hex or octal, or let through as NaN or infinity. Every numeric
// option of every subcommand.
BOOST_AUTO_TEST_CASE(numeric_options_are_refused_out_of_range_never_changed) {
  const TempDir dir("cli_numbers");
  const std::string corpus = write_corpus(dir), ckpt = dir / "run/ckpt.safetensors";
  const std::string train = "train --preset pico --corpus " + corpus + " --out " + (dir / "r");
  const std::string sample = "sample --checkpoint " + ckpt;
  const std::string any_int = "[0, 9223372036854775807]", positive_int = "[1, 9223372036854775807]";
  const std::string seed = "must be an integer in [0, 18446744073709551615] (2^64 - 1), got ";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {train + " --steps 99999999999999999999",
       "--steps: must be an integer in " + positive_int + ", got 99999999999999999999"},
      {train + " --steps 1.5", "--steps: must be an integer in " + positive_int + ", got 1.5"},
      {train + " --steps 1e3", "--steps: must be an integer in " + positive_int + ", got 1e3"},
      {train + " --seed -1", "--seed: " + seed + "-1"},
      {train + " --seed 18446744073709551616", "--seed: " + seed + "18446744073709551616"},
      {train + " --init-seed -1", "--init-seed: " + seed + "-1"},
      {train + " --batch-size 0x10", "--batch-size: must be an integer in [1, 65536], got 0x10"},
      {train + " --grad-accum -2", "--grad-accum: must be an integer in [1, 65536], got -2"},
      {train + " --warmup -1", "--warmup: must be an integer in " + any_int + ", got -1"},
      {train + " --decay-steps 2.5",
       "--decay-steps: must be an integer in " + any_int + ", got 2.5"},
      {train + " --eval-interval 9223372036854775808",
       "--eval-interval: must be an integer in " + any_int},
      {train + " --eval-iters 0",
       "--eval-iters: must be an integer in " + positive_int + ", got 0"},
      {train + " --checkpoint-interval nan",
       "--checkpoint-interval: must be an integer in " + any_int + ", got nan"},
      {train + " --log-interval 0",
       "--log-interval: must be an integer in " + positive_int + ", got 0"},
      {train + " --threads -1", "--threads: must be an integer in [0, "},
      {train + " --lr nan", "--lr: must be a finite number > 0, got nan"},
      {train + " --lr inf", "--lr: must be a finite number > 0, got inf"},
      {train + " --lr 1e400",
       "--lr: must be a finite number > 0 within the range of a double, got 1e400"},
      {train + " --min-lr -1", "--min-lr: must be a finite number >= 0, got -1"},
      {train + " --weight-decay inf", "--weight-decay: must be a finite number >= 0, got inf"},
      {train + " --grad-clip nan", "--grad-clip: must be a finite number >= 0, got nan"},
      {train + " --dropout nan", "--dropout: must be a finite number in [0, 1), got nan"},
      {train + " --n-layer 1.5", "--n-layer: must be an integer in [1, 1024], got 1.5"},
      {"info --T 1.5", "--T: must be an integer in [1, 131072], got 1.5"},
      {"info --T -3", "--T: must be an integer in [1, 131072], got -3"},
      {"info --block-size 0", "--block-size: must be an integer in [1, 131072], got 0"},
      {sample + " --seed -1", "--seed: " + seed + "-1"},
      {sample + " --max-new-tokens 1.5",
       "--max-new-tokens: must be an integer in " + any_int + ", got 1.5"},
      {sample + " --top-k -1", "--top-k: must be an integer in " + any_int + ", got -1"},
      {sample + " --top-p 0", "--top-p: must be a finite number in (0, 1], got 0"},
      {sample + " --top-p nan", "--top-p: must be a finite number in (0, 1], got nan"},
      {sample + " --n-head 0", "--n-head: must be an integer in [1, 1024], got 0"},
      {sample + " --temperature inf", "--temperature: must be a finite number >= 0, got inf"},
      {sample + " --temperature nan", "--temperature: must be a finite number >= 0, got nan"},
      {sample + " --temperature ''", "--temperature: expected a decimal number, got ''"},
      {sample + " --temperature 0x10", "--temperature: expected a decimal number, got '0x10'"},
      {"train --lr 0x1p3", "--lr: expected a decimal number, got '0x1p3'"},
      // A misspelled command (issue 32, item 7): the parser said only "A subcommand is required".
      {"trian --steps 10",
       "unknown command 'trian' (did you mean 'train'?); the commands are train, sample, eval"},
      // nanoGPT's habits: a positional config or corpus, and settings with no counterpart.
      {"train config/train_shakespeare_char.py",
       "unknown argument 'config/train_shakespeare_char.py' (give a corpus as --corpus FILE; "
       "--config reads a JSON file of settings, not nanoGPT's Python)"},
      {"train --device cpu --compile=False",
       "unknown options --device (attograd runs on the CPU, with --threads cores: drop it); "
       "--compile (attograd has no compile step, its kernels are compiled ahead of time: drop "
       "it)"},
      {"sample --start hi",
       "unknown option --start (did you mean --prompt, attograd's name for "
       "nanoGPT's start?)"},
      // A C1 control character typed into a number (U+0085, NEL: a line break to some
      // terminals) is echoed as its escape, as a tab or a newline is.
      {"train --lr \"$(printf '1\\302\\205\\t')\"",
       "--lr: expected a decimal number, got '1\\u0085\\t'"},
      {"train --steps \"$(printf '\\302\\205')\"",
       "--steps: must be an integer in [1, 9223372036854775807], got \\u0085"},
      {"train --pos-encoding \"$(printf 'r\\302\\205')\"",
       "--pos-encoding: r\\u0085 not in {learned,sinusoidal,rope}"},
      {"eval --checkpoint " + ckpt + " --max-tokens -1",
       "--max-tokens: must be an integer in " + any_int + ", got -1"},
      {"eval --hf-gpt2 " + ckpt + " --n-head 2.5",
       "--n-head: must be an integer in [1, 1024], got 2.5"},
      {"gradcheck --seed -1", "--seed: " + seed + "-1"},
      {"gradcheck -B 17", "--batch: must be an integer in [1, 16], got 17"},
      {"gradcheck -T 1.5", "--time: must be an integer in [1, 16], got 1.5"},
      {"gradcheck -C 1", "--channels: must be an integer in [2, 16], got 1"},
      {"tokenize --decode 99999999999999999999",
       "word 1, '99999999999999999999', is not a token id"},
  };
  // sample's temperature is checked after the checkpoint loads: make one.
  BOOST_REQUIRE(run_cli("train --preset pico --corpus " + corpus + " --out " + (dir / "run") +
                        " --steps 1 --batch-size 2 --eval-iters 1")
                    .exit_code == 0);
  expect_refused(cases);
  // A value in range is taken exactly as written. CLI11 alone reads "010" as octal 8, so a
  // leading zero is refused rather than guessed.
  const auto ten = run_cli("info --preset pico --block-size 10 --T 10");
  BOOST_TEST_INFO(ten.out);
  BOOST_TEST(ten.exit_code == 0);
  BOOST_TEST(contains(ten.out, "attention shapes for B = 1, T = 10 (per layer)"));
  const auto octal = run_cli("info --preset pico --block-size 010");
  BOOST_TEST_INFO(octal.out);
  BOOST_TEST(octal.exit_code == 2);
  BOOST_TEST(contains(
      octal.out, "--block-size: 010 has leading zeros, which would be read as octal; write 10"));
  BOOST_TEST(contains(run_cli("train --seed 0017").out,
                      "--seed: 0017 has leading zeros, which would be read as octal; write 17"));
  const auto max_seed = run_cli("gradcheck --op softmax --seed 18446744073709551615");
  BOOST_TEST(max_seed.exit_code == 0);
}

// `tokenize --corpus` builds its vocabulary with the rule `train` follows (run_test's
// corpus_line_ends_and_sizes): a CRLF corpus has no '\r' token unless --keep-cr.
BOOST_AUTO_TEST_CASE(tokenize_reads_crlf_corpora_as_train_does) {
  const TempDir dir("cli_test");
  std::string crlf;
  for (int i = 0; i < 200; ++i) crlf += "to be or not to be, that is the question.\r\n";
  const std::string corpus = dir.file("crlf.txt", crlf);
  BOOST_TEST(
      run_cli("tokenize --tokenizer char --corpus " + corpus + " --pieces 'a\rb'").exit_code == 2);
  BOOST_TEST(
      run_cli("tokenize --tokenizer char --corpus " + corpus + " --keep-cr 'a\rb'").exit_code == 0);
}

// --version: the project's release (CMake's PROJECT_VERSION), the Highway release and the SIMD
// target the kernels run on this CPU, and the optional parts of the build; exit 0, as CLI11's
// --help does, with or without a command after it.
BOOST_AUTO_TEST_CASE(version_names_the_release_the_simd_target_and_the_parts) {
  namespace k = attograd::kernels;
  for (const std::string args : {"--version", "--version train"}) {
    const auto r = run_cli(args);
    BOOST_TEST_INFO(r.out);
    BOOST_TEST(r.exit_code == 0);
    BOOST_TEST(r.out.rfind(std::string("attograd ") + ATTOGRAD_VERSION + "\nkernels  Highway " +
                               k::highway_version() + ", running " + k::active_target() + " (",
                           0) == 0);
    BOOST_TEST(contains(r.out, "\nparts    GPT-2 BPE tokenizer: "));
  }
}

// A figure reads only the sizes it draws: sinusoidal takes any even --n-embd (the model's rule
// for sinusoidal encodings), whatever the preset's head count (pico's 3 does not divide 8), and
// its table holds sin(pos / 10000^(2i / C)).
BOOST_AUTO_TEST_CASE(a_figure_reads_only_its_own_sizes) {
  const TempDir dir("cli_figure");
  const auto r = run_cli("figure sinusoidal --n-embd 8 --block-size 4 --out " + (dir / "f"));
  BOOST_TEST_INFO(r.out);
  BOOST_REQUIRE(r.exit_code == 0);
  std::istringstream csv(read_file(dir / "f/sinusoidal.csv"));
  std::vector<std::string> lines;
  for (std::string line; std::getline(csv, line);) lines.push_back(line);
  BOOST_REQUIRE(lines.size() == 5u);  // the header and positions 0 .. 3
  BOOST_TEST(lines[0] == "pos,pe0,pe1,pe2,pe3,pe4,pe5,pe6,pe7");
  BOOST_TEST(lines[2].starts_with("1,0.8414709848078965,0.54030230586813977,"));  // sin 1, cos 1
}
