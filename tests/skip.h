// Skipping a test case so that CTest shows it as skipped, never as passed. Apart from the rest of
// tests/test_util.h because it needs no engine: the kernel tests, which link only the kernels,
// skip with it too (tests/kernels/test_support.h).
#pragma once

#include <boost/test/unit_test.hpp>
#include <cstdlib>
#include <iostream>
#include <string>

namespace attograd::testing {

/// Whether this build runs code on other threads: false in WebAssembly without threads, where
/// std::thread cannot start and every parallel loop runs on the calling thread. For a case
/// about threads, skipped otherwise: `build_has(kBuildHasThreads, "threads")` (test_util.h), or
/// build_has_threads() in the kernel tests.
#if defined(__EMSCRIPTEN__) && !defined(__EMSCRIPTEN_PTHREADS__)
inline constexpr bool kBuildHasThreads = false;
#else
inline constexpr bool kBuildHasThreads = true;
#endif

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
