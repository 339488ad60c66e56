// Every command that writes files or draws, run by argument vector (no shell) with hostile names:
// paths and prompts holding quotes, newlines, system(...), backquotes and a leading dash. An
// output path with a control character is refused with a one-line error and writes nothing;
// any other name is used as it is, every file lands where it was asked, and no command hidden
// in a name runs (each would create <dir>/PWN<k>, by absolute path). A symlink named like an
// output is replaced by the output, never written through.
#define BOOST_TEST_MODULE hostile_names
#include <boost/test/unit_test.hpp>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "gpt/io/subprocess.h"
#include "tests/cli/cli_run.h"
#include "tests/test_util.h"

using attograd::testing::contains;
using attograd::testing::read_file;
using attograd::testing::TempDir;
namespace fs = std::filesystem;

namespace {

struct Run {
  int exit_code = -1;
  std::string out, error;  // stdout; stderr
};

// `attograd args...` in `cwd`, started without a shell: every argument arrives as written.
Run run_attograd(const std::vector<std::string>& args, const fs::path& cwd) {
  std::vector<std::string> argv{ATTOGRAD_CLI};
  argv.insert(argv.end(), args.begin(), args.end());
  attograd::gpt::RunOptions options;
  options.cwd = cwd.string();
  options.capture_stdout = true;
  const auto r = attograd::gpt::run_program(argv, "", options);
  BOOST_REQUIRE(r.has_value());
  return {WIFEXITED(r->status) ? WEXITSTATUS(r->status) : -1, r->out, r->err};
}

// Every PWN<k> file a hostile text would have created (by absolute path, in `dir`).
std::vector<std::string> pwned(const fs::path& dir) {
  return attograd::testing::files_starting_with(dir, "PWN");
}

// A directory name (relative, so it starts with '-') that is a command in gnuplot's and a
// shell's syntax: quotes, a backquote command and system(...). No control characters.
std::string hostile_dir(const fs::path& dir, const std::string& tag) {
  const std::string pwn = (dir / ("PWN" + tag)).string();
  return "-" + tag + "'\"`touch " + pwn + "a` $(touch " + pwn + "b) system(\"touch " + pwn +
         "c\")'";
}

bool installed(const std::string& program) {
  return std::system(("command -v " + program + " >/dev/null 2>&1").c_str()) == 0;
}

std::string corpus_text() {
  std::string text;
  for (int i = 0; i < 60; ++i) text += "to be or not to be, that is the question'\"`$()\n";
  return text;
}

}  // namespace

// The examples: `train --out $'r\nsystem("touch PWN")\n'` ran touch through gnuplot, and
// `train --out $'notes.txt\nrun'` truncated ./notes.txt. Every option naming a file or
// directory to write now refuses control characters before anything is written.
BOOST_AUTO_TEST_CASE(output_paths_with_control_characters_are_refused) {
  const TempDir dir("hostile_control");
  const std::string corpus = dir.file("corpus.txt", corpus_text());
  dir.file("notes.txt", "my notes\n");
  const std::string pwn = dir / "PWN";
  const std::string newline_out = "r\nsystem(\"touch " + pwn + "\")\n";
  const std::vector<std::vector<std::string>> commands{
      {"train", "--preset", "femto", "--corpus", corpus, "--steps", "2", "--out", newline_out},
      {"train", "--preset", "femto", "--corpus", corpus, "--steps", "2", "--out", "notes.txt\nrun"},
      {"train", "--corpus", corpus, "--cache-dir", "c\rd", "--steps", "2"},
      {"figure", "mask", "--out", newline_out},
      {"graph", "--expr", "sum", "--out", "g\n.dot"},
      {"attention", "--checkpoint", "none", "--prompt", "a", "--out", "a\tb"},
      {"export", "--checkpoint", "none", "--out", "h\nf"},
      {"gradcheck", "--op", "gelu", "--markdown", "d\x1b[2J.md"},
      {"tokenize", "--corpus", corpus, "--cache-dir", "x\ny"},
      {"eval", "--checkpoint", "none", "--cache-dir", "x\ny"}};
  for (const auto& args : commands) {
    const Run r = run_attograd(args, dir.path);
    BOOST_TEST_INFO(args[0] + ": " + r.error);
    BOOST_TEST(r.exit_code == 2);
    BOOST_TEST(contains(r.error, "holds a control character (U+00"));
    BOOST_TEST(
        contains(r.error, "choose a name without newlines, tabs or other control characters"));
  }
  BOOST_TEST(pwned(dir.path).empty());
  BOOST_TEST(read_file(dir / "notes.txt") == "my notes\n");
  std::vector<std::string> left;
  for (const auto& e : fs::directory_iterator(dir.path)) left.push_back(e.path().filename());
  std::sort(left.begin(), left.end());
  BOOST_TEST(left == (std::vector<std::string>{"corpus.txt", "notes.txt"}),
             boost::test_tools::per_element());
}

