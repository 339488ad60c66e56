#include "gpt/train/plot.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <ostream>
#include <stdexcept>
#include <string_view>
#include <utility>
#include <vector>

#include "gpt/io/figures.h"
#include "gpt/io/gnuplot.h"
#include "gpt/train/run_dir.h"
#include "gpt/train/run_logs.h"

namespace attograd::gpt {

namespace {

// A file of the run directory as bytes ("" when it is absent).
std::string read_bytes(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// The rows "name,val_loss" of baselines.csv in `directory` (none when it is absent), as gnuplot
// plot items: a dashed horizontal line per baseline, titled through the job's texts; on the
// perplexity plot (`as_perplexity`) the line is at exp(val_loss), the perplexity of that loss. A
// row that does not parse is skipped: the plot is a view of the logs, and the trainer that writes
// the file checks its values.
std::string baseline_lines(const std::filesystem::path& baselines, GnuplotJob& job,
                           bool as_perplexity) {
  std::ifstream in(baselines);
  std::string line, items;
  const char* colours[] = {"#808080", "#008000"};
  size_t n = 0;
  for (std::getline(in, line); std::getline(in, line) && n < 16;) {  // the header first
    const size_t comma = line.find(',');
    if (comma == std::string::npos) continue;
    const std::string name = line.substr(0, comma), value = line.substr(comma + 1);
    char* end = nullptr;
    const double v = std::strtod(value.c_str(), &end);
    if (end == value.c_str() || *end != '\0' || !std::isfinite(v)) continue;
    const double y = as_perplexity ? std::exp(v) : v;
    if (!std::isfinite(y)) continue;
    char item[160];
    std::snprintf(item, sizeof item, ", %.17g with lines dt 2 lw 2 lc rgb '%s' title ", y,
                  colours[n++ % 2]);
    char title[96];
    if (as_perplexity)
      std::snprintf(title, sizeof title, " baseline (val perplexity %.2f)", y);
    else
      std::snprintf(title, sizeof title, " baseline (val %.3f)", v);
    items += item + job.text(name.substr(0, 40) + title);
  }
  return items;
}

// The columns of a CSV log by the names of its header (its first line): a plot finds "loss" where
// the header puts it, so a log with a column added or moved is still drawn right.
class LogColumns {
 public:
  LogColumns(const std::string& csv, const std::filesystem::path& path, const CsvSpec& spec)
      : header_(csv.substr(0, csv.find('\n'))), path_(path), spec_(spec) {
    if (!header_.empty() && header_.back() == '\r') header_.pop_back();
  }
  /// gnuplot's number of column `name` (1 for the first), as text; "" when the header has no
  /// such column, which is then added to `missing` as a sentence naming the file and its header.
  std::string at(std::string_view name, std::string& missing) {
    if (const std::optional<size_t> index = csv_column(header_, name))
      return std::to_string(*index + 1);
    missing += (missing.empty() ? "" : "; ") + path_.filename().string() + " has no column '" +
               std::string(name) + "' (its header is '" + header_ + "')";
    lacks_ = true;
    return "";
  }
  /// "eval_log.csv ('step,train_loss,...')" when at() found a column missing, else "".
  std::string restore() const {
    return lacks_ ? path_.filename().string() + " ('" + spec_.header + "')" : "";
  }

 private:
  std::string header_;
  std::filesystem::path path_;
  const CsvSpec& spec_;
  bool lacks_ = false;
};

// "(1, 2, 3, 5, 7, 10, 20, ...)" up to 700,000: ticks for a log axis of perplexities (from 1 to
// beyond GPT-2's vocabulary), dense enough that a range within one decade shows several.
std::string log_tics() {
  std::string tics = "(";
  for (double decade = 1; decade <= 1e5; decade *= 10)
    for (int m : {1, 2, 3, 5, 7}) {
      if (tics.size() > 1) tics += ", ";
      tics += std::to_string(static_cast<int64_t>(m * decade));
    }
  return tics + ")\n";
}

}  // namespace

bool write_plots(const std::string& out_dir, std::ostream& log, const std::string& gnuplot) {
  const RunDir dir(std::filesystem::absolute(out_dir));
  const std::string train_log = read_bytes(dir.train_log()), eval_log = read_bytes(dir.eval_log());
  // gnuplot's column numbers, found by the logs' header names (run_logs.h's kTrainLog, kEvalLog).
  LogColumns train_columns(train_log, dir.train_log(), kTrainLog),
      eval_columns(eval_log, dir.eval_log(), kEvalLog);
  std::string missing;
  const std::string step = train_columns.at("step", missing),
                    loss = train_columns.at("loss", missing);
  const std::string eval_step = eval_columns.at("step", missing),
                    train_loss = eval_columns.at("train_loss", missing),
                    val_loss = eval_columns.at("val_loss", missing),
                    train_ppl = eval_columns.at("train_ppl", missing),
                    val_ppl = eval_columns.at("val_ppl", missing);
  // Logs whose header was edited (or a log removed) are not drawn from the wrong numbers; the
  // plots are a view of the logs, so this is a note and the run's work stands. A resumed run
  // reads the logs' rows by the same names, and refuses a log without one (resume_log).
  if (!missing.empty()) {
    const std::string train = train_columns.restore(), eval = eval_columns.restore();
    log << "the plots were not drawn: " << missing << " in " << dir.path().string()
        << "; restore the header" << (!train.empty() && !eval.empty() ? "s of " : " of ") << train
        << (!train.empty() && !eval.empty() ? " and " : "") << eval
        << ", which a resumed run (--resume) needs as well\n";
    return false;
  }
  for (const auto& [terminal, ext] : kFigureFormats) {
    // The logs are copied into the job's directory: gnuplot reads them under names of ours.
    GnuplotJob job;
    const std::string train = job.data(RunDir::kTrainLog, train_log),
                      eval = job.data(RunDir::kEvalLog, eval_log);
    const std::string loss_plot = job.output(dir.plot(RunDir::kPlotStems[0], ext).string(), ext),
                      perplexity_plot =
                          job.output(dir.plot(RunDir::kPlotStems[1], ext).string(), ext);
    job.add(
        "set datafile separator ','\n"
        "set key top right\n"
        "set grid\n"
        "set xlabel 'step'\n"
        "set terminal " +
        std::string(terminal) +
        " size 900,600 noenhanced\n"
        "set output " +
        loss_plot +
        "\n"
        "set title 'attograd: training and validation loss'\n"
        "set ylabel 'loss (nats per token)'\n"
        "plot " +
        train + " every ::1 using " + step + ":" + loss +
        " with lines lc rgb '#a0a0ff' title 'train (per step)', " + eval + " every ::1 using " +
        eval_step + ":" + train_loss + " with linespoints lc rgb '#0000c0' title 'train (eval)', " +
        eval + " every ::1 using " + eval_step + ":" + val_loss +
        " with linespoints lc rgb '#c00000' title 'val (eval)'" +
        baseline_lines(dir.baselines(), job, false) +
        "\n"
        // Perplexity on log axes: a ratio scale, where 9.00 against the bigram's 10.26 is as
        // visible as 73 against 20, and the early steps, where the curves cross the baselines,
        // get as much width as the late ones. Step 0 (the untrained model, perplexity about
        // vocab_size) has no place on a log step axis, so the curves start at step 1.
        "set output " +
        perplexity_plot +
        "\n"
        "set title 'attograd: perplexity = exp(mean loss), log axes'\n"
        "set ylabel 'perplexity (log scale)'\n"
        "set xlabel 'step (log scale)'\n"
        "set logscale xy\n"
        "set autoscale xfix\n"  // the axes end at the data, not at the next power of 10
        "set autoscale yfix\n"
        "set offsets 0, 0, graph 0.05, graph 0.05\n"
        "set ytics " +
        log_tics() +
        "set grid xtics ytics mxtics\n"
        "plot " +
        train + " every ::1 using ($" + step + " > 0 ? $" + step + " : NaN):(exp($" + loss +
        ")) with lines lc rgb '#a0a0ff' title 'train (per step)', " + eval + " every ::1 using ($" +
        eval_step + " > 0 ? $" + eval_step + " : NaN):" + train_ppl +
        " with linespoints lc rgb '#0000c0' title 'train (eval)', " + eval + " every ::1 using ($" +
        eval_step + " > 0 ? $" + eval_step + " : NaN):" + val_ppl +
        " with linespoints lc rgb '#c00000' title 'val (eval)'" +
        baseline_lines(dir.baselines(), job, true) + "\n");
    if (!job.run(gnuplot, std::string("the ") + ext + " plots in " + dir.path().string())) {
      log << "gnuplot not found, so no plots were drawn; install it with: sudo apt-get install "
             "gnuplot-nox\n"
          << "(the logs are in " << out_dir << "/" << RunDir::kTrainLog << " and "
          << RunDir::kEvalLog << ")\n";
      return false;
    }
  }
  log << "plots: " << dir.path().string() << "/loss.png, perplexity.png (and .svg)\n";
  return true;
}

}  // namespace attograd::gpt
