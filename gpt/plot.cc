#include "gpt/plot.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <ostream>
#include <stdexcept>
#include <utility>

namespace attograd::gpt {

namespace {

// A gnuplot single-quoted string: a quote inside is written twice.
std::string quoted(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("''") : std::string(1, c);
  return out + "'";
}

// One gnuplot script per output format; the data come straight from the CSV logs.
std::string script(const std::string& directory, const std::string& terminal, const std::string& ext) {
  auto file = [&](const std::string& name) { return quoted(directory + "/" + name); };
  return "set datafile separator ','\n"
         "set key top right\n"
         "set grid\n"
         "set xlabel 'step'\n"
         "set terminal " + terminal + "\n"
         "set output " + file("loss." + ext) + "\n"
         "set title 'attograd: training and validation loss'\n"
         "set ylabel 'loss (nats per token)'\n"
         "plot " + file("train_log.csv") + " every ::1 using 1:2 with lines lc rgb '#a0a0ff' title 'train (per step)', " +
         file("eval_log.csv") + " every ::1 using 1:2 with linespoints lc rgb '#0000c0' title 'train (eval)', " +
         file("eval_log.csv") + " every ::1 using 1:3 with linespoints lc rgb '#c00000' title 'val (eval)'\n"
         "set output " + file("perplexity." + ext) + "\n"
         "set title 'attograd: perplexity = exp(mean loss)'\n"
         "set ylabel 'perplexity'\n"
         "plot " + file("eval_log.csv") + " every ::1 using 1:4 with linespoints lc rgb '#0000c0' title 'train', " +
         file("eval_log.csv") + " every ::1 using 1:5 with linespoints lc rgb '#c00000' title 'val'\n";
}

bool gnuplot_found() { return std::system("command -v gnuplot >/dev/null 2>&1") == 0; }

// Runs one gnuplot script; `what` names the output in the error.
void run_gnuplot(const std::string& script, const std::string& what) {
  // gnuplot's warnings (e.g. "empty x range" for a single evaluation) are noise in the
  // training log; a real failure still shows in its exit status.
  FILE* p = popen("gnuplot >/dev/null 2>&1", "w");
  if (p == nullptr) throw std::runtime_error("could not start gnuplot");
  std::fwrite(script.data(), 1, script.size(), p);
  if (pclose(p) != 0) throw std::runtime_error("gnuplot failed to draw " + what);
}

// The two formats every figure is drawn in: a gnuplot terminal (without its size) and the extension.
const std::pair<const char*, const char*> kFormats[] = {{"pngcairo", "png"}, {"svg", "svg"}};

// "('a' 0, 'b' 1)": explicit tick labels at the cell centres.
std::string tics(const std::vector<std::string>& labels) {
  std::string out = "(";
  for (size_t i = 0; i < labels.size(); ++i) out += (i ? ", " : "") + quoted(labels[i]) + " " + std::to_string(i);
  return out + ")";
}

// The gnuplot commands of one figure in one format; its panels' data are the blocks $f<index>p<j>.
std::string heatmap_script(const HeatmapFigure& f, size_t index, const std::string& terminal, const std::string& ext) {
  const int64_t n = static_cast<int64_t>(f.panels.size());
  const int64_t cols = std::clamp<int64_t>(f.columns, 1, n), rows = (n + cols - 1) / cols;
  size_t cells = 1;
  for (const Heatmap& h : f.panels) cells = std::max({cells, h.row_labels.size(), h.col_labels.size()});
  // A panel grows with its cells, and the whole figure stays within 2400 px a side.
  int64_t side = std::clamp<int64_t>(120 + 28 * static_cast<int64_t>(cells), 360, 900);
  side = std::min(side, 2400 / std::max(cols, rows));
  const int64_t title_px = n > 1 && !f.title.empty() ? 40 : 0;
  const std::string mid = std::to_string((f.zmin + f.zmax) / 2);
  std::string s = "set terminal " + terminal + " size " + std::to_string(cols * side) + "," +
                  std::to_string(rows * side + title_px) + " noenhanced font 'Sans,10'\n" +
                  "set output " + quoted(f.path_stem + "." + ext) + "\n" +
                  "set palette defined (0 '#ffffff', 1 '#08306b')\n" +
                  "set cbrange [" + std::to_string(f.zmin) + ":" + std::to_string(f.zmax) + "]\n" +
                  "set tics scale 0\nunset key\n";
  if (n > 1) s += "unset colorbox\nset multiplot layout " + std::to_string(rows) + "," + std::to_string(cols) +
                  (f.title.empty() ? std::string() : " title " + quoted(f.title)) + "\n";
  for (int64_t j = 0; j < n; ++j) {
    const Heatmap& h = f.panels[j];
    const std::string data = "$f" + std::to_string(index) + "p" + std::to_string(j);
    size_t longest = 0;
    for (const std::string& l : h.col_labels) longest = std::max(longest, l.size());
    s += "set title " + quoted(h.title) + "\n" +
         "set xrange [-0.5:" + std::to_string(h.col_labels.size()) + "-0.5]\n" +
         "set yrange [" + std::to_string(h.row_labels.size()) + "-0.5:-0.5]\n" +  // row 0 on top
         "set xtics " + tics(h.col_labels) + (longest > 2 ? " rotate by 90 right" : " norotate") + "\n" +
         "set ytics " + tics(h.row_labels) + "\n" +
         "set xlabel " + quoted(h.col_axis) + "\nset ylabel " + quoted(h.row_axis) + "\n" +
         // NaN cells are not drawn, so this grey background shows through them.
         "set object 1 rectangle from graph 0,0 to graph 1,1 behind fillcolor rgb '#d9d9d9' fillstyle solid noborder\n"
         "plot " + data + " matrix with image";
    // Values in white on dark cells, black on light ones; NaN cells stay empty ($3 == $3 is false for NaN).
    if (f.show_values)
      s += ", " + data + " matrix using 1:2:($3 == $3 ? sprintf('%.2f', $3) : ''):($3 > " + mid +
           " ? 0xffffff : 0x000000) with labels tc rgb variable font ',8'";
    s += "\n";
  }
  if (n > 1) s += "unset multiplot\n";
  return s;
}

}  // namespace

bool write_heatmaps(const std::vector<HeatmapFigure>& figures, std::ostream& log) {
  std::string data;  // every panel's matrix as a gnuplot data block, shared by both formats
  for (size_t i = 0; i < figures.size(); ++i) {
    const HeatmapFigure& f = figures[i];
    if (f.panels.empty()) throw std::invalid_argument("write_heatmaps: figure " + f.path_stem + " has no panel");
    for (size_t j = 0; j < f.panels.size(); ++j) {
      const Heatmap& h = f.panels[j];
      const size_t rows = h.row_labels.size(), cols = h.col_labels.size();
      if (rows == 0 || cols == 0 || h.values.size() != rows * cols)
        throw std::invalid_argument("write_heatmaps: panel '" + h.title + "' of " + f.path_stem + " has " +
                                    std::to_string(h.values.size()) + " values for " + std::to_string(rows) + " x " +
                                    std::to_string(cols) + " labels");
      data += "$f" + std::to_string(i) + "p" + std::to_string(j) + " << EOD\n";
      char buf[32];
      for (size_t r = 0; r < rows; ++r)
        for (size_t c = 0; c < cols; ++c) {
          std::snprintf(buf, sizeof buf, "%.9g%c", h.values[r * cols + c], c + 1 == cols ? '\n' : ' ');
          data += buf;
        }
      data += "EOD\n";
    }
  }
  if (!gnuplot_found()) {
    log << "gnuplot not found, so no heatmaps were drawn; install it with: sudo apt-get install gnuplot-nox\n";
    return false;
  }
  for (const auto& [terminal, ext] : kFormats) {
    std::string script = data;
    for (size_t i = 0; i < figures.size(); ++i) script += heatmap_script(figures[i], i, terminal, ext);
    run_gnuplot(script, std::string("the ") + ext + " heatmaps");
  }
  return true;
}

bool write_plots(const std::string& out_dir, std::ostream& log) {
  if (!gnuplot_found()) {
    log << "gnuplot not found, so no plots were drawn; install it with: sudo apt-get install gnuplot-nox\n"
        << "(the logs are in " << out_dir << "/train_log.csv and eval_log.csv)\n";
    return false;
  }
  const std::string dir = std::filesystem::absolute(out_dir).string();
  for (const auto& [terminal, ext] : kFormats) {
    const std::string size = std::string(terminal) + " size 900,600";
    run_gnuplot(script(dir, size, ext), std::string("the ") + ext + " plots in " + dir);
  }
  log << "plots: " << dir << "/loss.png, perplexity.png (and .svg)\n";
  return true;
}

}  // namespace attograd::gpt
