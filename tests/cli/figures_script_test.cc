// scripts/figures.sh, the one script that makes every figure of docs/: run for real (with the
// real binary, a short pico training of the test's own instead of train_pico.sh, and temporary
// output directories), then its data checked against the formulas, not its pixels. Also: every
// image docs/*.md shows is in docs/figures and made by a line of the script, and `attograd
// attention --attribution` on the trained pico finds queries whose most-attended key is not the
// one whose dropped term changes the loss most.
#define BOOST_TEST_MODULE figures_script_test
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <numbers>
#include <regex>
#include <set>
#include <sstream>

#include "gpt/model/config.h"
#include "gpt/model/layer_norm_placement.h"
#include "lecture/attention_by_hand.h"
#include "lecture/attention_figures.h"
#include "tests/cli/cli_run.h"
#include "tests/svg_cells.h"
#include "tests/test_util.h"

using namespace attograd::testing;
namespace fs = std::filesystem;

namespace {

const fs::path kSource = ATTOGRAD_SOURCE_DIR;

std::string read_text(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  BOOST_REQUIRE_MESSAGE(in, "cannot read " << p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// A CSV file as rows of fields (no quoting: these files have none), the header first.
std::vector<std::vector<std::string>> read_csv(const fs::path& p) {
  std::vector<std::vector<std::string>> rows;
  std::istringstream in(read_text(p));
  for (std::string line; std::getline(in, line);) {
    std::vector<std::string> fields;
    std::istringstream l(line);
    for (std::string f; std::getline(l, f, ',');) fields.push_back(f);
    if (!line.empty() && line.back() == ',') fields.push_back("");
    rows.push_back(fields);
  }
  return rows;
}

double num(const std::string& s) { return s == "-inf" ? -INFINITY : std::stod(s); }

// How often `needle` occurs in `s` (without overlaps).
size_t occurrences(const std::string& s, const std::string& needle) {
  size_t n = 0;
  for (size_t at = s.find(needle); at != std::string::npos; at = s.find(needle, at + needle.size()))
    ++n;
  return n;
}

// pico trained for 300 steps (seeds fixed) on a small text with the characters of the script's
// prompt "And God ", once per process: the stand-in for train_pico.sh's 20,000 steps.
const fs::path& trained_pico() {
  static const TempDir dir("figures_pico");
  static const fs::path run = [] {
    std::string text;
    const char* lines[] = {"And God said, Let there be light: and there was light.",
                           "And God saw the light, that it was good.",
                           "In the beginning God created the heaven and the earth.",
                           "And the evening and the morning were the first day."};
    for (int i = 0; i < 300; ++i) text += std::string(lines[(i * 7 + i / 3) % 4]) + "\n";
    const std::string corpus = dir.file("corpus.txt", text), out = dir / "pico";
    const CliRun r =
        run_cli("train --preset pico --corpus " + corpus + " --out " + out +
                " --steps 300 --batch-size 32 --lr 1e-2 --eval-interval 100 --eval-iters 5"
                " --log-interval 100 --seed 1 --init-seed 1");
    BOOST_TEST_INFO(r.out);
    BOOST_REQUIRE_EQUAL(r.exit_code, 0);
    return fs::path(out);
  }();
  return run;
}

// One panel of a heatmap figure: its matrix (rows x cols, row-major, NaN for a masked cell) and
// the colour scale it is drawn on.
struct Panel {
  int64_t rows = 0, cols = 0;
  std::vector<double> values;
  double zmin = 0, zmax = 1;
  bool diverging = false;
};

// A heatmap SVG the script keeps, against the panels it draws: no embedded <image>, and per
// panel one crisp rectangle per cell with a value, at its row and column, in its value's colour
// on the panel's scale, and none for a masked cell.
void check_panels(const fs::path& svg_path, const std::vector<Panel>& panels) {
  BOOST_TEST_CONTEXT(svg_path.filename()) {
    const std::string svg = read_text(svg_path);
    BOOST_TEST(svg.find("<image") == std::string::npos);
    std::vector<std::pair<int64_t, int64_t>> shapes;
    for (const Panel& p : panels) shapes.emplace_back(p.rows, p.cols);
    const auto drawn = heatmap_panels(svg, shapes);
    BOOST_REQUIRE_EQUAL(drawn.size(), panels.size());
    for (size_t k = 0; k < panels.size(); ++k) {
      const Panel& p = panels[k];
      const std::vector<double>& want = p.values;
      BOOST_REQUIRE_EQUAL(want.size(), static_cast<size_t>(p.rows * p.cols));
      std::vector<int> count(want.size(), 0);
      int wrong_colour = 0, off_grid = 0;
      for (const SvgCell& c : drawn[k]) {
        if (c.row < 0) {
          ++off_grid;
          continue;
        }
        const size_t at = static_cast<size_t>(c.row * p.cols + c.col);
        ++count[at];
        if (!std::isnan(want[at]) && !has_colour(c, want[at], p.zmin, p.zmax, p.diverging))
          ++wrong_colour;
      }
      int missing = 0, masked_drawn = 0;
      for (size_t i = 0; i < want.size(); ++i)
        (std::isnan(want[i]) ? masked_drawn : missing) += count[i] != !std::isnan(want[i]);
      BOOST_TEST_INFO("panel " << k);
      BOOST_TEST((off_grid == 0 && wrong_colour == 0 && missing == 0 && masked_drawn == 0),
                 off_grid << " polygons off the cell grid, " << wrong_colour
                          << " cells of the wrong colour, " << missing << " cells not drawn once, "
                          << masked_drawn << " masked cells drawn");
    }
  }
}

// check_panels for panels of one shape on one scale from zmin to 1.
void check_heatmap_svg(const fs::path& svg_path, const std::vector<std::vector<double>>& panels,
                       int64_t rows, int64_t cols, double zmin, bool diverging) {
  std::vector<Panel> all;
  for (const std::vector<double>& values : panels)
    all.push_back({rows, cols, values, zmin, 1, diverging});
  check_panels(svg_path, all);
}

// A colour box drawn from the colour of zmin at its bottom to that of zmax at its top.
void check_colour_box(const std::vector<SvgPolygon>& box, double zmin, double zmax,
                      bool diverging) {
  BOOST_REQUIRE(box.size() >= 10u);  // a gradient of slices, not one rectangle
  auto colour = [](const SvgPolygon& p) { return SvgCell{0, 0, p.r, p.g, p.b}; };
  const auto bottom =
      std::max_element(box.begin(), box.end(), [](auto& a, auto& b) { return a.y1 < b.y1; });
  const auto top =
      std::min_element(box.begin(), box.end(), [](auto& a, auto& b) { return a.y0 < b.y0; });
  // Within a few steps of the scale's ends: the first and last slices are sampled inside it.
  const double step = (zmax - zmin) / static_cast<double>(box.size());
  BOOST_TEST((has_colour(colour(*bottom), zmin, zmin, zmax, diverging) ||
              has_colour(colour(*bottom), zmin + step, zmin, zmax, diverging) ||
              has_colour(colour(*bottom), zmin + 2 * step, zmin, zmax, diverging)));
  BOOST_TEST((has_colour(colour(*top), zmax, zmin, zmax, diverging) ||
              has_colour(colour(*top), zmax - step, zmin, zmax, diverging) ||
              has_colour(colour(*top), zmax - 2 * step, zmin, zmax, diverging)));
}

// A CSV of matrices in long form ("<name>,row,col,value" with a header row) as name -> matrix.
std::map<std::string, std::vector<std::vector<double>>> read_cells(const fs::path& p) {
  std::map<std::string, std::vector<std::vector<double>>> m;
  const auto rows = read_csv(p);
  for (size_t i = 1; i < rows.size(); ++i) {
    BOOST_REQUIRE_EQUAL(rows[i].size(), 4u);
    auto& matrix = m[rows[i][0]];
    const size_t r = std::stoul(rows[i][1]), c = std::stoul(rows[i][2]);
    if (matrix.size() <= r) matrix.resize(r + 1);
    if (matrix[r].size() <= c) matrix[r].resize(c + 1);
    matrix[r][c] = num(rows[i][3]);
  }
  return m;
}

// A tensor (rows, cols) as a matrix of its values.
std::vector<std::vector<double>> matrix_of(const attograd::Tensor& t) {
  std::vector<std::vector<double>> m(static_cast<size_t>(t.size(0)));
  for (int64_t r = 0; r < t.size(0); ++r)
    for (int64_t c = 0; c < t.size(1); ++c) m[r].push_back(t.at({r, c}));
  return m;
}

// A long-form CSV's matrices (read_cells) are the tensors of their names, bit for bit, and the
// file holds no other.
void check_matrices(const std::map<std::string, std::vector<std::vector<double>>>& m,
                    const std::vector<std::pair<std::string, attograd::Tensor>>& want) {
  BOOST_REQUIRE_EQUAL(m.size(), want.size());
  for (const auto& [name, t] : want) {
    BOOST_TEST_INFO(name);
    BOOST_REQUIRE(m.count(name) == 1u);
    BOOST_TEST((m.at(name) == matrix_of(t)));
  }
}

// A matrix as a panel's values, row-major, NaN above the diagonal when `causal`.
std::vector<double> cells_of(const std::vector<std::vector<double>>& m, bool causal = false) {
  std::vector<double> v;
  for (size_t r = 0; r < m.size(); ++r)
    for (size_t c = 0; c < m[r].size(); ++c) v.push_back(causal && c > r ? std::nan("") : m[r][c]);
  return v;
}

// The smallest and largest finite value of the matrices (a panel's scale, as figure_command.cc
// draws it) and the largest magnitude (a signed scale's).
std::pair<double, double> range_of(const std::vector<std::vector<std::vector<double>>>& ms) {
  double lo = INFINITY, hi = -INFINITY;
  for (const auto& m : ms)
    for (const auto& row : m)
      for (const double v : row)
        if (std::isfinite(v)) lo = std::min(lo, v), hi = std::max(hi, v);
  return {lo, hi};
}
double magnitude_of(const std::vector<std::vector<std::vector<double>>>& ms) {
  const auto [lo, hi] = range_of(ms);
  return std::max(-lo, hi);
}

// An attention CSV (layer<L>_head<H>.csv) as the map draws it: row-major, NaN after the query.
std::vector<double> attention_cells(const fs::path& csv) {
  const auto a = read_csv(csv);
  std::vector<double> cells;
  for (size_t t = 1; t < a.size(); ++t)
    for (size_t j = 1; j < a[t].size(); ++j) cells.push_back(j > t ? std::nan("") : num(a[t][j]));
  return cells;
}

}  // namespace

// Runs the script as the docs' figures are made (only PICO_RUN, WORK and FIGURES point elsewhere)
// and checks each figure's data.
BOOST_AUTO_TEST_CASE(script_figures_data) {
  if (!data_available("/usr/bin/gnuplot", "apt-get install gnuplot-nox") ||
      !data_available("/usr/bin/dot", "apt-get install graphviz"))
    return;
  const TempDir dir("figures_script");
  const fs::path work = dir / "work", figures = dir / "figures";
  const CliRun r = run_program("bash", (kSource / "scripts/figures.sh").string(), true,
                               "ATTOGRAD=" ATTOGRAD_CLI " PICO_RUN=" + trained_pico().string() +
                                   " WORK=" + work.string() + " FIGURES=" + figures.string() + " ");
  BOOST_TEST_INFO(r.out);
  BOOST_REQUIRE_EQUAL(r.exit_code, 0);

  // Sinusoidal (--block-size 64 --n-embd 32): PE[pos][2i] = sin(pos / 10000^(2i/C)), [2i+1] = cos.
  const auto pe = read_csv(work / "sinusoidal.csv");
  BOOST_REQUIRE_EQUAL(pe.size(), 65u);
  BOOST_REQUIRE_EQUAL(pe[0].size(), 33u);
  for (int pos = 0; pos < 64; ++pos)
    for (int i = 0; i < 16; ++i) {
      const double angle = pos / std::pow(10000.0, 2.0 * i / 32);
      BOOST_TEST(num(pe[pos + 1][1 + 2 * i]) == std::sin(angle),
                 boost::test_tools::tolerance(1e-12));
      BOOST_TEST(num(pe[pos + 1][2 + 2 * i]) == std::cos(angle),
                 boost::test_tools::tolerance(1e-12));
    }

  // RoPE (head_dim 8, block_size 8): pair i at position pos is (1, 0.5) turned by
  // pos * 10000^(-2i/8): the norm is kept and the angle is that, modulo 2π.
  const auto rope = read_csv(work / "rope.csv");
  BOOST_REQUIRE_EQUAL(rope.size(), 1u + 4 * 8);
  BOOST_TEST(rope[0] == std::vector<std::string>(
                            {"pos", "pair", "x_in", "y_in", "x", "y", "norm", "angle"}),
             boost::test_tools::per_element());
  for (size_t row = 1; row < rope.size(); ++row) {
    const int pos = std::stoi(rope[row][0]), i = std::stoi(rope[row][1]);
    const double theta = pos * std::pow(10000.0, -2.0 * i / 8), x = num(rope[row][4]),
                 y = num(rope[row][5]);
    BOOST_TEST(x == std::cos(theta) - 0.5 * std::sin(theta), boost::test_tools::tolerance(1e-12));
    BOOST_TEST(y == std::sin(theta) + 0.5 * std::cos(theta), boost::test_tools::tolerance(1e-12));
    BOOST_TEST(std::hypot(x, y) == std::sqrt(1.25), boost::test_tools::tolerance(1e-12));
    const double expected = std::fmod(theta, 2 * std::numbers::pi), angle = num(rope[row][7]);
    BOOST_TEST(std::min(std::abs(angle - expected),
                        2 * std::numbers::pi - std::abs(angle - expected)) < 1e-9);
  }

  // RoPE's 2-d point (head_dim 2: one pair, turned by pos radians): q = (1, 0.5) at m and
  // k = (0.8, -0.6) at n, rotated; their dot product is <q, R((n - m)) k>, the same for every
  // (m, n) with the same m - n, and different for different m - n.
  const auto qk = read_csv(work / "rope-qk.csv");
  BOOST_REQUIRE_EQUAL(qk.size(), 1u + 8 * 8);
  BOOST_TEST(qk[0] == std::vector<std::string>(
                          {"m", "n", "q_x", "q_y", "k_x", "k_y", "score", "m_minus_n"}),
             boost::test_tools::per_element());
  std::map<int, double> score_at;  // m - n -> the score of (m, n) = (m - n, 0) or (0, n - m)
  for (size_t row = 1; row < qk.size(); ++row) {
    const int m = std::stoi(qk[row][0]), n = std::stoi(qk[row][1]);
    const auto& f = qk[row];
    const double cm = std::cos(m), sm = std::sin(m), cn = std::cos(n), sn = std::sin(n);
    BOOST_TEST(num(f[2]) == cm * 1 - sm * 0.5, boost::test_tools::tolerance(1e-12));
    BOOST_TEST(num(f[3]) == sm * 1 + cm * 0.5, boost::test_tools::tolerance(1e-12));
    BOOST_TEST(num(f[4]) == cn * 0.8 + sn * 0.6, boost::test_tools::tolerance(1e-12));
    BOOST_TEST(num(f[5]) == sn * 0.8 - cn * 0.6, boost::test_tools::tolerance(1e-12));
    const double score = num(f[6]), d = n - m;
    BOOST_TEST(std::stoi(f[7]) == m - n);
    BOOST_TEST(num(f[2]) * num(f[4]) + num(f[3]) * num(f[5]) == score,
               boost::test_tools::tolerance(1e-15));
    // <q, R(d) k> with R(d) k = (cos d 0.8 + sin d 0.6, sin d 0.8 - cos d 0.6).
    const double relative =
        1 * (std::cos(d) * 0.8 + std::sin(d) * 0.6) + 0.5 * (std::sin(d) * 0.8 - std::cos(d) * 0.6);
    BOOST_TEST(std::abs(score - relative) < 1e-12);
    const auto [it, first] = score_at.emplace(m - n, score);
    if (!first) BOOST_TEST(std::abs(score - it->second) < 1e-12);
  }
  BOOST_TEST(score_at.size() == 15u);  // m - n = -7 .. 7: 64 scores, 15 values
  BOOST_TEST(std::abs(score_at[1] - score_at[2]) > 0.1);

  // The sqrt(d_k) figure: the lecture program's experiment (lecture/), bit for bit, and
  // the shape chapter 3 describes: unscaled, the peak grows toward 1; scaled, it stays put.
  const auto scaling = read_csv(work / "scaling.csv");
  const std::vector<attograd::lecture::ScalingRow> measured =
      attograd::lecture::ScalingExperiment().measure();
  BOOST_REQUIRE_EQUAL(scaling.size(), 1 + measured.size());
  BOOST_TEST(scaling[0] == std::vector<std::string>(
                               {"d_k", "score_variance", "mean_max_unscaled", "mean_max_scaled"}),
             boost::test_tools::per_element());
  for (size_t i = 0; i < measured.size(); ++i) {
    const auto& f = scaling[i + 1];
    BOOST_TEST_INFO("d_k " << measured[i].d_k);
    BOOST_TEST(std::stoll(f[0]) == measured[i].d_k);
    BOOST_TEST(num(f[1]) == measured[i].score_variance);
    BOOST_TEST(num(f[2]) == measured[i].mean_max_unscaled);
    BOOST_TEST(num(f[3]) == measured[i].mean_max_scaled);
    if (i > 0) BOOST_TEST(num(f[2]) > num(scaling[i][2]));
    BOOST_TEST((num(f[3]) > 0.32 && num(f[3]) < 0.37));
  }
  BOOST_TEST(num(scaling.back()[2]) > 0.95);

  // The causal mask (pico's block_size 8): 0 on and below the diagonal, -inf above.
  const auto mask = read_csv(work / "mask.csv");
  BOOST_REQUIRE_EQUAL(mask.size(), 9u);
  for (int t = 0; t < 8; ++t)
    for (int j = 0; j < 8; ++j) BOOST_TEST(num(mask[t + 1][j + 1]) == (j > t ? -INFINITY : 0.0));

  // pico's attention maps: every row sums to 1, every entry after the query is exactly 0.
  for (int l = 0; l < 3; ++l)
    for (int h = 0; h < 3; ++h) {
      const auto a = read_csv(work / "attention" /
                              ("layer" + std::to_string(l) + "_head" + std::to_string(h) + ".csv"));
      BOOST_REQUIRE_EQUAL(a.size(), 9u);
      for (int t = 0; t < 8; ++t) {
        double sum = 0;
        for (int j = 0; j < 8; ++j) {
          sum += num(a[t + 1][j + 1]);
          if (j > t) BOOST_TEST(num(a[t + 1][j + 1]) == 0.0);
        }
        BOOST_TEST(sum == 1.0, boost::test_tools::tolerance(1e-6));
      }
    }

  // The block diagram's data: pico with the Bible's 73 characters has 2,028 parameters.
  const std::string blocks = read_text(work / "blocks.csv");
  BOOST_TEST(blocks.starts_with("parameter,shape,count\nwte.weight,73x6,438\nwpe.weight,8x6,48\n"));
  BOOST_TEST(blocks.ends_with("\ntotal,,2028\n"));
  BOOST_TEST(read_text(work / "blocks.dot").find("subgraph cluster_2") != std::string::npos);

  // The loss plot's data: evaluation at step 0 and the unigram and bigram baselines.
  const auto eval = read_csv(work / "eval_log.csv");
  BOOST_TEST(eval[0] == std::vector<std::string>(
                            {"step", "train_loss", "val_loss", "train_ppl", "val_ppl"}),
             boost::test_tools::per_element());
  BOOST_TEST(eval[1][0] == "0");
  BOOST_TEST(eval.back()[0] == "300");
  const auto baselines = read_csv(work / "baselines.csv");
  BOOST_REQUIRE_EQUAL(baselines.size(), 3u);
  BOOST_TEST(baselines[1][0] == "unigram");
  BOOST_TEST(baselines[2][0] == "bigram");
  BOOST_TEST(num(baselines[2][1]) <
             num(baselines[1][1]));  // the bigram knows more than the unigram

  // The heatmaps the docs show, cell by cell: crisp rectangles, the masked cells left grey.
  std::vector<double> average;  // the mask figure: softmax(causal_mask(0)), 1/(t+1) on keys <= t
  for (int t = 0; t < 8; ++t)
    for (int j = 0; j < 8; ++j) average.push_back(j > t ? std::nan("") : 1.0 / (t + 1));
  check_heatmap_svg(figures / "causal_mask.svg", {average}, 8, 8, 0, false);
  std::vector<double> table;
  for (size_t pos = 1; pos < pe.size(); ++pos)
    for (size_t j = 1; j < pe[pos].size(); ++j) table.push_back(num(pe[pos][j]));
  check_heatmap_svg(figures / "sinusoidal.svg", {table}, 64, 32, -1, true);
  check_heatmap_svg(figures / "pico_attention_layer2_head0.svg",
                    {attention_cells(work / "attention/layer2_head0.csv")}, 8, 8, 0, false);
  std::vector<std::vector<double>> heads;  // all_heads: one row of panels per layer
  for (int l = 0; l < 3; ++l)
    for (int h = 0; h < 3; ++h)
      heads.push_back(
          attention_cells(work / "attention" /
                          ("layer" + std::to_string(l) + "_head" + std::to_string(h) + ".csv")));
  check_heatmap_svg(figures / "pico_attention.svg", heads, 8, 8, 0, false);

  // pico's maps label each row and column with its position and token: the prompt repeats "d"
  // and the space, and "2:d" / "6:d", "3:␣" / "7:␣" tell them apart. all_heads has one colour
  // box for its nine panels, the single map its own, both from 0 (white) to 1.
  for (const auto& [name, panels] :
       {std::pair{"pico_attention.svg", 9}, std::pair{"pico_attention_layer2_head0.svg", 1}}) {
    BOOST_TEST_CONTEXT(name) {
      const std::string svg = read_text(figures / name);
      for (const std::string label :
           {"0:A", "1:n", "2:d", "3:\u2423", "4:G", "5:o", "6:d", "7:\u2423"}) {
        BOOST_TEST_INFO(label);
        BOOST_TEST(occurrences(svg, "<text>" + label + "</text>") ==
                   static_cast<size_t>(2 * panels));  // rows and columns
      }
      const auto boxes = colour_boxes(svg);
      BOOST_REQUIRE_EQUAL(boxes.size(), 1u);
      check_colour_box(boxes[0], 0, 1, false);
    }
  }

  // Chapter 3's worked example 1 step by step: every matrix is lecture::causal_attention_steps'
  // on lecture::two_token_example(), bit for bit, with the numbers the chapter quotes; each panel
  // drawn on its own scale (Q and K one, S and its scaled and masked forms one, Z on V's) with
  // its own colour box.
  {
    namespace lecture = attograd::lecture;
    const lecture::AttentionInputs in = lecture::two_token_example();
    const lecture::AttentionSteps st = lecture::causal_attention_steps(in.Q, in.K, in.V);
    const auto m = read_cells(work / "attention-steps.csv");
    const std::vector<std::pair<std::string, attograd::Tensor>> want = {{"Q", in.Q},
                                                                        {"K", in.K},
                                                                        {"V", in.V},
                                                                        {"S", st.qk},
                                                                        {"S_scaled", st.scores},
                                                                        {"masked", st.masked},
                                                                        {"A", st.weights},
                                                                        {"Z", st.out}};
    check_matrices(m, want);
    const auto& S = m.at("S");
    BOOST_TEST((S == std::vector<std::vector<double>>{{1, 3}, {2, 6}}));  // not symmetric: Q ≠ K
    BOOST_TEST(m.at("masked")[0][1] == -INFINITY);
    BOOST_TEST(m.at("A")[0][0] == 1.0);
    BOOST_TEST(m.at("A")[0][1] == 0.0);
    BOOST_TEST(std::abs(m.at("A")[1][0] - 0.0179862) < 1e-7);
    BOOST_TEST(std::abs(m.at("Z")[1][0] - 19.820138) < 1e-6);
    const auto [qk_lo, qk_hi] = range_of({m.at("Q"), m.at("K")});
    const auto [s_lo, s_hi] = range_of({m.at("S"), m.at("S_scaled")});
    const auto [v_lo, v_hi] = range_of({m.at("V")});
    check_panels(figures / "attention_steps.svg",
                 {{2, 1, cells_of(m.at("Q")), qk_lo, qk_hi},
                  {2, 1, cells_of(m.at("K")), qk_lo, qk_hi},
                  {2, 1, cells_of(m.at("V")), v_lo, v_hi},
                  {2, 2, cells_of(S), s_lo, s_hi},
                  {2, 2, cells_of(m.at("S_scaled")), s_lo, s_hi},
                  {2, 2, cells_of(m.at("masked"), true), s_lo, s_hi},
                  {2, 2, cells_of(m.at("A"), true), 0, 1},
                  {2, 1, cells_of(m.at("Z")), v_lo, v_hi}});
    const auto boxes = colour_boxes(read_text(figures / "attention_steps.svg"));
    BOOST_REQUIRE_EQUAL(boxes.size(), 8u);
    check_colour_box(boxes[6], 0, 1, false);
    check_colour_box(boxes[7], v_lo, v_hi, false);
  }

  // Heads split → attend → concat (pico's n_embd 6 and 3 heads, T = 4): every matrix is
  // lecture::MultiHeadExample's, bit for bit, and follows from the CSV's own q, k, v by the
  // formulas, in plain loops: A_h = softmax(q_h k_hᵀ / √2) under the mask, y_h = A_h v_h, the
  // concat puts y_h at channels 2h, 2h + 1, and c_proj of it is the layer's fused forward.
  {
    const attograd::lecture::MultiHeadSplit split =
        attograd::lecture::MultiHeadExample{6, 3, 4}.compute();
    const auto m = read_cells(work / "heads.csv");
    const std::vector<std::pair<std::string, attograd::Tensor>> want = {{"x", split.x},
                                                                        {"q", split.q},
                                                                        {"k", split.k},
                                                                        {"v", split.v},
                                                                        {"A0", split.weights[0]},
                                                                        {"A1", split.weights[1]},
                                                                        {"A2", split.weights[2]},
                                                                        {"y0", split.head_out[0]},
                                                                        {"y1", split.head_out[1]},
                                                                        {"y2", split.head_out[2]},
                                                                        {"concat", split.concat},
                                                                        {"out", split.out}};
    check_matrices(m, want);
    const auto &q = m.at("q"), &k = m.at("k"), &v = m.at("v"), &concat = m.at("concat");
    const int T = 4, HS = 2;
    double heads_differ = 0;
    for (int h = 0; h < 3; ++h) {
      const auto &A = m.at("A" + std::to_string(h)), &y = m.at("y" + std::to_string(h));
      for (int t = 0; t < T; ++t) {
        std::vector<double> e(T, 0.0);
        double z = 0, top = -INFINITY;
        for (int j = 0; j <= t; ++j) {
          e[j] =
              (q[t][h * HS] * k[j][h * HS] + q[t][h * HS + 1] * k[j][h * HS + 1]) / std::sqrt(2.0);
          top = std::max(top, e[j]);
        }
        for (int j = 0; j <= t; ++j) z += e[j] = std::exp(e[j] - top);
        for (int j = 0; j < T; ++j) {
          BOOST_TEST(A[t][j] == (j <= t ? e[j] / z : 0.0), boost::test_tools::tolerance(1e-12));
          heads_differ = std::max(heads_differ, std::abs(A[t][j] - m.at("A0")[t][j]));
        }
        for (int i = 0; i < HS; ++i) {
          double sum = 0;
          for (int j = 0; j < T; ++j) sum += A[t][j] * v[j][h * HS + i];
          BOOST_TEST(y[t][i] == sum, boost::test_tools::tolerance(1e-12));
          BOOST_TEST(concat[t][h * HS + i] == y[t][i]);
        }
      }
    }
    BOOST_TEST(heads_differ > 0.05);  // each head attends its own way, not all the causal average
    // What chapter 3 says of the drawing: heads 0 and 2 put most of queries 1-3's weight on key
    // 1, head 1 splits query 2's between keys 0 and 2 (0.46 and 0.54).
    for (const int h : {0, 2})
      for (int t = 1; t < T; ++t) {
        const auto& row = m.at("A" + std::to_string(h))[t];
        BOOST_TEST((std::max_element(row.begin(), row.end()) - row.begin() == 1));
      }
    BOOST_TEST(std::abs(m.at("A1")[2][0] - 0.46) < 0.005);
    BOOST_TEST(std::abs(m.at("A1")[2][2] - 0.54) < 0.005);
    for (int t = 0; t < T; ++t)
      for (int c = 0; c < 6; ++c)
        BOOST_TEST(m.at("out")[t][c] == split.layer_out.at({t, c}),
                   boost::test_tools::tolerance(1e-12));
    const double qkv = magnitude_of({q, k, v}), outs = magnitude_of({concat}),
                 mixed = magnitude_of({m.at("out")});
    std::vector<Panel> panels;
    for (const char* name : {"q", "k", "v"})
      panels.push_back({4, 6, cells_of(m.at(name)), -qkv, qkv, true});
    for (int h = 0; h < 3; ++h)
      panels.push_back({4, 4, cells_of(m.at("A" + std::to_string(h)), true), 0, 1, false});
    for (int h = 0; h < 3; ++h)
      panels.push_back({4, 2, cells_of(m.at("y" + std::to_string(h))), -outs, outs, true});
    panels.push_back({4, 6, cells_of(concat), -outs, outs, true});
    panels.push_back({4, 6, cells_of(m.at("out")), -mixed, mixed, true});
    check_panels(figures / "heads.svg", panels);
    const std::string svg = read_text(figures / "heads.svg");
    BOOST_TEST(colour_boxes(svg).size() == 9u);  // q, k, v, the weights', y0-y2, concat, out
    BOOST_TEST(occurrences(svg, "<text>h2:1</text>") == 5u);  // q, k, v, y2 and the concat
  }

  // Pre-LN beside post-LN, on one pico block at initialisation (gpt::layer_norm_placement): the
  // CSV holds each stage's RMS and the gradient ratio as the library computes them, the pre-LN
  // side is attograd's Block (its y is gpt::Block::forward(x)), the drawing prints every number,
  // and the numbers show the contrast the chapter describes: pre-LN leaves the stream at x's
  // scale and passes the gradient straight through, post-LN normalises the stream to RMS 1 and
  // divides the gradient by x's scale.
  {
    const attograd::gpt::GPTConfig c = attograd::gpt::preset("pico");
    const attograd::gpt::LayerNormPlacement p = attograd::gpt::layer_norm_placement(c, 8);
    const auto rows = read_csv(work / "pre-post-ln.csv");
    BOOST_TEST(rows[0] == std::vector<std::string>({"layout", "stage", "value"}),
               boost::test_tools::per_element());
    BOOST_REQUIRE_EQUAL(rows.size(), 1u + 2 * (7 + 1));
    const std::string svg = read_text(figures / "pre_post_ln.svg");
    size_t row = 1;
    for (const auto& [name, layout] :
         {std::pair{"pre-LN", &p.pre_ln}, std::pair{"post-LN", &p.post_ln}}) {
      BOOST_REQUIRE_EQUAL(layout->stages.size(), 7u);
      for (const attograd::gpt::BlockStage& st : layout->stages) {
        BOOST_TEST_INFO(name << " " << st.name);
        BOOST_TEST((rows[row][0] == name && rows[row][1] == st.name));
        const double rms = attograd::gpt::mean_rms(st.value);
        BOOST_TEST(num(rows[row++][2]) == rms);
        char printed[32];
        std::snprintf(printed, sizeof printed, "RMS %.3f", rms);
        BOOST_TEST(contains(svg, printed));
      }
      BOOST_TEST((rows[row][0] == name && rows[row][1] == "|dL/dx| / |dL/dy|"));
      BOOST_TEST(num(rows[row++][2]) == layout->grad_ratio);
      char printed[64];
      std::snprintf(printed, sizeof printed, "|dL/dx| / |dL/dy| = %.3f", layout->grad_ratio);
      BOOST_TEST(contains(svg, printed));
    }
    const attograd::Tensor& pre_y = p.pre_ln.stages.back().value;
    for (int64_t t = 0; t < 8; ++t)
      for (int64_t ch = 0; ch < 6; ++ch)
        BOOST_TEST(pre_y.at({t, ch}) == p.block_out.at({t, ch}),
                   boost::test_tools::tolerance(1e-12));
    const double x_rms = attograd::gpt::mean_rms(p.pre_ln.stages.front().value);
    BOOST_TEST((x_rms > 2.5 && x_rms < 3.5));
    BOOST_TEST(std::abs(attograd::gpt::mean_rms(pre_y) / x_rms - 1) < 0.02);
    BOOST_TEST(std::abs(attograd::gpt::mean_rms(p.post_ln.stages.back().value) - 1) < 1e-3);
    BOOST_TEST(std::abs(p.pre_ln.grad_ratio - 1) < 0.1);
    BOOST_TEST(p.post_ln.grad_ratio < 0.5);
    // The numbers chapter 4 quotes: x and pre-LN's y of RMS 2.920, post-LN's y 1.000, the
    // gradient ratios 1.000 and 0.336.
    BOOST_TEST(std::abs(x_rms - 2.920) < 5e-4);
    BOOST_TEST(std::abs(attograd::gpt::mean_rms(pre_y) - 2.920) < 5e-4);
    BOOST_TEST(std::abs(p.pre_ln.grad_ratio - 1.000) < 5e-4);
    BOOST_TEST(std::abs(p.post_ln.grad_ratio - 0.336) < 5e-4);
  }

  // Every figure the script keeps is one the docs show.
  std::string docs;
  for (const auto& e : fs::directory_iterator(kSource / "docs"))
    if (e.path().extension() == ".md") docs += read_text(e.path());
  for (const auto& e : fs::directory_iterator(figures))
    if (e.path().extension() == ".svg") {
      BOOST_TEST_INFO(e.path().filename());
      BOOST_TEST(docs.find("](figures/" + e.path().filename().string() + ")") != std::string::npos);
    }
}

// Every image docs/*.md shows is in docs/figures and is made by a line of scripts/figures.sh:
// written there by a command ("$FIGURES/<name>", or its .dot for a graph rendered beside it),
// copied there by `keep <file> <name>`, or (a timing) drawn by bench/<name>.py --out "$FIGURES".
BOOST_AUTO_TEST_CASE(docs_images_come_from_the_script) {
  const std::string script = read_text(kSource / "scripts/figures.sh");
  const std::regex image(R"(!\[[^\]]*\]\(figures/([^)]+)\))");
  std::set<std::string> shown;
  for (const auto& e : fs::directory_iterator(kSource / "docs")) {
    if (e.path().extension() != ".md") continue;
    const std::string text = read_text(e.path());
    for (std::sregex_iterator m(text.begin(), text.end(), image), end; m != end; ++m)
      shown.insert((*m)[1]);
  }
  BOOST_TEST(shown.size() >= 10u);  // chapters 1 and 3 to 5
  for (const std::string& name : shown) {
    BOOST_TEST_INFO("docs show figures/" << name);
    BOOST_TEST(fs::exists(kSource / "docs/figures" / name));
    const std::string stem = fs::path(name).stem().string();
    // ... or, for a timing (TIMINGS=1), drawn there by the bench script of its name.
    const bool made = script.find("\"$FIGURES/" + name + "\"") != std::string::npos ||
                      script.find("\"$FIGURES/" + stem + ".dot\"") != std::string::npos ||
                      std::regex_search(script, std::regex("\nkeep \\S+ " + name + "\n")) ||
                      script.find("bench/" + stem + ".py --out \"$FIGURES\"") != std::string::npos;
    BOOST_TEST(made);
  }
}

// Every `attograd figure` command that docs/*.md quotes for a reader to type runs as quoted:
// the lecture map's and the chapters' (a command may wrap across lines inside its backticks).
// Only --out is replaced, by a temporary directory, so nothing lands in the checkout.
BOOST_AUTO_TEST_CASE(docs_figure_commands_run_as_quoted) {
  const std::regex quoted(R"(`build/cli/attograd (figure [^`]*)`)");
  const std::regex out_option(R"(\s--out\s+\S+)");
  const TempDir dir("docs_figure_commands");
  int commands = 0;
  for (const auto& e : fs::directory_iterator(kSource / "docs")) {
    if (e.path().extension() != ".md") continue;
    const std::string text = read_text(e.path());
    for (std::sregex_iterator m(text.begin(), text.end(), quoted), end; m != end; ++m) {
      std::string args = std::regex_replace((*m)[1].str(), std::regex(R"(\s+)"), " ");
      args = std::regex_replace(args, out_option, "");
      BOOST_TEST_INFO(e.path().filename().string() << ": attograd " << args);
      const auto r = run_cli(args + " --out " + dir / std::to_string(commands++));
      BOOST_TEST_INFO(r.out);
      BOOST_TEST(r.exit_code == 0);
    }
  }
  BOOST_TEST(commands >= 10);  // chapter 3's figures and the lecture map's
}

// "Attention is not explanation" on a trained pico: per query, the most-attended key against the
// key whose term, dropped, changes the next-token loss most (-weight x dloss/dweight). On this run
// they differ for some (layer, head, query), and each line marked "differ" names two different
// keys.
BOOST_AUTO_TEST_CASE(attribution_on_trained_pico) {
  const TempDir dir("figures_attribution");
  const CliRun r =
      run_cli("attention --checkpoint " + (trained_pico() / "ckpt.safetensors").string() +
              " --prompt \"And God \" --attribution --out " + dir / "out");
  BOOST_TEST_INFO(r.out);
  BOOST_REQUIRE_EQUAL(r.exit_code, 0);
  const std::smatch summary = [&] {
    std::smatch m;
    std::regex_search(
        r.out, m, std::regex(R"(changes the loss most for (\d+) of (\d+) \(layer, head, query\))"));
    return m;
  }();
  BOOST_REQUIRE(!summary.empty());
  BOOST_TEST(std::stoi(summary[2]) == 3 * 3 * 6);  // 3 layers x 3 heads x queries 1..6
  BOOST_TEST(std::stoi(summary[1]) > 0);
  // "0      0     1      0   "A"      (0.652)  1   "n"      (-0.0481)  differ"
  const std::regex line(
      R"((\d+) +(\d+) +(\d+) +(\d+) +"[^"]*" +\(([0-9.]+)\) +(\d+) +"[^"]*" +\(([-+0-9.]+)\)( +differ)?)");
  // attribution.csv holds the same rows unrounded: "layer,head,query,most_attended,weight,
  // largest_change,change,differ".
  const auto csv = read_csv(fs::path(dir / "out") / "attribution.csv");
  BOOST_REQUIRE_EQUAL(csv.size(), 1u + 54u);
  BOOST_TEST(csv[0] == (std::vector<std::string>{"layer", "head", "query", "most_attended",
                                                 "weight", "largest_change", "change", "differ"}),
             boost::test_tools::per_element());
  int lines = 0, differ = 0;
  for (std::sregex_iterator m(r.out.begin(), r.out.end(), line), end; m != end; ++m, ++lines) {
    const bool marked = (*m)[8].matched;
    BOOST_TEST(marked == ((*m)[4] != (*m)[6]));
    BOOST_TEST(std::stoi((*m)[4]) <= std::stoi((*m)[3]));  // a key at or before the query
    differ += marked;
    if (lines + 1 >= static_cast<int>(csv.size())) continue;
    const std::vector<std::string>& row = csv[static_cast<size_t>(lines) + 1];
    BOOST_REQUIRE_EQUAL(row.size(), 8u);
    for (const int i : {1, 2, 3, 4, 6})
      BOOST_TEST(row[static_cast<size_t>(i - 1)] == (*m)[i].str());
    BOOST_TEST(row[7] == (marked ? "1" : "0"));
    BOOST_TEST(std::abs(std::stod(row[4]) - std::stod((*m)[5])) <= 5e-4);  // printed as %.3f
    BOOST_TEST(std::abs(std::stod(row[6]) - std::stod((*m)[7])) <= 5e-5);  // printed as %+.4f
  }
  BOOST_TEST(lines == 54);
  BOOST_TEST(differ == std::stoi(summary[1]));

  const CliRun short_prompt =
      run_cli("attention --checkpoint " + (trained_pico() / "ckpt.safetensors").string() +
              " --prompt An --attribution --out " + dir / "out2");
  BOOST_TEST(short_prompt.exit_code == 2);
  BOOST_TEST(short_prompt.out.find("--attribution needs a prompt of at least 3 tokens") !=
             std::string::npos);
}

// A PICO_RUN without a checkpoint is refused before anything is built or drawn.
BOOST_AUTO_TEST_CASE(a_pico_run_without_a_checkpoint_is_named) {
  const TempDir dir("figures_script_bad_run");
  const CliRun r = run_program(
      "bash", (kSource / "scripts/figures.sh").string(), true,
      "ATTOGRAD=" ATTOGRAD_CLI " PICO_RUN=" + (dir / "nothing") + " WORK=" + (dir / "work") + " ");
  BOOST_TEST(r.exit_code == 2);
  BOOST_TEST(contains(r.out, "figures.sh: PICO_RUN=" + (dir / "nothing") +
                                 " holds no ckpt.safetensors; give the --out directory of a "
                                 "finished examples/train_pico.sh run"));
  BOOST_TEST(!fs::exists(dir / "work"));
}
