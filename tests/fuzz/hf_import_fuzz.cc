// Fuzz target: the Hugging Face GPT-2 importer (load_hf_gpt2 in gpt/model/hf_import.h) with the
// config.json beside the file, as `attograd sample/eval --hf-gpt2 DIR/model.safetensors` runs it.
//
// The input is "<config.json>\n--8<--\n<model.safetensors>"; without the marker line there is
// no config.json and the whole input is the model file. A model the importer accepts must have
// the config its tensors imply (vocab_size and n_embd from wte, block_size from wpe) and must
// run a forward pass over a short sequence. The only error allowed is std::runtime_error (what
// checkpoint.h and safetensors.h document).
#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "autograd/engine.h"
#include "autograd/tensor.h"
#include "gpt/model/checkpoint.h"
#include "gpt/model/hf_import.h"
#include "nn/io/safetensors.h"
#include "tests/fuzz/fuzz_support.h"

using namespace attograd;
using namespace attograd::gpt;

namespace {

const nn::SafetensorsEntry* find_entry(const nn::SafetensorsFile& file, const std::string& name) {
  for (const std::string& key : {name, "transformer." + name}) {
    auto it = file.entries().find(key);
    if (it != file.entries().end()) return &it->second;
  }
  return nullptr;
}

void check_model(const GPT& model, const nn::SafetensorsFile& file) {
  const GPTConfig& c = model.config();
  const nn::SafetensorsEntry* wte = find_entry(file, "wte.weight");
  const nn::SafetensorsEntry* wpe = find_entry(file, "wpe.weight");
  FUZZ_CHECK(wte != nullptr && wpe != nullptr, "a model without wte or wpe was accepted");
  FUZZ_CHECK(wte->shape == (Shape{c.vocab_size, c.n_embd}), "wte disagrees with the config");
  FUZZ_CHECK(wpe->shape == (Shape{c.block_size, c.n_embd}), "wpe disagrees with the config");
  // A forward pass over min(block_size, 3) tokens: the loaded shapes must fit together.
  const int64_t T = std::min<int64_t>(c.block_size, 3);
  std::vector<int64_t> ids;
  for (int64_t t = 0; t < T; ++t) ids.push_back(t % c.vocab_size);
  NoGradGuard no_grad;
  const GPTOutput out = model.forward(Tensor::from_ids(ids, {1, T}));
  FUZZ_CHECK(out.logits().shape() == (Shape{1, T, c.vocab_size}),
             "the logits have the wrong shape");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto [config_json, model_bytes] = fuzz::split_input(fuzz::as_text(data, size));
  if (model_bytes) {
    fuzz::write_scratch("config.json", config_json);
  } else {
    fuzz::remove_scratch("config.json");
  }
  const std::string path =
      fuzz::write_scratch("model.safetensors", model_bytes.value_or(config_json)).string();
  std::optional<nn::SafetensorsFile> file;
  std::unique_ptr<GPT> model;
  try {
    file.emplace(nn::SafetensorsFile::read(path));
    model = load_hf_gpt2(*file);
  } catch (const std::runtime_error&) {
    return 0;  // a clean refusal
  }
  check_model(*model, *file);  // no error allowed: the importer vouched for the model
  return 0;
}
