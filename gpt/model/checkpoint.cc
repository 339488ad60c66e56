#include "gpt/model/checkpoint.h"

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <set>
#include <stdexcept>
#include <string_view>

#include "autograd/ops.h"
#include "gpt/io/strict_json.h"
#include "gpt/model/baselines.h"

namespace attograd::gpt {

namespace {

// GPTConfig's JSON fields (a checkpoint's "config"), from its table: read in the ranges
// GPTConfig::validate applies, which then checks the rules between the fields.
const std::vector<JsonField<GPTConfig>>& config_fields() {
  static const std::vector<JsonField<GPTConfig>> fields = json_fields<GPTConfig>();
  return fields;
}

}  // namespace

std::string config_to_json(const GPTConfig& config) {
  return fields_to_json(config, config_fields()).dump();
}

GPTConfig config_from_json(const std::string& text, const std::string& what) {
  JsonFields f(parse_json(text, what), what);
  try {
    const GPTConfig c = fields_from_json(f, config_fields());
    c.validate();
    return c;
  } catch (const std::invalid_argument& e) {  // an unknown pos_encoding, or validate()
    throw std::runtime_error(what + ": " + e.what());
  }
}

namespace {

// A count stored as metadata text ("step", "adam_t"): decimal digits only, below 2^63. Refuses
// what std::stoll would accept or bend: "12abc", " 12", "-1", "1e3", 2^63.
int64_t metadata_count(const std::string& text, const std::string& what) {
  int64_t v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || text[0] == '-' || ec != std::errc() || end != text.data() + text.size())
    throw std::runtime_error(what + " is '" + text.substr(0, 40) +
                             "', expected a count in [0, 2^63)");
  return v;
}

// A tensor of `file` by its GPT-2 name, with or without Hugging Face's "transformer." prefix;
// nullptr when it has neither.
const SafetensorsEntry* find_tensor(const SafetensorsFile& file, const std::string& name) {
  for (const std::string& key : {name, "transformer." + name}) {
    auto it = file.entries().find(key);
    if (it != file.entries().end()) return &it->second;
  }
  return nullptr;
}

// The model kind an attograd checkpoint's metadata names; a GPT when it names none (written
// before other kinds existed).
ModelKind checkpoint_kind(const SafetensorsFile& file) {
  const auto it = file.metadata().find("model");
  if (it == file.metadata().end()) return ModelKind::gpt;
  try {
    return parse_model_kind(it->second);
  } catch (const std::invalid_argument& e) {
    throw std::runtime_error("'" + file.path() + "': checkpoint metadata 'model': " + e.what());
  }
}

// The block index N of a tensor named "h.N.<...>" (optionally "transformer."-prefixed), or -1.
int64_t block_index(std::string_view key) {
  if (key.starts_with("transformer.")) key.remove_prefix(12);
  if (!key.starts_with("h.")) return -1;
  key.remove_prefix(2);
  int64_t n = -1;
  const auto [end, ec] = std::from_chars(key.data(), key.data() + key.size(), n);
  if (ec != std::errc() || end == key.data() + key.size() || *end != '.') return -1;
  return n;
}

// Checks, from the header alone and before a GPT of config c (from `source`) is allocated,
// that the file can be that model: wte is (vocab_size, n_embd), wpe (block_size, n_embd)
// exactly when positions are learned, the blocks are h.0 .. h.{n_layer-1}, and the file holds
// at least the values every block needs. So a config that lies (n_layer 1,000,000 in a 57 KB
// file) is refused naming both numbers, instead of allocating until memory runs out;
// load_weights then checks every tensor's name, shape and dtype.
void check_config_against_tensors(ModelKind kind, const GPTConfig& c, const SafetensorsFile& file,
                                  const std::string& source) {
  const std::string where = "'" + file.path() + "': " + source + " says ";
  const SafetensorsEntry* wte = find_tensor(file, "wte.weight");
  const int64_t width =
      kind == ModelKind::bigram ? c.vocab_size : c.n_embd;  // a bigram's rows are logits
  if (wte == nullptr || wte->shape != Shape{c.vocab_size, width})
    throw std::runtime_error(
        where + (kind == ModelKind::gpt ? "" : std::string(model_kind_name(kind)) + " with ") +
        "vocab_size " + std::to_string(c.vocab_size) +
        (kind == ModelKind::bigram ? std::string() : " and n_embd " + std::to_string(c.n_embd)) +
        ", but " +
        (wte ? "wte.weight is " + shape_str(wte->shape) : std::string("there is no wte.weight")));
  const SafetensorsEntry* wpe = find_tensor(file, "wpe.weight");
  const bool has_positions = kind != ModelKind::bigram;
  if (has_positions && c.pos_encoding == PosEncoding::learned &&
      (wpe == nullptr || wpe->shape != Shape{c.block_size, c.n_embd}))
    throw std::runtime_error(
        where + "block_size " + std::to_string(c.block_size) + " with learned positions, but " +
        (wpe ? "wpe.weight is " + shape_str(wpe->shape) : std::string("there is no wpe.weight")));
  if ((!has_positions || c.pos_encoding != PosEncoding::learned) && wpe != nullptr)
    throw std::runtime_error(
        where + (has_positions ? pos_encoding_name(c.pos_encoding) : "bigram (no)") +
        " positions, which have no table, but the file holds wpe.weight " + shape_str(wpe->shape));
  std::set<int64_t> blocks;
  uint64_t values = 0;  // elements in the file; cannot overflow: each takes at least a byte
  for (const auto& [key, entry] : file.entries()) {
    if (const int64_t n = block_index(key); n >= 0) blocks.insert(n);
    values += static_cast<uint64_t>(shape_numel(entry.shape));
  }
  const int64_t last = blocks.empty() ? -1 : *blocks.rbegin();
  if (kind != ModelKind::gpt) {
    // No blocks, and every parameter's values in the file: a lying vocab_size must not make
    // the model allocate a V x V table that the file cannot fill.
    const auto need = static_cast<uint64_t>(num_parameters(kind, c));
    if (!blocks.empty() || need > values)
      throw std::runtime_error(where + model_kind_name(kind) + " (" + std::to_string(need) +
                               " parameters, no transformer blocks), but the file holds " +
                               std::to_string(blocks.size()) + " block(s) and " +
                               std::to_string(values) + " values in all");
    return;
  }
  if (static_cast<int64_t>(blocks.size()) != c.n_layer || last != c.n_layer - 1)
    throw std::runtime_error(where + "n_layer " + std::to_string(c.n_layer) +
                             ", but the file holds " + std::to_string(blocks.size()) + " block(s)" +
                             (blocks.empty() ? std::string()
                                             : " (h." + std::to_string(*blocks.begin()) + " to h." +
                                                   std::to_string(last) + ")"));
  // Every block holds at least its four projections, c_attn (C, 3C), attn.c_proj (C, C),
  // c_fc (C, 4C) and mlp.c_proj (4C, C): 12 C^2 values. Tiny tensors under the right names
  // must not make the model allocate a huge n_embd before their shapes are compared.
  uint64_t per_block = 0, needed = 0;
  const auto C = static_cast<uint64_t>(c.n_embd);
  const bool overflow =
      __builtin_mul_overflow(C, C, &per_block) ||
      __builtin_mul_overflow(per_block, 12, &per_block) ||
      __builtin_mul_overflow(per_block, static_cast<uint64_t>(c.n_layer), &needed);
  if (overflow || needed > values)
    throw std::runtime_error(
        where + "n_layer " + std::to_string(c.n_layer) + " and n_embd " + std::to_string(c.n_embd) +
        ", at least " + (overflow ? std::string("2^64") : std::to_string(needed)) +
        " block parameters, but the file holds " + std::to_string(values) + " values in all");
}

// Reads Hugging Face's config.json beside a GPT-2 file and returns its n_head (0 when it has
// none). What it says must agree with the tensors (c, inferred from them), and the fields that
// change GPT-2's computation must have the values attograd computes with, else the model would
// be evaluated as something it is not. Fields that change nothing eval or sample compute
// (dropout rates, token ids, task parameters) are not read.
int64_t read_hf_config_json(const std::filesystem::path& path, const GPTConfig& c,
                            const std::string& model_path) {
  const std::string what = "'" + path.string() + "' (beside '" + model_path + "')";
  constexpr uintmax_t kMaxBytes = 16
                                  << 20;  // GPT-2's is 1 KB; /dev/zero must not be read to the end
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec))
    throw std::runtime_error(what + " is not a regular file (a directory or a broken link?)");
  if (std::filesystem::file_size(path, ec) > kMaxBytes)
    throw std::runtime_error(what + " is larger than 16 MB: not a model config");
  std::ifstream in(path, std::ios::binary);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (!in) throw std::runtime_error("cannot read " + what);
  const nlohmann::json j = parse_json(text, what);
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
        what + " says layer_norm_epsilon " + json_excerpt(j.at("layer_norm_epsilon")) +
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

