#include "autograd/graphviz.h"

#include <cstdio>
#include <ostream>
#include <stdexcept>
#include <unordered_map>

#include "autograd/detail/tensor_impl.h"
#include "autograd/engine.h"

namespace attograd {

namespace {

// A DOT double-quoted string: quotes and backslashes escaped, a newline becomes DOT's line break.
std::string dot_string(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out + "\"";
}

std::string number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4f", v);
  return buf;
}

// The lines every tensor's label ends with: its shape (and i64, the one dtype worth pointing
// out: ids are not differentiable), and for one element its value, as micrograd shows.
std::string tensor_lines(const Tensor& t) {
  std::string s = shape_str(t.shape());
  if (t.dtype() == DType::i64) s += " i64";
  if (t.numel() == 1) s += "\ndata " + number(t.item());
  return s;
}

}  // namespace

DotCounts write_dot(std::ostream& out, const Tensor& root, const DotOptions& options) {
  if (!root.defined()) throw std::invalid_argument("write_dot: the root tensor is undefined");
  if (!root.grad_fn())
    throw std::invalid_argument(
        "write_dot: the root tensor was not produced by a recorded op (no input requires "
        "grad, or grad mode was off); mark a leaf with set_requires_grad() first");
  std::unordered_map<const detail::TensorImpl*, std::string> names;
  for (const auto& [name, t] : options.names)
    if (t.defined()) names.emplace(detail::impl(t), name);

  DotCounts counts;
  std::unordered_map<const void*, std::string> ids;  // Node* of an op, TensorImpl* of a leaf
  std::vector<std::string> nodes, edges;
  std::vector<Tensor> stack;  // op outputs whose inputs are still to be walked
  // The DOT id of t's node; a node seen for the first time is emitted (and an op queued).
  auto node_of = [&](const Tensor& t) -> const std::string& {
    const Node* op = t.grad_fn().get();
    const void* key =
        op != nullptr ? static_cast<const void*>(op) : static_cast<const void*>(detail::impl(t));
    auto [it, inserted] = ids.emplace(key, std::string("n").append(std::to_string(ids.size())));
    if (!inserted) return it->second;
    const std::string& id = it->second;
    std::string attrs;
    if (op != nullptr) {
      ++counts.ops;
      attrs = "label=" + dot_string(std::string(op->name()) + "\n" + tensor_lines(t)) +
              ", shape=ellipse";
      stack.push_back(t);
    } else {
      const auto name = names.find(detail::impl(t));
      std::string label =
          (name != names.end() ? name->second + "\n" : std::string()) + tensor_lines(t);
      if (t.requires_grad()) {
        ++counts.parameters;
        if (t.grad().defined() && t.numel() == 1) label += "\ngrad " + number(t.grad().item());
        attrs = "label=" + dot_string(label) +
                ", shape=box, style=\"rounded,filled\", fillcolor=\"#cfe2ff\"";
      } else {
        ++counts.constants;
        attrs = "label=" + dot_string(label) +
                ", shape=box, style=dashed, color=\"#808080\", fontcolor=\"#404040\"";
      }
    }
    if (detail::impl(t) == detail::impl(root)) attrs += ", peripheries=2";
    nodes.push_back("  " + id + " [" + attrs + "];");
    return id;
  };

  node_of(root);
  while (!stack.empty()) {
    const Tensor t = std::move(stack.back());
    stack.pop_back();
    const Node& op = *t.grad_fn();
    if (!op.has_saved())
      throw std::logic_error(
          std::string("write_dot: the graph through '") + op.name() +
          "' was freed by backward(); draw it before backward, or pass retain_graph=true to it");
    const std::string id = node_of(t);
    for (const Tensor& in : op.inputs()) {
      if (!in.defined()) continue;  // e.g. linear without a bias
      edges.push_back("  " + node_of(in) + " -> " + id + ";");
      ++counts.edges;
    }
  }

  out << "digraph attograd {\n  rankdir=" << options.rankdir << ";\n"
      << "  node [fontname=\"Helvetica\", fontsize=10];\n";
  if (!options.title.empty())
    out << "  label=" << dot_string(options.title) << ";\n  labelloc=t;\n";
  for (const std::string& n : nodes) out << n << "\n";
  for (const std::string& e : edges) out << e << "\n";
  out << "}\n";
  return counts;
}

}  // namespace attograd
