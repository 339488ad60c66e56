// The recorded graph drawn as Graphviz DOT, as micrograd's draw_dot draws its tape.
//
// Walking back from a root tensor through every node's inputs, write_dot emits one DOT node per
// op application (an ellipse: the op's name as in ops.h, and its output's shape), one per leaf
// tensor (a box: a parameter or input that requires grad, filled blue; a constant such as token
// ids or a fixed table, dashed grey) and one edge per input of every op, from the input to the
// op, so a tensor used twice (x * x, GPT-2's tied wte) has two edges. The root is drawn with a
// double border. Tensors of one element also show their value, and leaves their accumulated
// gradient once backward has run (with retain_graph, so the graph is still there to draw).
//
// The walk uses an explicit stack, as the engine does: a million-node chain does not overflow.
// Render with `dot -Tsvg graph.dot -o graph.svg` (Debian's graphviz).
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>
#include <utility>
#include <vector>

#include "autograd/tensor.h"

namespace attograd {

/// How write_dot labels and lays out the drawing.
struct DotOptions {
  /// Names for leaves, e.g. a model's named_parameters() ("h.0.attn.c_attn.weight"); a leaf
  /// is matched by identity (the same TensorImpl), so a copy of the handle works, a clone not.
  std::vector<std::pair<std::string, Tensor>> names;
  /// Graphviz's rankdir: "LR" (left to right, micrograd's) or "TB" (top to bottom, for deep
  /// graphs).
  std::string rankdir = "LR";
  /// The drawing's title (a graph label at the top); empty for none.
  std::string title;
};

/// What write_dot drew.
struct DotCounts {
  int64_t ops = 0;         // op applications (Nodes)
  int64_t parameters = 0;  // leaves that require grad
  int64_t constants = 0;   // leaves that do not
  int64_t edges = 0;       // one per input of every op
};

/// Writes the graph that produced `root` as a DOT digraph to `out`. Throws
/// std::invalid_argument when root is undefined or was not produced by a recorded op (no input
/// required grad, or grad mode was off), and std::logic_error when backward() already freed
/// the graph (draw before backward, or pass retain_graph = true to it).
DotCounts write_dot(std::ostream& out, const Tensor& root, const DotOptions& options = {});

}  // namespace attograd
