// `attograd graph`: the graph autograd records for a small expression or for a femto GPT's
// forward and loss, written as Graphviz DOT (autograd/graphviz.h) and rendered to SVG when
// Graphviz's `dot` is installed; without it the .dot is written and the command to render it
// printed.
//
//   neuron     micrograd's neuron o = tanh(x1 w1 + x2 w2 + b), after backward: every leaf shows
//              its value and gradient, as micrograd's draw_dot does
//   sum        (a * b + c).sum() with a, b, c of shape (2, 3)
//   attention  chapter 3's worked example 2 from primitives: softmax(causal_mask(Q Kᵀ / √2)) V
//   femto      a femto GPT (seed 1337) on 8 tokens: forward and loss, the graph a training step
//              records (fused ops, as trained)
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "autograd/engine.h"
#include "autograd/graphviz.h"
#include "autograd/ops.h"
#include "cli/command.h"
#include "cli/out_dir.h"
#include "cli/render_dot.h"
#include "gpt/model/gpt2.h"
#include "nn/io/atomic_file.h"

namespace attograd::cli {

namespace {

struct GraphArgs {
  std::string expr = "femto";
  std::string out = "graph.dot";
};

// A graph to draw: the root, and what keeps its leaves alive (a model) until it is drawn.
struct Drawing {
  Tensor root;
  DotOptions options;
  std::unique_ptr<gpt::GPT> model;
};

Tensor leaf(const std::vector<double>& values, const Shape& shape) {
  return Tensor::from_vector(values, shape, DType::f64).set_requires_grad();
}

Drawing build(const std::string& expr) {
  Drawing d;
  if (expr == "neuron") {
    // The numbers of micrograd's README example: b is chosen so that o = tanh(0.8814) = 1/√2.
    const Tensor x1 = leaf({2}, {}), x2 = leaf({0}, {}), w1 = leaf({-3}, {}), w2 = leaf({1}, {}),
                 b = leaf({6.8813735870195432}, {});
    d.root = tanh(x1 * w1 + x2 * w2 + b);
    d.root.backward(Tensor(),
                    /*retain_graph=*/true);  // keep the graph to draw it with the gradients
    d.options.names = {{"x1", x1}, {"x2", x2}, {"w1", w1}, {"w2", w2}, {"b", b}};
  } else if (expr == "sum") {
    const Tensor a = leaf({1, 2, 3, 4, 5, 6}, {2, 3}), b = leaf({1, 0, -1, 2, 0, -2}, {2, 3}),
                 c = leaf({0.5, 0.5, 0.5, 0.5, 0.5, 0.5}, {2, 3});
    d.root = sum(a * b + c);
    d.options.names = {{"a", a}, {"b", b}, {"c", c}};
  } else if (expr == "attention") {
    const Tensor q = leaf({1, 0, 0, 1, 1, 1}, {3, 2}), k = leaf({1, 0, 0, 1, 1, 1}, {3, 2}),
                 v = leaf({1, 2, 3, 4, 5, 6}, {3, 2});
    d.root = matmul(
        softmax(causal_mask(mul_scalar(matmul(q, transpose(k, 0, 1)), 1 / std::sqrt(2.0)))), v);
    d.options.names = {{"Q", q}, {"K", k}, {"V", v}};
  } else {  // femto
    d.model = std::make_unique<gpt::GPT>(gpt::preset("femto"), 1337);
    const Tensor idx = Tensor::from_ids({0, 1, 2, 3, 4, 5, 6, 7}, {1, 8});
    const Tensor targets = Tensor::from_ids({1, 2, 3, 4, 5, 6, 7, 8}, {1, 8});
    d.root = d.model->forward(idx, targets).loss;
    for (const auto& [name, p] : d.model->named_parameters()) d.options.names.emplace_back(name, p);
    d.options.names.emplace_back("idx", idx);
    d.options.names.emplace_back("targets", targets);
    d.options.rankdir = "TB";  // a deep graph: top to bottom
  }
  d.options.title = "attograd graph --expr " + expr;
  return d;
}

int run(const GraphArgs& a) {
  const bool to_stdout = a.out == "-";
  const std::filesystem::path out(a.out);
  if (!to_stdout && out.extension() != ".dot")
    throw std::invalid_argument("--out " + a.out +
                                ": expected a file name ending in .dot (or - for stdout)");
  const Drawing d = build(a.expr);
  if (to_stdout) {
    write_dot(std::cout, d.root, d.options);
    return 0;
  }
  if (out.has_parent_path()) create_out_dir(out.parent_path(), "--out");
  std::ostringstream text;
  const DotCounts n = write_dot(text, d.root, d.options);
  nn::write_file_atomically(out, text.str());  // a symlink named like --out is replaced
  std::printf(
      "%s: %lld ops, %lld parameters (leaves that require grad), %lld constants, %lld edges\n",
      a.out.c_str(), static_cast<long long>(n.ops), static_cast<long long>(n.parameters),
      static_cast<long long>(n.constants), static_cast<long long>(n.edges));
  const std::string svg = std::filesystem::path(out).replace_extension(".svg").string();
  if (render_svg(text.str(), svg)) {
    std::printf("rendered %s\n", svg.c_str());
  } else {
    std::printf("%s\n", render_svg_hint(a.out, svg).c_str());
  }
  return 0;
}

}  // namespace

void add_graph_command(CLI::App& app, int& exit_code) {
  auto a = std::make_shared<GraphArgs>();
  CLI::App* cmd = app.add_subcommand("graph",
                                     "the recorded autograd graph of an expression or a femto GPT "
                                     "step, as Graphviz DOT (and SVG)");
  cmd->add_option("--expr", a->expr,
                  "neuron (micrograd's, with gradients), sum ((a*b + c).sum()), attention "
                  "(softmax(causal_mask(Q Kᵀ/√2)) V) or femto (a GPT forward and loss)")
      ->check(one_of({"neuron", "sum", "attention", "femto"}))
      ->capture_default_str();
  cmd->add_option("--out", a->out,
                  "the .dot file (the .svg goes beside it), or - for DOT on stdout")
      ->check(kOutputPath)
      ->capture_default_str();
  cmd->footer(
      "Ellipses are ops (name and output shape), blue boxes leaves that require grad (parameters), "
      "dashed "
      "boxes constants (token ids); an edge goes from each input to the op that reads it; the root "
      "has a "
      "double border.");
  cmd->callback([a, &exit_code] { exit_code = run(*a); });
}

}  // namespace attograd::cli
