// Files and directories for tests: a fresh directory, a file's bytes. No engine headers, so
// tests that only read the tree (docs_paths_test) use them too; tests/test_util.h includes it.
#pragma once

#include <unistd.h>
#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>
#include <system_error>
#include <vector>

namespace attograd::testing {

/// The regular files directly in `dir` whose names start with `prefix`: the hostile-name tests
/// plant commands that would create <dir>/PWN<k> by absolute path, and look for them here.
inline std::vector<std::string> files_starting_with(const std::filesystem::path& dir,
                                                    const std::string& prefix) {
  std::vector<std::string> found;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    if (e.is_regular_file() && e.path().filename().string().starts_with(prefix))
      found.push_back(e.path().string());
  return found;
}

/// An empty directory <tmp>/attograd_<name>_<pid> (emptied first if a killed run left it), for a
/// test's files; the pid keeps two test programs running at once apart.
inline std::filesystem::path fresh_temp_dir(const std::string& name) {
  const auto dir = std::filesystem::temp_directory_path() /
                   ("attograd_" + name + "_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

/// A fresh directory <tmp>/attograd_<name>_XXXXXX for one test (mkdtemp: two at once, in one
/// program or two, never collide), removed with everything in it at the end of its scope.
struct TempDir {
  std::filesystem::path path;
  explicit TempDir(const std::string& name = "test") {
    std::string pattern =
        (std::filesystem::temp_directory_path() / ("attograd_" + name + "_XXXXXX")).string();
    if (::mkdtemp(pattern.data()) == nullptr)
      throw std::runtime_error("mkdtemp " + pattern + " failed: " + std::strerror(errno));
    path = pattern;
  }
  ~TempDir() {
    std::error_code ec;  // never throw from a destructor; a leftover in /tmp is harmless
    std::filesystem::remove_all(path, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  /// The path of `name` inside the directory.
  std::string operator/(const std::string& name) const { return (path / name).string(); }
  /// Writes `contents` (bytes, exactly) to `name` and returns its path.
  std::string file(const std::string& name, const std::string& contents) const {
    std::ofstream(path / name, std::ios::binary) << contents;
    return (path / name).string();
  }
  /// The names of the entries directly in the directory, sorted.
  std::vector<std::string> entries() const {
    std::vector<std::string> names;
    for (const auto& e : std::filesystem::directory_iterator(path))
      names.push_back(e.path().filename().string());
    std::sort(names.begin(), names.end());
    return names;
  }
};

/// A file's bytes, exactly ("" when it cannot be read).
inline std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

}  // namespace attograd::testing
