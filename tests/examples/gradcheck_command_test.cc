// `attograd gradcheck` end to end: the real binary, its table, its exit codes.
#define BOOST_TEST_MODULE gradcheck_command
#include <boost/test/unit_test.hpp>
#include <string>

#include "tests/examples/cli_run.h"

namespace {

using Run = attograd::testing::CliRun;
Run run(const std::string& args, bool merge_stderr = true) { return attograd::testing::run_cli(args, merge_stderr); }
bool has(const std::string& s, const std::string& needle) { return attograd::testing::contains(s, needle); }

}  // namespace

BOOST_AUTO_TEST_CASE(all_ops_pass_in_float64) {
  const Run r = run("gradcheck");
  BOOST_TEST_INFO(r.out);
  BOOST_TEST(r.exit_code == 0);
  BOOST_TEST(has(r.out, " 0 failed"));
  BOOST_TEST(!has(r.out, "FAIL"));
  for (const char* op : {"matmul", "layer_norm", "cross_entropy", "causal_softmax", "embedding"})
    BOOST_TEST(has(r.out, op));
}

BOOST_AUTO_TEST_CASE(one_op_in_float32_explains_the_step) {
  const Run r = run("gradcheck --op softmax --dtype f32 -B 1 -T 5 -C 7");
  BOOST_TEST_INFO(r.out);
  BOOST_TEST(r.exit_code == 0);
  BOOST_TEST(has(r.out, "cube root"));
  BOOST_TEST(has(r.out, "1 passed, 0 failed"));
  BOOST_TEST(!has(r.out, "layer_norm"));
}

BOOST_AUTO_TEST_CASE(bad_arguments_are_clear_errors) {
  const Run unknown = run("gradcheck --op softmaxx");
  BOOST_TEST(unknown.exit_code == 2);
  BOOST_TEST(has(unknown.out, "unknown op 'softmaxx'"));
  BOOST_TEST(has(unknown.out, "known ops:"));
  const Run dtype = run("gradcheck --dtype f16");
  BOOST_TEST(dtype.exit_code == 2);
  BOOST_TEST(has(dtype.out, "--dtype"));
}
