// The attograd CLI end to end: info's dimension exercise, a small train run, sampling from it,
// resume, and clear errors for bad input.
#define BOOST_TEST_MODULE cli
#include <boost/test/unit_test.hpp>
#include <filesystem>
#include <fstream>
#include <cstdlib>
#include <unistd.h>

#include "tests/examples/cli_run.h"

using attograd::testing::contains;
using attograd::testing::run_cli;
using attograd::testing::TempDir;

namespace {

std::string write_corpus(const TempDir& dir) {
  const std::string file = dir / "corpus.txt";
  std::ofstream out(file);
  for (int i = 0; i < 200; ++i) out << "to be or not to be, that is the question.\n";
  return file;
}

}  // namespace

BOOST_AUTO_TEST_CASE(info_counts_femto_and_pico) {
  const auto femto = run_cli("info --preset femto");
  BOOST_TEST_INFO(femto.out);
  BOOST_TEST(femto.exit_code == 0);
  BOOST_TEST(contains(femto.out, "total                                     224"));
  BOOST_TEST(contains(femto.out, "Q K^T / sqrt(HS)  (B, NH, T, T)    = (1, 1, 8, 8)"));
  const auto pico = run_cli("info --preset pico --T 5");
  BOOST_TEST(contains(pico.out, "total                                    1980"));
  BOOST_TEST(contains(pico.out, "Q, K, V per head  (B, NH, T, HS)   = (1, 3, 5, 2)"));
  BOOST_TEST(contains(pico.out, "attention weights (B, NH, T, T)    = (1, 3, 5, 5)"));
  const auto bad = run_cli("info --preset pico --n-head 4");
  BOOST_TEST(bad.exit_code == 2);
  BOOST_TEST(contains(bad.out, "n_head 4 must divide n_embd 6"));
  BOOST_TEST(run_cli("info --preset pico --T 9").exit_code == 2);
}

BOOST_AUTO_TEST_CASE(train_sample_resume_end_to_end) {
  const TempDir dir("cli_test");
  const std::string corpus = write_corpus(dir), out = dir / "run";
  const std::string train = "train --preset pico --corpus " + corpus + " --out " + out +
                            " --steps 40 --batch-size 8 --eval-interval 20 --eval-iters 2 --log-interval 10 --warmup 5";
  const auto r = run_cli(train);
  BOOST_TEST_INFO(r.out);
  BOOST_REQUIRE(r.exit_code == 0);
  BOOST_TEST(contains(r.out, "step 40/40 | loss"));
  BOOST_TEST(contains(r.out, "unigram baseline"));
  BOOST_TEST(std::filesystem::exists(out + "/ckpt.safetensors"));
  BOOST_TEST(std::filesystem::exists(out + "/train_log.csv"));

  // An existing run is never silently overwritten.
  const auto again = run_cli(train);
  BOOST_TEST(again.exit_code == 2);
  BOOST_TEST(contains(again.out, "--resume"));
  // Resume extends it.
  const auto resumed = run_cli("train --corpus " + corpus + " --out " + out + " --resume --steps 50");
  BOOST_TEST_INFO(resumed.out);
  BOOST_TEST(resumed.exit_code == 0);
  BOOST_TEST(contains(resumed.out, "resume  step 40"));
  BOOST_TEST(contains(resumed.out, "step 50/50 | loss"));

  const auto s = run_cli("sample --checkpoint " + out + "/ckpt.safetensors --prompt \"to be\" --prompt \"the\" "
                         "--temperature 0 --temperature 1 --max-new-tokens 20");
  BOOST_TEST_INFO(s.out);
  BOOST_TEST(s.exit_code == 0);
  BOOST_TEST(contains(s.out, "=== prompt \"to be\" | temperature 0 (greedy) ==="));
  BOOST_TEST(contains(s.out, "=== prompt \"the\" | temperature 1 ==="));
  BOOST_TEST(contains(s.out, "tokens/s (KV cache on)"));
  // Greedy output is the same with and without the KV cache.
  const auto g1 = run_cli("sample --checkpoint " + out + "/ckpt.safetensors --prompt \"to be\" --temperature 0 --max-new-tokens 30");
  const auto g2 = run_cli("sample --checkpoint " + out + "/ckpt.safetensors --prompt \"to be\" --temperature 0 --max-new-tokens 30 --no-kv-cache");
  BOOST_TEST(g1.out.substr(0, g1.out.find("tokens in")) == g2.out.substr(0, g2.out.find("tokens in")));

  const auto unknown = run_cli("sample --checkpoint " + out + "/ckpt.safetensors --prompt \"XYZ\"");
  BOOST_TEST(unknown.exit_code == 2);
  BOOST_TEST(contains(unknown.out, "'X' (U+0058)"));
  const auto negative = run_cli("sample --checkpoint " + out + "/ckpt.safetensors --temperature -1");
  BOOST_TEST(negative.exit_code == 2);
  BOOST_TEST(contains(negative.out, "temperature must be >= 0"));
}

