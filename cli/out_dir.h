// Creating a command's output directory, with an error that names the option to change.
#pragma once

#include <filesystem>
#include <stdexcept>
#include <string>

namespace attograd::cli {

/// Creates `dir` and its parents (nothing when it exists). Throws std::invalid_argument
/// "<option> <dir>: cannot create the directory (<reason>); choose another <option>" when
/// it cannot, e.g. a file of that name exists or the parent is not writable.
inline void create_out_dir(const std::filesystem::path& dir, const std::string& option) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec)
    throw std::invalid_argument(option + " " + dir.string() + ": cannot create the directory (" +
                                ec.message() + "); choose another " + option);
}

}  // namespace attograd::cli
