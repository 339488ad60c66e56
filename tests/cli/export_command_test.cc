// `attograd export`: a checkpoint written as a Hugging Face GPT-2 directory. The export is read by
// an independent reader (tests/cli/hf_export_check.py: json + struct + numpy + torch, GPT-2 built
// from config.json alone, no attograd code) whose logits and loss must match attograd's, and by
// attograd's own --hf-gpt2 importer, which must find n_head in config.json and give the loss
// `eval --checkpoint` gives. The refusals (bigram, average, rope) are rows of docs/errors.md.
#define BOOST_TEST_MODULE export_command
#include <boost/test/unit_test.hpp>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "autograd/engine.h"
#include "gpt/model/checkpoint.h"
#include "gpt/model/hf_export.h"
#include "gpt/text/bpe_tokenizer.h"
#include "gpt/text/tokenizer.h"
#include "tests/cli/cli_run.h"
#include "tests/files.h"
#include "tests/skip.h"
#include "tests/test_util.h"

using namespace attograd;
using namespace attograd::gpt;
using attograd::testing::contains;
using attograd::testing::run_cli;
using attograd::testing::run_program;
using attograd::testing::TempDir;

namespace {

const char kText[] = "the quick brown fox jumps over the lazy dog; PACK MY BOX WITH FIVE DOZEN.";

// A GPT with discriminating random weights (N(0, 0.3²) everywhere, so that a bias on the wrong
// axis, a missing transpose or a swapped LayerNorm gain and bias all change the logits), saved
// as an attograd checkpoint dir/ckpt.safetensors with a char tokenizer. n_embd 16 is no standard
// GPT-2 width: --hf-gpt2 must read n_head from the exported config.json.
std::string write_checkpoint(const TempDir& dir, bool bias) {
  const auto tokenizer = make_tokenizer("char", kText);
  GPTConfig c;
  c.vocab_size = tokenizer->vocab_size();
  c.block_size = 16;
  c.n_layer = 2;
  c.n_head = 4;
  c.n_embd = 16;
  c.bias = bias;
  GPT model(c, 5);
  Generator gen(6);
  attograd::testing::randomize_parameters(model.parameters(), gen, 0.3);
  const std::string path = dir / "ckpt.safetensors";
  save_checkpoint(path, model, tokenizer->kind(), tokenizer->serialize());
  return path;
}

// 40 ids in [0, vocab): three windows of block_size 16 (16, 16 and 7 predictions).
std::string write_ids(const TempDir& dir, int64_t vocab) {
  std::string ids;
  for (int64_t i = 0; i < 40; ++i) ids += std::to_string((i * 7 + 3) % vocab) + " ";
  return dir.file("ids.txt", ids);
}

// The "loss ..." line `attograd eval` prints (full precision), or the whole output on failure.
std::string loss_line(const attograd::testing::CliRun& r) {
  const size_t at = r.out.find("\nloss ");
  if (r.exit_code != 0 || at == std::string::npos) return "eval failed:\n" + r.out;
  return r.out.substr(at + 1, r.out.find('\n', at + 1) - at - 1);
}

// The logits of the first window of ids (16 tokens), as attograd computes them, written as
// little-endian float32 (16, vocab) for the reader to compare.
std::string write_first_window_logits(const TempDir& dir, const std::string& checkpoint,
                                      const std::string& ids_path) {
  const auto model = load_model(nn::SafetensorsFile::read(checkpoint));
  model->eval();
  NoGradGuard no_grad;
  std::ifstream in(ids_path);
  std::vector<int64_t> ids(16);
  for (int64_t& id : ids) in >> id;
  const Tensor logits = model->forward(Tensor::from_ids(ids, {1, 16})).logits().contiguous();
  const std::string path = dir / "logits.f32";
  std::ofstream(path, std::ios::binary)
      .write(reinterpret_cast<const char*>(logits.data<float>()),
             static_cast<std::streamsize>(logits.numel() * sizeof(float)));
  return path;
}

}  // namespace

