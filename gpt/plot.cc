#include "gpt/plot.h"

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <ostream>
#include <stdexcept>

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

}  // namespace

bool write_plots(const std::string& out_dir, std::ostream& log) {
  if (std::system("command -v gnuplot >/dev/null 2>&1") != 0) {
    log << "gnuplot not found, so no plots were drawn; install it with: sudo apt-get install gnuplot-nox\n"
        << "(the logs are in " << out_dir << "/train_log.csv and eval_log.csv)\n";
    return false;
  }
  const std::string dir = std::filesystem::absolute(out_dir).string();
  for (const auto& [terminal, ext] : {std::pair<std::string, std::string>{"pngcairo size 900,600", "png"},
                                      std::pair<std::string, std::string>{"svg size 900,600", "svg"}}) {
    // gnuplot's warnings (e.g. "empty x range" for a single evaluation) are noise in the
    // training log; a real failure still shows in its exit status.
    FILE* p = popen("gnuplot >/dev/null 2>&1", "w");
    if (p == nullptr) throw std::runtime_error("could not start gnuplot");
    const std::string s = script(dir, terminal, ext);
    std::fwrite(s.data(), 1, s.size(), p);
    if (pclose(p) != 0) throw std::runtime_error("gnuplot failed to draw the " + ext + " plots in " + dir);
  }
  log << "plots: " << dir << "/loss.png, perplexity.png (and .svg)\n";
  return true;
}

}  // namespace attograd::gpt
