// Writes the seed corpus of every fuzz target: make_fuzz_seeds DIR writes DIR/<target>/<seed>
// (tests/fuzz/corpus is what is committed). Seeds are small, valid examples of each format,
// plus a few that take each loader's error paths; libFuzzer mutates them from there. The files
// are deterministic: running this again rewrites them byte for byte.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <utility>

#include "autograd/ops.h"
#include "gpt/model/checkpoint.h"
#include "gpt/model/config.h"
#include "gpt/model/gpt2.h"
#include "gpt/text/char_tokenizer.h"
#include "nn/io/safetensors.h"
#include "tests/fuzz/fuzz_support.h"

using namespace attograd;
using namespace attograd::gpt;
namespace fs = std::filesystem;

namespace {

std::string read_all(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void write(const fs::path& path, std::string_view bytes) {
  fs::create_directories(path.parent_path());
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out) throw std::runtime_error("cannot write " + path.string());
}

// A safetensors file from a header written by hand and its data bytes.
std::string raw_safetensors(const std::string& header, std::string_view data) {
  std::string out(8, '\0');
  for (size_t i = 0; i < 8; ++i) out[i] = static_cast<char>((header.size() >> (8 * i)) & 0xff);
  return out + header + std::string(data);
}

// The lecture's femto model over a 5-character vocabulary, as `train` checkpoints it.
void checkpoints(const fs::path& dir, const fs::path& scratch) {
  const CharTokenizer tok = CharTokenizer::from_text("abcd\n");
  GPTConfig c = preset("femto");
  c.vocab_size = tok.vocab_size();
  c.block_size = 4;
  GPT model(c, 1);
  const fs::path tmp = scratch / "ckpt.safetensors";
  save_checkpoint(tmp.string(), model, tok.kind(), tok.serialize());
  write(dir / "femto_weights.safetensors", read_all(tmp));
  TrainingState s;
  s.step = 3;
  s.batch_rng = "1 2 3";
  s.adam_t = 3;
  s.adam_m = Tensor::zeros({model.num_parameters()});
  s.adam_v = Tensor::full({model.num_parameters()}, 1e-4);
  s.train_options = R"({"batch_size": 2})";
  save_checkpoint(tmp.string(), model, tok.kind(), tok.serialize(), &s);
  write(dir / "femto_training.safetensors", read_all(tmp));
  // The same without dropout_rng (optional when loading): its 312 numbers are 7 KB of the
  // 9 KB file, and mutations spent there seldom reach the config and the tensors.
  {
    const nn::SafetensorsFile full = nn::SafetensorsFile::read(tmp.string());
    nn::SafetensorsWriter w;
    w.metadata = full.metadata();
    w.metadata.erase("dropout_rng");
    for (const auto& [name, entry] : full.entries()) w.add(name, full.tensor(name, DType::f32));
    const fs::path compact = scratch / "compact.safetensors";
    w.write(compact.string());
    write(dir / "femto_training_compact.safetensors", read_all(compact));
  }
  // Each stored dtype the reader converts (F16 1.0 = 3C00, BF16 1.0 = 3F80) and one it does not.
  const std::string header =
      R"({"__metadata__":{"format":"pt"},"a":{"dtype":"F16","shape":[2],"data_offsets":[0,4]},)"
      R"("b":{"dtype":"BF16","shape":[1,2],"data_offsets":[4,8]},"c":{"dtype":"F64","shape":[],"data_offsets":[8,16]},)"
      R"("d":{"dtype":"I64","shape":[1],"data_offsets":[16,24]},"e":{"dtype":"U8","shape":[3],"data_offsets":[24,27]}})";
  const unsigned char data[27] = {0x00, 0x3C, 0x00, 0xBC, 0x80, 0x3F, 0x00, 0x40, 0, 0, 0, 0, 0, 0,
                                  0xF0, 0x3F, 7,    0,    0,    0,    0,    0,    0, 0, 1, 2, 3};
  write(
      dir / "dtypes.safetensors",
      raw_safetensors(header, std::string_view(reinterpret_cast<const char*>(data), sizeof data)));
}

// The issue's Hugging Face example: V 7, 6 positions, width 4, 2 heads, 1 layer, written in
// Hugging Face's layout (transformer. prefix, Conv1D weights (in, out), attn.bias buffers).
void hf_models(const fs::path& dir, const fs::path& scratch) {
  GPTConfig c;
  c.vocab_size = 7;
  c.block_size = 6;
  c.n_layer = 1;
  c.n_head = 2;
  c.n_embd = 4;
  GPT model(c, 2);
  nn::SafetensorsWriter w;
  for (const auto& [name, t] : model.named_parameters())
    w.add("transformer." + name, is_conv1d_weight(name) ? transpose(t.detach(), 0, 1) : t.detach());
  w.add("transformer.h.0.attn.bias", Tensor::ones({1, 1, 6, 6}));
  const fs::path tmp = scratch / "model.safetensors";
  w.write(tmp.string());
  const std::string model_bytes = read_all(tmp);
  const std::string marker(fuzz::kSplitMarker);
  write(dir / "with_config",
        R"({"n_head": 2, "n_layer": 1, "n_embd": 4, "vocab_size": 7, "n_positions": 6})" + marker +
            model_bytes);
  write(dir / "no_config", model_bytes);  // n_embd 4 is no GPT-2 size: "pass --n-head"
}

void texts(const fs::path& root) {
  const std::string marker(fuzz::kSplitMarker);
  // GPT-2 BPE: contractions, numbers, runs of spaces, emoji, a special token, other scripts.
  write(root / "bpe" / "english",
        "Hello world! It's 2024, and we'll see   what they've done.\n\tEnd.");
  write(root / "bpe" / "unicode",
        "caf\xC3\xA9 \xF0\x9F\x98\x80 \xE6\x97\xA5\xE6\x9C\xAC\xE8\xAA\x9E "
        "\xD0\x9F\xD1\x80\xD0\xB8 \xCE\xB1\xCE\xB2");
  write(root / "bpe" / "special", "a<|endoftext|>b <|endoftext|><|endoftext|>");
  write(root / "bpe" / "invalid", "ok \xC0\xAF \xED\xA0\x80 \xF4\x90\x80\x80 \xFF");
  // The char tokenizer: a text alone, then a vocabulary with a text.
  write(root / "char_tokenizer" / "text", "To be, or not to be: caf\xC3\xA9 \xF0\x9F\x98\x80\n");
  write(root / "char_tokenizer" / "vocab_and_text", "\n abehnortw" + marker + "the bower\n");
  write(root / "char_tokenizer" / "vocab_missing_char", " abc" + marker + "abcd");
  write(root / "char_tokenizer" / "unsorted_vocab", "cba" + marker + "abc");
  // Corpora: plain text, a byte order mark, CRLF lines, bible's own output.
  write(root / "corpus" / "plain",
        "First Citizen:\nBefore we proceed any further, hear me speak.\n\nAll:\nSpeak, speak.\n");
  write(root / "corpus" / "bom_crlf", "\xEF\xBB\xBFline one\r\nline two\r\n\xC3\xA9t\xC3\xA9\r\n");
  write(root / "corpus" / "bible",
        "\nGenesis 1\n\n  1 In the beginning God created the heaven and the earth.\n"
        "  2 And the earth was without form, and void; and darkness was upon the face of\n"
        "the deep.\n\nSong of Solomon 2\n\n  1 I am the rose of Sharon,  and the lily of the "
        "valleys.\n");
  write(root / "corpus" / "invalid_utf8",
        "abc\xFF"
        "def");
}

// The command line's options (cli_options: "--flag=<text>"), typed numbers and the lecture's
// matrices (decimal: "<Q>" or "<Q>\n--8<--\n<K>\n--8<--\n<V>"), and run logs (csv_log:
// "<t|e><step>\n<log>").
void typed(const fs::path& root) {
  const std::string marker(fuzz::kSplitMarker);
  const std::pair<const char*, const char*> options[] = {
      {"lr", "--lr=0.01"},
      {"dropout_near_one", "--dropout=0.995"},
      {"label_smoothing", "--label-smoothing=0.1"},
      {"n_layer", "--n-layer=12"},
      {"steps_octal", "--steps=010"},
      {"seed_max", "--seed=18446744073709551615"},
      {"init_seed_negative", "--init-seed=-1"},
      {"pos_encoding", "--pos-encoding=rope"},
      {"top_p", "--top-p=1"},
      {"temperature_exponent", "--temperature=8e-1"},
      {"threads", "--threads=2"},
      {"lr_overflow", "--lr=1e400"},
      {"grad_clip_nan", "--grad-clip=nan"},
      {"batch_size_empty", "--batch-size="},
  };
  for (const auto& [name, text] : options) write(root / "cli_options" / name, text);
  write(root / "decimal" / "number", "-2.5e-3");
  write(root / "decimal" / "hex_float", "0x1p3");
  write(root / "decimal" / "underflow", "1e-400");
  write(root / "decimal" / "matrix", "1,0; 0,1; 1,1");
  write(root / "decimal" / "ragged_matrix", "1,2;3");
  write(root / "decimal" / "qkv", "1,0;0,1;1,1" + marker + "1,0;0,1;1,1" + marker + "1,2;3,4;5,6");
  // The issue's example: finite values of V whose weighted sums overflow.
  write(root / "decimal" / "qkv_overflow",
        "0;0;0" + marker + "0;0;0" + marker + "1e308;1e308;1e308");
  const std::string train = "step,loss,lr,grad_norm,tokens_per_s\n";
  write(root / "csv_log" / "torn_train_log",
        "t4\n" + train +
            "1,4.1,0.01,0.9,1000\n2,3.9,0.01,,1000\n3,3.5,0.01,nan,inf\n"
            "4,3.2,0.01,1.1,1000\n5,3.1,0.01,1.0,1000\n6,3.0\n4,1,1,,12");
  write(root / "csv_log" / "crlf_eval_log",
        "e6\r\nstep,train_loss,val_loss,train_ppl,val_ppl\r\n0,4.2,4.2,66.7,66.7\r\n"
        "2,3.1,3.2,22.2,24.5\r\n4,2.9,3.0,18.2,20.1\r\n");
  write(root / "csv_log" / "restarted_train_log",
        "t\n" + train + "1,4,0.1,,10\n2,3,0.1,,10\n3,9,0.1,,10\n2,3,0.1,,10\n3,2.5,0.1,,10\n");
  write(root / "csv_log" / "fresh_run", "e-1\n" + train + "1,4,0.1,,10\n");
  // Columns moved and one added (kept by name), and one renamed (refused).
  write(root / "csv_log" / "moved_eval_log",
        "e4\nwall_s,step,val_loss,train_loss,train_ppl,val_ppl\n1.5,0,4.2,4.1,60.3,66.7\n"
        "2.5,2,3.2,3.1,22.2,24.5\n3.5,4,3.0,2.9,18.2,20.1\n");
  write(root / "csv_log" / "renamed_column",
        "t\nstep,loss,LR,grad_norm,tokens_per_s\n1,4,0.1,,10\n");
  write(root / "csv_log" / "nul_and_huge_field", "t9\n" + train +
                                                     std::string("1,4\0,0.1,,10\n", 13) + "2," +
                                                     std::string(3000, '9') + ",0.1,,10\n");
}

// The page's requests (requests: one JSON request, as attograd_call takes it) and config files
// (config_file: the text of `train --config`).
void requests(const fs::path& root) {
  std::string text;
  for (int i = 0; i < 4; ++i) text += "the quick brown fox jumps over the lazy dog. ";
  const std::pair<const char*, std::string> requests[] = {
      {"info", R"({"cmd": "info"})"},
      {"positions", R"({"cmd": "positions", "T": 4, "n_embd": 6})"},
      {"rope", R"({"cmd": "rope", "q": "1, 0.5", "k": "0.7, -0.2", "m": 3, "n": 1})"},
      {"order", R"({"cmd": "order", "words": ["dog", "bites", "man"], "positions": true})"},
      {"attention",
       R"({"cmd": "attention", "Q": "1;2", "K": "1;3", "V": "10;20", "softmax_by": "column"})"},
      {"model_new", R"({"cmd": "model_new", "preset": "pico", "text": ")" + text +
                        R"(", "max_steps": 4, "batch_size": 2, "eval_iters": 1, "seed": 3})"},
      {"model_new_bigram",
       R"({"cmd": "model_new", "kind": "bigram", "text": ")" + text + R"(", "beta2": 0.99})"},
      {"train", R"({"cmd": "train", "steps": 2})"},
      {"evaluate", R"({"cmd": "evaluate"})"},
      {"forward", R"({"cmd": "forward", "prompt": "the qu"})"},
      {"sample",
       R"({"cmd": "sample", "prompt": "th", "max_new_tokens": 4, "top_k": 3, "seed": 1})"},
      {"batch_loss", R"({"cmd": "batch_loss", "text": ")" + text + R"(", "rows": 2})"},
      {"gradcheck", R"({"cmd": "gradcheck", "op": "relu", "dtype": "f32"})"},
      {"ops", R"({"cmd": "ops"})"},
      // The issue's lenient reads (kind 11), now refused.
      {"T_huge", R"({"cmd": "positions", "T": 1e300})"},
      {"steps_fraction", R"({"cmd": "train", "steps": 2.99})"},
      {"cmd_twice", R"({"cmd": "ops", "cmd": "info"})"},
      {"seed_negative", R"({"cmd": "sample", "prompt": "t", "seed": -5})"},
  };
  for (const auto& [name, request] : requests) write(root / "requests" / name, request);
  const std::pair<const char*, const char*> configs[] = {
      {"all_sections",
       R"({"run": {"corpus": "shakespeare", "tokenizer": "char", "init_seed": 7},
 "model": {"preset": "pico", "n_layer": 2, "dropout": 0.1, "pos_encoding": "rope"},
 "train": {"max_steps": 100, "batch_size": 8, "learning_rate": 0.001, "beta2": 0.99,
           "mixed_precision": "bf16"}})"},
      {"empty", "{}"},
      {"flag_spelling", R"({"train": {"lr": 0.01}})"},
      {"vocab_size", R"({"model": {"vocab_size": 65}})"},
      {"fraction", R"({"model": {"n_layer": 2.5}})"},
      {"key_twice", R"({"train": {"seed": 1, "seed": 2}})"},
  };
  for (const auto& [name, config] : configs) write(root / "config_file" / name, config);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s DIR (writes DIR/<target>/<seed>)\n", argv[0]);
    return 1;
  }
  const fs::path root = argv[1];
  try {
    checkpoints(root / "safetensors", fuzz::scratch_dir());
    hf_models(root / "hf_import", fuzz::scratch_dir());
    texts(root);
    typed(root);
    requests(root);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "make_fuzz_seeds: %s\n", e.what());
    return 1;
  }
  return 0;
}
