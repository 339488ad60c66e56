#include "cli/render_dot.h"

#include <stdexcept>
#include <string_view>

#include "gpt/io/subprocess.h"
#include "nn/io/atomic_file.h"

namespace attograd::cli {

namespace {

// A POSIX shell word: single-quoted, each quote written as '\''.
std::string shell_quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

}  // namespace

bool render_svg(const std::string& dot_text, const std::string& svg_path) {
  gpt::RunOptions capture;
  capture.capture_stdout = true;
  const auto done = gpt::run_program({"dot", "-Tsvg"}, dot_text, capture);
  if (!done) return false;
  const std::string said = done->last_error_line.empty() ? "" : ": " + done->last_error_line;
  if (done->status != 0)
    throw std::runtime_error("Graphviz's dot failed (" + gpt::describe_status(*done) +
                             ") to render " + svg_path + said);
  std::string_view svg(done->out);
  while (!svg.empty() && (svg.back() == '\n' || svg.back() == ' ')) svg.remove_suffix(1);
  if (!svg.ends_with("</svg>"))
    throw std::runtime_error("Graphviz's dot exited 0 but wrote no whole SVG for " + svg_path +
                             " (" + std::to_string(done->out.size()) + " bytes)" + said);
  nn::write_file_atomically(svg_path, done->out);
  return true;
}

std::string render_svg_hint(const std::string& dot_path, const std::string& svg_path) {
  return "Graphviz's dot is not installed, so no SVG was drawn; install it (sudo apt-get install "
         "graphviz) and run: dot -Tsvg < " +
         shell_quote(dot_path) + " > " + shell_quote(svg_path);
}

}  // namespace attograd::cli
