// Loss and perplexity plots of a training run, drawn by gnuplot (Debian's gnuplot-nox) from the
// run's CSV logs.
#pragma once

#include <iosfwd>
#include <string>

namespace attograd::gpt {

/// Writes loss.png/.svg and perplexity.png/.svg into out_dir from train_log.csv and
/// eval_log.csv there. Returns false, after saying on `log` how to install gnuplot, when it is
/// missing; the CSV files are then still there. Throws std::runtime_error if gnuplot fails.
bool write_plots(const std::string& out_dir, std::ostream& log);

}  // namespace attograd::gpt
