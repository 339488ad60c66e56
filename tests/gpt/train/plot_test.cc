// gpt/train/plot with stand-in gnuplots (shell scripts): a failing or silently failing gnuplot is
// an error that leaves the previous plots, gnuplot inherits none of our descriptors, and a missing
// gnuplot is a note, not an error. (trainer_test draws real plots when gnuplot exists.) Heatmaps:
// bad panels are refused before gnuplot runs, and each figure is drawn as PNG and SVG with its
// titles and tick labels (checked in the SVG's text, not its pixels), every cell its own crisp
// rectangle of its colour and a NaN cell none.
#define BOOST_TEST_MODULE plot
#include <boost/test/unit_test.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>

#include "gpt/io/figures.h"
#include "gpt/train/plot.h"
#include "gpt/train/run_dir.h"
#include "tests/svg_cells.h"
#include "tests/test_util.h"

using namespace attograd::gpt;
using attograd::testing::expect_throw_with;
using attograd::testing::has_colour;
using attograd::testing::heatmap_panels;
using attograd::testing::SvgCell;
namespace fs = std::filesystem;

namespace {

struct LogDir {
  fs::path path = fs::temp_directory_path() / ("attograd_plot_" + std::to_string(::getpid()));
  LogDir() {
    fs::remove_all(path);
    fs::create_directories(path);
    std::ofstream(path / "train_log.csv")
        << "step,loss,lr,grad_norm,tokens_per_s\n1,3,0.01,1,100\n2,2.5,0.01,1,100\n";
    std::ofstream(path / "eval_log.csv")
        << "step,train_loss,val_loss,train_ppl,val_ppl\n2,2.5,2.6,12.2,13.5\n";
  }
  ~LogDir() { fs::remove_all(path); }
  // A stand-in gnuplot: `body` runs with $OUTPUTS, the files the script sets as outputs.
  std::string fake_gnuplot(const std::string& body) const {
    const fs::path exe = path / "fake-gnuplot";
    std::ofstream(exe) << "#!/bin/sh\n"
                          "OUTPUTS=$(sed -n \"s/^set output '\\(.*\\)'$/\\1/p\")\n"
                       << body << "\n";
    fs::permissions(exe, fs::perms::owner_all);
    return exe.string();
  }
  // The gnuplot script write_plots would run, kept by a stand-in gnuplot that exits 1.
  std::string plot_script() const {
    const fs::path saved = path / "script.gp", keeper = path / "keep-script";
    std::ofstream(keeper) << "#!/bin/sh\ncat > '" << saved.string() << "'\nexit 1\n";
    fs::permissions(keeper, fs::perms::owner_all);
    std::ostringstream log;
    BOOST_CHECK_THROW(write_plots(path.string(), log, keeper.string()), std::runtime_error);
    const std::string script = read("script.gp");
    fs::remove(saved);
    fs::remove(keeper);
    return script;
  }
  std::string read(const std::string& name) const {
    std::ifstream in(path / name, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }
  // Every entry but the logs and the fake: temporaries must not be left behind.
  std::vector<std::string> others() const {
    std::vector<std::string> names;
    for (const auto& e : fs::directory_iterator(path)) {
      const std::string n = e.path().filename().string();
      if (n != "train_log.csv" && n != "eval_log.csv" && n != "fake-gnuplot" && n != "fds")
        names.push_back(n);
    }
    std::sort(names.begin(), names.end());
    return names;
  }
};

const std::vector<std::string> kOldPlots{"loss.png", "loss.svg", "perplexity.png",
                                         "perplexity.svg"};

void write_old_plots(const LogDir& dir) {
  for (const std::string& name : kOldPlots) std::ofstream(dir.path / name) << "old " << name;
}

void expect_old_plots(const LogDir& dir) {
  BOOST_TEST(dir.others() == kOldPlots, boost::test_tools::per_element());
  for (const std::string& name : kOldPlots) BOOST_TEST(dir.read(name) == "old " + name);
}

}  // namespace

// The issue's example: on a full disk gnuplot exits 0 and leaves empty files.
BOOST_AUTO_TEST_CASE(empty_plots_from_a_gnuplot_that_exits_0_are_an_error) {
  const LogDir dir;
  write_old_plots(dir);
  const std::string gnuplot = dir.fake_gnuplot("for f in $OUTPUTS; do : > \"$f\"; done; exit 0");
  std::ostringstream log;
  expect_throw_with<std::runtime_error>(
      [&] { write_plots(dir.path.string(), log, gnuplot); },
      "gnuplot exited 0 but loss.png is empty in " + dir.path.string() +
          " (is the disk full?); the previous plots are untouched");
  expect_old_plots(dir);
  BOOST_TEST(log.str().empty());  // no "plots: ..." line
}

BOOST_AUTO_TEST_CASE(cut_off_plots_are_an_error) {
  const LogDir dir;
  write_old_plots(dir);
  // A PNG without its IEND chunk, then (once PNGs pass) an SVG without </svg>.
  const std::string png_cut =
      dir.fake_gnuplot("for f in $OUTPUTS; do printf '\\211PNG\\r\\n' > \"$f\"; done");
  std::ostringstream log;
  expect_throw_with<std::runtime_error>([&] { write_plots(dir.path.string(), log, png_cut); },
                                        "loss.png is cut off (6 bytes, no IEND chunk)");
  const std::string svg_cut = dir.fake_gnuplot(
      "for f in $OUTPUTS; do case \"$f\" in *.png) printf '\\0\\0\\0\\0IEND\\256B`\\202' > "
      "\"$f\";; "
      "*) printf '<svg>\\n<g>' > \"$f\";; esac; done");
  expect_throw_with<std::runtime_error>([&] { write_plots(dir.path.string(), log, svg_cut); },
                                        "loss.svg is cut off (9 bytes, no </svg>)");
  // The PNGs were complete and replaced the old ones; the SVGs stay as they were.
  BOOST_TEST(dir.read("loss.png") == std::string("\0\0\0\0IEND\xae\x42\x60\x82", 12));
  BOOST_TEST(dir.read("loss.svg") == "old loss.svg");
  BOOST_TEST(dir.others() == kOldPlots, boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(a_failing_gnuplot_names_its_status_and_its_last_words) {
  const LogDir dir;
  write_old_plots(dir);
  const std::string gnuplot = dir.fake_gnuplot(
      "echo 'warning: noise' >&2; echo '\"<stdin>\" line 6: cannot write: No space left on device' "
      ">&2; exit 1");
  std::ostringstream log;
  expect_throw_with<std::runtime_error>(
      [&] { write_plots(dir.path.string(), log, gnuplot); },
      "gnuplot failed (exit status 1) to draw the png plots in " + dir.path.string() +
          ": \"<stdin>\" line 6: cannot write: No space left on device");
  expect_old_plots(dir);
  // One that dies before reading its script is an error too, not a SIGPIPE for us.
  const std::string early = dir.path / "early-gnuplot";
  std::ofstream(early) << "#!/bin/sh\nexec 0<&-\nkill -9 $$\n";
  fs::permissions(early, fs::perms::owner_all);
  expect_throw_with<std::runtime_error>(
      [&] { write_plots(dir.path.string(), log, early); },
      "gnuplot was killed by signal 9 while drawing the png plots");
  fs::remove(early);
  expect_old_plots(dir);
}

// gnuplot inherits no descriptor of ours (the run's lock above all): only its stdin, stdout and
// stderr.
BOOST_AUTO_TEST_CASE(gnuplot_inherits_only_stdin_stdout_and_stderr) {
  const LogDir dir;
  const int leaky = ::open("/dev/null", O_RDONLY);  // no O_CLOEXEC on purpose
  BOOST_REQUIRE(leaky > 2);
  const std::string fds = (dir.path / "fds").string();
  const std::string gnuplot = dir.fake_gnuplot("ls /proc/$$/fd > '" + fds + "'; exit 1");
  std::ostringstream log;
  BOOST_CHECK_THROW(write_plots(dir.path.string(), log, gnuplot), std::runtime_error);
  ::close(leaky);
  // The shell's own script descriptor may show too (dash opens it close-on-exec as fd 10+):
  // what matters is that ours, `leaky`, is absent.
  std::istringstream listed(dir.read("fds"));
  std::vector<int> open_fds;
  for (int fd; listed >> fd;) open_fds.push_back(fd);
  std::sort(open_fds.begin(), open_fds.end());  // ls sorts them as text: 0 1 10 2
  BOOST_TEST_INFO(dir.read("fds"));
  BOOST_TEST(std::count(open_fds.begin(), open_fds.end(), leaky) == 0);
  BOOST_TEST((open_fds.size() >= 3 && open_fds[0] == 0 && open_fds[1] == 1 && open_fds[2] == 2));
}

BOOST_AUTO_TEST_CASE(a_missing_gnuplot_is_a_note_and_the_logs_stay) {
  const LogDir dir;
  std::ostringstream log;
  BOOST_TEST(!write_plots(dir.path.string(), log, (dir.path / "no-such-gnuplot").string()));
  BOOST_TEST(log.str().find(
                 "gnuplot not found, so no plots were drawn; install it with: sudo apt-get install "
                 "gnuplot-nox") != std::string::npos);
  BOOST_TEST(dir.others().empty());
}

// The perplexity plot (docs/figures/pico_perplexity.svg) on log axes, with the run's baselines as
// perplexities: each is a dashed line at exp(val_loss), where 9.00 against the bigram's 10.26 can
// be seen, and the training loss of every step as exp(loss). The loss plot keeps linear axes and
// its lines at the losses themselves. Read from the script the plots are drawn by (a stand-in
// gnuplot saves it), then drawn by the real gnuplot where installed.
BOOST_AUTO_TEST_CASE(the_perplexity_plot_has_log_axes_and_the_baselines_as_perplexities) {
  const LogDir dir;
  std::ofstream(dir.path / RunDir::kBaselines) << "name,val_loss\nunigram,3.1\nbigram,2.4\n";
  const std::string script = dir.plot_script();
  // The second `set output` starts the perplexity plot.
  const size_t first = script.find("set output"), second = script.find("set output", first + 1);
  BOOST_REQUIRE(second != std::string::npos);
  const std::string loss = script.substr(0, second), perplexity = script.substr(second);
  BOOST_TEST(loss.find("logscale") == std::string::npos);
  BOOST_TEST(perplexity.find("\nset logscale xy\n") != std::string::npos);
  BOOST_TEST(perplexity.find("using ($1 > 0 ? $1 : NaN):(exp($2)) with lines") !=
             std::string::npos);  // train_log.csv's loss of every step, as a perplexity
  // The baselines' dashed lines: ", <y> with lines dt 2 ...".
  auto lines_at = [](const std::string& part) {
    std::vector<double> ys;
    const std::regex item(R"(, ([-+.e0-9]+) with lines dt 2 )");
    for (std::sregex_iterator m(part.begin(), part.end(), item), end; m != end; ++m)
      ys.push_back(std::stod((*m)[1]));
    return ys;
  };
  BOOST_TEST(lines_at(loss) == (std::vector<double>{3.1, 2.4}), boost::test_tools::per_element());
  const std::vector<double> at = lines_at(perplexity);
  BOOST_REQUIRE_EQUAL(at.size(), 2u);
  BOOST_TEST(at[0] == std::exp(3.1), boost::test_tools::tolerance(1e-15));
  BOOST_TEST(at[1] == std::exp(2.4), boost::test_tools::tolerance(1e-15));
  if (std::system("command -v gnuplot >/dev/null 2>&1") != 0) return;
  std::ostringstream log;
  BOOST_REQUIRE(write_plots(dir.path.string(), log));
  const std::string svg = dir.read("perplexity.svg");
  BOOST_TEST(svg.find("unigram baseline (val perplexity 22.20)") != std::string::npos);
  BOOST_TEST(svg.find("bigram baseline (val perplexity 11.02)") != std::string::npos);
  BOOST_TEST(dir.read("loss.svg").find("unigram baseline (val 3.100)") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(panels_that_do_not_fill_their_labels_are_refused) {
  std::ostringstream log;
  const Heatmap short_of_values{"short", "row", "col", {"a", "b"}, {"x", "y"}, {1, 2, 3}};
  expect_throw_with<std::invalid_argument>(
      [&] {
        write_heatmaps({{"/tmp/never", "", {short_of_values}}}, log);
      },
      "panel 'short' of /tmp/never has 3 values for 2 x 2 labels");
  expect_throw_with<std::invalid_argument>(
      [&] {
        write_heatmaps({{"/tmp/never", "", {}}}, log);
      },
      "figure /tmp/never has no panel");
  BOOST_TEST(!std::filesystem::exists("/tmp/never.png"));
}

BOOST_AUTO_TEST_CASE(figures_are_drawn_with_their_titles_and_labels) {
  if (std::system("command -v gnuplot >/dev/null 2>&1") != 0) {
    std::ostringstream log;
    BOOST_TEST(!write_heatmaps({{"/tmp/never", "", {{"t", "r", "c", {"a"}, {"b"}, {1}}}}}, log));
    BOOST_TEST(log.str().find("apt-get install gnuplot-nox") != std::string::npos);
    BOOST_TEST_MESSAGE("skipped the drawing checks: gnuplot is not installed");
    return;
  }
  const auto dir =
      std::filesystem::temp_directory_path() / ("attograd_plot_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const double nan = std::nan("");
  const Heatmap mask{"it's masked", "query", "key", {"p", "q"}, {"p", "q"}, {1, nan, 0.125, 0.875}};
  const Heatmap other{"second panel", "query", "key", {"p", "q"}, {"p", "q"}, {1, nan, 0.5, 0.5}};
  const std::string one = (dir / "one").string(), two = (dir / "two").string();
  std::ostringstream log;
  BOOST_TEST(write_heatmaps(
      {{one, "", {mask}, 1, 0, 1, true, false, 3}, {two, "both of them", {mask, other}, 2}}, log));
  for (const std::string& stem : {one, two})
    BOOST_TEST(std::filesystem::file_size(stem + ".png") > 0u);
  auto svg = [](const std::string& path) {
    std::ifstream in(path);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  };
  const std::string s1 = svg(one + ".svg"), s2 = svg(two + ".svg");
  BOOST_TEST(s1.find("it's masked") != std::string::npos);  // a quote in a title is kept
  // values printed on the cells, with the figure's 3 decimals: 1/8 reads 0.125, not 0.12
  BOOST_TEST(s1.find(">0.125<") != std::string::npos);
  BOOST_TEST(s1.find(">0.875<") != std::string::npos);
  BOOST_TEST(s1.find(">nan<") == std::string::npos);  // but none on a NaN cell
  BOOST_TEST(s2.find("both of them") != std::string::npos);
  BOOST_TEST(s2.find("second panel") != std::string::npos);
  // show_values off: no cell's value (the colour box's ticks are 0, 0.2, ... 1).
  BOOST_TEST(s2.find(">0.875<") == std::string::npos);
  std::filesystem::remove_all(dir);
}

// Each cell is its own rectangle (`with image pixels`), not a small bitmap scaled up (which a
// viewer blurs, so that colour leaked into the masked cells and row 0 looked two cells wide): the
// SVG holds no <image>, one polygon per cell with a value, exactly one cell in size and at its
// row and column, in the colour of its value, and none for a NaN (masked) cell, where the grey
// background shows. For one panel with its colour box and for two panels, on both palettes.
BOOST_AUTO_TEST_CASE(heatmap_cells_are_crisp_rectangles_and_masked_cells_stay_grey) {
  if (std::system("command -v gnuplot >/dev/null 2>&1") != 0) {
    BOOST_TEST_MESSAGE("skipped: gnuplot is not installed");
    return;
  }
  const LogDir dir;
  const double nan = std::nan("");
  // A causal 4 x 4 map and a 3 x 5 signed one.
  const Heatmap causal{
      "causal",
      "query",
      "key",
      {"a", "b", "c", "d"},
      {"a", "b", "c", "d"},
      {1, nan, nan, nan, 0.5, 0.5, nan, nan, 0.2, 0.3, 0.5, nan, 0.1, 0.2, 0.3, 0.4}};
  Heatmap signed_map{"signed", "r", "c", {"0", "1", "2"}, {"0", "1", "2", "3", "4"}, {}};
  for (int i = 0; i < 15; ++i) signed_map.values.push_back(std::sin(1.7 * i));
  const std::string one = (dir.path / "one").string(), two = (dir.path / "two").string(),
                    three = (dir.path / "three").string();
  HeatmapFigure signed_figure{three, "", {signed_map}, 1, -1, 1, false, true};
  std::ostringstream log;
  BOOST_REQUIRE(write_heatmaps({{one, "", {causal}, 1, 0, 1, true},
                                {two, "both", {causal, causal}, 2, 0, 1, false},
                                signed_figure},
                               log));
  auto check = [&](const std::string& path, const Heatmap& h, size_t n_panels, double zmin,
                   bool diverging) {
    BOOST_TEST_CONTEXT(path) {
      const std::string svg = dir.read(fs::path(path).filename().string());
      BOOST_TEST(svg.find("<image") == std::string::npos);
      const int64_t rows = static_cast<int64_t>(h.row_labels.size()),
                    cols = static_cast<int64_t>(h.col_labels.size());
      const auto panels = heatmap_panels(svg, rows, cols);
      BOOST_REQUIRE_EQUAL(panels.size(), n_panels);
      size_t with_value = 0;
      for (double v : h.values) with_value += !std::isnan(v);
      for (const std::vector<SvgCell>& cells : panels) {
        BOOST_TEST(cells.size() == with_value);
        std::vector<int> drawn(h.values.size(), 0);
        for (const SvgCell& c : cells) {
          BOOST_REQUIRE(c.row >= 0);  // one cell in size, on the grid
          const size_t at = static_cast<size_t>(c.row * cols + c.col);
          ++drawn[at];
          BOOST_TEST(!std::isnan(h.values[at]), "row " << c.row << ", col " << c.col);
          if (!std::isnan(h.values[at]))
            BOOST_TEST(has_colour(c, h.values[at], zmin, 1, diverging),
                       "row " << c.row << ", col " << c.col << ": rgb(" << c.r << ", " << c.g
                              << ", " << c.b << ") for " << h.values[at]);
        }
        for (size_t i = 0; i < drawn.size(); ++i) BOOST_TEST(drawn[i] == !std::isnan(h.values[i]));
      }
    }
  };
  check(one + ".svg", causal, 1, 0, false);
  check(two + ".svg", causal, 2, 0, false);
  check(three + ".svg", signed_map, 1, -1, true);
}

// Up to 128 x 128 cells a heatmap is one polygon per cell; past that, a cell is about a pixel of
// the panel and the matrix is one bitmap, an SVG <image> with its PNG inline: a 129 x 128 matrix
// has no cell polygons and a fraction of the bytes (a 1,024 x 1,024 sinusoidal table's SVG was
// 114 MB as polygons).
BOOST_AUTO_TEST_CASE(large_heatmaps_are_one_bitmap) {
  if (std::system("command -v gnuplot >/dev/null 2>&1") != 0) {
    BOOST_TEST_MESSAGE("skipped: gnuplot is not installed");
    return;
  }
  const LogDir dir;
  auto map_of = [](int64_t rows, int64_t cols) {
    Heatmap h{"map", "r", "c", {}, {}, {}};
    for (int64_t i = 0; i < rows; ++i) h.row_labels.push_back(std::to_string(i));
    for (int64_t j = 0; j < cols; ++j) h.col_labels.push_back(std::to_string(j));
    for (int64_t i = 0; i < rows * cols; ++i) h.values.push_back(std::sin(0.01 * i));
    return h;
  };
  const std::string at_limit = (dir.path / "at_limit").string(),
                    past = (dir.path / "past").string();
  std::ostringstream log;
  BOOST_REQUIRE(write_heatmaps({{at_limit, "", {map_of(128, 128)}, 1, -1, 1, false, true},
                                {past, "", {map_of(129, 128)}, 1, -1, 1, false, true}},
                               log));
  const std::string polygons = dir.read("at_limit.svg"), bitmap = dir.read("past.svg");
  BOOST_TEST(polygons.find("<image") == std::string::npos);
  const auto cells = heatmap_panels(polygons, 128, 128);
  BOOST_REQUIRE_EQUAL(cells.size(), 1u);
  BOOST_TEST(cells[0].size() == 128u * 128u);
  BOOST_TEST(bitmap.find("<image") != std::string::npos);
  BOOST_TEST(bitmap.find("data:image/png;base64,") != std::string::npos);
  const auto none = heatmap_panels(bitmap, 129, 128);
  BOOST_TEST((none.empty() || none[0].empty()));
  BOOST_TEST(bitmap.size() * 4 < polygons.size());
}

// A heatmap goes through the same checks as the training plots: an empty file from a gnuplot
// that exits 0 is an error, and no temporary is left.
BOOST_AUTO_TEST_CASE(an_empty_heatmap_is_an_error_and_leaves_no_temporary) {
  const LogDir dir;
  const std::string gnuplot = dir.fake_gnuplot("for f in $OUTPUTS; do : > \"$f\"; done; exit 0");
  std::ostringstream log;
  const Heatmap panel{"t", "query", "key", {"a"}, {"a"}, {1}};
  expect_throw_with<std::runtime_error>(
      [&] {
        write_heatmaps({{(dir.path / "map").string(), "", {panel}}}, log, gnuplot);
      },
      "gnuplot exited 0 but map.png is empty in " + dir.path.string() + " (is the disk full?)");
  BOOST_TEST(dir.others().empty());
}

// The plots find their columns by the logs' header names: a log whose columns moved (a column
// added in front) is still drawn from "step" and "loss", and a log without one is not drawn from
// the wrong numbers: a note names the file and its header.
BOOST_AUTO_TEST_CASE(the_plots_find_their_columns_by_header_name) {
  const LogDir dir;
  std::ofstream(dir.path / "train_log.csv")
      << "wall_s,step,lr,loss,grad_norm,tokens_per_s\n0.1,1,0.01,3,1,100\n";
  const std::string script = dir.plot_script();
  BOOST_TEST(script.find("every ::1 using 2:4 with lines") != std::string::npos, script);
  BOOST_TEST(script.find("using ($2 > 0 ? $2 : NaN):(exp($4)) with lines") != std::string::npos);
  // eval_log.csv as written: step 1, train_loss 2, val_loss 3, train_ppl 4, val_ppl 5.
  BOOST_TEST(script.find("using 1:3 with linespoints") != std::string::npos);
  BOOST_TEST(script.find("NaN):5 with linespoints") != std::string::npos);

  std::ofstream(dir.path / "eval_log.csv") << "step,train_loss,train_ppl,val_ppl\n2,2.5,12,13\n";
  std::ostringstream log;
  BOOST_TEST(!write_plots(dir.path.string(), log, "gnuplot"));
  BOOST_TEST(log.str() ==
             "the plots were not drawn: eval_log.csv has no column 'val_loss' (its "
             "header is 'step,train_loss,train_ppl,val_ppl') in " +
                 dir.path.string() +
                 "; restore the header of eval_log.csv ('step,train_loss,val_loss,train_ppl,"
                 "val_ppl'), which a resumed run (--resume) needs as well\n");
  BOOST_TEST(dir.others().empty());
}
