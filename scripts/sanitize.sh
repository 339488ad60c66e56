#!/usr/bin/env bash
# Builds attograd with AddressSanitizer and UndefinedBehaviorSanitizer (in build-asan/, warnings
# as errors) and runs the whole CTest suite under them. No report is allowed: ASan stops at its
# first error, LeakSanitizer fails a process that leaks, and UBSan is built not to recover
# (-fno-sanitize-recover), so any report makes its test fail. Part of CI (.ci/run).
#
# It is also CI's core build (scripts/core.sh's options: no libcurl, no Open MPI, no benchmarks),
# so one build checks both: the engine without its optional parts, and the suite under the
# sanitizers, including the cases about a left-out part that scripts/test.sh shows as skipped.
# The download and MPI code run under scripts/test.sh's Release build. The build itself, clang
# at -O1 with the fuzzers' coverage and the kernels for this machine's target, is
# scripts/asan-build.sh's, shared with scripts/fuzz.sh (why: see there).

set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/asan-build.sh all fuzzers  # the fuzzers too: scripts/fuzz.sh runs them next
export ASAN_OPTIONS="detect_leaks=1:halt_on_error=1:check_initialization_order=1:strict_init_order=1:detect_stack_use_after_return=1"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1"
# The `data` cases train models for thousands of steps to assert the docs' loss figures; the
# same code runs in the fast cases here, and the figures are asserted by scripts/test.sh, so
# under the sanitizers (10x slower) they are listed as not run rather than run twice.
ctest --test-dir build-asan --output-on-failure -j "$(nproc)" -LE data
