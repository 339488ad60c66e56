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

#include "tests/test_util.h"

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

/// Writes the CLI tests' corpus to <dir>/corpus.txt and returns its path: 200 lines of "to be or
/// not to be, that is the question." (8,400 bytes, 16 characters).
inline std::string write_corpus(const TempDir& dir) {
  const std::string file = dir / "corpus.txt";
  std::ofstream out(file);
  for (int i = 0; i < 200; ++i) out << "to be or not to be, that is the question.\n";
  return file;
}

}  // namespace attograd::testing
