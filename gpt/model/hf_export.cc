#include "gpt/model/hf_export.h"

#include <filesystem>
#include <map>
#include <stdexcept>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "autograd/ops.h"
#include "gpt/model/checkpoint.h"
#include "gpt/text/bpe_tokenizer.h"
#include "gpt/text/char_tokenizer.h"
#include "gpt/text/corpus.h"
#include "nn/io/atomic_file.h"
#include "nn/io/safetensors.h"
#include "nn/layers.h"

namespace attograd::gpt {

void require_hf_gpt2_exportable(ModelKind kind, const GPTConfig& config, const std::string& what) {
  if (kind != ModelKind::gpt)
    throw std::invalid_argument(
        what + " holds " + (kind == ModelKind::average ? "an " : "a ") + model_kind_name(kind) +
        " model, which has no Hugging Face counterpart: only a GPT exports as GPT2LMHeadModel");
  if (config.pos_encoding != PosEncoding::learned)
    throw std::invalid_argument(
        what + " holds a GPT with " + pos_encoding_name(config.pos_encoding) +
        " positions, but Hugging Face's GPT-2 adds a learned table (wpe) and has no other kind: "
        "only a GPT trained with --pos-encoding learned (the default) exports");
}

std::string hf_gpt2_config_json(const GPTConfig& c, const std::string& tokenizer_kind) {
  // GPT-2's <|endoftext|> is both its bos and eos; attograd's char tokenizer has neither.
  const nlohmann::json special =
      tokenizer_kind == "gpt2" ? nlohmann::json(50256) : nlohmann::json(nullptr);
  const nlohmann::json j = {
      {"model_type", "gpt2"},
      {"architectures", {"GPT2LMHeadModel"}},
      {"vocab_size", c.vocab_size},
      {"n_positions", c.block_size},
      {"n_ctx", c.block_size},
      {"n_embd", c.n_embd},
      {"n_layer", c.n_layer},
      {"n_head", c.n_head},
      {"n_inner", nullptr},  // 4 * n_embd, attograd's MLP width
      {"activation_function", "gelu_new"},
      {"layer_norm_epsilon", nn::kGpt2LayerNormEps},
      {"resid_pdrop", c.dropout},
      {"embd_pdrop", c.dropout},
      {"attn_pdrop", c.dropout},
      {"initializer_range", 0.02},
      {"scale_attn_weights", true},
      {"scale_attn_by_inverse_layer_idx", false},
      {"reorder_and_upcast_attn", false},
      {"tie_word_embeddings", true},
      {"use_cache", true},
      {"bos_token_id", special},
      {"eos_token_id", special},
      {"torch_dtype", "float32"},
      // Only for GPT2DoubleHeadsModel's classification head, which this is not: its defaults.
      {"summary_type", "cls_index"},
      {"summary_use_proj", true},
      {"summary_activation", nullptr},
      {"summary_proj_to_labels", true},
      {"summary_first_dropout", 0.1},
  };
  return j.dump(2) + "\n";
}

namespace {

// GPT-2's tensors in the order and under the names (without "transformer.") Hugging Face uses,
// with their shapes in the file: Conv1D weights (in, out). (Plain vectors: gcc 12 warns of a
// false overread when small_vector shapes are moved through this table.)
std::vector<std::pair<std::string, std::vector<int64_t>>> hf_gpt2_tensors(const GPTConfig& c) {
  const int64_t C = c.n_embd;
  std::vector<std::pair<std::string, std::vector<int64_t>>> t = {{"wte.weight", {c.vocab_size, C}},
                                                                 {"wpe.weight", {c.block_size, C}}};
  const std::vector<std::pair<std::string, std::vector<int64_t>>> block = {
      {"ln_1.weight", {C}},
      {"ln_1.bias", {C}},
      {"attn.c_attn.weight", {C, 3 * C}},
      {"attn.c_attn.bias", {3 * C}},
      {"attn.c_proj.weight", {C, C}},
      {"attn.c_proj.bias", {C}},
      {"ln_2.weight", {C}},
      {"ln_2.bias", {C}},
      {"mlp.c_fc.weight", {C, 4 * C}},
      {"mlp.c_fc.bias", {4 * C}},
      {"mlp.c_proj.weight", {4 * C, C}},
      {"mlp.c_proj.bias", {C}}};
  for (int64_t i = 0; i < c.n_layer; ++i)
    for (const auto& [name, shape] : block)
      t.emplace_back("h." + std::to_string(i) + "." + name, shape);
  t.push_back({"ln_f.weight", {C}});
  t.push_back({"ln_f.bias", {C}});
  return t;
}

}  // namespace

void check_hf_export_dir(const std::string& dir, bool overwrite,
                         const std::vector<std::filesystem::path>& inputs) {
  const std::filesystem::path out(dir);
  if (!std::filesystem::exists(out)) return;
  if (!std::filesystem::is_directory(out))
    throw std::invalid_argument("--out " + dir + " exists and is not a directory");
  for (const char* name : {kHfWeightsFile, kHfConfigFile})
    nn::refuse_output_that_is_an_input(out / name, inputs, "--out", out);
  if (overwrite) return;
  const std::string listed = nn::directory_listing(out);
  if (listed.empty()) return;
  throw std::invalid_argument("--out " + dir + " already holds " + listed +
                              ": pass --overwrite to write model.safetensors, config.json, "
                              "generation_config.json and the tokenizer's files there (files of "
                              "other names are left as they are), or choose an empty or new --out");
}

HfExport export_hf_gpt2(LanguageModel& model, const Tokenizer& tokenizer, const std::string& dir,
                        const std::string& what, bool overwrite,
                        const std::vector<std::filesystem::path>& inputs) {
  const GPTConfig& c = model.config();
  require_hf_gpt2_exportable(model.kind(), c, what);
  const std::filesystem::path out(dir);
  check_hf_export_dir(dir, overwrite, inputs);
  std::map<std::string, Tensor> params;
  for (const auto& [name, t] : model.named_parameters()) params.emplace(name, t.detach());
  nn::SafetensorsWriter w;
  w.metadata["format"] = "pt";  // from_pretrained refuses a safetensors file without it
  HfExport result;
  for (const auto& [name, dims] : hf_gpt2_tensors(c)) {
    const Shape shape(dims.begin(), dims.end());
    const auto it = params.find(name);
    Tensor t;
    if (it != params.end()) {
      t = is_conv1d_weight(name) ? transpose(it->second, 0, 1) : it->second;
      params.erase(it);
    } else if (!c.bias && name.ends_with(".bias")) {
      t = Tensor::zeros(shape, model.dtype());  // --no-bias: GPT-2 has one, and zero is none
    } else {
      throw std::logic_error("export_hf_gpt2: the GPT has no parameter '" + name + "'");
    }
    if (t.shape() != shape)
      throw std::logic_error("export_hf_gpt2: '" + name + "' is " + shape_str(t.shape()) +
                             ", GPT-2 stores " + shape_str(shape));
    w.add("transformer." + name, t);
    ++result.tensors;
    result.parameters += t.numel();
  }
  if (!params.empty())  // a parameter GPT-2 has no place for would be dropped in silence
    throw std::logic_error("export_hf_gpt2: GPT-2 has no tensor for '" + params.begin()->first +
                           "'");
  std::error_code ec;
  std::filesystem::create_directories(out, ec);
  if (ec)
    throw std::runtime_error("--out " + dir + ": cannot create the directory (" + ec.message() +
                             "); choose another --out");
  const bool bpe = tokenizer.kind() == "gpt2";
  // The tokenizer's files, as bytes under their names here (read before anything is written).
  std::vector<std::pair<std::string, std::string>> tokenizer_files;
  if (bpe) {
    const std::vector<std::filesystem::path> sources = BpeTokenizer::gpt2_files();
    const std::string fix = "; set ATTOGRAD_DATA_DIR to attograd's data/ folder";
    tokenizer_files = {{kHfVocabFile, read_text_file(sources[0], "GPT-2 vocabulary file", fix)},
                       {kHfMergesFile, read_text_file(sources[1], "GPT-2 merges file", fix)}};
  } else if (const auto* chars = dynamic_cast<const CharTokenizer*>(&tokenizer)) {
    nlohmann::json vocab = nlohmann::json::array();
    for (int64_t id = 0; id < chars->vocab_size(); ++id) vocab.push_back(chars->token_text(id));
    tokenizer_files = {
        {kCharVocabFile, nlohmann::json{{"type", "char"}, {"vocab", vocab}}.dump(1) + "\n"}};
  }
  nlohmann::json generation{{"_from_model_config", true}};
  if (bpe) generation["bos_token_id"] = generation["eos_token_id"] = BpeTokenizer::kEndOfText;
  std::vector<std::string> targets{kHfWeightsFile, kHfConfigFile, kHfGenerationConfigFile};
  for (const auto& [name, bytes] : tokenizer_files) targets.push_back(name);
  // An export interrupted (Ctrl-C, kill) leaves its temporary, as large as the weights: those of
  // our names whose process is gone go now (no lock here: a live export's are kept).
  nn::remove_stale_temp_files(out, {.targets = targets});
  const std::filesystem::path weights = out / kHfWeightsFile;
  w.write(weights.string());
  result.files = {weights.string()};
  // Each file is whole or absent (written atomically), but the set is not: a failure after the
  // weights (a full disk, a permission) leaves new weights beside an older config or none. Said
  // with what was written, so that nobody loads the folder as if it were one export.
  const auto write = [&](const std::string& name, const std::string& bytes) {
    try {
      nn::write_file_atomically(out / name, bytes);
    } catch (const std::exception& e) {
      std::string written;
      for (const std::string& f : result.files)
        written += (written.empty() ? "" : ", ") + std::filesystem::path(f).filename().string();
      throw std::runtime_error(std::string(e.what()) + "; --out " + dir +
                               " now holds a partial "
                               "export (written: " +
                               written + "; not: " + name +
                               " and what follows it), which must not be loaded: free the space "
                               "or fix the permission, then run export again with --overwrite");
    }
    result.files.push_back((out / name).string());
  };
  write(kHfConfigFile, hf_gpt2_config_json(c, tokenizer.kind()));
  write(kHfGenerationConfigFile, generation.dump(2) + "\n");
  for (const auto& [name, bytes] : tokenizer_files) write(name, bytes);
  return result;
}

HfExport export_checkpoint_to_hf(const std::string& checkpoint, const std::string& dir,
                                 bool overwrite) {
  const std::string source = checkpoint_file(checkpoint);
  // Refused before anything is read: an export over its own checkpoint loses the training state.
  check_hf_export_dir(dir, overwrite, {source});
  const nn::SafetensorsFile file = nn::SafetensorsFile::read(source);
  const CheckpointInfo info = read_checkpoint_info(file, Moments::skip);
  const std::string what = "'" + file.path() + "'";
  require_hf_gpt2_exportable(info.kind, info.config, what);
  const Session session = open_checkpoint_file(file);
  return export_hf_gpt2(*session.model, *session.tokenizer, dir, what, overwrite, {source});
}

}  // namespace attograd::gpt
