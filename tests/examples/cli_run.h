// Runs the real attograd binary (ATTOGRAD_CLI) in a shell and captures its output and exit code,
// for the end-to-end CLI tests.
#pragma once

#include <array>
#include <cstdio>
#include <string>
#include <sys/wait.h>

namespace attograd::testing {

struct CliRun {
  std::string out;  // stdout and stderr together
  int exit_code;
};

/// Runs `attograd <args>` and returns what it printed and its exit code (-1 if it crashed).
inline CliRun run_cli(const std::string& args) {
  const std::string cmd = std::string(ATTOGRAD_CLI) + " " + args + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) return {"popen failed", -1};
  std::string out;
  std::array<char, 4096> buf;
  while (fgets(buf.data(), buf.size(), p)) out += buf.data();
  const int status = pclose(p);
  return {out, WIFEXITED(status) ? WEXITSTATUS(status) : -1};
}

inline bool contains(const std::string& s, const std::string& needle) { return s.find(needle) != std::string::npos; }

}  // namespace attograd::testing
