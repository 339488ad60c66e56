// `attograd graph` through the real binary: the DOT of each expression has the counts and
// labels of the graph it records, the SVG is rendered when Graphviz is installed, and without
// it the command says how to render.
#define BOOST_TEST_MODULE graph_command
#include <boost/test/unit_test.hpp>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <regex>

#include "gpt/model/gpt2.h"
#include "tests/cli/cli_run.h"

using namespace attograd;
using attograd::testing::contains;
using attograd::testing::read_file;
using attograd::testing::run_cli;
using attograd::testing::TempDir;

namespace {

// Lines of a DOT file that are edges ("a -> b;") and nodes ("nK [label=...").
std::pair<int, int> count_edges_and_nodes(const std::string& dot) {
  int edges = 0, nodes = 0;
  std::istringstream in(dot);
  for (std::string line; std::getline(in, line);) {
    if (contains(line, " -> "))
      ++edges;
    else if (line.rfind("  n", 0) == 0 && contains(line, " [label="))
      ++nodes;
  }
  return {edges, nodes};
}

bool dot_installed() { return std::system("command -v dot >/dev/null 2>&1") == 0; }

}  // namespace

// The femto step: 14 ops (2 embeddings and their add; per block 2 layer norms, 3 linears,
// attention, c_fc with its GELU (linear_gelu), 2 residual adds; ln_f; the fused head and loss),
// 16 parameters, 3 constants (idx, the positions, targets), 35 edges: one per input, wte's two
// uses included.
BOOST_AUTO_TEST_CASE(femto_forward_and_loss) {
  const TempDir dir("graph_femto");
  const std::string dot = dir / "femto.dot";
  const auto r = run_cli("graph --expr femto --out " + dot);
  BOOST_TEST_INFO(r.out);
  BOOST_REQUIRE(r.exit_code == 0);
  BOOST_TEST(contains(
      r.out, dot + ": 14 ops, 16 parameters (leaves that require grad), 3 constants, 35 edges\n"));
  const std::string text = read_file(dot);
  BOOST_TEST((count_edges_and_nodes(text) == std::pair<int, int>{35, 33}));
  // The loss the command drew is the model's: femto, seed 1337, ids 0..7, targets 1..8.
  gpt::GPT model(gpt::preset("femto"), 1337);
  const double loss = model
                          .forward(Tensor::from_ids({0, 1, 2, 3, 4, 5, 6, 7}, {1, 8}),
                                   Tensor::from_ids({1, 2, 3, 4, 5, 6, 7, 8}, {1, 8}))
                          .loss.item();
  char root[120];
  std::snprintf(root, sizeof root,
                "[label=\"linear_cross_entropy\\n()\\ndata %.4f\", shape=ellipse, peripheries=2];",
                loss);
  BOOST_TEST(contains(text, root));
  for (const char* label :
       {"\"h.0.attn.c_attn.weight\\n(6, 2)\"", "\"causal_attention_qkv\\n(1, 8, 2)\"",
        "\"wte.weight\\n(65, 2)\"", "\"idx\\n(1, 8) i64\"", "\"targets\\n(1, 8) i64\"",
        "\"(8,) i64\"", "\"linear_gelu\\n(1, 8, 8)\""})
    BOOST_TEST(contains(text, std::string("[label=") + label), label);
  BOOST_TEST(contains(text, "rankdir=TB;"));
  // The tied wte is read twice: by the embedding and by the head.
  std::smatch wte;
  BOOST_REQUIRE(std::regex_search(text, wte, std::regex(R"(  (n\d+) \[label="wte\.weight)")));
  const std::regex use("  " + wte[1].str() + " -> ");
  const auto uses =
      std::distance(std::sregex_iterator(text.begin(), text.end(), use), std::sregex_iterator());
  BOOST_TEST(uses == 2);
  if (dot_installed()) {
    BOOST_TEST(contains(r.out, "rendered " + (dir / "femto.svg")));
    BOOST_TEST(contains(read_file(dir / "femto.svg"), "causal_attention_qkv"));
  }
}

BOOST_AUTO_TEST_CASE(small_expressions) {
  const TempDir dir("graph_expr");
  struct Case {
    std::string expr, counts;
    std::vector<std::string> labels;
  };
  const std::vector<Case> cases{
      {"neuron",
       "5 ops, 5 parameters (leaves that require grad), 0 constants, 9 edges",
       {"x1\\n()\\ndata 2.0000\\ngrad -1.5000", "w1\\n()\\ndata -3.0000\\ngrad 1.0000",
        "x2\\n()\\ndata 0.0000\\ngrad 0.5000", "w2\\n()\\ndata 1.0000\\ngrad 0.0000",
        "b\\n()\\ndata 6.8814\\ngrad 0.5000", "tanh\\n()\\ndata 0.7071"}},
      {"sum",
       "3 ops, 3 parameters (leaves that require grad), 0 constants, 5 edges",
       {"a\\n(2, 3)", "b\\n(2, 3)", "c\\n(2, 3)", "mul\\n(2, 3)", "add\\n(2, 3)",
        "sum\\n()\\ndata -3.0000"}},
      {"attention",
       "6 ops, 3 parameters (leaves that require grad), 0 constants, 8 edges",
       {"Q\\n(3, 2)", "K\\n(3, 2)", "V\\n(3, 2)", "permute\\n(2, 3)", "matmul\\n(3, 3)",
        "mul_scalar\\n(3, 3)", "causal_mask\\n(3, 3)", "softmax\\n(3, 3)", "matmul\\n(3, 2)"}},
  };
  for (const Case& c : cases) {
    const std::string dot = dir / (c.expr + ".dot");
    const auto r = run_cli("graph --expr " + c.expr + " --out " + dot);
    BOOST_TEST_INFO(c.expr << ": " << r.out);
    BOOST_TEST(r.exit_code == 0);
    BOOST_TEST(contains(r.out, c.counts));
    const std::string text = read_file(dot);
    for (const std::string& l : c.labels) BOOST_TEST(contains(text, "[label=\"" + l + "\""), l);
  }
}

// Without Graphviz the .dot is still written and the command says how to render it; with
// --out - the DOT goes to stdout.
BOOST_AUTO_TEST_CASE(without_graphviz_and_to_stdout) {
  const TempDir dir("graph_nodot");
  const std::string dot = dir / "sub/sum.dot";
  const auto r = run_cli("graph --expr sum --out " + dot, true, "PATH=/nonexistent ");
  BOOST_TEST_INFO(r.out);
  BOOST_TEST(r.exit_code == 0);
  BOOST_TEST(contains(
      r.out,
      "Graphviz's dot is not installed, so no SVG was drawn; install it (sudo apt-get install "
      "graphviz) and run: dot -Tsvg < '" +
          dot + "' > '" + (dir / "sub/sum.svg") + "'"));
  BOOST_TEST(std::filesystem::exists(dot));
  BOOST_TEST(!std::filesystem::exists(dir / "sub/sum.svg"));

  const auto s = run_cli("graph --expr sum --out -", false);
  BOOST_TEST(s.exit_code == 0);
  BOOST_TEST(s.out.rfind("digraph attograd {\n", 0) == 0);
  BOOST_TEST(s.out == read_file(dot));
}

BOOST_AUTO_TEST_CASE(bad_options_are_one_line_errors) {
  const auto txt = run_cli("graph --out graph.txt");
  BOOST_TEST(txt.exit_code == 2);
  BOOST_TEST(
      txt.out ==
      "attograd: error: --out graph.txt: expected a file name ending in .dot (or - for stdout)\n");
  const TempDir dir("graph_errors");
  const std::string file = dir.file("a_file", "");
  const auto not_dir = run_cli("graph --out " + file + "/g.dot");
  BOOST_TEST(not_dir.exit_code == 2);
  BOOST_TEST(not_dir.out == "attograd: error: --out " + file +
                                ": cannot create the directory (Not a directory); "
                                "choose another --out\n");
  const auto expr = run_cli("graph --expr mlp");
  BOOST_TEST(expr.exit_code == 2);
  BOOST_TEST(contains(expr.out, "--expr: mlp not in {neuron,sum,attention,femto}"));
}

// The graphs in docs/01-engine.md are what the commands under them make, byte for byte.
BOOST_AUTO_TEST_CASE(the_figures_in_the_docs_are_regenerated_exactly) {
  const TempDir dir("graph_docs");
  for (const std::string expr : {"neuron", "femto"}) {
    const std::string dot = dir / (expr + ".dot");
    BOOST_REQUIRE(run_cli("graph --expr " + expr + " --out " + dot).exit_code == 0);
    BOOST_TEST(read_file(dot) ==
                   read_file(std::string(ATTOGRAD_DOCS_DIR) + "/figures/graph_" + expr + ".dot"),
               expr);
  }
}
