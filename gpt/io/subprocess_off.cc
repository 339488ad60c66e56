// gpt/io/subprocess.h in the WebAssembly build, where a program cannot start another: every helper
// (gnuplot, Graphviz's dot, bible) is refused with a message saying so, rather than reported as
// "not installed". What needs no helper (training, sampling, checkpoints, the CSV logs) works.
#include <sys/wait.h>
#include <stdexcept>
#include <string>

#include "gpt/io/subprocess.h"

namespace attograd::gpt {

std::optional<ProgramResult> run_program(const std::vector<std::string>& argv, const std::string&,
                                         const RunOptions&) {
  throw std::runtime_error("cannot run '" + (argv.empty() ? std::string() : argv[0]) +
                           "': the WebAssembly build of attograd cannot start programs; use the "
                           "native build (scripts/test.sh) for what needs gnuplot, dot or bible");
}

std::string describe_status(const ProgramResult& result) {
  if (WIFSIGNALED(result.status))
    return "killed by signal " + std::to_string(WTERMSIG(result.status));
  return "exit status " + std::to_string(WEXITSTATUS(result.status));
}

}  // namespace attograd::gpt