BOOST_AUTO_TEST_CASE(export_round_trips_through_hf_gpt2_without_n_head) {
  for (const bool bias : {true, false}) {
    BOOST_TEST_CONTEXT("bias " << bias) {
      const TempDir dir("export_round_trip");
      const std::string ckpt = write_checkpoint(dir, bias);
      const std::string ids = write_ids(dir, make_tokenizer("char", kText)->vocab_size());
      const auto exported = run_cli("export --checkpoint " + ckpt + " --out " + (dir / "hf"));
      BOOST_TEST_INFO(exported.out);
      BOOST_TEST(exported.exit_code == 0);
      BOOST_TEST(contains(exported.out, "(28 tensors, "));    // wte, wpe, 12 per block, ln_f's 2
      BOOST_TEST(contains(exported.out, "not GPT-2's BPE"));  // a char model says so
      // ... and its eval line asks for its own ids (GPT-2's BPE would not fit its vocabulary)
      BOOST_TEST(contains(exported.out, "attograd eval --hf-gpt2 " +
                                            (dir / "hf/model.safetensors") +
                                            " --ids IDS (a file of the ids `attograd tokenize "
                                            "--checkpoint` gives)\n"));
      const std::string expected =
          loss_line(run_cli("eval --checkpoint " + ckpt + " --ids " + ids));
      BOOST_TEST(expected.starts_with("loss "));
      // n_embd 16 is no standard width: n_head 4 can only come from the exported config.json.
      BOOST_TEST(loss_line(run_cli("eval --hf-gpt2 " + (dir / "hf/model.safetensors") + " --ids " +
                                   ids)) == expected);
      // The files transformers reads, and a safetensors file that is weights only.
      BOOST_TEST(std::filesystem::exists(dir.path / "hf" / "config.json"));
      std::ifstream generation(dir.path / "hf" / kHfGenerationConfigFile);
      BOOST_TEST(nlohmann::json::parse(generation) ==
                 nlohmann::json({{"_from_model_config", true}}));  // no special tokens in char
      // The char tokenizer beside the weights: its characters in id order, and docs/04-gpt.md's
      // Python lines encode and decode with them as attograd does.
      std::ifstream vocab_file(dir.path / "hf" / kCharVocabFile);
      const nlohmann::json vocab = nlohmann::json::parse(vocab_file);
      BOOST_TEST(vocab.at("type") == "char");
      const auto tokenizer = make_tokenizer("char", kText);
      BOOST_REQUIRE(vocab.at("vocab").size() == static_cast<size_t>(tokenizer->vocab_size()));
      for (int64_t id = 0; id < tokenizer->vocab_size(); ++id)
        BOOST_TEST(vocab.at("vocab")[static_cast<size_t>(id)] == tokenizer->token_bytes(id));
      const auto python =
          run_program("/usr/bin/python3",
                      "-c 'import json, sys\n"
                      "vocab = json.load(open(sys.argv[1], encoding=\"utf-8\"))[\"vocab\"]\n"
                      "stoi = {ch: i for i, ch in enumerate(vocab)}\n"
                      "ids = [stoi[ch] for ch in \"the fox\"]\n"
                      "print(*ids, \"\".join(vocab[i] for i in ids))' " +
                          (dir / ("hf/" + std::string(kCharVocabFile))));
      if (python.exit_code != 127) {  // python3 is Debian's, nearly always there
        std::string want;
        for (const int64_t id : tokenizer->encode("the fox")) want += std::to_string(id) + " ";
        BOOST_TEST(python.out == want + "the fox\n");
      }
      const nn::SafetensorsFile file = nn::SafetensorsFile::read(dir / "hf/model.safetensors");
      BOOST_TEST((file.metadata() == std::map<std::string, std::string>{{"format", "pt"}}));
      BOOST_TEST(!file.contains("optimizer.m"));
      BOOST_TEST(!file.contains("lm_head.weight"));
      BOOST_TEST(file.contains("transformer.h.1.mlp.c_proj.bias"));
      BOOST_TEST((file.entries().at("transformer.h.0.mlp.c_fc.weight").shape == Shape{16, 64}));
    }
  }
}

