// `attograd tokenize` end to end: the real binary, its output, its errors and exit codes, with
// GPT-2's BPE, a corpus's characters, or a checkpoint's tokenizer.
#define BOOST_TEST_MODULE tokenize_command
#include <sys/wait.h>
#include <unistd.h>
#include <array>
#include <boost/test/unit_test.hpp>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "gpt/model/checkpoint.h"
#include "nn/io/safetensors.h"

#include "tests/cli/cli_run.h"
#include "tests/gpt/model/hf_fixture.h"

namespace fs = std::filesystem;

namespace {

using Run = attograd::testing::CliRun;
using attograd::testing::TempDir;
Run run(const std::string& args, bool merge_stderr = true) {
  return attograd::testing::run_cli(args, merge_stderr);
}
bool has(const std::string& s, const std::string& needle) {
  return attograd::testing::contains(s, needle);
}

}  // namespace

BOOST_AUTO_TEST_CASE(encodes_and_decodes_gpt2_ids) {
  const Run enc = run("tokenize 'hello  world'", false);
  BOOST_TEST(enc.exit_code == 0);
  BOOST_TEST(enc.out == "31373 220 995\n");
  const Run dec = run("tokenize --decode '31373 220 995'", false);
  BOOST_TEST(dec.exit_code == 0);
  BOOST_TEST(dec.out == "hello  world");  // exactly the text, no newline added
  const Run args = run("tokenize --decode 31373 220 995", false);  // ids as separate arguments
  BOOST_TEST(args.out == "hello  world");
  const Run pieces = run("tokenize --pieces 'hello  world'", false);
  BOOST_TEST(pieces.out == "31373\t\"hello\"\n220\t\" \"\n995\t\" world\"\n");
  const Run partial = run("tokenize --decode --pieces 47249", false);
  BOOST_TEST(partial.out == "47249\t\"\\xf0\\x9f\\x98\"\n");
}

BOOST_AUTO_TEST_CASE(stdin_round_trips_byte_for_byte) {
  const TempDir dir("tokenize_stdin");
  const std::string text =
      "First Citizen:\nBefore we proceed any further, hear me speak.\n\n\tna\xC3\xAFve "
      "\xF0\x9F\x98\x80\n";
  const fs::path in = dir.file("in.txt", text);
  const Run piped =
      run("tokenize < " + in.string() + " | " + ATTOGRAD_CLI + " tokenize --decode", false);
  BOOST_TEST(piped.exit_code == 0);
  BOOST_TEST(piped.out == text);
}

BOOST_AUTO_TEST_CASE(end_of_text_needs_allow_special) {
  BOOST_TEST(run("tokenize --allow-special '<|endoftext|>'", false).out == "50256\n");
  const Run plain = run("tokenize '<|endoftext|>'", false);
  BOOST_TEST(plain.out != "50256\n");
  BOOST_TEST(!has(plain.out, "50256"));
}

BOOST_AUTO_TEST_CASE(bad_input_is_a_clear_error) {
  const Run bad_id = run("tokenize --decode '31373 50257'");
  BOOST_TEST_INFO(bad_id.out);
  BOOST_TEST(bad_id.exit_code == 2);
  BOOST_TEST(has(bad_id.out, "id 50257 at index 1 is outside the vocabulary [0, 50257)"));
  const Run not_int = run("tokenize --decode '12 x3'");
  BOOST_TEST(not_int.exit_code == 2);
  BOOST_TEST(has(not_int.out, "word 2, 'x3', is not a token id"));
  const Run no_vocab = run("tokenize --tokenizer char hello");
  BOOST_TEST(no_vocab.exit_code == 2);
  BOOST_TEST(has(no_vocab.out, "--tokenizer char needs a vocabulary"));
  const Run unknown = run("tokenize --tokenizer bpe hello");
  BOOST_TEST(unknown.exit_code == 2);
  // The parser's own errors read as every other error does: one prefix, then --help's hint.
  BOOST_TEST(unknown.out.starts_with("attograd: error: --tokenizer: bpe not in {char,gpt2}"),
             unknown.out);
  const Run bogus = run("tokenize --bogus");
  BOOST_TEST(bogus.exit_code == 2);
  BOOST_TEST(bogus.out ==
             "attograd: error: The following argument was not expected: --bogus\n"
             "Run with --help for more information.\n");
  const Run two = run("tokenize hello world");
  BOOST_TEST(two.exit_code == 2);
  BOOST_TEST(has(two.out, "quote the text"));
  // A missing vocabulary names the path and the variable that moves it.
  const std::string env_cmd =
      "ATTOGRAD_DATA_DIR=/nonexistent/data " + std::string(ATTOGRAD_CLI) + " tokenize hello 2>&1";
  FILE* p = popen(env_cmd.c_str(), "r");
  BOOST_REQUIRE(p != nullptr);
  std::array<char, 4096> buf{};
  const std::string msg(buf.data(), fread(buf.data(), 1, buf.size() - 1, p));
  BOOST_TEST(WEXITSTATUS(pclose(p)) == 2);
  BOOST_TEST_INFO(msg);
  BOOST_TEST(has(msg, "/nonexistent/data/gpt2/encoder.json"));
  BOOST_TEST(has(msg, "ATTOGRAD_DATA_DIR"));
}

