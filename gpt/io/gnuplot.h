// The gnuplot driver: a script that no user text can steer.
//
// gnuplot is an interpreter whose `system()` and backquotes run a shell, so a path or a label
// pasted into a script is a command waiting to happen: a newline ends the string and what
// follows runs (`--out $'r\nsystem("touch PWN")'`). A GnuplotJob therefore keeps the script to
// text the program wrote, and lets user text reach gnuplot only as data:
//   - texts (titles, tick labels, legend entries) are written to a data file as one byte value
//     per line and rebuilt inside gnuplot with sprintf("%c") into an array S, so the script
//     names them as S[1], S[2], ...: no quote, newline or backquote of theirs is ever parsed;
//   - data files and outputs have names the program chose, in a private temporary directory
//     (mode 0700) that gnuplot runs in; the outputs are checked whole (gnuplot exits 0 after a
//     failed write, e.g. a full disk) and only then copied to their targets through an
//     AtomicFile, whose rename replaces a symlink at the target instead of writing through it.
// gnuplot itself is run as gpt/io/subprocess.h runs programs: no shell, no argument, no descriptor
// of ours.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace attograd::gpt {

/// One run of gnuplot drawing into one or more files. Build the script with add(), text(),
/// data() and output(), then run(). Not copyable (it owns its private directory, removed by the
/// destructor).
class GnuplotJob {
 public:
  /// Creates the private directory under $TMPDIR (or /tmp). Throws std::runtime_error naming the
  /// directory and the OS error when it cannot.
  GnuplotJob();
  ~GnuplotJob();
  GnuplotJob(const GnuplotJob&) = delete;
  GnuplotJob& operator=(const GnuplotJob&) = delete;

  /// Appends script text. It must be the program's own text (commands, numbers, the names
  /// returned below): every caller's string goes through text() instead.
  void add(std::string_view commands) { script_.append(commands); }
  /// A text to show (any bytes), as the gnuplot expression naming it ("S[3]"). Control
  /// characters are drawn as their escapes (a newline as \n) so a label stays on one line.
  std::string text(std::string_view s);
  /// A data file of `contents` in the private directory under `name` (the program's choice:
  /// letters, digits, '_' and '.' only, else std::logic_error), as the quoted file name for the
  /// script ("'name'").
  std::string data(std::string_view name, std::string_view contents);
  /// An output file that replaces `target` once gnuplot has drawn it whole, as the quoted
  /// private name for `set output`. `ext` is "png" or "svg" (how completeness is checked).
  std::string output(const std::string& target, const std::string& ext);

  /// Runs `gnuplot` (a program name searched on $PATH, or a path) on the script, checks every
  /// output and moves each into place. Returns false when there is no such program (nothing is
  /// written). Throws std::runtime_error when gnuplot fails ("gnuplot failed (exit status N) to
  /// draw <what>: <its last line>", or "was killed by signal N while drawing <what>") or leaves
  /// an output empty or cut off ("gnuplot exited 0 but <file> is empty in <dir> (is the disk
  /// full?)"); the previous targets are then untouched.
  bool run(const std::string& gnuplot, const std::string& what);

  /// The script as it will run (for tests): it holds no byte of any text().
  std::string script() const;

 private:
  std::string dir_;      // the private directory
  std::string script_;   // the program's commands
  std::string texts_;    // "index byte\n" lines for the texts
  int64_t n_texts_ = 0;  // texts so far
  struct Output {
    std::string name, target, ext;
  };
  std::vector<Output> outputs_;
};

}  // namespace attograd::gpt
