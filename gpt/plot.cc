#include "gpt/plot.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

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

#include "gpt/atomic_file.h"

extern char** environ;

namespace attograd::gpt {

namespace {

// A gnuplot single-quoted string: a quote inside is written twice.
std::string quoted(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("''") : std::string(1, c);
  return out + "'";
}

// The rows "name,val_loss" of baselines.csv in `directory` (none when it is absent), as gnuplot
// plot items: a dashed horizontal line per baseline. A row that does not parse is skipped: the
// plot is a view of the logs, and the trainer that writes the file checks its values.
std::string baseline_lines(const std::string& directory) {
  std::ifstream in(directory + "/" + kBaselinesFile);
  std::string line, items;
  const char* colours[] = {"#808080", "#008000"};
  size_t n = 0;
  for (std::getline(in, line); std::getline(in, line);) {  // the header first
    const size_t comma = line.find(',');
    if (comma == std::string::npos) continue;
    const std::string name = line.substr(0, comma), value = line.substr(comma + 1);
    char* end = nullptr;
    const double v = std::strtod(value.c_str(), &end);
    if (end == value.c_str() || *end != '\0' || !std::isfinite(v)) continue;
    char item[160];
    std::snprintf(item, sizeof item, ", %.17g with lines dt 2 lw 2 lc rgb '%s' title ", v,
                  colours[n++ % 2]);
    char title[96];
    std::snprintf(title, sizeof title, "%s baseline (val %.3f)", name.substr(0, 40).c_str(), v);
    items += item + quoted(title);
  }
  return items;
}

// One gnuplot script per output format; the data come straight from the CSV logs, the plots go
// to the temporaries `loss` and `perplexity`.
std::string script(const std::string& directory, const std::string& terminal,
                   const std::string& loss, const std::string& perplexity) {
  auto data = [&](const std::string& name) { return quoted(directory + "/" + name); };
  return "set datafile separator ','\n"
         "set key top right\n"
         "set grid\n"
         "set xlabel 'step'\n"
         "set terminal " +
         terminal +
         "\n"
         "set output " +
         quoted(loss) +
         "\n"
         "set title 'attograd: training and validation loss'\n"
         "set ylabel 'loss (nats per token)'\n"
         "plot " +
         data("train_log.csv") +
         " every ::1 using 1:2 with lines lc rgb '#a0a0ff' title 'train (per step)', " +
         data("eval_log.csv") +
         " every ::1 using 1:2 with linespoints lc rgb '#0000c0' title 'train (eval)', " +
         data("eval_log.csv") +
         " every ::1 using 1:3 with linespoints lc rgb '#c00000' title 'val (eval)'" +
         baseline_lines(directory) +
         "\n"
         "set output " +
         quoted(perplexity) +
         "\n"
         "set title 'attograd: perplexity = exp(mean loss)'\n"
         "set ylabel 'perplexity'\n"
         "plot " +
         data("eval_log.csv") +
         " every ::1 using 1:4 with linespoints lc rgb '#0000c0' title 'train', " +
         data("eval_log.csv") +
         " every ::1 using 1:5 with linespoints lc rgb '#c00000' title 'val'\n"
         "unset output\n";  // closes the last file before gnuplot exits
}

struct Fd {
  int fd = -1;
  ~Fd() { reset(); }
  void reset() {
    if (fd >= 0) ::close(fd);
    fd = -1;
  }
};

// The wait status of `program` run with `input` on its stdin, stdout discarded, and the last
// line it wrote on stderr; nullopt if there is no such program. Its stdin is a socket, not a
// pipe, so that writing to a gnuplot that died early is an EPIPE error (MSG_NOSIGNAL), not a
// SIGPIPE that kills the trainer. Every descriptor above stderr is closed in the child.
struct Finished {
  int status = 0;
  std::string last_error_line;
};
std::optional<Finished> run_with_input(const std::string& program, std::string_view input) {
  Fd in_parent, in_child, err_read, err_write;
  int sv[2], err_pipe[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0 ||
      ::pipe2(err_pipe, O_CLOEXEC) != 0)
    throw std::runtime_error(std::string("cannot start ") + program + ": " + std::strerror(errno));
  in_parent.fd = sv[0], in_child.fd = sv[1], err_read.fd = err_pipe[0], err_write.fd = err_pipe[1];

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  const std::unique_ptr<posix_spawn_file_actions_t, int (*)(posix_spawn_file_actions_t*)> destroy(
      &actions, posix_spawn_file_actions_destroy);
  posix_spawn_file_actions_adddup2(&actions, in_child.fd, 0);  // dup2 clears close-on-exec
  posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, err_write.fd, 2);
  posix_spawn_file_actions_addclosefrom_np(&actions, 3);
  std::string arg0 = program;
  char* argv[] = {arg0.data(), nullptr};
  pid_t pid = 0;
  const int spawn_error = posix_spawnp(&pid, program.c_str(), &actions, nullptr, argv, environ);
  if (spawn_error == ENOENT) return std::nullopt;
  if (spawn_error != 0)
    throw std::runtime_error("cannot start " + program + ": " + std::strerror(spawn_error));
  in_child.reset();
  err_write.reset();

