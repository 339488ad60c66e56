// Rendering Graphviz DOT to SVG with Graphviz's `dot`, for the commands that draw graphs
// (`attograd graph`, `attograd figure blocks`).
#pragma once

#include <string>

namespace attograd::cli {

/// Renders `dot_text` to `svg_path` with `dot -Tsvg`, the DOT on its stdin and the SVG read from
/// its stdout, so no path reaches dot's command line (a name starting with '-' would be an
/// option there). The SVG replaces svg_path atomically once dot has succeeded and it ends with
/// </svg> (a symlink at svg_path is replaced, not written through). Returns false when dot is not
/// installed; throws std::runtime_error when it cannot start, fails (naming its status and last
/// line) or writes no whole SVG.
bool render_svg(const std::string& dot_text, const std::string& svg_path);

/// The line to print when render_svg returned false: how to install Graphviz and the command
/// that renders dot_path to svg_path (paths shell-quoted and passed by redirection).
std::string render_svg_hint(const std::string& dot_path, const std::string& svg_path);

}  // namespace attograd::cli
