// Saving and loading any Module as a safetensors file: its state dict (parameters and buffers
// under their dotted names, nn/module.h), as safetensors.torch's save_model / load_model and
// libtorch's torch::save / torch::load do. A file written here loads strictly into a PyTorch
// module whose state_dict() has the same names and shapes
// (`model.load_state_dict(safetensors.torch.load_file(path))`; tests/nn/serialize_test.cc checks
// it with torch).
//
// Why here: the file format is the floor below's (nn/io/safetensors.h, which knows no Module),
// the state dict and its check are Module's (Module::check_state_dict); this file joins the two,
// so that a module built from nn is saved and loaded with nn alone, no GPT library needed.
//
// Loading is all or nothing, as Module::load_state_dict: every key, shape and dtype in the
// file's header is checked first, and nothing is written unless all pass. Then each tensor is
// converted straight from the file's read-only mapping into its parameter or buffer (F16, BF16,
// F32 and F64 into f32 or f64; I64 into i64), with no copy of the whole state in between.
#pragma once

#include <map>
#include <string>

#include "nn/module.h"

namespace attograd::nn {

/// Writes module.state_dict() to `path` as safetensors, atomically (a temporary beside it,
/// renamed over it: a crash leaves the old file or the new one), each tensor in its own dtype.
/// `metadata` goes in the header's __metadata__, with "format": "pt" unless it sets "format"
/// (what Hugging Face's loaders expect of a PyTorch file). Throws std::invalid_argument for a
/// module with no parameters or buffers, std::runtime_error naming the path on an I/O error.
void save_module(const Module& module, const std::string& path,
                 std::map<std::string, std::string> metadata = {});

/// Loads the safetensors file `path` into module's parameters and buffers, all or nothing (see
/// above). strict (the default): the file's keys must be exactly the module's. Not strict: keys
/// missing from the file keep their values and keys the module has no place for are ignored;
/// both are returned (torch's missing_keys and unexpected_keys). Throws std::runtime_error
/// naming the path for an unreadable or malformed file (SafetensorsFile::read,
/// nn/io/safetensors.h), and naming every problem in one message (Module::check_state_dict): a key
/// the module lacks or the file lacks (strict), a wrong shape, a dtype that does not convert; the
/// module is then unchanged.
LoadStateDictResult load_module(Module& module, const std::string& path, bool strict = true);

}  // namespace attograd::nn