bool is_conv1d_weight(const std::string& name) {
  for (const char* suffix :
       {"attn.c_attn.weight", "attn.c_proj.weight", "mlp.c_fc.weight", "mlp.c_proj.weight"})
    if (name.ends_with(suffix)) return true;
  return false;
}

void save_checkpoint(const std::string& path, LanguageModel& model,
                     const std::string& tokenizer_kind, const std::string& tokenizer_data,
                     const TrainingState* training) {
  SafetensorsWriter w;
  w.metadata["format"] = "attograd-gpt2";
  w.metadata["model"] = model_kind_name(model.kind());
  w.metadata["config"] = config_to_json(model.config());
  w.metadata["tokenizer"] =
      nlohmann::json{{"kind", tokenizer_kind}, {"data", tokenizer_data}}.dump();
  w.metadata["dropout_rng"] = model.dropout_generator().state();
  for (const auto& [name, t] : model.state_dict())  // what load_weights reads back
    w.add(name, is_conv1d_weight(name) ? transpose(t, 0, 1) : t);
  if (training != nullptr) {
    w.metadata["step"] = std::to_string(training->step);
    w.metadata["batch_rng"] = training->batch_rng;
    w.metadata["adam_t"] = std::to_string(training->adam_t);
    w.metadata["train_options"] = training->train_options;
    w.add("optimizer.m", training->adam_m);
    w.add("optimizer.v", training->adam_v);
  }
  w.write(path);
}

