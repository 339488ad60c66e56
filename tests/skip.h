// Skipping a test case so that CTest shows it as skipped, never as passed. Apart from the rest of
// tests/test_util.h because it needs no engine: the kernel tests, which link only the kernels,
// skip with it too (tests/kernels/test_support.h).
#pragma once

#include <boost/test/unit_test.hpp>
#include <cstdlib>
#include <iostream>
#include <string>

namespace attograd::testing {

/// Skips the running test case, saying `why`: CTest runs each case that may be skipped as its own
/// test (attograd_case_tests in tests/CMakeLists.txt) with ATTOGRAD_SKIP_EXIT_CODE set, and this
/// ends the program with that code, so that CTest shows the case as skipped, never as passed. Run
/// by hand, the case logs why and the caller returns.
inline void skip_case(const std::string& why) {
  BOOST_TEST_MESSAGE("skipped: " + why);
  if (const char* code = std::getenv("ATTOGRAD_SKIP_EXIT_CODE")) {
    // _Exit skips Boost's log; CTest shows stderr with -V.
    std::cerr << "skipped: " << why << std::endl;
    std::_Exit(std::atoi(code));
  }
}

}  // namespace attograd::testing
