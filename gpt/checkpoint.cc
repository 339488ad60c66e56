#include "gpt/checkpoint.h"

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <stdexcept>

#include "autograd/ops.h"

namespace attograd::gpt {

namespace {

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

nlohmann::json config_to_json(const GPTConfig& c) {
  return {{"vocab_size", c.vocab_size}, {"block_size", c.block_size}, {"n_layer", c.n_layer},
          {"n_head", c.n_head},         {"n_embd", c.n_embd},         {"dropout", c.dropout},
          {"bias", c.bias},             {"pos_encoding", pos_encoding_name(c.pos_encoding)}};
}

GPTConfig config_from_json(const nlohmann::json& j) {
  GPTConfig c;
  c.vocab_size = j.at("vocab_size");
  c.block_size = j.at("block_size");
  c.n_layer = j.at("n_layer");
  c.n_head = j.at("n_head");
  c.n_embd = j.at("n_embd");
  c.dropout = j.at("dropout");
  c.bias = j.at("bias");
  c.pos_encoding = parse_pos_encoding(j.at("pos_encoding"));
  return c;
}

}  // namespace

bool is_conv1d_weight(const std::string& name) {
  for (const char* suffix : {"attn.c_attn.weight", "attn.c_proj.weight", "mlp.c_fc.weight", "mlp.c_proj.weight"})
    if (ends_with(name, suffix)) return true;
  return false;
}

void save_checkpoint(const std::string& path, GPT& model, const std::string& tokenizer_kind,
                     const std::string& tokenizer_data, const TrainingState* training) {
  SafetensorsWriter w;
  w.metadata["format"] = "attograd-gpt2";
  w.metadata["config"] = config_to_json(model.config()).dump();
  w.metadata["tokenizer"] = nlohmann::json{{"kind", tokenizer_kind}, {"data", tokenizer_data}}.dump();
  w.metadata["dropout_rng"] = model.dropout_generator().state();
  for (const auto& [name, t] : model.named_parameters())
    w.add(name, is_conv1d_weight(name) ? transpose(t.detach(), 0, 1) : t.detach());
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
      throw std::runtime_error("'" + file.path() + "' is not an attograd checkpoint: its metadata has no '" + key +
                               "' (a Hugging Face GPT-2 file loads with --hf-gpt2 instead)");
    return it->second;
  };
  CheckpointInfo info;
  try {
    info.config = config_from_json(nlohmann::json::parse(get("config")));
    info.config.validate();  // std::invalid_argument, caught below: n_head 0 is the file's fault
    const nlohmann::json tok = nlohmann::json::parse(get("tokenizer"));
    info.tokenizer_kind = tok.at("kind");
    info.tokenizer_data = tok.at("data");
    if (md.count("step")) {
      TrainingState s;
      s.step = std::stoll(get("step"));
      s.batch_rng = get("batch_rng");
      s.adam_t = std::stoll(get("adam_t"));
      s.train_options = get("train_options");
      // In their stored dtype: F32 since the moments are kept in f32, F64 in older checkpoints
      // (AdamW::load_state converts).
      for (auto [name, moment] : {std::pair{"optimizer.m", &s.adam_m}, std::pair{"optimizer.v", &s.adam_v}}) {
        if (!file.contains(name))
          throw std::runtime_error("'" + file.path() + "': the checkpoint has a training state but no '" + name +
                                   "' tensor (a truncated or hand-edited file?)");
        if (moments == Moments::load)
          *moment = file.tensor(name, file.entries().at(name).dtype == "F64" ? DType::f64 : DType::f32);
      }
      info.training = s;
    }
  } catch (const nlohmann::json::exception& e) {
    throw std::runtime_error("'" + file.path() + "': malformed checkpoint metadata: " + e.what());
  } catch (const std::logic_error& e) {  // stoll, invalid config values
    throw std::runtime_error("'" + file.path() + "': malformed checkpoint metadata: " + e.what());
  }
  return info;
}

