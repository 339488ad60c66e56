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

#include "gpt/io/gnuplot.h"

namespace attograd::gpt {

namespace {

// A file of the run directory as bytes ("" when it is absent: gnuplot then says there is no data).
std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// The rows "name,val_loss" of baselines.csv in `directory` (none when it is absent), as gnuplot
// plot items: a dashed horizontal line per baseline, titled through the job's texts; on the
// perplexity plot (`as_perplexity`) the line is at exp(val_loss), the perplexity of that loss. A
// row that does not parse is skipped: the plot is a view of the logs, and the trainer that writes
// the file checks its values.
std::string baseline_lines(const std::string& directory, GnuplotJob& job, bool as_perplexity) {
  std::ifstream in(directory + "/" + kBaselinesFile);
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

// The two formats every figure is drawn in: a gnuplot terminal (without its size) and the
// extension. noenhanced: '_' and '^' in a label are characters, not sub- and superscripts.
const std::pair<const char*, const char*> kFormats[] = {{"pngcairo", "png"}, {"svg", "svg"}};

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
  for (const auto& [terminal, ext] : kFormats) {
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
  for (const auto& [terminal, ext] : kFormats) {
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

bool write_plots(const std::string& out_dir, std::ostream& log, const std::string& gnuplot) {
  const std::string dir = std::filesystem::absolute(out_dir).string();
  const std::string train_log = read_bytes(dir + "/train_log.csv"),
                    eval_log = read_bytes(dir + "/eval_log.csv");
  for (const auto& [terminal, ext] : kFormats) {
    // The logs are copied into the job's directory: gnuplot reads them under names of ours.
    GnuplotJob job;
    const std::string train = job.data("train_log.csv", train_log),
                      eval = job.data("eval_log.csv", eval_log);
    const std::string loss = job.output(dir + "/" + kRunPlotStems[0] + "." + ext, ext),
                      perplexity = job.output(dir + "/" + kRunPlotStems[1] + "." + ext, ext);
    job.add(
        "set datafile separator ','\n"
        "set key top right\n"
        "set grid\n"
        "set xlabel 'step'\n"
        "set terminal " +
        std::string(terminal) +
        " size 900,600 noenhanced\n"
        "set output " +
        loss +
        "\n"
        "set title 'attograd: training and validation loss'\n"
        "set ylabel 'loss (nats per token)'\n"
        "plot " +
        train + " every ::1 using 1:2 with lines lc rgb '#a0a0ff' title 'train (per step)', " +
        eval + " every ::1 using 1:2 with linespoints lc rgb '#0000c0' title 'train (eval)', " +
        eval + " every ::1 using 1:3 with linespoints lc rgb '#c00000' title 'val (eval)'" +
        baseline_lines(dir, job, false) +
        "\n"
        // Perplexity on log axes: a ratio scale, where 9.00 against the bigram's 10.26 is as
        // visible as 73 against 20, and the early steps, where the curves cross the baselines,
        // get as much width as the late ones. Step 0 (the untrained model, perplexity about
        // vocab_size) has no place on a log step axis, so the curves start at step 1.
        "set output " +
        perplexity +
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
        train +
        " every ::1 using ($1 > 0 ? $1 : NaN):(exp($2)) with lines lc rgb '#a0a0ff' "
        "title 'train (per step)', " +
        eval +
        " every ::1 using ($1 > 0 ? $1 : NaN):4 with linespoints lc rgb '#0000c0' title "
        "'train (eval)', " +
        eval +
        " every ::1 using ($1 > 0 ? $1 : NaN):5 with linespoints lc rgb '#c00000' title "
        "'val (eval)'" +
        baseline_lines(dir, job, true) + "\n");
    if (!job.run(gnuplot, std::string("the ") + ext + " plots in " + dir)) {
      log << "gnuplot not found, so no plots were drawn; install it with: sudo apt-get install "
             "gnuplot-nox\n"
          << "(the logs are in " << out_dir << "/train_log.csv and eval_log.csv)\n";
      return false;
    }
  }
  log << "plots: " << dir << "/loss.png, perplexity.png (and .svg)\n";
  return true;
}

}  // namespace attograd::gpt
