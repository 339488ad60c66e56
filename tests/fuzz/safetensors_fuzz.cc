// Fuzz target: the safetensors reader (nn/io/safetensors.h) and checkpoint loading on top of it
// (gpt/model/checkpoint.h), as `attograd sample/eval/train --checkpoint FILE` run them.
//
// The input is the file. Whatever the reader accepts must keep the promises of safetensors.h,
// checked here against the bytes themselves: every entry lies inside the data section, the
// entries tile it exactly, and each one converts to the dtypes safetensors_converts names with
// its shape. What read_checkpoint_info accepts must build a model that load_model fills. The
// only error allowed anywhere is std::runtime_error (what both headers document).
#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "autograd/tensor.h"
#include "gpt/model/checkpoint.h"
#include "nn/io/safetensors.h"
#include "tests/fuzz/fuzz_support.h"

using namespace attograd;
using namespace attograd::gpt;

namespace {

// The data section's size as the file's own first 8 bytes declare it (the reader accepted the
// file, so they are there).
uint64_t data_section_bytes(std::string_view file) {
  uint64_t header_len = 0;
  for (int i = 7; i >= 0; --i)
    header_len = header_len << 8 | static_cast<unsigned char>(file[static_cast<size_t>(i)]);
  return file.size() - 8 - header_len;
}

void check_entries(const nn::SafetensorsFile& file, std::string_view bytes) {
  const uint64_t data_size = data_section_bytes(bytes);
  std::vector<std::pair<uint64_t, uint64_t>> spans;
  for (const auto& [name, e] : file.entries()) {
    FUZZ_CHECK(e.begin <= e.end && e.end <= data_size,
               "tensor '" + name + "' lies outside the data section");
    spans.emplace_back(e.begin, e.end);
    int64_t numel = 1;
    for (int64_t d : e.shape) {
      FUZZ_CHECK(d >= 0, "tensor '" + name + "' has a negative dimension");
      numel *= d;  // the reader checked that this product does not overflow
    }
    for (DType to : {DType::f32, DType::f64, DType::i64}) {
      if (!nn::safetensors_converts(e.dtype, to)) continue;
      const Tensor t = file.tensor(name, to);
      FUZZ_CHECK(t.shape() == e.shape && t.numel() == numel,
                 "tensor '" + name + "' loads with another shape");
    }
    if (e.dtype == "F64")
      FUZZ_CHECK(static_cast<int64_t>(file.doubles(name).size()) == numel,
                 "doubles('" + name + "') has another size");
  }
  std::sort(spans.begin(), spans.end());
  uint64_t covered = 0;
  for (const auto& [begin, end] : spans) {
    FUZZ_CHECK(begin == covered,
               "the entries leave a gap or overlap at byte " + std::to_string(begin));
    covered = end;
  }
  FUZZ_CHECK(covered == data_size, "the entries do not cover the data section");
}

void check_checkpoint(const nn::SafetensorsFile& file) {
  const CheckpointInfo info = read_checkpoint_info(file, Moments::load);
  if (info.training) {
    FUZZ_CHECK(info.training->adam_m.defined() && info.training->adam_v.defined(),
               "a training state without its moments");
  }
  const std::unique_ptr<GPT> model = load_model(file);
  const GPTConfig& c = model->config();
  FUZZ_CHECK(c.vocab_size == info.config.vocab_size && c.n_layer == info.config.n_layer &&
                 c.n_embd == info.config.n_embd && c.block_size == info.config.block_size,
             "load_model built another config than the metadata holds");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes = fuzz::as_text(data, size);
  const std::string path = fuzz::write_scratch("input.safetensors", bytes).string();
  std::optional<nn::SafetensorsFile> file;
  try {
    file.emplace(nn::SafetensorsFile::read(path));
  } catch (const std::runtime_error&) {
    return 0;  // a clean refusal, what safetensors.h documents for a malformed file
  }
  check_entries(*file, bytes);  // no error allowed: the reader vouched for every entry
  try {
    check_checkpoint(*file);
  } catch (const std::runtime_error&) {
    // a clean refusal, what checkpoint.h documents for a file that is no valid checkpoint
  }
  return 0;
}
