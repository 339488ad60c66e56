// write_dot: the recorded graph as Graphviz DOT. Known small graphs are parsed back and their
// nodes, labels and edges compared with what was recorded, node by node.
#define BOOST_TEST_MODULE graphviz
#include <boost/test/unit_test.hpp>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include "autograd/engine.h"
#include "autograd/graphviz.h"
#include "autograd/ops.h"
#include "tests/test_util.h"

using namespace attograd;
using attograd::testing::expect_throw_with;

namespace {

// A DOT file read back: each node's label (its lines joined by '|') and attributes, each edge
// as (tail label, head label), in file order.
struct ParsedDot {
  std::map<std::string, std::string> label, attrs;  // by node id
  std::multiset<std::pair<std::string, std::string>> edges;
  std::string text;
};

ParsedDot parse(const std::string& dot) {
  ParsedDot p;
  p.text = dot;
  static const std::regex node(R"re(^  (n\d+) \[label="((?:[^"\\]|\\.)*)", (.*)\];$)re");
  static const std::regex edge(R"(^  (n\d+) -> (n\d+);$)");
  std::istringstream in(dot);
  std::vector<std::pair<std::string, std::string>> edge_ids;
  for (std::string line; std::getline(in, line);) {
    std::smatch m;
    if (std::regex_match(line, m, node)) {
      p.label[m[1]] = std::regex_replace(m[2].str(), std::regex(R"(\\n)"), "|");
      p.attrs[m[1]] = m[3];
    } else if (std::regex_match(line, m, edge)) {
      edge_ids.emplace_back(m[1], m[2]);
    }
  }
  for (const auto& [tail, head] : edge_ids) p.edges.emplace(p.label.at(tail), p.label.at(head));
  return p;
}

ParsedDot draw(const Tensor& root, const DotOptions& options, DotCounts* counts = nullptr) {
  std::ostringstream out;
  const DotCounts n = write_dot(out, root, options);
  if (counts != nullptr) *counts = n;
  return parse(out.str());
}

}  // namespace

// (a * b + c).sum(): three ops, three leaves, five edges, each labelled with name and shape.
BOOST_AUTO_TEST_CASE(a_times_b_plus_c_summed) {
  const Tensor a = Tensor::ones({2, 3}).set_requires_grad(),
               b = Tensor::ones({2, 3}).set_requires_grad(),
               c = Tensor::full({2, 3}, 0.5).set_requires_grad();
  const Tensor root = sum(a * b + c);
  DotCounts n;
  const ParsedDot p = draw(root, {{{"a", a}, {"b", b}, {"c", c}}, "LR", ""}, &n);
  BOOST_TEST(n.ops == 3);
  BOOST_TEST(n.parameters == 3);
  BOOST_TEST(n.constants == 0);
  BOOST_TEST(n.edges == 5);
  BOOST_TEST(p.label.size() == 6u);
  const std::set<std::string> labels = [&] {
    std::set<std::string> s;
    for (const auto& [id, l] : p.label) s.insert(l);
    return s;
  }();
  const std::set<std::string> expected{"sum|()|data 9.0000", "add|(2, 3)", "mul|(2, 3)",
                                       "a|(2, 3)",           "b|(2, 3)",   "c|(2, 3)"};
  BOOST_TEST(labels == expected, boost::test_tools::per_element());
  const std::multiset<std::pair<std::string, std::string>> edges{
      {"a|(2, 3)", "mul|(2, 3)"},
      {"b|(2, 3)", "mul|(2, 3)"},
      {"mul|(2, 3)", "add|(2, 3)"},
      {"c|(2, 3)", "add|(2, 3)"},
      {"add|(2, 3)", "sum|()|data 9.0000"}};
  BOOST_TEST((p.edges == edges));
  // The root is drawn with a double border, ops as ellipses, parameters as filled boxes.
  for (const auto& [id, l] : p.label) {
    BOOST_TEST_INFO(l << ": " << p.attrs.at(id));
    BOOST_TEST((p.attrs.at(id).find("peripheries=2") != std::string::npos) ==
               (l.rfind("sum|", 0) == 0));
    const bool op = l.rfind("sum|", 0) == 0 || l.rfind("add|", 0) == 0 || l.rfind("mul|", 0) == 0;
    BOOST_TEST((p.attrs.at(id).find("shape=ellipse") != std::string::npos) == op);
    BOOST_TEST((p.attrs.at(id).find("fillcolor=\"#cfe2ff\"") != std::string::npos) == !op);
  }
}

// A tensor used twice gets two edges, an unnamed leaf its shape alone, and a constant (ids that
// require no grad) a dashed box that says i64.
BOOST_AUTO_TEST_CASE(fan_out_and_constants) {
  const Tensor x = Tensor::scalar(3.0).set_requires_grad();
  DotCounts n;
  ParsedDot p = draw(x * x, {}, &n);
  BOOST_TEST(n.ops == 1);
  BOOST_TEST(n.parameters == 1);
  BOOST_TEST(n.edges == 2);
  BOOST_TEST(p.edges.count({"()|data 3.0000", "mul|()|data 9.0000"}) == 2u);

  const Tensor weight = Tensor::ones({5, 2}).set_requires_grad();
  const Tensor ids = Tensor::from_ids({4, 0, 4}, {3});
  p = draw(embedding(weight, ids), {{{"wte", weight}}, "TB", "my title"}, &n);
  BOOST_TEST(n.constants == 1);
  BOOST_TEST(n.parameters == 1);
  BOOST_TEST(p.edges.count({"(3,) i64", "embedding|(3, 2)"}) == 1u);
  BOOST_TEST(p.edges.count({"wte|(5, 2)", "embedding|(3, 2)"}) == 1u);
  for (const auto& [id, l] : p.label)
    if (l == "(3,) i64") BOOST_TEST(p.attrs.at(id).find("style=dashed") != std::string::npos);
  BOOST_TEST(p.text.find("rankdir=TB;") != std::string::npos);
  BOOST_TEST(p.text.find("label=\"my title\";") != std::string::npos);
}

// micrograd's neuron after backward (retained): every leaf shows its value and its gradient.
// o = tanh(x1 w1 + x2 w2 + b) = 1/√2, do/dn = 1 - o² = 0.5, so x1.grad = w1 · 0.5 = -1.5,
// w1.grad = x1 · 0.5 = 1, x2.grad = 0.5, w2.grad = x2 · 0.5 = 0, b.grad = 0.5.
BOOST_AUTO_TEST_CASE(micrograd_neuron_shows_values_and_gradients) {
  auto scalar = [](double v) { return Tensor::scalar(v, DType::f64).set_requires_grad(); };
  const Tensor x1 = scalar(2), x2 = scalar(0), w1 = scalar(-3), w2 = scalar(1),
               b = scalar(6.8813735870195432);
  const Tensor o = tanh(x1 * w1 + x2 * w2 + b);
  o.backward(Tensor(), /*retain_graph=*/true);
  DotCounts n;
  const ParsedDot p =
      draw(o, {{{"x1", x1}, {"x2", x2}, {"w1", w1}, {"w2", w2}, {"b", b}}, "LR", ""}, &n);
  BOOST_TEST(n.ops == 5);
  BOOST_TEST(n.parameters == 5);
  BOOST_TEST(n.edges == 9);
  const std::multiset<std::pair<std::string, std::string>> edges{
      {"x1|()|data 2.0000|grad -1.5000", "mul|()|data -6.0000"},
      {"w1|()|data -3.0000|grad 1.0000", "mul|()|data -6.0000"},
      {"x2|()|data 0.0000|grad 0.5000", "mul|()|data 0.0000"},
      {"w2|()|data 1.0000|grad 0.0000", "mul|()|data 0.0000"},
      {"mul|()|data -6.0000", "add|()|data -6.0000"},
      {"mul|()|data 0.0000", "add|()|data -6.0000"},
      {"add|()|data -6.0000", "add|()|data 0.8814"},
      {"b|()|data 6.8814|grad 0.5000", "add|()|data 0.8814"},
      {"add|()|data 0.8814", "tanh|()|data 0.7071"}};
  BOOST_TEST((p.edges == edges));
}

BOOST_AUTO_TEST_CASE(bad_roots_and_freed_graphs_are_clear_errors) {
  std::ostringstream out;
  expect_throw_with<std::invalid_argument>([&] { write_dot(out, Tensor()); },
                                           "root tensor is undefined");
  const Tensor x = Tensor::ones({2}).set_requires_grad();
  expect_throw_with<std::invalid_argument>([&] { write_dot(out, x); },
                                           "not produced by a recorded op");
  expect_throw_with<std::invalid_argument>([&] { write_dot(out, Tensor::ones({2}) * 2.0); },
                                           "set_requires_grad()");
  const Tensor y = sum(x * x);
  y.backward();
  expect_throw_with<std::logic_error>([&] { write_dot(out, y); },
                                      "'sum' was freed by backward(); draw it before backward");
}

// The walk is iterative, as the engine's: a long chain neither overflows the stack nor loses a
// node.
BOOST_AUTO_TEST_CASE(a_long_chain_is_drawn_without_recursion) {
  const Tensor x = Tensor::scalar(0.5).set_requires_grad();
  Tensor v = x;
  for (int i = 0; i < 200000; ++i) v = v + 1.0;
  std::ostringstream out;
  const DotCounts n = write_dot(out, v);
  BOOST_TEST(n.ops == 200000);
  BOOST_TEST(n.parameters == 1);
  BOOST_TEST(n.edges == 200000);
}