BOOST_AUTO_TEST_CASE(a_bpe_model_gets_gpt2s_special_tokens_and_a_run_directory_exports) {
  const TempDir dir("export_bpe");
  GPTConfig c;
  c.vocab_size = 50257;
  c.block_size = 8;
  c.n_layer = 1;
  c.n_head = 2;
  c.n_embd = 8;
  c.dropout = 0.1;
  GPT model(c, 1);
  std::filesystem::create_directories(dir.path / "run");
  save_checkpoint(dir / ("run/" + std::string(kCheckpointFile)), model, "gpt2", "gpt2");
  const auto r = run_cli("export --checkpoint " + (dir / "run") + " --out " + (dir / "a/b"));
  BOOST_TEST_INFO(r.out);
  BOOST_TEST(r.exit_code == 0);
  BOOST_TEST(!contains(r.out, "note"));
  BOOST_TEST(contains(r.out, "attograd eval --hf-gpt2 " + (dir / "a/b/model.safetensors") + "\n"));
  std::ifstream in(dir.path / "a/b/config.json");
  const nlohmann::json j = nlohmann::json::parse(in);
  BOOST_TEST(j.at("eos_token_id") == 50256);
  BOOST_TEST(j.at("bos_token_id") == 50256);
  BOOST_TEST(j.at("n_positions") == 8);
  BOOST_TEST(j.at("n_ctx") == 8);
  BOOST_TEST(j.at("n_head") == 2);
  BOOST_TEST(j.at("resid_pdrop") == 0.1);
  BOOST_TEST(j.at("attn_pdrop") == 0.1);
  BOOST_TEST(j.at("embd_pdrop") == 0.1);
  BOOST_TEST(j.at("vocab_size") == 50257);
  BOOST_TEST(j.at("model_type") == "gpt2");
  BOOST_TEST(j.at("tie_word_embeddings") == true);
  BOOST_TEST(j.at("n_inner").is_null());
  std::ifstream generation(dir.path / "a/b" / kHfGenerationConfigFile);
  const nlohmann::json g = nlohmann::json::parse(generation);
  BOOST_TEST(g.at("bos_token_id") == 50256);
  BOOST_TEST(g.at("eos_token_id") == 50256);
  // GPT2Tokenizer's two files are OpenAI's encoder.json and vocab.bpe, byte for byte.
  const std::vector<std::filesystem::path> bpe = BpeTokenizer::gpt2_files();
  BOOST_TEST(attograd::testing::read_file(dir.path / "a/b" / kHfVocabFile) ==
             attograd::testing::read_file(bpe[0]));
  BOOST_TEST(attograd::testing::read_file(dir.path / "a/b" / kHfMergesFile) ==
             attograd::testing::read_file(bpe[1]));
  BOOST_TEST(!std::filesystem::exists(dir.path / "a/b" / kCharVocabFile));
  // --out naming a file is refused before anything is read or written.
  const std::string file = dir.file("taken", "x");
  const auto onto_file = run_cli("export --checkpoint " + (dir / "run") + " --out " + file);
  BOOST_TEST(onto_file.exit_code == 2);
  BOOST_TEST(contains(onto_file.out, "exists and is not a directory"));
}

