#include "gpt/model/checkpoint.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <set>
#include <stdexcept>
#include <string_view>

#include "autograd/ops.h"
#include "gpt/io/decimal.h"
#include "gpt/io/json_fields.h"
#include "gpt/model/bigram_average.h"
#include "gpt/model/hf_import.h"
#include "nn/io/strict_json.h"

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

GPTConfig config_from_json(const std::string& text, const std::string& what, ModelKind kind) {
  JsonFields f(nn::parse_json(text, what), what);
  try {
    const GPTConfig c = fields_from_json(f, config_fields());
    validate_for(kind, c);
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

// A loss stored as metadata text ("val_loss"): a finite number, read whole. Refuses "nan",
// "inf", " 3.2", "3.2x" and what overflows a double.
// (parse_decimal, not std::from_chars: the WebAssembly build's libc++ has no from_chars for
// double.)
double metadata_loss(const std::string& text, const std::string& what) {
  const std::optional<double> v = parse_decimal(text);
  if (!v)
    throw std::runtime_error(what + " is '" + text.substr(0, 40) + "', expected a finite number");
  return *v;
}

// The model kind an attograd checkpoint's metadata names; a GPT when it names none (written
// before other kinds existed).
ModelKind checkpoint_kind(const nn::SafetensorsFile& file) {
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

}  // namespace

const nn::SafetensorsEntry* find_gpt2_tensor(const nn::SafetensorsFile& file,
                                             const std::string& name) {
  for (const std::string& key : {name, "transformer." + name}) {
    auto it = file.entries().find(key);
    if (it != file.entries().end()) return &it->second;
  }
  return nullptr;
}

void check_config_against_tensors(ModelKind kind, const GPTConfig& c,
                                  const nn::SafetensorsFile& file, const std::string& source) {
  const std::string where = "'" + file.path() + "': " + source + " says ";
  const nn::SafetensorsEntry* wte = find_gpt2_tensor(file, "wte.weight");
  const int64_t width =
      kind == ModelKind::bigram ? c.vocab_size : c.n_embd;  // a bigram's rows are logits
  if (wte == nullptr || wte->shape != Shape{c.vocab_size, width})
    throw std::runtime_error(
        where + (kind == ModelKind::gpt ? "" : std::string(model_kind_name(kind)) + " with ") +
        "vocab_size " + std::to_string(c.vocab_size) +
        (kind == ModelKind::bigram ? std::string() : " and n_embd " + std::to_string(c.n_embd)) +
        ", but " +
        (wte ? "wte.weight is " + shape_str(wte->shape) : std::string("there is no wte.weight")));
  const nn::SafetensorsEntry* wpe = find_gpt2_tensor(file, "wpe.weight");
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

void refuse_unconvertible_dtypes(const nn::SafetensorsFile& file, DType dtype) {
  for (const auto& [key, entry] : file.entries()) {
    if (key.ends_with(".attn.bias") || key.ends_with(".attn.masked_bias")) continue;
    if (!nn::safetensors_converts(entry.dtype, dtype))
      throw std::runtime_error("'" + file.path() + "': tensor '" + key + "' is " + entry.dtype +
                               ", which cannot be loaded into an " + dtype_name(dtype) + " model");
  }
}

bool is_conv1d_weight(const std::string& name) {
  for (const char* suffix :
       {"attn.c_attn.weight", "attn.c_proj.weight", "mlp.c_fc.weight", "mlp.c_proj.weight"})
    if (name.ends_with(suffix)) return true;
  return false;
}

void save_checkpoint(const std::string& path, LanguageModel& model,
                     const std::string& tokenizer_kind, const std::string& tokenizer_data,
                     const TrainingState* training) {
  nn::SafetensorsWriter w;
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
    // JSON's shortest text that reads back to the same double.
    if (training->val_loss) w.metadata["val_loss"] = nlohmann::json(*training->val_loss).dump();
    w.add("optimizer.m", training->adam_m);
    w.add("optimizer.v", training->adam_v);
  }
  w.write(path);
}

CheckpointInfo read_checkpoint_info(const nn::SafetensorsFile& file, Moments moments) {
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
  info.config = config_from_json(get("config"), what + " 'config'", info.kind);
  JsonFields tok(nn::parse_json(get("tokenizer"), what + " 'tokenizer'"), what + " 'tokenizer'");
  info.tokenizer_kind = tok.string("kind");
  info.tokenizer_data = tok.string("data");
  tok.finish();
  if (md.count("step")) {
    TrainingState s;
    s.step = metadata_count(get("step"), what + " 'step'");
    s.batch_rng = get("batch_rng");  // checked where it is used (Generator::set_state)
    s.adam_t = metadata_count(get("adam_t"), what + " 'adam_t'");
    s.train_options = get("train_options");  // checked where it is used (TrainOptions::from_json)
    if (md.count("val_loss")) s.val_loss = metadata_loss(get("val_loss"), what + " 'val_loss'");
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

void load_weights(LanguageModel& model, const nn::SafetensorsFile& file) {
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
        .converts_to = [dtype =
                            entry.dtype](DType to) { return nn::safetensors_converts(dtype, to); },
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
    const nn::SafetensorsEntry &head = file.entries().at("lm_head.weight"),
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

std::unique_ptr<LanguageModel> load_language_model(const nn::SafetensorsFile& file, DType dtype,
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

void require_training_memory(const nn::SafetensorsFile& file, const std::string& label,
                             int64_t n_head_override) {
  int64_t params = 0;
  if (file.metadata().count("config") == 0) {  // a Hugging Face file: its shapes say it all
    params = num_parameters(ModelKind::gpt, infer_hf_gpt2_config(file, n_head_override));
  } else {
    const CheckpointInfo info = read_checkpoint_info(file, Moments::skip);
    check_config_against_tensors(info.kind, info.config, file, "its config");
    params = num_parameters(info.kind, info.config);
  }
  require_memory(params, DType::f32, kTrainingCopies, "weights, gradients and AdamW's two moments",
                 label);
}

std::unique_ptr<GPT> load_model(const nn::SafetensorsFile& file, DType dtype) {
  if (const ModelKind kind = checkpoint_kind(file); kind != ModelKind::gpt)
    throw std::runtime_error(
        "'" + file.path() + "' holds " + (kind == ModelKind::average ? "an " : "a ") +
        model_kind_name(kind) +
        " model (checkpoint metadata 'model'), not a GPT; this needs a GPT checkpoint "
        "(sample and eval take every model kind)");
  return std::unique_ptr<GPT>(static_cast<GPT*>(load_language_model(file, dtype).release()));
}

}  // namespace attograd::gpt
