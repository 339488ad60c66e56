// cli/progress.h: when a progress line is printed and what it says, on a terminal and off one,
// with a clock the test sets.
#define BOOST_TEST_MODULE progress
#include <boost/test/unit_test.hpp>
#include <cstdio>
#include <string>

#include "cli/progress.h"

using attograd::cli::ProgressLine;

namespace {

// What `out` holds, from its start.
std::string text_of(std::FILE* out) {
  std::fflush(out);
  std::rewind(out);
  std::string s;
  for (int c; (c = std::fgetc(out)) != EOF;) s += static_cast<char>(c);
  return s;
}

}  // namespace

// To a file: nothing in the first 2 s (short work prints nothing), then a line at most every
// 10 s; the time left is extrapolated from the time per unit so far.
BOOST_AUTO_TEST_CASE(plain_lines_wait_two_seconds_then_ten) {
  std::FILE* out = std::tmpfile();
  double now = 100;
  {
    ProgressLine p("eval", out, 0, [&] { return now; });
    now = 101.5, p.update(1, 7, "windows");  // 1.5 s: too early
    now = 103, p.update(3, 7, "windows");    // 3 s: the first line
    now = 110, p.update(5, 7, "windows");    // 7 s after it: too early
    now = 113, p.update(6, 7, "windows");    // 10 s after it
  }
  BOOST_TEST(text_of(out) ==
             "eval  3 of 7 windows (43%), 0:03 elapsed, 0:04 left\n"
             "eval  6 of 7 windows (86%), 0:13 elapsed, 0:02 left\n");
  std::fclose(out);
}

// On a terminal: one line rewritten in place (\r, then clear to the end of the line) at most
// every 0.25 s, ended by finish() so that the result starts on a line of its own.
BOOST_AUTO_TEST_CASE(a_terminal_line_is_rewritten_in_place) {
  std::FILE* out = std::tmpfile();
  double now = 0;
  ProgressLine p("eval", out, 1, [&] { return now; });
  now = 0.1, p.update(1, 4, "windows");  // too early
  now = 0.5, p.update(2, 4, "windows");
  now = 0.6, p.update(3, 4, "windows");  // too early
  now = 1.0, p.update(4, 4, "windows");
  p.finish();
  p.finish();  // once only
  BOOST_TEST(text_of(out) ==
             "\reval  2 of 4 windows (50%), 0:01 elapsed, 0:01 left\033[K"
             "\reval  4 of 4 windows (100%), 0:01 elapsed, 0:00 left\033[K\n");
  std::fclose(out);
}
