#include "gpt/model/hf_import.h"

#include <exception>
#include <filesystem>
#include <fstream>
#include <limits>
#include <stdexcept>
#include <string>
#include <utility>

#include "gpt/io/json_fields.h"
#include "gpt/model/checkpoint.h"
#include "nn/io/strict_json.h"
#include "nn/layers.h"

namespace attograd::gpt {

namespace {

// Reads Hugging Face's config.json beside a GPT-2 file and returns its n_head (0 when it has
// none). What it says must agree with the tensors (c, inferred from them), and the fields that
// change GPT-2's computation must have the values attograd computes with, else the model would
// be evaluated as something it is not. Fields that change nothing eval or sample compute
// (dropout rates, token ids, task parameters) are not read.
int64_t read_hf_config_json(const std::filesystem::path& path, const GPTConfig& c,
                            const std::string& model_path) {
  // Appended, not "'" + ...: gcc 12 warns falsely (-Wrestrict) on the inlined concatenation.
  std::string what(1, '\'');
  ((what += path.string()) += "' (beside '") += model_path + "')";
  // GPT-2's is 1 KB; /dev/zero must not be read to the end.
  constexpr uintmax_t kMaxBytes = 16 << 20;
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec))
    throw std::runtime_error(what + " is not a regular file (a directory or a broken link?)");
  if (std::filesystem::file_size(path, ec) > kMaxBytes)
    throw std::runtime_error(what + " is larger than 16 MB: not a model config");
  std::ifstream in(path, std::ios::binary);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (!in) throw std::runtime_error("cannot read " + what);
  const nlohmann::json j = nn::parse_json(text, what);
  JsonFields f(j, what);
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  const std::pair<const char*, int64_t> from_tensors[] = {{"n_layer", c.n_layer},
                                                          {"n_embd", c.n_embd},
                                                          {"vocab_size", c.vocab_size},
                                                          {"n_positions", c.block_size},
                                                          {"n_ctx", c.block_size}};
  for (const auto& [key, value] : from_tensors)
    if (f.has(key) && f.integer(key, 1, kMax) != value)
      throw std::runtime_error(what + " says " + key + " " +
                               std::to_string(f.integer(key, 1, kMax)) + ", but the tensors give " +
                               std::to_string(value));
  if (f.has("n_inner") && !j.at("n_inner").is_null() &&
      f.integer("n_inner", 1, kMax) != 4 * c.n_embd)
    throw std::runtime_error(
        what + " says n_inner " + std::to_string(f.integer("n_inner", 1, kMax)) +
        "; attograd's GPT-2 MLP is 4 * n_embd = " + std::to_string(4 * c.n_embd) + " wide");
  // Each: the value attograd computes with, which the file must not contradict.
  if (f.has("activation_function")) {
    const std::string act = f.string("activation_function");
    if (act != "gelu_new" && act != "gelu_pytorch_tanh")
      throw std::runtime_error(what + " says activation_function '" + act.substr(0, 40) +
                               "'; attograd's GPT-2 computes GELU's tanh approximation (gelu_new)");
  }
  if (f.has("layer_norm_epsilon") && f.number("layer_norm_epsilon", 0, 1) != nn::kGpt2LayerNormEps)
    throw std::runtime_error(
        what + " says layer_norm_epsilon " + nn::json_excerpt(j.at("layer_norm_epsilon")) +
        "; attograd's GPT-2 computes with " + nlohmann::json(nn::kGpt2LayerNormEps).dump());
  const std::pair<const char*, bool> flags[] = {{"scale_attn_weights", true},
                                                {"scale_attn_by_inverse_layer_idx", false},
                                                {"tie_word_embeddings", true}};
  for (const auto& [key, value] : flags)
    if (f.has(key) && f.boolean(key) != value)
      throw std::runtime_error(what + " says " + key + " " + (value ? "false" : "true") +
                               "; attograd's GPT-2 only computes with " +
                               (value ? "true" : "false"));
  if (f.has("model_type") && f.string("model_type") != "gpt2")
    throw std::runtime_error(what + " says model_type '" + f.string("model_type").substr(0, 40) +
                             "'; only GPT-2 (model_type gpt2) files load");
  return f.has("n_head") ? f.integer("n_head", 1, kMax) : 0;
}

}  // namespace

