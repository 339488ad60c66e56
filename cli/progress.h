// Progress of long, otherwise silent work (eval over a corpus split): done, total, time spent
// and time left, on stderr so that stdout keeps only the result.
#pragma once

#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>

#include "gpt/train/report.h"

namespace attograd::cli {

/// "eval  3 of 7 windows (43%), 0:31 elapsed, 0:41 left". On a terminal one line rewritten in
/// place (\r) at most every kTerminalSeconds; to a file or a pipe a plain line at most every
/// kPlainSeconds, the first after kFirstSeconds, so that short work prints nothing and a log
/// stays readable. finish() ends a line left open on a terminal.
class ProgressLine {
 public:
  static constexpr double kTerminalSeconds = 0.25, kFirstSeconds = 2, kPlainSeconds = 10;

  /// `what` starts each line ("eval"). `terminal`: rewrite in place; by default, whether
  /// `out` is a terminal. `clock` returns seconds (tests give their own).
  explicit ProgressLine(std::string what, std::FILE* out = stderr, int terminal = -1,
                        std::function<double()> clock = {})
      : what_(std::move(what)),
        out_(out),
        terminal_(terminal >= 0 ? terminal == 1 : isatty(fileno(out)) == 1),
        clock_(clock ? std::move(clock) : [] {
          return std::chrono::duration<double>(
                     std::chrono::steady_clock::now().time_since_epoch())
              .count();
        }),
        start_(clock_()),
        last_(start_) {}
  ProgressLine(const ProgressLine&) = delete;
  ProgressLine& operator=(const ProgressLine&) = delete;
  ~ProgressLine() { finish(); }

  /// `done` of `total` `unit`s ("windows") are done. Prints when the interval has passed.
  void update(int64_t done, int64_t total, const char* unit) {
    const double now = clock_(), elapsed = now - start_;
    const double wait = terminal_ ? kTerminalSeconds : printed_ ? kPlainSeconds : kFirstSeconds;
    if (now - last_ < wait || done <= 0 || total <= 0) return;
    last_ = now;
    printed_ = true;
    const double left = elapsed / static_cast<double>(done) * static_cast<double>(total - done);
    std::fprintf(out_, "%s%s  %lld of %lld %s (%.0f%%), %s elapsed, %s left%s",
                 terminal_ ? "\r" : "", what_.c_str(), static_cast<long long>(done),
                 static_cast<long long>(total), unit,
                 100.0 * static_cast<double>(done) / static_cast<double>(total),
                 gpt::format_duration(elapsed).c_str(), gpt::format_duration(left).c_str(),
                 terminal_ ? "\033[K" : "\n");  // on a terminal: clear what a longer line left
    std::fflush(out_);
  }

  /// Ends the line rewritten on a terminal, so that what follows starts on its own.
  void finish() {
    if (terminal_ && printed_) std::fputc('\n', out_);
    printed_ = false;
  }

 private:
  std::string what_;
  std::FILE* out_;
  bool terminal_;
  std::function<double()> clock_;
  double start_, last_;
  bool printed_ = false;
};

}  // namespace attograd::cli
