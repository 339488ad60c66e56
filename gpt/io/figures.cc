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

// "(S[1] 0, S[2] 1)": explicit tick labels at the cell centres.
std::string tics(const std::vector<std::string>& labels, GnuplotJob& job) {
  std::string out = "(";
  for (size_t i = 0; i < labels.size(); ++i)
    out += (i ? ", " : "") + job.text(labels[i]) + " " + std::to_string(i);
  return out + ")";
}

// The gnuplot commands of one figure in one format, drawn into `output` (a name the job chose);
// its panels' data are the files f<index>p<j>.dat.
std::string heatmap_script(const HeatmapFigure& f, size_t index, const std::string& terminal,
                           const std::string& output, GnuplotJob& job) {
  const int64_t n = static_cast<int64_t>(f.panels.size());
  const int64_t cols = std::clamp<int64_t>(f.columns, 1, n), rows = (n + cols - 1) / cols;
  size_t cells = 1;
  for (const Heatmap& h : f.panels)
    cells = std::max({cells, h.row_labels.size(), h.col_labels.size()});
  // A panel grows with its cells, and the whole figure stays within 2400 px a side.
  int64_t side = std::clamp<int64_t>(120 + 28 * static_cast<int64_t>(cells), 360, 900);
  side = std::min(side, 2400 / std::max(cols, rows));
  const int64_t title_px = n > 1 && !f.title.empty() ? 40 : 0;
  const std::string mid = std::to_string((f.zmin + f.zmax) / 2);
  std::string s = "set terminal " + terminal + " size " + std::to_string(cols * side) + "," +
                  std::to_string(rows * side + title_px) + " noenhanced font 'Sans,10'\n" +
                  "set output " + output + "\n" +
                  (f.diverging ? "set palette defined (0 '#b2182b', 1 '#ffffff', 2 '#08306b')\n"
                               : "set palette defined (0 '#ffffff', 1 '#08306b')\n") +
                  "set cbrange [" + std::to_string(f.zmin) + ":" + std::to_string(f.zmax) + "]\n" +
                  "set tics scale 0\nunset key\n";
  if (n > 1)
    s += "unset colorbox\nset multiplot layout " + std::to_string(rows) + "," +
         std::to_string(cols) + (f.title.empty() ? std::string() : " title " + job.text(f.title)) +
         "\n";
  for (int64_t j = 0; j < n; ++j) {
    const Heatmap& h = f.panels[j];
    const std::string data = "'f" + std::to_string(index) + "p" + std::to_string(j) + ".dat'";
    size_t longest = 0;
    for (const std::string& l : h.col_labels) longest = std::max(longest, l.size());
    s += "set title " + job.text(h.title) + "\n" +
         "set xrange [-0.5:" + std::to_string(h.col_labels.size()) + "-0.5]\n" + "set yrange [" +
         std::to_string(h.row_labels.size()) + "-0.5:-0.5]\n" +  // row 0 on top
         "set xtics " + tics(h.col_labels, job) +
         (longest > 2 ? " rotate by 90 right" : " norotate") + "\n" + "set ytics " +
         tics(h.row_labels, job) + "\n" + "set xlabel " + job.text(h.col_axis) + "\nset ylabel " +
         job.text(h.row_axis) + "\n" +
         // NaN cells are not drawn, so this grey background shows through them.
         "set object 1 rectangle from graph 0,0 to graph 1,1 behind fillcolor rgb '#d9d9d9' "
         "fillstyle solid noborder\n"
         // `pixels`: every cell its own filled rectangle (an SVG <polygon>, crisp edges), not
         // one small bitmap that a viewer scales up and blurs, bleeding colour into the masked
         // cells and making row 0 look two cells wide.
         "plot " +
         data + " matrix with image pixels";
    // Values in white on dark cells, black on light ones; NaN cells stay empty ($3 == $3 is false
    // for NaN).
    if (f.show_values)
      s += ", " + data + " matrix using 1:2:($3 == $3 ? sprintf('%.2f', $3) : ''):($3 > " + mid +
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