// What the newcomer review found: resume guards, concurrent runs, late corpus checks.
BOOST_AUTO_TEST_CASE(resume_and_output_guards) {
  const TempDir dir("cli_test");
  const std::string corpus = write_corpus(dir), out = dir / "run";
  const std::string base = "train --preset pico --corpus " + corpus + " --out " + out +
                           " --steps 10 --batch-size 4 --eval-iters 1 --warmup 2 --log-interval 5";
  BOOST_REQUIRE(run_cli(base).exit_code == 0);
  // A repeated option takes its last value (scripts append overrides after their defaults).
  const auto repeated = run_cli(base + " --overwrite --steps 12");
  BOOST_TEST_INFO(repeated.out);
  BOOST_TEST(repeated.exit_code == 0);
  BOOST_TEST(contains(repeated.out, "step 12/12"));
  // Resuming on another corpus, or with options the checkpoint fixes, is refused.
  const std::string other = dir / "other.txt";
  { std::ofstream(other) << std::string(2000, 'a') << "\n"; }
  const auto wrong_corpus = run_cli("train --corpus " + other + " --out " + out + " --resume --steps 20");
  BOOST_TEST(wrong_corpus.exit_code == 2);
  BOOST_TEST(contains(wrong_corpus.out, "pass the same --corpus"));
  const auto changed = run_cli("train --corpus " + corpus + " --out " + out + " --resume --steps 20 --lr 0.5");
  BOOST_TEST(changed.exit_code == 2);
  BOOST_TEST(contains(changed.out, "--lr cannot change"));
  // Extending a run keeps its schedule: past the old end the rate stays at min_lr.
  const auto extended = run_cli("train --corpus " + corpus + " --out " + out + " --resume --steps 20");
  BOOST_TEST_INFO(extended.out);
  BOOST_TEST(extended.exit_code == 0);
  BOOST_TEST(contains(extended.out, "step 15/20 | loss"));
  BOOST_TEST(contains(extended.out, "lr 1.00e-03"));  // min_lr, not a jump back up
  // An empty --out, or a file as --out, is refused before any work.
  BOOST_TEST(contains(run_cli("train --corpus " + corpus + " --out \"\"").out, "--out is empty"));
  BOOST_TEST(contains(run_cli("train --corpus " + corpus + " --out " + corpus).out, "is not a directory"));
}

BOOST_AUTO_TEST_CASE(a_second_run_into_the_same_out_is_refused) {
  const TempDir dir("cli_test");
  const std::string corpus = write_corpus(dir), out = dir / "run";
  // The first run holds the lock for its lifetime; start it in the background, then the second.
  const std::string first = std::string(ATTOGRAD_CLI) + " train --preset pico --corpus " + corpus + " --out " + out +
                            " --steps 3000 --batch-size 4 --eval-iters 1 --log-interval 1000 > /dev/null 2>&1 &";
  BOOST_REQUIRE(std::system(first.c_str()) == 0);
  bool refused = false;
  for (int i = 0; i < 100 && !refused; ++i) {  // up to ~10 s for the first run to take the lock
    ::usleep(100000);
    const auto second = run_cli("train --preset pico --corpus " + corpus + " --out " + out + " --overwrite --steps 1");
    refused = second.exit_code == 2 && contains(second.out, "another `attograd train` is writing to");
  }
  BOOST_TEST(refused);
  std::system("pkill -f 'attograd_cli_test_.*run --steps 3000' > /dev/null 2>&1; sleep 0.2");
}

BOOST_AUTO_TEST_CASE(a_too_short_val_split_is_refused_before_training) {
  const TempDir dir("cli_test");
  const std::string file = dir / "short.txt";
  { std::ofstream(file) << "the quick brown fox jumps over the lazy dog, twice over.\n"; }  // val: 6 chars
  const auto r = run_cli("train --preset pico --corpus " + file + " --out " + (dir / "r") + " --steps 5");
  BOOST_TEST_INFO(r.out);
  BOOST_TEST(r.exit_code == 2);
  BOOST_TEST(contains(r.out, "the corpus is too short: its val split has"));
  BOOST_TEST(!contains(r.out, "step 1/"));
}