CheckpointInfo read_checkpoint_info(const SafetensorsFile& file, Moments moments) {
  const auto& md = file.metadata();
  auto get = [&](const std::string& key) -> const std::string& {
    auto it = md.find(key);
    if (it == md.end())
      throw std::runtime_error("'" + file.path() +
                               "' is not an attograd checkpoint: its metadata has no '" + key +
                               "' (a Hugging Face GPT-2 file loads with --hf-gpt2 instead)");
    return it->second;
  };
  const std::string what = "'" + file.path() + "': checkpoint metadata";
  CheckpointInfo info;
  info.kind = checkpoint_kind(file);
  info.config = config_from_json(get("config"), what + " 'config'");
  JsonFields tok(parse_json(get("tokenizer"), what + " 'tokenizer'"), what + " 'tokenizer'");
  info.tokenizer_kind = tok.string("kind");
  info.tokenizer_data = tok.string("data");
  tok.finish();
  if (md.count("step")) {
    TrainingState s;
    s.step = metadata_count(get("step"), what + " 'step'");
    s.batch_rng = get("batch_rng");  // checked where it is used (Generator::set_state)
    s.adam_t = metadata_count(get("adam_t"), what + " 'adam_t'");
    s.train_options = get("train_options");  // checked where it is used (TrainOptions::from_json)
    // In their stored dtype: F32 since the moments are kept in f32, F64 in older checkpoints
    // (AdamW::load_state converts).
    for (auto [name, moment] :
         {std::pair{"optimizer.m", &s.adam_m}, std::pair{"optimizer.v", &s.adam_v}}) {
      if (!file.contains(name))
        throw std::runtime_error("'" + file.path() +
                                 "': the checkpoint has a training state but no '" + name +
                                 "' tensor (a truncated or hand-edited file?)");
      if (moments == Moments::load) {
        file.require_finite(name,
                            "AdamW's moments are damaged, or the run diverged before this "
                            "checkpoint: resume from an earlier one, or start a new run with "
                            "--init-from this file (which reads the weights only)");
        *moment =
            file.tensor(name, file.entries().at(name).dtype == "F64" ? DType::f64 : DType::f32);
      }
    }
    info.training = s;
  }
  return info;
}

