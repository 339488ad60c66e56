// Running a helper program (gnuplot, Graphviz's dot) so that nothing of ours leaks into it and
// nothing the user typed reaches it as an option or a command.
//
// The program is started directly (posix_spawnp, no shell), with a fixed argument vector chosen
// by the caller, its input written to its stdin, its stdout captured or discarded, and every
// descriptor above stderr closed in it: it must not inherit the run directory's lock (an orphaned
// child would keep `--resume` out after the parent is killed) nor a half-written file. User text
// (paths, prompts, labels) travels through stdin or through files in a private directory, never
// on its command line, so a name starting with `-` cannot become an option.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace attograd::gpt {

/// How a helper program ended.
struct ProgramResult {
  int status = 0;               // the wait status (WIFEXITED, WEXITSTATUS, WTERMSIG)
  std::string out;              // its stdout, when captured (else empty)
  std::string err;              // the end of its stderr (its last 4 to 64 KiB)
  std::string last_error_line;  // the last non-blank line it wrote on stderr
};

/// Where and how run_program runs a program.
struct RunOptions {
  std::string cwd;                        // its working directory (the caller's own when empty)
  bool capture_stdout = false;            // keep its stdout in ProgramResult::out (else /dev/null)
  size_t max_output = size_t{256} << 20;  // stdout bytes beyond which it is killed
  std::vector<std::string> env;           // "NAME=value" entries added to (or replacing) ours
};

/// Runs argv[0] (searched on $PATH unless it holds a '/') with `argv` and `input` on its stdin,
/// and waits for it. Its stdin is a socket, so writing to a child that died early is an error
/// its status explains, not a SIGPIPE that kills the caller. Returns nullopt when there is no
/// such program. Throws std::runtime_error when it cannot be started for another reason (naming
/// the OS error), or when its stdout grows past options.max_output bytes (it is then killed).
std::optional<ProgramResult> run_program(const std::vector<std::string>& argv,
                                         std::string_view input, const RunOptions& options = {});

/// The end of a failure message for `result`: "exit status 1" or "killed by signal 9".
std::string describe_status(const ProgramResult& result);

}  // namespace attograd::gpt