void load_weights(GPT& model, const SafetensorsFile& file) {
  const auto named = model.named_parameters();
  // Pass 1, from the header alone: every name, shape and dtype must check out before any
  // parameter is written, so a bad file leaves the model as it was.
  std::vector<std::string> keys;
  std::set<std::string> used;
  for (const auto& [name, param] : named) {
    std::string key = name;
    if (!file.contains(key)) key = "transformer." + name;
    if (!file.contains(key))
      throw std::runtime_error("'" + file.path() + "': missing tensor '" + name + "' (expected shape " +
                               shape_str(param.shape()) + "); is this checkpoint for a different config?");
    const bool conv1d = is_conv1d_weight(name);
    Shape expected = param.shape();
    if (conv1d) std::swap(expected[0], expected[1]);
    const SafetensorsEntry& entry = file.entries().at(key);
    if (entry.shape != expected)
      throw std::runtime_error("'" + file.path() + "': tensor '" + key + "' has shape " + shape_str(entry.shape) +
                               " but the model expects " + shape_str(expected) +
                               (conv1d ? " (GPT-2 Conv1D layout, (in, out))" : "") +
                               "; the checkpoint and the model config disagree");
    if (!safetensors_converts(entry.dtype, model.dtype()))
      throw std::runtime_error("'" + file.path() + "': tensor '" + key + "' is " + entry.dtype +
                               ", which cannot be loaded into an " + dtype_name(model.dtype()) + " model");
    keys.push_back(key);
    used.insert(key);
  }
  for (const auto& [key, entry] : file.entries()) {
    if (used.count(key) || key.rfind("optimizer.", 0) == 0) continue;
    if (ends_with(key, "attn.bias") || ends_with(key, "attn.masked_bias") || ends_with(key, "lm_head.weight")) continue;
    throw std::runtime_error("'" + file.path() + "': unexpected tensor '" + key + "' " + shape_str(entry.shape) +
                             " that the model has no place for; is this checkpoint for a different config?");
  }
  // Pass 2: each tensor straight from the file into its parameter in the arena; a Conv1D
  // weight through a transposed view of it.
  for (size_t i = 0; i < named.size(); ++i) {
    const Tensor p = named[i].second.detach();
    file.read_into(keys[i], is_conv1d_weight(named[i].first) ? transpose(p, 0, 1) : p);
  }
}

GPTConfig infer_hf_gpt2_config(const SafetensorsFile& file, int64_t n_head_override) {
  auto find = [&](const std::string& name) -> const SafetensorsEntry* {
    for (const std::string& key : {name, "transformer." + name}) {
      auto it = file.entries().find(key);
      if (it != file.entries().end()) return &it->second;
    }
    return nullptr;
  };
  const SafetensorsEntry* wte = find("wte.weight");
  const SafetensorsEntry* wpe = find("wpe.weight");
  if (wte == nullptr || wpe == nullptr || wte->shape.size() != 2 || wpe->shape.size() != 2)
    throw std::runtime_error("'" + file.path() + "' is not a GPT-2 file: it has no 2-D wte.weight and wpe.weight");
  GPTConfig c;
  c.vocab_size = wte->shape[0];
  c.n_embd = wte->shape[1];
  c.block_size = wpe->shape[0];
  c.n_layer = 0;
  while (find("h." + std::to_string(c.n_layer) + ".ln_1.weight") != nullptr) ++c.n_layer;
  if (c.n_layer == 0) throw std::runtime_error("'" + file.path() + "' has no transformer blocks (h.0.*)");
  c.bias = find("h.0.attn.c_attn.bias") != nullptr;
  c.dropout = 0.0;
  c.pos_encoding = PosEncoding::learned;
  if (n_head_override > 0) {
    c.n_head = n_head_override;
  } else {
    const std::filesystem::path config_json = std::filesystem::path(file.path()).parent_path() / "config.json";
    std::ifstream in(config_json);
    nlohmann::json j;
    if (in && (j = nlohmann::json::parse(in, nullptr, false), !j.is_discarded()) && j.contains("n_head")) {
      // get<int64_t> would throw nlohmann's type_error for a string and truncate 3.9 to 3.
      if (!j["n_head"].is_number_integer())
        throw std::runtime_error("'" + config_json.string() + "': n_head is " + j["n_head"].dump() +
                                 ", not an integer; fix config.json or pass --n-head");
      c.n_head = j["n_head"].get<int64_t>();
    } else if (c.n_embd == 768 || c.n_embd == 1024 || c.n_embd == 1280 || c.n_embd == 1600) {
      c.n_head = c.n_embd / 64;  // GPT-2 small, medium, large, xl all use head_dim 64
    } else {
      throw std::runtime_error("'" + file.path() + "': n_head is not stored in the weights, there is no config.json "
                               "beside the file, and n_embd " + std::to_string(c.n_embd) +
                               " is not a standard GPT-2 size; pass --n-head");
    }
  }
  try {
    c.validate();
  } catch (const std::invalid_argument& e) {
    throw std::runtime_error("'" + file.path() + "': " + e.what());
  }
  return c;
}

std::unique_ptr<GPT> load_hf_gpt2(const SafetensorsFile& file, int64_t n_head_override, DType dtype) {
  auto model = std::make_unique<GPT>(infer_hf_gpt2_config(file, n_head_override), 0, dtype);
  load_weights(*model, file);
  return model;
}

std::unique_ptr<GPT> load_model(const SafetensorsFile& file, DType dtype) {
  const CheckpointInfo info = read_checkpoint_info(file, Moments::skip);
  auto model = std::make_unique<GPT>(info.config, 0, dtype);
  load_weights(*model, file);
  auto it = file.metadata().find("dropout_rng");
  if (it != file.metadata().end()) {
    try {
      model->dropout_generator().set_state(it->second);
    } catch (const std::invalid_argument& e) {  // a hand-edited or corrupt state
      throw std::runtime_error("'" + file.path() + "': malformed checkpoint metadata 'dropout_rng': " + e.what());
    }
  }
  return model;
}

}  // namespace attograd::gpt