void load_weights(LanguageModel& model, const SafetensorsFile& file) {
  if (const ModelKind kind = checkpoint_kind(file); kind != model.kind())
    throw std::runtime_error(
        "'" + file.path() + "' holds the model kind '" + model_kind_name(kind) +
        "' (checkpoint metadata 'model'), not '" + model_kind_name(model.kind()) +
        "'; load it with load_language_model, which builds the kind the file holds");
  std::set<std::string> module_keys;
  for (const auto& [key, t] : model.state_dict()) module_keys.insert(key);
  // The file's tensors as the model's state dict names and lays them out, checked as any
  // state dict is (nn::Module::check_state_dict: every key, shape and dtype before anything is
  // written, every problem named). A key may carry Hugging Face's "transformer." prefix; a
  // Conv1D weight is stored (in, out), the transpose of the model's (out, in). Beyond the state
  // dict a file may hold only what is known and checked here: each block's causal mask
  // buffers (attn.bias, attn.masked_bias: constants that GPT-2 recomputes), an output head tied
  // to wte (lm_head.weight with wte's very bytes, checked below) and a checkpoint's AdamW
  // moments (read by read_checkpoint_info). Anything else is refused by name, never dropped in
  // silence.
  std::vector<nn::StateDictEntry> entries;
  std::map<std::string, std::string> file_key;  // the model's key -> the file's
  bool has_lm_head = false;
  for (const auto& [key, entry] : file.entries()) {
    if (key == "optimizer.m" || key == "optimizer.v") continue;
    if (const int64_t n = block_index(key);
        model.kind() == ModelKind::gpt && n >= 0 && n < model.config().n_layer) {
      const std::string block =
          (key.starts_with("transformer.") ? "transformer.h." : "h.") + std::to_string(n);
      if (key == block + ".attn.bias" || key == block + ".attn.masked_bias") continue;
    }
    if (key == "lm_head.weight") {
      has_lm_head = true;
      continue;
    }
    std::string name = key;
    if (key.starts_with("transformer.") && module_keys.count(key.substr(12))) name = key.substr(12);
    nn::StateDictEntry e{
        .key = name,
        .shape = entry.shape,
        .dtype = entry.dtype,
        .converts_to = [dtype = entry.dtype](DType to) { return safetensors_converts(dtype, to); },
        .layout = {}};
    if (is_conv1d_weight(name) && e.shape.size() == 2) {
      e.layout = "stored " + shape_str(e.shape) + ", GPT-2's Conv1D layout (in, out)";
      std::swap(e.shape[0], e.shape[1]);
    }
    file_key[name] = key;
    entries.push_back(std::move(e));
  }
  try {
    model.check_state_dict(entries, /*strict=*/true, "the file",
                           "is this checkpoint for a different config?");
  } catch (const std::invalid_argument& e) {
    // A file's problem, as SafetensorsFile::read's, named by its path.
    throw std::runtime_error("'" + file.path() + "': " + e.what());
  }
  if (has_lm_head) {
    const std::string& wte_key = file_key.at("wte.weight");
    const SafetensorsEntry &head = file.entries().at("lm_head.weight"),
                           &wte = file.entries().at(wte_key);
    if (head.dtype != wte.dtype || head.shape != wte.shape ||
        file.bytes("lm_head.weight") != file.bytes(wte_key))
      throw std::runtime_error(
          "'" + file.path() + "': lm_head.weight " + shape_str(head.shape) + " " + head.dtype +
          " is not a byte-for-byte copy of " + wte_key + " " + shape_str(wte.shape) + " " +
          wte.dtype +
          ": the file has an untied output head, and attograd's GPT ties the head to wte, so "
          "it cannot evaluate this model faithfully (only tied GPT-2 heads load)");
  }
  // Every value finite, checked from the stored bits before any parameter is written.
  for (const auto& [name, t] : model.state_dict())
    file.require_finite(file_key.at(name),
                        "the file is damaged, or was saved from a run that diverged: load an "
                        "earlier checkpoint");
  // Each tensor straight from the file into its place in the arena; a Conv1D weight through a
  // transposed view of it.
  for (const auto& [name, t] : model.state_dict())
    file.read_into(file_key.at(name), is_conv1d_weight(name) ? transpose(t, 0, 1) : t);
}

