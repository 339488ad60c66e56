// Loss and perplexity plots of a training run, drawn by gnuplot (Debian's gnuplot-nox) from the
// run's CSV logs.
//
// gnuplot is started directly (posix_spawn, no shell) with the script on its stdin and every
// other descriptor of ours closed in it: it must not inherit the run directory's lock, or an
// orphaned gnuplot would keep `--resume` out after the trainer is killed. It writes each plot
// into an AtomicFile temporary (gpt/atomic_file.h); a plot replaces the old one only once
// gnuplot has exited 0 and the file is checked complete (a PNG ends with its IEND chunk, an
// SVG with </svg>). gnuplot exits 0 even when its writes fail, so a full disk shows up only in
// the files: that check turns it into an error instead of empty plots.
#pragma once

#include <iosfwd>
#include <string>

namespace attograd::gpt {

/// Writes loss.png/.svg and perplexity.png/.svg into out_dir from train_log.csv and
/// eval_log.csv there, running `gnuplot` (a program name searched on $PATH, or a path).
/// Returns false, after saying on `log` how to install gnuplot, when it is missing; the CSV
/// files are then still there. Throws std::runtime_error, leaving the previous plots in place,
/// when gnuplot fails (naming its exit status and its last line on stderr) or leaves a plot
/// empty or incomplete (naming the file and its size: "is the disk full?").
bool write_plots(const std::string& out_dir, std::ostream& log, const std::string& gnuplot = "gnuplot");

}  // namespace attograd::gpt