  for (size_t sent = 0; sent < input.size();) {
    const ssize_t n = ::send(in_parent.fd, input.data() + sent, input.size() - sent, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) break;  // it died early: its status says why
    sent += static_cast<size_t>(n);
  }
  in_parent.reset();  // end of the script
  std::string err;
  std::array<char, 4096> buf;
  for (;;) {
    const ssize_t n = ::read(err_read.fd, buf.data(), buf.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    err.append(buf.data(), static_cast<size_t>(n));
    if (err.size() > 65536) err.erase(0, err.size() - 4096);  // only the end is reported
  }
  Finished done;
  while (::waitpid(pid, &done.status, 0) < 0)
    if (errno != EINTR)
      throw std::runtime_error("waiting for " + program + ": " + std::strerror(errno));
  while (!err.empty() && (err.back() == '\n' || err.back() == ' ')) err.pop_back();
  const size_t start = err.find_last_of('\n');
  done.last_error_line = start == std::string::npos ? err : err.substr(start + 1);
  return done;
}

// Whether a plot file is whole: non-empty and ending as its format ends. gnuplot exits 0 after
// a failed write (a full disk), so its status alone would pass an empty or cut-off file.
std::string incomplete_reason(const std::string& path, const std::string& ext) {
  std::error_code ec;
  const uintmax_t size = std::filesystem::file_size(path, ec);
  if (ec) return "is missing";
  if (size == 0) return "is empty";
  std::ifstream in(path, std::ios::binary);
  const uintmax_t tail_size = std::min<uintmax_t>(size, 64);
  in.seekg(static_cast<std::streamoff>(size - tail_size));
  std::string tail(static_cast<size_t>(tail_size), '\0');
  in.read(tail.data(), static_cast<std::streamsize>(tail.size()));
  if (!in) return "cannot be read back";
  if (ext == "png") {
    static const std::string kIend("\0\0\0\0IEND\xae\x42\x60\x82", 12);  // PNG's last chunk
    if (!tail.ends_with(kIend))
      return "is cut off (" + std::to_string(size) + " bytes, no IEND chunk)";
  } else {
    while (!tail.empty() && std::isspace(static_cast<unsigned char>(tail.back()))) tail.pop_back();
    if (!tail.ends_with("</svg>"))
      return "is cut off (" + std::to_string(size) + " bytes, no </svg>)";
  }
  return "";
}

// The two formats every figure is drawn in: a gnuplot terminal (without its size) and the
// extension.
const std::pair<const char*, const char*> kFormats[] = {{"pngcairo", "png"}, {"svg", "svg"}};

// Runs `script` through gnuplot, which draws into the temporaries of `outputs` (in `dir`, for
// the messages), then checks that it succeeded and that every file is whole before renaming
// them into place. Returns false when there is no gnuplot.
bool draw(const std::string& gnuplot, const std::string& script,
          const std::vector<AtomicFile*>& outputs, const std::string& what,
          const std::string& ext) {
  const std::optional<Finished> done = run_with_input(gnuplot, script);
  if (!done) return false;
  // gnuplot's warnings (e.g. "empty x range" for a single evaluation) are noise in the
  // training log; they are shown only when it fails.
  const std::string said = done->last_error_line.empty() ? "" : ": " + done->last_error_line;
  if (WIFSIGNALED(done->status))
    throw std::runtime_error("gnuplot was killed by signal " +
                             std::to_string(WTERMSIG(done->status)) + " while drawing " + what);
  if (WEXITSTATUS(done->status) != 0)
    throw std::runtime_error("gnuplot failed (exit status " +
                             std::to_string(WEXITSTATUS(done->status)) + ") to draw " + what +
                             said);
  for (AtomicFile* file : outputs) {
    const std::string why = incomplete_reason(file->temp_path(), ext);
    const std::filesystem::path target = file->path();
    if (!why.empty())
      throw std::runtime_error("gnuplot exited 0 but " + target.filename().string() + " " + why +
                               " in " + target.parent_path().string() +
                               " (is the disk full?); the previous plots are untouched" + said);
  }
  for (AtomicFile* file : outputs) file->commit();
  return true;
}

// "('a' 0, 'b' 1)": explicit tick labels at the cell centres.
std::string tics(const std::vector<std::string>& labels) {
  std::string out = "(";
  for (size_t i = 0; i < labels.size(); ++i)
    out += (i ? ", " : "") + quoted(labels[i]) + " " + std::to_string(i);
  return out + ")";
}

// The gnuplot commands of one figure in one format, drawn into `output`; its panels' data are
// the blocks $f<index>p<j>.
std::string heatmap_script(const HeatmapFigure& f, size_t index, const std::string& terminal,
                           const std::string& output) {
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
                  "set output " + quoted(output) + "\n" +
                  (f.diverging ? "set palette defined (0 '#b2182b', 1 '#ffffff', 2 '#08306b')\n"
                               : "set palette defined (0 '#ffffff', 1 '#08306b')\n") +
                  "set cbrange [" + std::to_string(f.zmin) + ":" + std::to_string(f.zmax) + "]\n" +
                  "set tics scale 0\nunset key\n";
  if (n > 1)
    s += "unset colorbox\nset multiplot layout " + std::to_string(rows) + "," +
         std::to_string(cols) + (f.title.empty() ? std::string() : " title " + quoted(f.title)) +
         "\n";
  for (int64_t j = 0; j < n; ++j) {
    const Heatmap& h = f.panels[j];
    const std::string data = "$f" + std::to_string(index) + "p" + std::to_string(j);
    size_t longest = 0;
    for (const std::string& l : h.col_labels) longest = std::max(longest, l.size());
    s += "set title " + quoted(h.title) + "\n" +
         "set xrange [-0.5:" + std::to_string(h.col_labels.size()) + "-0.5]\n" + "set yrange [" +
         std::to_string(h.row_labels.size()) + "-0.5:-0.5]\n" +  // row 0 on top
         "set xtics " + tics(h.col_labels) + (longest > 2 ? " rotate by 90 right" : " norotate") +
         "\n" + "set ytics " + tics(h.row_labels) + "\n" + "set xlabel " + quoted(h.col_axis) +
         "\nset ylabel " + quoted(h.row_axis) + "\n" +
         // NaN cells are not drawn, so this grey background shows through them.
         "set object 1 rectangle from graph 0,0 to graph 1,1 behind fillcolor rgb '#d9d9d9' "
         "fillstyle solid noborder\n"
         "plot " +
         data + " matrix with image";
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
  std::string data;  // every panel's matrix as a gnuplot data block, shared by both formats
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
      data += "$f" + std::to_string(i) + "p" + std::to_string(j) + " << EOD\n";
      char buf[32];
      for (size_t r = 0; r < rows; ++r)
        for (size_t c = 0; c < cols; ++c) {
          std::snprintf(buf, sizeof buf, "%.9g%c", h.values[r * cols + c],
                        c + 1 == cols ? '\n' : ' ');
          data += buf;
        }
      data += "EOD\n";
    }
  }
  for (const auto& [terminal, ext] : kFormats) {
    std::vector<std::unique_ptr<AtomicFile>> files;
    std::vector<AtomicFile*> outputs;
    std::string script = data;
    for (size_t i = 0; i < figures.size(); ++i) {
      files.push_back(std::make_unique<AtomicFile>(figures[i].path_stem + "." + ext));
      outputs.push_back(files.back().get());
      script += heatmap_script(figures[i], i, terminal, files.back()->temp_path());
    }
    script += "unset output\n";  // closes the last file before gnuplot exits
    if (!draw(gnuplot, script, outputs, std::string("the ") + ext + " heatmaps", ext)) {
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
    AtomicFile file(path_stem + "." + ext);
    const std::string script = "set terminal " + std::string(terminal) + " size " +
                               std::to_string(width) + "," + std::to_string(height) +
                               " noenhanced font 'Sans,10'\nset output " +
                               quoted(file.temp_path()) + "\n" + commands + "\nunset output\n";
    if (!draw(gnuplot, script, {&file}, path_stem + "." + ext, ext)) {
      log << "gnuplot not found, so no figure was drawn; install it with: sudo apt-get install "
             "gnuplot-nox\n";
      return false;
    }
  }
  return true;
}

bool write_plots(const std::string& out_dir, std::ostream& log, const std::string& gnuplot) {
  const std::string dir = std::filesystem::absolute(out_dir).string();
  for (const auto& [terminal, ext] : kFormats) {
    AtomicFile loss(dir + "/loss." + ext), perplexity(dir + "/perplexity." + ext);
    const std::string size = std::string(terminal) + " size 900,600";
    if (!draw(gnuplot, script(dir, size, loss.temp_path(), perplexity.temp_path()),
              {&loss, &perplexity}, std::string("the ") + ext + " plots in " + dir, ext)) {
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
