// A function's peak memory, measured in a forked child: the loaders' tests (a file that claims
// gigabytes must be refused before they are allocated) and the n-gram counter's (8 bytes a
// token) assert how much resident memory a call took at most. Linux only (/proc/self/status,
// clear_refs); ASan's shadow memory counts too, so the bounds the tests give are loose.
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <functional>
#include <stdexcept>
#include <string>

namespace attograd::testing {

/// What run_measured saw of its child.
struct MeasuredRun {
  int exit_code = -1;       // the body's return value; -1 when the child did not exit
  long long peak_kib = -1;  // VmHWM at the end minus VmRSS at the start, in KiB
};

/// A field of /proc/self/status in KiB ("VmRSS", "VmHWM"), or -1.
inline long long status_kib(const std::string& field) {
  std::ifstream in("/proc/self/status");
  for (std::string line; std::getline(in, line);)
    if (line.rfind(field + ":", 0) == 0) return std::stoll(line.substr(field.size() + 1));
  return -1;
}

/// Runs `body` in a forked child, after resetting the child's peak resident memory (VmHWM) to
/// its current size, and returns body's result (0 to 255) with the peak the body added. The
/// child ends with _Exit: nothing of the test (its temporary directories) is destroyed twice.
/// Throws std::runtime_error when fork or pipe fails.
inline MeasuredRun run_measured(const std::function<int()>& body) {
  int fds[2];
  if (::pipe(fds) != 0) throw std::runtime_error("run_measured: pipe failed");
  const pid_t child = ::fork();
  if (child < 0) throw std::runtime_error("run_measured: fork failed");
  if (child == 0) {
    ::close(fds[0]);
    std::ofstream("/proc/self/clear_refs") << "5";  // resets VmHWM to the current VmRSS
    const long long start = status_kib("VmRSS");
    const int code = body();
    const long long peak = start < 0 ? -1 : status_kib("VmHWM") - start;
    const bool sent = ::write(fds[1], &peak, sizeof peak) == sizeof peak;
    std::_Exit(sent ? code : 255);
  }
  ::close(fds[1]);
  MeasuredRun r;
  if (::read(fds[0], &r.peak_kib, sizeof r.peak_kib) != sizeof r.peak_kib) r.peak_kib = -1;
  ::close(fds[0]);
  int status = 0;
  ::waitpid(child, &status, 0);
  if (WIFEXITED(status)) r.exit_code = WEXITSTATUS(status);
  return r;
}

}  // namespace attograd::testing
