#include "gpt/io/figures.h"

#include <algorithm>
#include <cstdio>
#include <ostream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "gpt/io/gnuplot.h"

namespace attograd::gpt {

namespace {

// The most cells a heatmap panel draws as one SVG polygon each (128 x 128); a larger matrix is
// drawn as one bitmap (see the plot command below).
constexpr size_t kMaxCellPolygons = 128 * 128;

// "(S[1] 0, S[2] 1)": explicit tick labels at the cell centres.
std::string tics(const std::vector<std::string>& labels, GnuplotJob& job) {
  std::string out = "(";
  for (size_t i = 0; i < labels.size(); ++i)
    out += (i ? ", " : "") + job.text(labels[i]) + " " + std::to_string(i);
  return out + ")";
}

// The width of a tick label in characters (UTF-8 code points: "3:␣" is 3), to make room for it.
size_t text_width(const std::string& s) {
  return static_cast<size_t>(std::count_if(
      s.begin(), s.end(), [](char c) { return (static_cast<unsigned char>(c) & 0xc0) != 0x80; }));
}

size_t longest(const std::vector<std::string>& labels) {
  size_t n = 0;
  for (const std::string& l : labels) n = std::max(n, text_width(l));
  return n;
}

// `set palette` and `set cbrange` of one colour scale.
std::string scale_commands(const HeatmapScale& scale) {
  return (scale.diverging ? "set palette defined (0 '#b2182b', 1 '#ffffff', 2 '#08306b')\n"
                          : "set palette defined (0 '#ffffff', 1 '#08306b')\n") +
         std::string("set cbrange [") + std::to_string(scale.zmin) + ":" +
         std::to_string(scale.zmax) + "]\n";
}

// A colour box right of the panel being drawn, as tall as it.
constexpr char kBoxBeside[] =
    "set colorbox user origin graph 1.04, graph 0 size graph 0.06, graph 1\n";

// The gnuplot commands of one figure in one format, drawn into `output` (a name the job chose);
// its panels' data are the files f<index>p<j>.dat.
std::string heatmap_script(const HeatmapFigure& f, size_t index, const std::string& terminal,
                           const std::string& output, GnuplotJob& job) {
  const int64_t n = static_cast<int64_t>(f.panels.size());
  const int64_t cols = std::clamp<int64_t>(f.columns, 1, n), rows = (n + cols - 1) / cols;
  const HeatmapScale figure_scale{f.zmin, f.zmax, f.diverging};
  size_t cells = 1, row_text = 0, col_text = 0;
  int64_t last_on_figure_scale = -1;  // the panel that draws the figure's colour box
  bool own_scales = false;
  for (int64_t j = 0; j < n; ++j) {
    const Heatmap& h = f.panels[j];
    cells = std::max({cells, h.row_labels.size(), h.col_labels.size()});
    row_text = std::max(row_text, longest(h.row_labels));
    col_text = std::max(col_text, longest(h.col_labels));
    if (h.scale)
      own_scales = true;
    else
      last_on_figure_scale = j;
  }
  // A panel grows with its cells, and the whole figure stays within 2400 px a side.
  // Printed values need about 48 px a cell (a 10-point "0.125" is ~35 px wide).
  const int64_t cell_px = f.show_values ? 48 : 28;
  int64_t side = std::clamp<int64_t>(120 + cell_px * static_cast<int64_t>(cells), 360, 900);
  side = std::min(side, 2400 / std::max(cols, rows));
  const int64_t title_px = n > 1 && !f.title.empty() ? 40 : 0;
  // One gnuplot draws every figure of a call in turn, so a colour box placed or hidden for one
  // figure's panels must not carry over: a single panel gets gnuplot's default, right of it.
  std::string s = "set tics scale 0\nunset key\nset colorbox default\n";
  // Several panels: a grid of equal panels, each with room on its left for the row labels and
  // below for the column labels, and a colour box right of the grid for the panels on the
  // figure's scale (and right of each panel with its own). The sizes are pixels of a 10-point
  // font (about 7 px a character).
  int64_t width = cols * side, height = rows * side + title_px;
  std::string figure_box;  // where the colour box of the figure's scale goes
  if (n > 1) {
    const int64_t box = 80;  // a colour box and its tick labels
    const int64_t cell_w = side + (own_scales ? box : 0);
    width = cols * cell_w + (last_on_figure_scale >= 0 && !own_scales ? box : 0);
    const int64_t left = 50 + 7 * static_cast<int64_t>(row_text), right = own_scales ? box : 20,
                  top = 35, bottom = 55 + (col_text > 2 ? 7 * static_cast<int64_t>(col_text) : 0);
    auto x = [&](int64_t px) { return std::to_string(static_cast<double>(px) / width); };
    auto y = [&](int64_t px) { return std::to_string(static_cast<double>(px) / height); };
    s += "set multiplot layout " + std::to_string(rows) + "," + std::to_string(cols) +
         (f.title.empty() ? std::string() : " title " + job.text(f.title)) + " margins " + x(left) +
         "," + x(cols * cell_w - right) + "," + y(bottom) + "," + y(height - title_px - top) +
         " spacing " + x(left + right) + "," + y(top + bottom) + "\n";
    // Beside the grid when every panel is on the figure's scale; else, as the panels with their
    // own, beside the last panel on it.
    figure_box = own_scales ? std::string(kBoxBeside)
                            : "set colorbox user origin screen " + x(cols * cell_w + 10) +
                                  ", screen " + y(bottom) + " size screen " + x(16) + ", screen " +
                                  y(height - title_px - top - bottom) + "\n";
  }
  s = "set terminal " + terminal + " size " + std::to_string(width) + "," + std::to_string(height) +
      " noenhanced font 'Sans,10'\n" + "set output " + output + "\n" + s;
  for (int64_t j = 0; j < n; ++j) {
    const Heatmap& h = f.panels[j];
    const HeatmapScale scale = h.scale.value_or(figure_scale);
    const std::string data = "'f" + std::to_string(index) + "p" + std::to_string(j) + ".dat'";
    // A value is printed white where its cell is dark: near zmax, or, diverging, near either end.
    const std::string mid = std::to_string((scale.zmin + scale.zmax) / 2),
                      dark = scale.diverging ? "abs($3 - " + mid + ") > " +
                                                   std::to_string(0.35 * (scale.zmax - scale.zmin))
                                             : "$3 > " + mid;
    s += scale_commands(scale);
    if (n > 1)
      s += h.scale                     ? std::string(kBoxBeside)
           : j == last_on_figure_scale ? figure_box
                                       : "unset colorbox\n";
    s +=
        "set title " + job.text(h.title) + "\n" +
        "set xrange [-0.5:" + std::to_string(h.col_labels.size()) + "-0.5]\n" + "set yrange [" +
        std::to_string(h.row_labels.size()) + "-0.5:-0.5]\n" +  // row 0 on top
        "set xtics " + tics(h.col_labels, job) +
        (longest(h.col_labels) > 2 ? " rotate by 90 right" : " norotate") + "\n" + "set ytics " +
        tics(h.row_labels, job) + "\n" + "set xlabel " + job.text(h.col_axis) + "\nset ylabel " +
        job.text(h.row_axis) + "\n" +
        // NaN cells are not drawn, so this grey background shows through them.
        "set object 1 rectangle from graph 0,0 to graph 1,1 behind fillcolor rgb '#d9d9d9' "
        "fillstyle solid noborder\n"
        // `pixels`: every cell its own filled rectangle (an SVG <polygon>, crisp edges), not
        // one small bitmap that a viewer scales up and blurs, bleeding colour into the masked
        // cells and making row 0 look two cells wide. Past kMaxCellPolygons cells a cell is
        // about a pixel of the panel or less, so there is nothing to blur, and one polygon
        // each made the SVG of a 1024 x 1024 sinusoidal table 114 MB: such a matrix is one
        // bitmap (an SVG <image>, its PNG inline: 0.6 MB at 512 x 512).
        "plot " +
        data +
        // gnuplot draws no image less than two cells wide or tall: such a matrix (a (T, 1)
        // column) is drawn as boxes, one filled rectangle per cell all the same.
        (h.row_labels.size() < 2 || h.col_labels.size() < 2
             ? " matrix using 1:2:(0.5):(0.5):3 with boxxyerror fillstyle solid noborder lc palette"
         : h.row_labels.size() * h.col_labels.size() > kMaxCellPolygons
             ? " matrix with image"
             : " matrix with image pixels");
    // Values in white on dark cells, black on light ones; NaN cells stay empty ($3 == $3 is false
    // for NaN).
    if (f.show_values)
      s += ", " + data + " matrix using 1:2:($3 == $3 ? sprintf('%." +
           std::to_string(f.value_decimals) + "f', $3) : ''):(" + dark +
           " ? 0xffffff : 0x000000) with labels tc rgb variable font ',8'";
    s += "\n";
  }
  if (n > 1) s += "unset multiplot\n";
  return s;
}

}  // namespace

bool write_heatmaps(const std::vector<HeatmapFigure>& figures, std::ostream& log,
                    const std::string& gnuplot) {
  // Every panel's matrix as a data file, shared by both formats' scripts.
  std::vector<std::pair<std::string, std::string>> data;
  for (size_t i = 0; i < figures.size(); ++i) {
    const HeatmapFigure& f = figures[i];
    if (f.panels.empty())
      throw std::invalid_argument("write_heatmaps: figure " + f.path_stem + " has no panel");
    for (size_t j = 0; j < f.panels.size(); ++j) {
      const Heatmap& h = f.panels[j];
      const size_t rows = h.row_labels.size(), cols = h.col_labels.size();
      if (rows == 0 || cols == 0 || h.values.size() != rows * cols)
        throw std::invalid_argument("write_heatmaps: panel '" + h.title + "' of " + f.path_stem +
                                    " has " + std::to_string(h.values.size()) + " values for " +
                                    std::to_string(rows) + " x " + std::to_string(cols) +
                                    " labels");
      std::string matrix;
      char buf[32];
      for (size_t r = 0; r < rows; ++r)
        for (size_t c = 0; c < cols; ++c) {
          std::snprintf(buf, sizeof buf, "%.9g%c", h.values[r * cols + c],
                        c + 1 == cols ? '\n' : ' ');
          matrix += buf;
        }
      std::string name(1, 'f');  // appended, not "f" + ...: gcc 12 warns falsely (-Wrestrict)
      ((name += std::to_string(i)) += 'p') += std::to_string(j) + ".dat";
      data.emplace_back(std::move(name), std::move(matrix));
    }
  }
  for (const auto& [terminal, ext] : kFigureFormats) {
    GnuplotJob job;
    for (const auto& [name, matrix] : data) job.data(name, matrix);
    for (size_t i = 0; i < figures.size(); ++i)
      job.add(heatmap_script(figures[i], i, terminal,
                             job.output(figures[i].path_stem + "." + ext, ext), job));
    if (!job.run(gnuplot, std::string("the ") + ext + " heatmaps")) {
      log << "gnuplot not found, so no heatmaps were drawn; install it with: sudo apt-get install "
             "gnuplot-nox\n";
      return false;
    }
  }
  return true;
}

bool write_figure(const std::string& path_stem, const std::string& commands, int64_t width,
                  int64_t height, std::ostream& log, const std::string& gnuplot) {
  for (const auto& [terminal, ext] : kFigureFormats) {
    GnuplotJob job;
    job.add("set terminal " + std::string(terminal) + " size " + std::to_string(width) + "," +
            std::to_string(height) + " noenhanced font 'Sans,10'\nset output " +
            job.output(path_stem + "." + ext, ext) + "\n" + commands);
    if (!job.run(gnuplot, path_stem + "." + ext)) {
      log << "gnuplot not found, so no figure was drawn; install it with: sudo apt-get install "
             "gnuplot-nox\n";
      return false;
    }
  }
  return true;
}

}  // namespace attograd::gpt