// train, figure, attention and graph into directories named like commands, and a prompt of
// quotes, a newline and system(...): each exits 0, writes where it was asked, and runs nothing.
BOOST_AUTO_TEST_CASE(hostile_names_are_names_and_prompts_are_text) {
  const TempDir dir("hostile_names");
  const std::string corpus = dir.file("corpus.txt", corpus_text());
  const bool gnuplot = installed("gnuplot"), dot = installed("dot");

  const std::string run = hostile_dir(dir.path, "1");
  const Run t = run_attograd({"train", "--preset", "femto", "--corpus", corpus, "--steps", "4",
                              "--eval-interval", "2", "--out=" + run},
                             dir.path);
  BOOST_TEST_INFO(t.out + t.error);
  BOOST_REQUIRE(t.exit_code == 0);
  BOOST_TEST(fs::is_regular_file(dir.path / run / "ckpt.safetensors"));
  if (gnuplot)
    for (const char* plot : {"loss.png", "loss.svg", "perplexity.png", "perplexity.svg"})
      BOOST_TEST(fs::file_size(dir.path / run / plot) > 0u, plot);

  const std::string figures = hostile_dir(dir.path, "2");
  for (const std::string kind : {"mask", "rope", "blocks", "sinusoidal", "heads", "pre-post-ln"}) {
    // pre-post-ln refuses femto's two channels (a layer norm over two outputs +-1 whatever its
    // input), so it draws pico's block
    const std::string preset = kind == "pre-post-ln" ? "pico" : "femto";
    const Run f = run_attograd({"figure", kind, "--preset", preset, "--out=" + figures}, dir.path);
    BOOST_TEST_INFO(kind << ": " << f.out << f.error);
    BOOST_TEST(f.exit_code == 0);
    BOOST_TEST(fs::is_regular_file(dir.path / figures / (kind + ".csv")));
    const bool graphviz = kind == "blocks" || kind == "pre-post-ln";  // drawn by dot
    if (gnuplot && !graphviz) BOOST_TEST(fs::file_size(dir.path / figures / (kind + ".svg")) > 0u);
    if (dot && graphviz)
      BOOST_TEST(read_file(dir.path / figures / (kind + ".svg")).find("</svg>") !=
                 std::string::npos);
  }

  // The tokens "\n", "'" and '"' become tick labels, the prompt a figure's title.
  const std::string maps = hostile_dir(dir.path, "3");
  const std::string prompt = "o\nb'\"`$(";  // 8 tokens: femto's block_size
  const Run a = run_attograd(
      {"attention", "--checkpoint", run + "/ckpt.safetensors", "--prompt", prompt, "--out=" + maps},
      dir.path);
  BOOST_TEST_INFO(a.out + a.error);
  BOOST_REQUIRE(a.exit_code == 0);
  BOOST_TEST(
      contains(read_file(dir.path / maps / "layer0_head0.csv"), "query\\key,0:o,1:\\n,2:b,3:'"));
  if (gnuplot) {
    const std::string svg = read_file(dir.path / maps / "layer0_head0.svg");
    // Each tick is "position:token": the newline token drawn as its escape.
    BOOST_TEST(contains(svg, ">1:\\n<"));
    BOOST_TEST(contains(svg, ">5:`<"));
  }

  // A leading dash never reaches dot as an option: the DOT goes in on its stdin.
  const Run g = run_attograd({"graph", "--expr", "sum", "--out=-graph.dot"}, dir.path);
  BOOST_TEST_INFO(g.out + g.error);
  BOOST_TEST(g.exit_code == 0);
  BOOST_TEST(contains(read_file(dir / "-graph.dot"), "digraph attograd {"));
  if (dot) BOOST_TEST(contains(read_file(dir / "-graph.svg"), "</svg>"));
  BOOST_TEST(pwned(dir.path).empty());
}

// A symlink named like an output (the example: layer0_head0.csv pointing at another
// file) is replaced by the new file; the file it pointed at keeps its bytes.
BOOST_AUTO_TEST_CASE(symlinked_outputs_are_replaced_not_written_through) {
  const TempDir dir("hostile_symlinks");
  const std::string corpus = dir.file("corpus.txt", corpus_text());
  const std::string victim = dir.file("victim.txt", "precious\n");
  const bool gnuplot = installed("gnuplot"), dot = installed("dot");
  const Run t = run_attograd(
      {"train", "--preset", "femto", "--corpus", corpus, "--steps", "2", "--out", "run"}, dir.path);
  BOOST_REQUIRE(t.exit_code == 0);

  std::vector<fs::path> links{dir.path / "maps/layer0_head0.csv", dir.path / "figs/mask.csv",
                              dir.path / "g.dot"};
  if (gnuplot)
    links.insert(links.end(), {dir.path / "maps/layer0_head0.svg", dir.path / "figs/mask.png"});
  if (dot) links.push_back(dir.path / "g.svg");
  for (const fs::path& link : links) {
    fs::create_directories(link.parent_path());
    fs::create_symlink(victim, link);
  }
  BOOST_TEST(run_attograd({"attention", "--checkpoint", "run/ckpt.safetensors", "--prompt", "to be",
                           "--out", "maps"},
                          dir.path)
                 .exit_code == 0);
  BOOST_TEST(
      run_attograd({"figure", "mask", "--preset", "femto", "--out", "figs"}, dir.path).exit_code ==
      0);
  BOOST_TEST(run_attograd({"graph", "--expr", "sum", "--out", "g.dot"}, dir.path).exit_code == 0);
  BOOST_TEST(read_file(victim) == "precious\n");
  for (const fs::path& link : links) {
    BOOST_TEST(!fs::is_symlink(link), link);
    BOOST_TEST(fs::file_size(link) > 0u, link);
  }
}