// Issue 31, kinds 2 and 3. `export --checkpoint d/model.safetensors --out d` wrote the export
// over its own source and then failed: the training state and the char tokenizer were gone.
// An output that is (or links to) the input is refused, even with --overwrite, before anything
// is written. And an --out holding another model's files was overwritten without a word,
// leaving that model's tokenizer beside the new weights: it needs --overwrite now, as in train.
BOOST_AUTO_TEST_CASE(export_never_writes_over_its_checkpoint_nor_into_an_occupied_out) {
  namespace fs = std::filesystem;
  const TempDir dir("export_refusals");
  const std::string ckpt = write_checkpoint(dir, true);
  fs::create_directories(dir.path / "d");
  fs::copy_file(ckpt, dir.path / "d" / "model.safetensors");
  const std::string before = attograd::testing::read_file(dir.path / "d" / "model.safetensors");
  for (const std::string flags : {"", " --overwrite"}) {
    const auto r = run_cli("export --checkpoint " + (dir / "d/model.safetensors") + " --out " +
                           (dir / "d") + flags);
    BOOST_TEST_INFO(r.out);
    BOOST_TEST(r.exit_code == 2);
    BOOST_TEST(contains(r.out,
                        "/d/model.safetensors, which this command reads; writing it would "
                        "destroy it: choose another --out"));
  }
  // A symlink or a hard link in --out to the checkpoint is the checkpoint too.
  fs::create_directories(dir.path / "linked");
  fs::create_symlink(ckpt, dir.path / "linked" / "model.safetensors");
  fs::create_directories(dir.path / "hard");
  fs::create_hard_link(ckpt, dir.path / "hard" / "config.json");
  for (const std::string out : {"linked", "hard"}) {
    const auto r =
        run_cli("export --checkpoint " + ckpt + " --out " + (dir / out) + " --overwrite");
    BOOST_TEST_INFO(r.out);
    BOOST_TEST(r.exit_code == 2);
    BOOST_TEST(contains(r.out, "which this command reads"));
  }
  BOOST_TEST(attograd::testing::read_file(dir.path / "d" / "model.safetensors") == before);
  BOOST_TEST(attograd::testing::read_file(ckpt) == before);
  BOOST_TEST(fs::is_symlink(dir.path / "linked" / "model.safetensors"));

  // Another model's directory: refused without --overwrite, its files untouched.
  fs::create_directories(dir.path / "other");
  dir.file("other/model.safetensors", "another model");
  dir.file("other/vocab.json", "{}");
  const auto refused = run_cli("export --checkpoint " + ckpt + " --out " + (dir / "other"));
  BOOST_TEST_INFO(refused.out);
  BOOST_TEST(refused.exit_code == 2);
  BOOST_TEST(contains(refused.out,
                      "/other already holds model.safetensors, vocab.json: pass "
                      "--overwrite to write model.safetensors, config.json, "
                      "generation_config.json and the tokenizer's files there"));
  BOOST_TEST(attograd::testing::read_file(dir.path / "other" / "model.safetensors") ==
             "another model");
  BOOST_TEST(!fs::exists(dir.path / "other" / "config.json"));
  const auto replaced =
      run_cli("export --checkpoint " + ckpt + " --out " + (dir / "other") + " --overwrite");
  BOOST_TEST_INFO(replaced.out);
  BOOST_TEST(replaced.exit_code == 0);
  BOOST_TEST(fs::exists(dir.path / "other" / "config.json"));
  BOOST_TEST(attograd::testing::read_file(dir.path / "other" / "vocab.json") == "{}");
  // Issue 31, kind 6: an export killed while writing (Ctrl-C) left model.safetensors.tmp.* for
  // ever. The next export into that directory removes the temporaries of dead processes.
  dir.file("other/model.safetensors.tmp.999999.abcdef", "half an export");
  dir.file("other/notes.txt.tmp.999999.abcdef", "not ours");
  BOOST_TEST(run_cli("export --checkpoint " + ckpt + " --out " + (dir / "other") + " --overwrite")
                 .exit_code == 0);
  BOOST_TEST(!fs::exists(dir.path / "other" / "model.safetensors.tmp.999999.abcdef"));
  BOOST_TEST(fs::exists(dir.path / "other" / "notes.txt.tmp.999999.abcdef"));
  // An empty directory needs no --overwrite.
  fs::create_directories(dir.path / "empty");
  BOOST_TEST(run_cli("export --checkpoint " + ckpt + " --out " + (dir / "empty")).exit_code == 0);
  // A file after the weights cannot be written (here config.json is a directory): the error
  // says the folder is a partial export, what was written and what to do (issue 33's newcomer).
  fs::create_directories(dir.path / "partial" / "config.json");
  const auto partial =
      run_cli("export --checkpoint " + ckpt + " --out " + (dir / "partial") + " --overwrite");
  BOOST_TEST_INFO(partial.out);
  BOOST_TEST(partial.exit_code != 0);
  BOOST_TEST(contains(partial.out,
                      "/partial now holds a partial export (written: "
                      "model.safetensors; not: config.json and what follows it), "
                      "which must not be loaded"));
  BOOST_TEST(contains(partial.out, "then run export again with --overwrite"));
}

BOOST_AUTO_TEST_CASE(an_independent_torch_reader_computes_attograds_logits_and_loss) {
  if (run_program("/usr/bin/python3", "-c 'import torch, numpy'").exit_code != 0)
    return attograd::testing::skip_case(
        "/usr/bin/python3 with torch and numpy is not installed (apt-get install python3-torch)");
  const std::string script = ATTOGRAD_SOURCE_DIR "/tests/cli/hf_export_check.py";
  for (const bool bias : {true, false}) {
    BOOST_TEST_CONTEXT("bias " << bias) {
      const TempDir dir("export_torch");
      const std::string ckpt = write_checkpoint(dir, bias);
      const std::string ids = write_ids(dir, make_tokenizer("char", kText)->vocab_size());
      BOOST_TEST(run_cli("export --checkpoint " + ckpt + " --out " + (dir / "hf")).exit_code == 0);
      const std::string line = loss_line(run_cli("eval --checkpoint " + ckpt + " --ids " + ids));
      BOOST_TEST_REQUIRE(line.starts_with("loss "));
      const std::string loss = line.substr(5, line.find(' ', 5) - 5);
      const std::string logits = write_first_window_logits(dir, ckpt, ids);
      const auto check =
          run_program("/usr/bin/python3", script + " " + (dir / "hf") + " " + ids + " --loss " +
                                              loss + " --logits " + logits);
      BOOST_TEST_MESSAGE(check.out);
      BOOST_TEST_INFO(check.out);
      BOOST_TEST(check.exit_code == 0);
      // The reader can fail: a loss 1e-4 away is refused.
      const auto off =
          run_program("/usr/bin/python3", script + " " + (dir / "hf") + " " + ids + " --loss " +
                                              std::to_string(std::stod(loss) + 1e-4));
      BOOST_TEST(off.exit_code == 1);
      BOOST_TEST(contains(off.out, "differs from attograd's"));
    }
  }
}
