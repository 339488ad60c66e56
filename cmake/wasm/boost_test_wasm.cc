// Boost.Test for the WebAssembly build (cmake/wasm.cmake): Debian packages the framework as a
// host library only, so the wasm build compiles its header-only form once, here, and the test
// programs link it as Boost::unit_test_framework.
//
// The test programs are compiled with BOOST_TEST_DYN_LINK, as in the native build, so each
// defines main() itself and calls unit_test_main with a `bool init_unit_test()`: this file
// therefore leaves main out (BOOST_TEST_NO_MAIN) and takes that init API
// (BOOST_TEST_ALTERNATIVE_INIT_API). Emscripten's libc has no sigaltstack, which Boost.Test's
// signal handling would put its alternate stack on; wasm has no signals to catch anyway.
#define BOOST_TEST_NO_MAIN
#define BOOST_TEST_ALTERNATIVE_INIT_API
#define BOOST_TEST_DISABLE_ALT_STACK
#include <boost/test/included/unit_test.hpp>
