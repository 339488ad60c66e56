// Runs the real attograd binary (ATTOGRAD_CLI), or another example program, through the shell
// and captures its output and exit code, for the end-to-end CLI tests.
#pragma once

#include <sys/wait.h>
#include <unistd.h>
#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

namespace attograd::testing {

struct CliRun {
  std::string out;  // stdout, then stderr unless it was discarded
  int exit_code;    // -1 if the process did not exit normally (a crash)
};

/// Runs `<program> <args>` through the shell (so args may hold quotes and redirections). With
/// merge_stderr, stderr is captured with stdout; otherwise it is discarded. Reads bytes, not
/// lines, so binary-safe output (e.g. text without a final newline) comes back exactly.
/// env_prefix goes before the program, e.g. "PATH=/nowhere " to hide an installed tool.
inline CliRun run_program(const std::string& program, const std::string& args,
                          bool merge_stderr = true, const std::string& env_prefix = "") {
  const std::string cmd =
      env_prefix + program + " " + args + (merge_stderr ? " 2>&1" : " 2>/dev/null");
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) return {"popen failed", -1};
  std::string out;
  std::array<char, 4096> buf;
  for (size_t n; (n = fread(buf.data(), 1, buf.size(), p)) > 0;) out.append(buf.data(), n);
  const int status = pclose(p);
  return {out, WIFEXITED(status) ? WEXITSTATUS(status) : -1};
}

#ifdef ATTOGRAD_CLI
/// run_program for the attograd binary (ATTOGRAD_CLI).
inline CliRun run_cli(const std::string& args, bool merge_stderr = true,
                      const std::string& env_prefix = "") {
  return run_program(ATTOGRAD_CLI, args, merge_stderr, env_prefix);
}
#endif

/// A fresh directory under the system temp dir for one test ("attograd_<name>_<pid>"),
/// removed at the end.
struct TempDir {
  std::filesystem::path path;
  explicit TempDir(const std::string& name)
      : path(std::filesystem::temp_directory_path() /
             ("attograd_" + name + "_" + std::to_string(::getpid()))) {
    std::filesystem::remove_all(path);
    std::filesystem::create_directories(path);
  }
  ~TempDir() { std::filesystem::remove_all(path); }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  /// The path of `name` inside the directory.
  std::string operator/(const std::string& name) const { return (path / name).string(); }
  /// Writes `contents` (bytes, exactly) to `name` and returns its path.
  std::string file(const std::string& name, const std::string& contents) const {
    std::ofstream(path / name, std::ios::binary) << contents;
    return (path / name).string();
  }
};

/// A file's bytes, exactly ("" when it cannot be read).
inline std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

inline bool contains(const std::string& s, const std::string& needle) {
  return s.find(needle) != std::string::npos;
}

}  // namespace attograd::testing
