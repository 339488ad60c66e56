// gpt/io/gnuplot: no text of the caller's reaches gnuplot's parser. Texts made of quotes, newlines,
// system(...), backquotes, macros and a leading dash are drawn as they are (checked in the SVG),
// none of the commands in them runs (each would create a file, by absolute path), the script
// holds none of their bytes, and outputs with such names land where they should.
#define BOOST_TEST_MODULE gnuplot
#include <boost/test/unit_test.hpp>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "gpt/io/figures.h"
#include "gpt/io/gnuplot.h"
#include "gpt/train/plot.h"
#include "gpt/train/run_dir.h"
#include "tests/test_util.h"

using namespace attograd::gpt;
using attograd::testing::data_available;
using attograd::testing::expect_throw_with;
using attograd::testing::fresh_temp_dir;
using attograd::testing::read_file;
namespace fs = std::filesystem;

namespace {

// Texts that would run `touch <dir>/PWN<k>` (or break the script) if pasted into a gnuplot
// string, single- or double-quoted.
std::vector<std::string> hostile_texts(const fs::path& dir) {
  const std::string pwn = (dir / "PWN").string();
  return {"x'\nsystem(\"touch " + pwn + "1\")\n'",
          "y\"\nsystem(\"touch " + pwn + "2\")\n\"",
          "`touch " + pwn + "3`",
          "it's \"quoted\" \\ @macro $(touch " + pwn + "4)",
          "-o -x --help",
          "#comment"};
}

// Every PWN<k> file a hostile text would have created (by absolute path, in `dir`).
std::vector<std::string> pwned(const fs::path& dir) {
  return attograd::testing::files_starting_with(dir, "PWN");
}

}  // namespace

// The structural guarantee: whatever text() is given, the script names it as S[i] and holds
// none of its bytes; data files take only names of the program's choice.
BOOST_AUTO_TEST_CASE(texts_never_enter_the_script) {
  const fs::path dir = fresh_temp_dir("gnuplot_script");
  GnuplotJob job;
  std::vector<std::string> names;
  for (const std::string& t : hostile_texts(dir)) names.push_back(job.text(t));
  BOOST_TEST(names.front() == "S[1]");
  BOOST_TEST(names.back() == "S[6]");
  job.add("set title " + names[0] + "\n");
  const std::string script = job.script();
  for (const char* fragment : {"touch", "system", "`", "macro", "-x", "#comment", "PWN"})
    BOOST_TEST(script.find(fragment) == std::string::npos, fragment);
  for (const char* bad : {"../x", "a b", "", ".hidden", "texts.dat", "out0.png", "a'b", "a\nb"})
    BOOST_CHECK_THROW(job.data(bad, "1 2\n"), std::logic_error);
  BOOST_TEST(job.data("f0p0.dat", "1 2\n") == "'f0p0.dat'");
  fs::remove_all(dir);
}

