#include "examples/cli/render_dot.h"

#include <spawn.h>
#include <sys/wait.h>
#include <cerrno>
#include <cstring>
#include <stdexcept>

extern char** environ;

namespace attograd::cli {

bool render_svg(const std::string& dot_path, const std::string& svg_path) {
  const char* argv[] = {"dot", "-Tsvg", dot_path.c_str(), "-o", svg_path.c_str(), nullptr};
  pid_t pid = 0;
  const int err =
      posix_spawnp(&pid, "dot", nullptr, nullptr, const_cast<char* const*>(argv), environ);
  if (err == ENOENT) return false;
  if (err != 0)
    throw std::runtime_error("could not start Graphviz's dot: " + std::string(std::strerror(err)));
  int status = 0;
  waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    throw std::runtime_error("Graphviz's dot failed to render " + dot_path +
                             " (see its message above)");
  return true;
}

std::string render_svg_hint(const std::string& dot_path, const std::string& svg_path) {
  return "Graphviz's dot is not installed, so no SVG was drawn; install it (sudo apt-get install "
         "graphviz) "
         "and run: dot -Tsvg " +
         dot_path + " -o " + svg_path;
}

}  // namespace attograd::cli
