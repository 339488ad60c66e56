// Figures drawn by gnuplot (Debian's gnuplot-nox): the loss and perplexity plots of a training
// run, from its CSV logs, and heatmaps of matrices such as attention weights. Each is written as
// PNG and SVG; without gnuplot, nothing is drawn and the caller's CSV data are still there.
//
// Every figure is one gpt::GnuplotJob (gpt/io/gnuplot.h): the script holds only the program's own
// text, titles and labels reach gnuplot as data, the run's logs are read from private copies, and
// each drawing replaces its target (atomically, a symlink replaced rather than followed) only once
// gnuplot has exited 0 and the file is checked whole (a PNG ends with its IEND chunk, an SVG with
// </svg>). gnuplot exits 0 even when its writes fail, so a full disk shows up only in the files:
// that check turns it into an error instead of empty plots. gnuplot inherits no descriptor of
// ours (gpt/io/subprocess.h): an orphaned gnuplot must not hold the run directory's lock.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

namespace attograd::gpt {

/// The file of horizontal reference lines for the loss and perplexity plots, in a run's
/// directory: a header "name,val_loss", then one row per baseline (the trainer writes unigram
/// and bigram).
inline constexpr const char* kBaselinesFile = "baselines.csv";

/// The stems of a run's plots; write_plots writes each as <stem>.png and <stem>.svg.
inline constexpr const char* kRunPlotStems[] = {"loss", "perplexity"};
inline constexpr const char* kRunPlotExtensions[] = {"png", "svg"};

/// Writes loss.png/.svg and perplexity.png/.svg into out_dir from train_log.csv and
/// eval_log.csv there (and the dashed lines of baselines.csv when present: at each val_loss on
/// the loss plot, at exp(val_loss) on the perplexity plot), running `gnuplot` (a program name
/// searched on $PATH, or a path). The loss plot has linear axes; the perplexity plot log axes
/// (steps from 1), with the training loss of every step as exp(loss) beside the evaluations.
/// Returns false, after saying on `log` how to install gnuplot, when it is missing; the CSV
/// files are then still there. Throws std::runtime_error, leaving the previous plots in place,
/// when gnuplot fails (naming its exit status and its last line on stderr) or leaves a plot
/// empty or incomplete (naming the file and its size: "is the disk full?").
bool write_plots(const std::string& out_dir, std::ostream& log,
                 const std::string& gnuplot = "gnuplot");

/// One matrix drawn as coloured cells: row 0 at the top, column 0 on the left. Each cell is its
/// own filled rectangle (gnuplot's `with image pixels`: in the SVG one <polygon> per cell with a
/// value, none for a NaN cell), so edges stay crisp at any zoom.
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
  bool diverging = false;     // red at zmin, white midway, dark blue at zmax (signed values)
};

/// Draws every figure with `gnuplot`, one process per output format, each file checked and
/// renamed into place as write_plots does. Titles and labels are drawn as given (no gnuplot
/// markup; a control character as its escape, e.g. \n), whatever bytes they hold.
/// Returns false, after saying on `log` how to install gnuplot, when it is missing. Throws
/// std::invalid_argument for a panel whose values do not fill its labels (rows x cols) or a
/// figure with no panel, std::runtime_error if gnuplot fails or leaves a file incomplete.
bool write_heatmaps(const std::vector<HeatmapFigure>& figures, std::ostream& log,
                    const std::string& gnuplot = "gnuplot");

/// A figure drawn by the caller's own gnuplot commands (e.g. `plot $data using 1:2 with
/// vectors`), once per format into path_stem.png and path_stem.svg, each checked and renamed into
/// place as write_plots does. `commands` run after the terminal (width x height pixels, no
/// enhanced text) and the output file are set; inline data blocks ($name << EOD) of numbers may
/// precede the plot. They must be the program's own text: no user string (a path, a prompt, a
/// token) may be pasted into them; draw such text with write_heatmaps or a GnuplotJob. Returns
/// false, after saying on `log` how to install gnuplot, when it is missing. Throws
/// std::runtime_error if gnuplot fails or leaves a file incomplete.
bool write_figure(const std::string& path_stem, const std::string& commands, int64_t width,
                  int64_t height, std::ostream& log, const std::string& gnuplot = "gnuplot");

}  // namespace attograd::gpt
