# -DATTOGRAD_HWY_TARGETS=native: compile the kernels for one SIMD target, the best this machine
# runs, plus Highway's portable fallback, instead of every x86 target (AVX3, AVX2, SSE4, SSSE3,
# SCALAR). For the builds that test code rather than ship it: the sanitizer and fuzz builds of
# CI (scripts/sanitize.sh, scripts/fuzz.sh), where instrumenting five copies of each kernel took
# most of the compile time and checked nothing the Release build's per-target tests do not.
# The binary then still dispatches at run time, but only between those two targets, so it is
# for this machine only. The default, `all`, is the portable build.
set(ATTOGRAD_HWY_TARGETS "all" CACHE STRING
  "Highway targets the kernels are compiled for: all (portable, the default) or native (the best this machine runs, plus the fallback)")
set_property(CACHE ATTOGRAD_HWY_TARGETS PROPERTY STRINGS all native)
if(ATTOGRAD_HWY_TARGETS STREQUAL "native")
  if(EMSCRIPTEN)
    message(FATAL_ERROR "ATTOGRAD_HWY_TARGETS=native is for native builds; the WebAssembly build has one target already")
  endif()
  try_run(run_result compile_result
    SOURCES ${PROJECT_SOURCE_DIR}/cmake/native_target/best_target.cc
    LINK_LIBRARIES hwy::hwy
    CXX_STANDARD 20
    COMPILE_OUTPUT_VARIABLE compile_output
    RUN_OUTPUT_VARIABLE run_output)
  if(NOT compile_result OR NOT run_result EQUAL 0)
    message(FATAL_ERROR "ATTOGRAD_HWY_TARGETS=native: could not find this machine's best Highway target:\n${compile_output}${run_output}")
  endif()
  list(GET run_output 0 disabled)
  list(GET run_output 1 best)
  message(STATUS "Highway targets: ${best} and the fallback only (ATTOGRAD_HWY_TARGETS=native)")
  add_compile_definitions(HWY_DISABLED_TARGETS=${disabled})
elseif(NOT ATTOGRAD_HWY_TARGETS STREQUAL "all")
  message(FATAL_ERROR "ATTOGRAD_HWY_TARGETS must be all or native, got '${ATTOGRAD_HWY_TARGETS}'")
endif()
