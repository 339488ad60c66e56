// Figures drawn by gnuplot (Debian's gnuplot-nox) that know nothing of training: heatmaps of
// matrices such as attention weights (`attograd attention`), and figures drawn by the caller's
// own gnuplot commands (`attograd figure`). Each is written as PNG and SVG; without gnuplot,
// nothing is drawn and the caller says where its data are.
//
// Every figure is one GnuplotJob (gnuplot.h): the script holds only the program's own text,
// titles and labels reach gnuplot as data, and each drawing replaces its target (atomically)
// only once gnuplot has exited 0 and the file is checked whole.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

namespace attograd::gpt {

/// The formats every figure and plot is drawn in: a gnuplot terminal (without its size) and the
/// file's extension. A run directory's plots are named from these (gpt/train/run_dir.h).
struct FigureFormat {
  const char* terminal;
  const char* extension;
};
inline constexpr FigureFormat kFigureFormats[] = {{"pngcairo", "png"}, {"svg", "svg"}};

/// A colour scale: white at zmin, dark blue at zmax, or, when `diverging`, red at zmin, white
/// midway and dark blue at zmax (signed values).
struct HeatmapScale {
  double zmin = 0, zmax = 1;
  bool diverging = false;
};

/// One matrix drawn as coloured cells: row 0 at the top, column 0 on the left. Up to 128 x 128
/// cells, each cell is its own filled rectangle (gnuplot's `with image pixels`: in the SVG one
/// <polygon> per cell with a value, none for a NaN cell), so edges stay crisp at any zoom; a
/// larger matrix, whose cells are about a pixel, is one bitmap (`with image`: an SVG <image>).
struct Heatmap {
  std::string title;                                // above the panel, e.g. "layer 0, head 1"
  std::string row_axis, col_axis;                   // axis titles, e.g. "query", "key"
  std::vector<std::string> row_labels, col_labels;  // one tick label per row and per column
  std::vector<double> values;                       // row-major, rows x cols; NaN: no value (grey)
  // The panel's own scale, drawn with its own colour box, for a figure whose panels hold
  // different quantities (scores, weights, outputs); unset: the figure's.
  std::optional<HeatmapScale> scale = std::nullopt;
};

/// A figure of one or more heatmaps, `columns` panels per row, with a colour box that gives the
/// scale: one right of the figure for the panels on the figure's scale, and one beside each panel
/// that has its own.
struct HeatmapFigure {
  std::string path_stem;  // writes path_stem.png and path_stem.svg
  std::string title;      // above all panels (figures of several panels)
  std::vector<Heatmap> panels;
  int64_t columns = 1;
  double zmin = 0, zmax = 1;  // the colour scale: white at zmin, dark blue at zmax
  bool show_values = false;   // print each cell's value (small matrices)
  bool diverging = false;     // red at zmin, white midway, dark blue at zmax (signed values)
  int value_decimals = 2;     // of a printed value: 3 for the causal mask, whose 1/8 is 0.125
};

/// Draws every figure with `gnuplot`, one process per output format, each file checked and
/// renamed into place as gpt/train/plot.h's write_plots does. Titles and labels are drawn as given
/// (no gnuplot markup; a control character as its escape, e.g. \n), whatever bytes they hold.
/// Returns false, after saying on `log` how to install gnuplot, when it is missing. Throws
/// std::invalid_argument for a panel whose values do not fill its labels (rows x cols) or a
/// figure with no panel, std::runtime_error if gnuplot fails or leaves a file incomplete.
bool write_heatmaps(const std::vector<HeatmapFigure>& figures, std::ostream& log,
                    const std::string& gnuplot = "gnuplot");

/// A figure drawn by the caller's own gnuplot commands (e.g. `plot $data using 1:2 with
/// vectors`), once per format into path_stem.png and path_stem.svg, each checked and renamed into
/// place as gpt/train/plot.h's write_plots does. `commands` run after the terminal (width x height
/// pixels, no enhanced text) and the output file are set; inline data blocks ($name << EOD) of
/// numbers may precede the plot. They must be the program's own text: no user string (a path, a
/// prompt, a token) may be pasted into them; draw such text with write_heatmaps or a GnuplotJob.
/// Returns false, after saying on `log` how to install gnuplot, when it is missing. Throws
/// std::runtime_error if gnuplot fails or leaves a file incomplete.
bool write_figure(const std::string& path_stem, const std::string& commands, int64_t width,
                  int64_t height, std::ostream& log, const std::string& gnuplot = "gnuplot");

}  // namespace attograd::gpt