BOOST_AUTO_TEST_CASE(char_tokenizer_from_a_corpus_file) {
  const TempDir dir("tokenize_char");
  const fs::path corpus = dir.file("corpus.txt", "hello world");  // vocabulary " dehlorw"
  const Run enc = run("tokenize --tokenizer char --corpus " + corpus.string() + " hold", false);
  BOOST_TEST(enc.exit_code == 0);
  BOOST_TEST(enc.out == "3 5 4 1\n");
  BOOST_TEST(
      run("tokenize --tokenizer char --corpus " + corpus.string() + " --decode '3 5 4 1'", false)
          .out == "hold");
  const Run unknown = run("tokenize --tokenizer char --corpus " + corpus.string() + " help");
  BOOST_TEST(unknown.exit_code == 2);
  BOOST_TEST(has(unknown.out, "'p' (U+0070)"));
  // Without --tokenizer, --corpus means train's default, the char tokenizer of that corpus.
  BOOST_TEST(run("tokenize --corpus " + corpus.string() + " hold", false).out == "3 5 4 1\n");
  BOOST_TEST(run("tokenize hold", false).out == "2946\n");  // without a corpus: GPT-2's BPE
  const Run special =
      run("tokenize --tokenizer char --corpus " + corpus.string() + " --allow-special hold");
  BOOST_TEST(special.exit_code == 2);
  BOOST_TEST(has(special.out, "--allow-special applies to the gpt2 tokenizer only"));
}

// The final lines are the CLI's own printing: with GPT-2's BPE the add-one bigram (a 50257 x
// 50257 table on ~900 tokens) is worse than the unigram, and is said to be no target.
BOOST_AUTO_TEST_CASE(a_gpt2_run_names_its_bigram_no_target) {
  const TempDir dir("train_gpt2");
  std::string text;
  for (int i = 0; i < 40; ++i)
    text += "First Citizen:\nBefore we proceed any further, hear me speak. Verse " +
            std::to_string(i) + ".\n\n";
  const fs::path corpus = dir.file("corpus.txt", text);  // ~3 KB, ~900 tokens
  const Run r = run("train --tokenizer gpt2 --preset femto --corpus " + corpus.string() +
                    " --steps 1 --out " + (dir.path / "run").string() +
                    " --eval-iters 1 --batch-size 2 --block-size 8 --threads 1");
  BOOST_TEST_INFO(r.out);
  BOOST_TEST(r.exit_code == 0);
  BOOST_TEST(has(r.out, "add-one bigram "));
  BOOST_TEST(has(r.out,
                 ": above the unigram, so no target (add-one smoothing spreads its mass "
                 "over a 50257 x 50257 table this corpus barely fills)"));
}

// A checkpoint of the gpt2 tokenizer (the Hugging Face fixture's GPT-2 saved as an attograd
// checkpoint; training one is run_test's a_gpt2_bpe_run_writes_and_resumes_a_gpt2_checkpoint):
// its tokenizer is what `tokenize --checkpoint` uses.
BOOST_AUTO_TEST_CASE(a_gpt2_checkpoint_tokenizes_with_gpt2s_bpe) {
  const TempDir dir("tokenize_gpt2");
  const auto model = attograd::testing::write_small_hf_gpt2(dir.path);
  const fs::path out = dir.path / "run", ckpt = out / "ckpt.safetensors";
  fs::create_directories(out);
  attograd::gpt::save_checkpoint(ckpt.string(), *model, "gpt2", "gpt2");
  BOOST_TEST(run("tokenize --checkpoint " + ckpt.string() + " 'hello  world'", false).out ==
             "31373 220 995\n");
  // The run directory names the same checkpoint, as it does for sample and eval.
  BOOST_TEST(run("tokenize --checkpoint " + out.string() + " 'hello  world'", false).out ==
             "31373 220 995\n");
  const Run mismatch = run("tokenize --tokenizer char --checkpoint " + ckpt.string() + " hello");
  BOOST_TEST(mismatch.exit_code == 2);
  BOOST_TEST(has(mismatch.out, "does not match the tokenizer of"));
}