BOOST_AUTO_TEST_CASE(bad_inputs_are_one_line_errors) {
  const TempDir dir("cli_test");
  const auto missing = run_cli("sample --checkpoint " + (dir / "nope.safetensors"));
  BOOST_TEST(missing.exit_code == 2);
  BOOST_TEST(contains(missing.out, "does not exist"));
  { std::ofstream(dir / "empty.txt"); }
  const auto empty = run_cli("train --preset pico --corpus " + (dir / "empty.txt") + " --out " + (dir / "r"));
  BOOST_TEST(empty.exit_code == 2);
  BOOST_TEST(contains(empty.out, "empty"));
  { std::ofstream(dir / "latin1.txt") << "caf\xe9 au lait"; }
  const auto latin1 = run_cli("train --preset pico --corpus " + (dir / "latin1.txt") + " --out " + (dir / "r"));
  BOOST_TEST(latin1.exit_code == 2);
  BOOST_TEST(contains(latin1.out, "UTF-8"));
  { std::ofstream(dir / "short.txt") << "abcdef"; }
  const auto short_corpus = run_cli("train --preset pico --corpus " + (dir / "short.txt") + " --out " + (dir / "r"));
  BOOST_TEST_INFO(short_corpus.out);
  BOOST_TEST(short_corpus.exit_code == 2);
  BOOST_TEST(contains(short_corpus.out, "block_size"));
  const auto resume_nothing = run_cli("train --corpus " + write_corpus(dir) + " --out " + (dir / "none") + " --resume");
  BOOST_TEST(resume_nothing.exit_code == 2);
  BOOST_TEST(contains(resume_nothing.out, "nothing to resume"));
}

// The examples for corpus files: a CRLF corpus no longer makes '\r' a token (and says
// so), --keep-cr keeps it, and /dev/zero or an oversized file is refused at once with the reason.
BOOST_AUTO_TEST_CASE(corpus_line_ends_and_sizes) {
  const TempDir dir("cli_test");
  std::string crlf;
  for (int i = 0; i < 200; ++i) crlf += "to be or not to be, that is the question.\r\n";
  const std::string corpus = dir.file("crlf.txt", crlf);
  const std::string run = "train --preset pico --steps 1 --batch-size 4 --eval-iters 1 --corpus " + corpus;
  const auto lf = run_cli(run + " --out " + (dir / "lf"));
  BOOST_TEST_INFO(lf.out);
  BOOST_TEST(lf.exit_code == 0);
  BOOST_TEST(contains(lf.out, "corpus  " + corpus + ": 8,400 bytes from " + corpus +
                                  ", 200 CRLF/CR line ends made LF (--keep-cr keeps them)"));
  BOOST_TEST(contains(lf.out, "char tokenizer (vocab 16): 8400 tokens"));
  const auto kept = run_cli(run + " --out " + (dir / "cr") + " --keep-cr");
  BOOST_TEST_INFO(kept.out);
  BOOST_TEST(kept.exit_code == 0);
  BOOST_TEST(contains(kept.out, "corpus  " + corpus + ": 8,600 bytes from " + corpus + "\n"));
  BOOST_TEST(contains(kept.out, "char tokenizer (vocab 17): 8600 tokens"));  // '\r' is a token
  // The vocabulary of `tokenize --corpus` follows the same rule.
  BOOST_TEST(run_cli("tokenize --tokenizer char --corpus " + corpus + " --pieces 'a\rb'").exit_code == 2);
  BOOST_TEST(run_cli("tokenize --tokenizer char --corpus " + corpus + " --keep-cr 'a\rb'").exit_code == 0);

  const auto zero = run_cli("train --preset pico --corpus /dev/zero --out " + (dir / "z"));
  BOOST_TEST(zero.exit_code == 2);
  BOOST_TEST(zero.out == "attograd: error: corpus file /dev/zero is a character device, not a text file; pass kjv, "
                         "shakespeare or the path of a UTF-8 text file\n");
  const std::string huge = dir.file("huge.txt", "");
  std::filesystem::resize_file(huge, 300'000'000);  // sparse: no disk space
  const auto too_big = run_cli("train --preset pico --corpus " + huge + " --out " + (dir / "h"));
  BOOST_TEST(too_big.exit_code == 2);
  BOOST_TEST(too_big.out == "attograd: error: corpus file " + huge + " is 300,000,000 bytes, over the 268,435,456-byte "
                            "limit for a corpus file (it and its token ids are held in memory); use a smaller "
                            "file or a part of it\n");
}
