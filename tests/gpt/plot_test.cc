// gpt/plot's heatmaps: bad panels are refused before gnuplot runs, and each figure is drawn as
// PNG and SVG with its titles and tick labels (checked in the SVG's text, not its pixels).
#define BOOST_TEST_MODULE plot
#include <boost/test/unit_test.hpp>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <unistd.h>

#include "gpt/plot.h"
#include "tests/test_util.h"

using namespace attograd::gpt;
using attograd::testing::expect_throw_with;

BOOST_AUTO_TEST_CASE(panels_that_do_not_fill_their_labels_are_refused) {
  std::ostringstream log;
  const Heatmap short_of_values{"short", "row", "col", {"a", "b"}, {"x", "y"}, {1, 2, 3}};
  expect_throw_with<std::invalid_argument>([&] { write_heatmaps({{"/tmp/never", "", {short_of_values}}}, log); },
                                           "panel 'short' of /tmp/never has 3 values for 2 x 2 labels");
  expect_throw_with<std::invalid_argument>([&] { write_heatmaps({{"/tmp/never", "", {}}}, log); },
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
  const auto dir = std::filesystem::temp_directory_path() / ("attograd_plot_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const double nan = std::nan("");
  const Heatmap mask{"it's masked", "query", "key", {"p", "q"}, {"p", "q"}, {1, nan, 0.25, 0.75}};
  const Heatmap other{"second panel", "query", "key", {"p", "q"}, {"p", "q"}, {1, nan, 0.5, 0.5}};
  const std::string one = (dir / "one").string(), two = (dir / "two").string();
  std::ostringstream log;
  BOOST_TEST(write_heatmaps({{one, "", {mask}, 1, 0, 1, true}, {two, "both of them", {mask, other}, 2}}, log));
  for (const std::string& stem : {one, two}) BOOST_TEST(std::filesystem::file_size(stem + ".png") > 0u);
  auto svg = [](const std::string& path) {
    std::ifstream in(path);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  };
  const std::string s1 = svg(one + ".svg"), s2 = svg(two + ".svg");
  BOOST_TEST(s1.find("it's masked") != std::string::npos);  // a quote in a title is kept
  BOOST_TEST(s1.find("0.75") != std::string::npos);          // values printed on the cells
  BOOST_TEST(s1.find(">nan<") == std::string::npos);         // but none on a NaN cell
  BOOST_TEST(s2.find("both of them") != std::string::npos);
  BOOST_TEST(s2.find("second panel") != std::string::npos);
  BOOST_TEST(s2.find("0.75") == std::string::npos);  // show_values off
  std::filesystem::remove_all(dir);
}