GPTConfig infer_hf_gpt2_config(const SafetensorsFile& file, int64_t n_head_override) {
  const SafetensorsEntry* wte = find_tensor(file, "wte.weight");
  const SafetensorsEntry* wpe = find_tensor(file, "wpe.weight");
  if (wte == nullptr || wpe == nullptr || wte->shape.size() != 2 || wpe->shape.size() != 2)
    throw std::runtime_error("'" + file.path() +
                             "' is not a GPT-2 file: it has no 2-D wte.weight and wpe.weight");
  GPTConfig c;
  c.vocab_size = wte->shape[0];
  c.n_embd = wte->shape[1];
  c.block_size = wpe->shape[0];
  c.n_layer = 0;
  while (find_tensor(file, "h." + std::to_string(c.n_layer) + ".ln_1.weight") != nullptr)
    ++c.n_layer;
  if (c.n_layer == 0)
    throw std::runtime_error("'" + file.path() + "' has no transformer blocks (h.0.*)");
  c.bias = find_tensor(file, "h.0.attn.c_attn.bias") != nullptr;
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
    throw std::runtime_error("'" + file.path() + "': " + e.what());
  }
  check_config_against_tensors(ModelKind::gpt, c, file, "the config read from its tensors");
  return c;
}

namespace {

// Refuses a file with a tensor attograd cannot convert into `dtype` before any model is built:
// a model is allocated from the shapes alone, and a sparse 4 KB file of U8 tensors with GPT-2's
// shapes made eval allocate over 1 GB before load_weights named the dtype. The mask buffers
// of Hugging Face files (attn.bias, attn.masked_bias) are constants never loaded.
void refuse_unconvertible_dtypes(const SafetensorsFile& file, DType dtype) {
  for (const auto& [key, entry] : file.entries()) {
    if (key.ends_with(".attn.bias") || key.ends_with(".attn.masked_bias")) continue;
    if (!safetensors_converts(entry.dtype, dtype))
      throw std::runtime_error("'" + file.path() + "': tensor '" + key + "' is " + entry.dtype +
                               ", which cannot be loaded into an " + dtype_name(dtype) + " model");
  }
}

}  // namespace

std::unique_ptr<GPT> load_hf_gpt2(const SafetensorsFile& file, int64_t n_head_override, DType dtype,
                                  std::optional<double> dropout) {
  refuse_unconvertible_dtypes(file, dtype);
  GPTConfig c = infer_hf_gpt2_config(file, n_head_override);
  if (dropout) c.dropout = *dropout;
  auto model = std::make_unique<GPT>(c, 0, dtype);
  load_weights(*model, file);
  return model;
}

std::unique_ptr<LanguageModel> load_language_model(const SafetensorsFile& file, DType dtype,
                                                   std::optional<double> dropout) {
  CheckpointInfo info = read_checkpoint_info(file, Moments::skip);
  check_config_against_tensors(info.kind, info.config, file, "its config");
  refuse_unconvertible_dtypes(file, dtype);
  if (dropout) info.config.dropout = *dropout;
  std::unique_ptr<LanguageModel> model = make_model(info.kind, info.config, 0, dtype);
  load_weights(*model, file);
  auto it = file.metadata().find("dropout_rng");
  try {
    if (it != file.metadata().end()) model->dropout_generator().set_state(it->second);
  } catch (const std::invalid_argument& e) {
    throw std::runtime_error("'" + file.path() +
                             "': checkpoint metadata 'dropout_rng': " + e.what());
  }
  return model;
}

void require_training_memory(const SafetensorsFile& file, const std::string& label,
                             int64_t n_head_override) {
  int64_t params = 0;
  if (file.metadata().count("config") == 0) {  // a Hugging Face file: its shapes say it all
    params = num_parameters(ModelKind::gpt, infer_hf_gpt2_config(file, n_head_override));
  } else {
    const CheckpointInfo info = read_checkpoint_info(file, Moments::skip);
    check_config_against_tensors(info.kind, info.config, file, "its config");
    params = num_parameters(info.kind, info.config);
  }
  require_memory(params, DType::f32, 4, "weights, gradients and AdamW's two moments", label);
}

std::unique_ptr<GPT> load_model(const SafetensorsFile& file, DType dtype) {
  if (const ModelKind kind = checkpoint_kind(file); kind != ModelKind::gpt)
    throw std::runtime_error(
        "'" + file.path() + "' holds " + (kind == ModelKind::average ? "an " : "a ") +
        model_kind_name(kind) +
        " model (checkpoint metadata 'model'), not a GPT; this needs a GPT checkpoint "
        "(sample and eval take every model kind)");
  return std::unique_ptr<GPT>(static_cast<GPT*>(load_language_model(file, dtype).release()));
}

}  // namespace attograd::gpt
