# The WebAssembly build (scripts/wasm.sh: `emcmake cmake` with Debian's emscripten 3.1.6):
# the core build of attograd cross-compiled for Highway's WASM target (-msimd128, 4 f32 lanes),
# single-threaded, with C++ exceptions on, so that the engine's errors reach JavaScript as
# messages. Included by the top-level CMakeLists.txt before any find_package when EMSCRIPTEN.
#
# Debian packages the libraries attograd builds with for the host only, and emscripten's
# toolchain file (rightly) looks for packages only in its own sysroot. What the wasm build takes
# from them is headers: Highway, Boost (small_vector, and Boost.Test compiled from its
# header-only "included" form, boost_test_wasm.cc) and nlohmann-json, all target-independent
# templates (and CLI11, header-only too, for the lecture programs of examples/). Each is given to find_package as a package config in CMake's redirect directory
# (CMAKE_FIND_PACKAGE_REDIRECTS_DIR, searched first, in either mode), so the project's
# find_package calls stay as they are. The headers come from a folder of symlinks to those
# libraries alone: adding /usr/include itself would put glibc's headers before emscripten's.
#
# Highway's dispatch library (libhwy) is not packaged for wasm. With one target there is
# nothing to dispatch: HWY_COMPILE_ONLY_STATIC makes HWY_DYNAMIC_DISPATCH a direct call, and
# hwy_runtime_wasm.cc supplies the few functions the headers still declare (Abort, the aligned
# allocator, SupportedTargets and its test mock).
if(NOT EMSCRIPTEN)
  message(FATAL_ERROR "cmake/wasm.cmake is for the emscripten cross build (scripts/wasm.sh)")
endif()

set(ATTOGRAD_WASM_HEADERS ${PROJECT_BINARY_DIR}/wasm-system-include)
file(MAKE_DIRECTORY ${ATTOGRAD_WASM_HEADERS})
foreach(dir hwy boost nlohmann CLI)
  if(NOT EXISTS /usr/include/${dir})
    message(FATAL_ERROR "the wasm build needs /usr/include/${dir}: run scripts/install-deps.sh")
  endif()
  file(CREATE_LINK /usr/include/${dir} ${ATTOGRAD_WASM_HEADERS}/${dir} SYMBOLIC)
endforeach()

# Every object: the SIMD128 instructions Highway's WASM target uses, exceptions that carry the
# engine's messages, Highway without dispatch tables. No -pthread: one thread, and the engine's
# pool runs every loop on the caller when no worker can start (thread_pool.cc).
add_compile_options(-msimd128 -fexceptions)
add_compile_definitions(HWY_COMPILE_ONLY_STATIC ATTOGRAD_KERNELS_F64_REFERENCE)
# A 5 MB stack, emscripten 3.1.6's default written out (TOTAL_STACK, the name this version
# knows; later versions call it STACK_SIZE and default to 64 KB, too little for Boost.Test and
# the engine's deeper calls).
add_link_options(-fexceptions -sALLOW_MEMORY_GROWTH=1 -sTOTAL_STACK=5242880)

# Highway: headers, and the runtime functions libhwy would have supplied.
add_library(attograd_hwy_wasm STATIC ${PROJECT_SOURCE_DIR}/cmake/wasm/hwy_runtime_wasm.cc)
target_include_directories(attograd_hwy_wasm SYSTEM PUBLIC ${ATTOGRAD_WASM_HEADERS})
# Boost.Test compiled once from its header-only form; the test programs keep their
# BOOST_TEST_DYN_LINK main. Test programs run under node with the host's files (NODERAWFS,
# for the docs and fixtures some tests read), its environment (wasm_test_env.js: CTest passes
# BOOST_TEST_LOG_LEVEL and run filters that way) and exit codes (EXIT_RUNTIME).
add_library(attograd_boost_test_wasm STATIC ${PROJECT_SOURCE_DIR}/cmake/wasm/boost_test_wasm.cc)
target_include_directories(attograd_boost_test_wasm SYSTEM PUBLIC ${ATTOGRAD_WASM_HEADERS})
# Linked at -O1, after the build type's -O3 (the last -O wins): the code is the -O3 the objects
# were compiled at, and the link skips binaryen's -O3 passes over the whole program, which took
# 80 of a test program's 95 s of build on the shared 2-core machine (16 s at -O1) for no gain in
# the tests' run time (softmax_test: 4.0 s either way).
target_link_options(attograd_boost_test_wasm INTERFACE -sNODERAWFS=1 -sEXIT_RUNTIME=1
  "SHELL:--pre-js ${PROJECT_SOURCE_DIR}/cmake/wasm/wasm_test_env.js" -O1)
# CTest runs each test program through node. Node 20 needs --no-experimental-fetch to run
# emscripten 3.1.6's output (its fetch polyfill check trips over node's own fetch).
find_program(ATTOGRAD_NODE NAMES node nodejs REQUIRED)
set(CMAKE_CROSSCOMPILING_EMULATOR "${ATTOGRAD_NODE};--no-experimental-fetch" CACHE STRING
  "node, which runs the wasm test programs" FORCE)

set(redirects ${CMAKE_FIND_PACKAGE_REDIRECTS_DIR})
file(WRITE ${redirects}/hwy-config.cmake "
if(NOT TARGET hwy::hwy)
  add_library(hwy::hwy INTERFACE IMPORTED)
  set_target_properties(hwy::hwy PROPERTIES INTERFACE_LINK_LIBRARIES attograd_hwy_wasm)
  add_library(hwy::hwy_contrib INTERFACE IMPORTED)
  set_target_properties(hwy::hwy_contrib PROPERTIES INTERFACE_LINK_LIBRARIES hwy::hwy)
endif()
set(hwy_VERSION 1.0.3)
")
file(WRITE ${redirects}/boost-config.cmake "
if(NOT TARGET Boost::headers)
  add_library(Boost::headers INTERFACE IMPORTED)
  set_target_properties(Boost::headers PROPERTIES
    INTERFACE_INCLUDE_DIRECTORIES ${ATTOGRAD_WASM_HEADERS})
  add_library(Boost::unit_test_framework INTERFACE IMPORTED)
  set_target_properties(Boost::unit_test_framework PROPERTIES
    INTERFACE_LINK_LIBRARIES attograd_boost_test_wasm)
endif()
set(Boost_VERSION 1.74.0)
set(Boost_FOUND TRUE)
set(Boost_unit_test_framework_FOUND TRUE)
")
file(WRITE ${redirects}/boost-config-version.cmake "
set(PACKAGE_VERSION 1.74.0)
set(PACKAGE_VERSION_COMPATIBLE TRUE)
")
# The header-only packages: an interface target with the headers' folder.
foreach(package nlohmann_json::nlohmann_json CLI11::CLI11)
  string(REGEX REPLACE "::.*" "" name ${package})
  string(TOLOWER ${name} file)
  file(WRITE ${redirects}/${file}-config.cmake "
if(NOT TARGET ${package})
  add_library(${package} INTERFACE IMPORTED)
  set_target_properties(${package} PROPERTIES INTERFACE_INCLUDE_DIRECTORIES ${ATTOGRAD_WASM_HEADERS})
endif()
")
endforeach()
