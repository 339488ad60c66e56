// Figures drawn by gnuplot (Debian's gnuplot-nox): the loss and perplexity plots of a training
// run, from its CSV logs, and heatmaps of matrices such as attention weights. Each is written as
// PNG and SVG; without gnuplot, nothing is drawn and the caller's CSV data are still there.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

namespace attograd::gpt {

/// Writes loss.png/.svg and perplexity.png/.svg into out_dir from train_log.csv and
/// eval_log.csv there. Returns false, after saying on `log` how to install gnuplot, when it is
/// missing; the CSV files are then still there. Throws std::runtime_error if gnuplot fails.
bool write_plots(const std::string& out_dir, std::ostream& log);

/// One matrix drawn as coloured cells: row 0 at the top, column 0 on the left.
struct Heatmap {
  std::string title;                                // above the panel, e.g. "layer 0, head 1"
  std::string row_axis, col_axis;                   // axis titles, e.g. "query", "key"
  std::vector<std::string> row_labels, col_labels;  // one tick label per row and per column
  std::vector<double> values;                       // row-major, rows x cols; NaN: no value (grey)
};

/// A figure of one or more heatmaps on one colour scale, `columns` panels per row.
struct HeatmapFigure {
  std::string path_stem;  // writes path_stem.png and path_stem.svg
  std::string title;      // above all panels (figures of several panels)
  std::vector<Heatmap> panels;
  int64_t columns = 1;
  double zmin = 0, zmax = 1;  // the colour scale: white at zmin, dark blue at zmax
  bool show_values = false;   // print each cell's value with 2 decimals (small matrices)
};

/// Draws every figure with gnuplot, one process per output format. Labels are drawn as given
/// (no gnuplot markup). Returns false, after saying on `log` how to install gnuplot, when it is
/// missing. Throws std::invalid_argument for a panel whose values do not fill its labels
/// (rows x cols) or a figure with no panel, std::runtime_error if gnuplot fails.
bool write_heatmaps(const std::vector<HeatmapFigure>& figures, std::ostream& log);

}  // namespace attograd::gpt
