// `attograd gradcheck` end to end: the real binary, its table, its exit codes.
#define BOOST_TEST_MODULE gradcheck_command
#include <boost/test/unit_test.hpp>
#include <array>
#include <cstdio>
#include <string>
#include <sys/wait.h>

namespace {

struct Run {
  std::string out;
  int exit_code;
};

Run run(const std::string& args) {
  const std::string cmd = std::string(ATTOGRAD_CLI) + " " + args + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  BOOST_REQUIRE(p != nullptr);
  std::string out;
  std::array<char, 4096> buf;
  while (fgets(buf.data(), buf.size(), p)) out += buf.data();
  const int status = pclose(p);
  return {out, WIFEXITED(status) ? WEXITSTATUS(status) : -1};
}

bool has(const std::string& s, const std::string& needle) { return s.find(needle) != std::string::npos; }

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
