// Rendering a Graphviz DOT file to SVG with Graphviz's `dot`, for the commands that draw graphs
// (`attograd graph`, `attograd figure blocks`).
#pragma once

#include <string>

namespace attograd::cli {

/// Runs `dot -Tsvg dot_path -o svg_path` (no shell: paths are passed as they are). Returns false
/// when dot is not installed; throws std::runtime_error when it cannot start or fails.
bool render_svg(const std::string& dot_path, const std::string& svg_path);

/// The line to print when render_svg returned false: how to install Graphviz and the command
/// that renders dot_path to svg_path.
std::string render_svg_hint(const std::string& dot_path, const std::string& svg_path);

}  // namespace attograd::cli