// Drawn for real: every hostile text is a title or a tick label, and the figure goes to a path
// holding quotes, backquotes, system(...) and a leading dash. Nothing runs; the SVG shows each
// text (a newline as \n), and both files are where they were asked for.
BOOST_AUTO_TEST_CASE(hostile_texts_and_paths_are_drawn_and_never_run) {
  if (!data_available("/usr/bin/gnuplot", "apt-get install gnuplot-nox")) return;
  const fs::path dir = fresh_temp_dir("gnuplot_hostile");
  const std::vector<std::string> texts = hostile_texts(dir);
  const fs::path out_dir = dir / ("-q'\"`touch " + (dir / "PWN5").string() + "` system(\"touch " +
                                  (dir / "PWN6").string() + "\")");
  fs::create_directories(out_dir);
  const std::string stem = (out_dir / "-map'").string();
  // Long texts as titles, short ones as tick labels (a long tick label squeezes the plot away).
  Heatmap panel{texts[0], texts[1], texts[2], {texts[4], "r"}, {texts[5], "ok"}, {1, 0, 0.5, 1}};
  std::ostringstream log;
  BOOST_REQUIRE(write_heatmaps({{stem, texts[3], {panel, panel}, 2}}, log));
  BOOST_TEST(pwned(dir).empty());
  BOOST_TEST(fs::file_size(stem + ".png") > 0u);
  const std::string svg = read_file(stem + ".svg");
  // The texts' bytes are there as given (gnuplot's SVG escapes only &, < and >, which these
  // lack), control characters as their escapes.
  auto in_svg = [](std::string text) {
    std::string out;
    for (char c : text) out += c == '\n' ? std::string("\\n") : std::string(1, c);
    return out;
  };
  for (const std::string& t : texts) BOOST_TEST(svg.find(in_svg(t)) != std::string::npos, t);
  // Nothing is left beside the outputs but the outputs.
  std::vector<std::string> left;
  for (const auto& e : fs::directory_iterator(out_dir)) left.push_back(e.path().filename());
  std::sort(left.begin(), left.end());
  BOOST_TEST(left == (std::vector<std::string>{"-map'.png", "-map'.svg"}),
             boost::test_tools::per_element());
  fs::remove_all(dir);
}

// A symlink where an output goes is replaced by the drawing, never written through: its target
// keeps its bytes.
BOOST_AUTO_TEST_CASE(a_symlinked_output_is_replaced_not_followed) {
  if (!data_available("/usr/bin/gnuplot", "apt-get install gnuplot-nox")) return;
  const fs::path dir = fresh_temp_dir("gnuplot_symlink");
  const fs::path victim = dir / "victim.txt";
  std::ofstream(victim) << "precious";
  fs::create_symlink(victim, dir / "map.svg");
  std::ostringstream log;
  BOOST_REQUIRE(
      write_heatmaps({{(dir / "map").string(), "", {{"t", "r", "c", {"a"}, {"b"}, {1}}}}}, log));
  BOOST_TEST(read_file(victim) == "precious");
  BOOST_TEST(!fs::is_symlink(dir / "map.svg"));
  BOOST_TEST(read_file(dir / "map.svg").find("</svg>") != std::string::npos);
  fs::remove_all(dir);
}

// The training plots read the run's logs through copies under names of ours: a run directory
// whose name would break out of a quoted string draws its plots, and a baseline named like a
// command is a legend entry.
BOOST_AUTO_TEST_CASE(plots_of_a_run_in_a_hostile_directory) {
  if (!data_available("/usr/bin/gnuplot", "apt-get install gnuplot-nox")) return;
  const fs::path dir = fresh_temp_dir("gnuplot_plots");
  const fs::path run = dir / ("r'\"`touch " + (dir / "PWN7").string() + "`");
  fs::create_directories(run);
  std::ofstream(run / "train_log.csv")
      << "step,loss,lr,grad_norm,tokens_per_s\n1,3,0.01,1,100\n2,2.5,0.01,1,100\n";
  std::ofstream(run / "eval_log.csv")
      << "step,train_loss,val_loss,train_ppl,val_ppl\n2,2.5,2.6,12.2,13.5\n";
  std::ofstream(run / RunDir::kBaselines)
      << "name,val_loss\nuni'\"system(\"touch " + (dir / "PWN8").string() + "\"),3.1\n";
  std::ostringstream log;
  BOOST_REQUIRE(write_plots(run.string(), log));
  BOOST_TEST_INFO(read_file(run / "loss.svg"));
  BOOST_TEST(pwned(dir).empty());
  const std::string svg = read_file(run / "loss.svg");
  BOOST_TEST(svg.find("baseline (val 3.100)") != std::string::npos);
  BOOST_TEST(svg.find("uni'\"system(\"touch") != std::string::npos);
  BOOST_TEST(fs::file_size(run / "perplexity.png") > 0u);
  fs::remove_all(dir);
}
