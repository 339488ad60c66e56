// The student track (docs/exercises.md#the-student-track): each exercise's check (checks.h) run
// on the functions this program is linked with. Built twice from this one file: student_track
// on the student's files of examples/student/ (`ctest --test-dir build -C student -L student`,
// never in the default run, where the stubs would fail), and student_track_answers on the
// reference answers of examples/student/answers/ (in every run, so that neither the checks nor
// the answers can rot). CTest runs each test case as its own test.
#define BOOST_TEST_MODULE student_track
#include <boost/test/unit_test.hpp>
#include <string>

#include "examples/student/exercises.h"
#include "tests/cli/cli_run.h"
#include "tests/examples/student/checks.h"
#include "tests/examples/student/numpy_python.h"
#include "tests/skip.h"

namespace {

namespace checks = attograd::student::checks;
namespace student = attograd::student;

// Each step that held goes to the log (`ctest -V`); the problem, if any, fails the case.
void report(const checks::Verdict& v) {
  for (const std::string& step : v.passed) BOOST_TEST_MESSAGE("ok: " << step);
  BOOST_TEST(v.ok(), v.problem);
}

}  // namespace

BOOST_AUTO_TEST_CASE(causal_mask) { report(checks::check_causal_mask(student::causal_mask)); }

BOOST_AUTO_TEST_CASE(softmax) { report(checks::check_softmax(student::softmax)); }

BOOST_AUTO_TEST_CASE(softmax_backward) {
  report(checks::check_softmax_backward(student::softmax_backward));
}

BOOST_AUTO_TEST_CASE(attention) { report(checks::check_attention(student::attention)); }

BOOST_AUTO_TEST_CASE(heads) {
  report(checks::check_heads(student::split_heads, student::merge_heads));
}

BOOST_AUTO_TEST_CASE(layer_norm) { report(checks::check_layer_norm(student::layer_norm)); }

BOOST_AUTO_TEST_CASE(perplexity) { report(checks::check_perplexity(student::perplexity)); }

BOOST_AUTO_TEST_CASE(bigram) { report(checks::check_bigram(student::bigram_cross_entropy)); }

// S8: the NumPy script (NUMPY_SCRIPT: the student's or the answer) against
// `attention_by_hand --json`, step by step, through examples/student/compare_attention.py, as
// docs/exercises.md tells the student to run it. Skipped (CTest shows it) without NumPy.
BOOST_AUTO_TEST_CASE(numpy) {
  using attograd::testing::run_program;
  const std::string python = attograd::testing::numpy_python();
  if (python.empty()) {
    attograd::testing::skip_case(
        "python3 with NumPy is not installed (Debian: apt-get install python3-numpy); the NumPy "
        "exercise is optional");
    return;
  }
  const auto compared =
      run_program(ATTENTION_BY_HAND, std::string(attograd::testing::kNumpyExerciseArgs) + " | " +
                                         python + " " COMPARE_SCRIPT " " NUMPY_SCRIPT " -");
  const bool agrees = compared.exit_code == 0 &&
                      attograd::testing::contains(compared.out, "every step agrees with attograd");
  BOOST_TEST(agrees, compared.out);
  if (agrees) BOOST_TEST_MESSAGE(compared.out);
}
