// The loss and perplexity plots of a training run, drawn by gnuplot (Debian's gnuplot-nox) from
// its CSV logs, as PNG and SVG; without gnuplot, nothing is drawn and the CSV logs are still
// there. (Heatmaps and the lecture's one-off figures are gpt/io/figures.h's: the commands that
// draw them need no training.)
//
// Every plot is one gpt::GnuplotJob (gpt/io/gnuplot.h): the script holds only the program's own
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

/// Writes loss.png/.svg and perplexity.png/.svg into out_dir from train_log.csv and
/// eval_log.csv there (and the dashed lines of baselines.csv when present: at each val_loss on
/// the loss plot, at exp(val_loss) on the perplexity plot), running `gnuplot` (a program name
/// searched on $PATH, or a path). The loss plot has linear axes; the perplexity plot log axes
/// (steps from 1), with the training loss of every step as exp(loss) beside the evaluations.
/// Returns false, after saying on `log` how to install gnuplot, when it is missing, and after
/// naming the file and its header, when a log lacks a column the plots draw (its header was
/// edited, or the file removed): the CSV files are then still there, untouched. Throws
/// std::runtime_error, leaving the previous plots in place, when gnuplot fails (naming its exit
/// status and its last line on stderr) or leaves a plot empty or incomplete (naming the file and
/// its size: "is the disk full?").
bool write_plots(const std::string& out_dir, std::ostream& log,
                 const std::string& gnuplot = "gnuplot");

}  // namespace attograd::gpt