GPTConfig infer_hf_gpt2_config(const nn::SafetensorsFile& file, int64_t n_head_override) {
  const nn::SafetensorsEntry* wte = find_gpt2_tensor(file, "wte.weight");
  const nn::SafetensorsEntry* wpe = find_gpt2_tensor(file, "wpe.weight");
  if (wte == nullptr || wpe == nullptr || wte->shape.size() != 2 || wpe->shape.size() != 2)
    throw std::runtime_error("'" + file.path() +
                             "' is not a GPT-2 file: it has no 2-D wte.weight and wpe.weight");
  GPTConfig c;
  c.vocab_size = wte->shape[0];
  c.n_embd = wte->shape[1];
  c.block_size = wpe->shape[0];
  c.n_layer = 0;
  while (find_gpt2_tensor(file, "h." + std::to_string(c.n_layer) + ".ln_1.weight") != nullptr)
    ++c.n_layer;
  if (c.n_layer == 0)
    throw std::runtime_error("'" + file.path() + "' has no transformer blocks (h.0.*)");
  c.bias = find_gpt2_tensor(file, "h.0.attn.c_attn.bias") != nullptr;
  c.dropout = 0.0;
  c.pos_encoding = PosEncoding::learned;
  const std::filesystem::path config_json =
      std::filesystem::path(file.path()).parent_path() / "config.json";
  // A dangling symlink counts as present: it is refused as not a regular file, not skipped.
  const bool has_config_json =
      std::filesystem::exists(std::filesystem::symlink_status(config_json));
  const int64_t json_n_head =
      has_config_json ? read_hf_config_json(config_json, c, file.path()) : 0;
  // A --n-head that contradicts config.json evaluated a different model and exited 0; the
  // override is for files without config.json, as --checkpoint refuses any contradiction.
  if (n_head_override > 0 && json_n_head > 0 && n_head_override != json_n_head)
    throw std::runtime_error("'" + file.path() + "': --n-head " + std::to_string(n_head_override) +
                             " contradicts n_head " + std::to_string(json_n_head) +
                             " in the config.json beside it; drop --n-head (or fix config.json)");
  if (n_head_override > 0) {
    c.n_head = n_head_override;
  } else if (json_n_head > 0) {
    c.n_head = json_n_head;
  } else if (c.n_embd == 768 || c.n_embd == 1024 || c.n_embd == 1280 || c.n_embd == 1600) {
    c.n_head = c.n_embd / 64;  // GPT-2 small, medium, large, xl all use head_dim 64
  } else if (const auto format = file.metadata().find("format");
             format != file.metadata().end() && format->second == "attograd-gpt2") {
    // attograd's own checkpoints share GPT-2's names and layout, so --hf-gpt2 reads them with
    // --n-head; without it, the fix is the other option, not a number to guess.
    throw std::runtime_error("'" + file.path() +
                             "' is an attograd checkpoint (its metadata says format "
                             "attograd-gpt2), which holds its config: open it with --checkpoint "
                             "instead of --hf-gpt2");
  } else {
    throw std::runtime_error("'" + file.path() + "': n_head is not stored in the weights, " +
                             (has_config_json ? "the config.json beside the file has none"
                                              : "there is no config.json beside the file") +
                             ", and n_embd " + std::to_string(c.n_embd) +
                             " is not a standard GPT-2 size; pass --n-head");
  }
  try {
    c.validate();
  } catch (const std::invalid_argument& e) {
    // Nested: a front end finds the ConfigRuleError inside and can name its options (--n-head).
    std::throw_with_nested(std::runtime_error("'" + file.path() + "': " + e.what()));
  }
  check_config_against_tensors(ModelKind::gpt, c, file, "the config read from its tensors");
  return c;
}

std::unique_ptr<GPT> load_hf_gpt2(const nn::SafetensorsFile& file, int64_t n_head_override,
                                  DType dtype, std::optional<double> dropout) {
  refuse_unconvertible_dtypes(file, dtype);
  GPTConfig c = infer_hf_gpt2_config(file, n_head_override);
  if (dropout) c.dropout = *dropout;
  auto model = std::make_unique<GPT>(c, 0, dtype);
  load_weights(*model, file);
  return model;
}

}  // namespace attograd::gpt
