#include "nn/serialize.h"

#include <stdexcept>
#include <vector>

#include "nn/io/safetensors.h"

namespace attograd::nn {

void save_module(const Module& module, const std::string& path,
                 std::map<std::string, std::string> metadata) {
  const StateDict state = module.state_dict();
  if (state.empty())
    throw std::invalid_argument("save_module: the module has no parameters or buffers to save ('" +
                                path + "')");
  SafetensorsWriter w;
  w.metadata = std::move(metadata);
  w.metadata.emplace("format", "pt");
  for (const auto& [key, t] : state) w.add(key, t);
  w.write(path);  // atomic: a temporary beside path, renamed over it (safetensors.h)
}

LoadStateDictResult load_module(Module& module, const std::string& path, bool strict) {
  const SafetensorsFile file = SafetensorsFile::read(path);
  std::vector<StateDictEntry> entries;
  for (const auto& [key, e] : file.entries())
    entries.push_back(
        {.key = key,
         .shape = e.shape,
         .dtype = e.dtype,
         .converts_to = [dtype = e.dtype](DType to) { return safetensors_converts(dtype, to); },
         .layout = {}});
  LoadStateDictResult result;
  try {
    result = module.check_state_dict(entries, strict, "the file");
  } catch (const std::invalid_argument& e) {
    // A file's problem, as SafetensorsFile::read's, named by its path.
    throw std::runtime_error("'" + path + "': " + e.what());
  }
  // Every check passed: each tensor straight from the mapping into its place. read_into takes
  // a contiguous or 2-D destination; a buffer registered as another view goes through a copy.
  for (auto& [key, dst] : module.state_dict()) {
    if (!file.contains(key)) continue;
    if (dst.is_contiguous() || dst.dim() == 2) {
      file.read_into(key, dst);
    } else {
      dst.copy_from(file.tensor(key, dst.dtype()));
    }
  }
  return result;
}

}  // namespace attograd::nn
