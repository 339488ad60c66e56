#!/usr/bin/env bash
# The one instrumented build that scripts/sanitize.sh and scripts/fuzz.sh share, in build-asan/:
# clang with AddressSanitizer and UndefinedBehaviorSanitizer, warnings as errors, libFuzzer's
# coverage in every target (ATTOGRAD_FUZZ), and the core options (no libcurl, no Open MPI, no
# benchmarks: scripts/core.sh's). Builds the targets given, `all` without any.
#
# Why one build, and why these choices (issue 33: CI took 65-67 of its 90 minutes):
#   - clang compiled this tree under the sanitizers in half gcc's time (827 s against about
#     1,650 s on the 2-core Zen 5, 2026-12-05), almost all of it in the test and CLI sources;
#   - the fuzzers need clang and the same sanitizers anyway, so the build that runs the suite
#     also links them, instead of a second build of every library;
#   - -O1, as ASan's authors advise; and the kernels are compiled for this machine's best Highway
#     target and the fallback only (ATTOGRAD_HWY_TARGETS=native): the sanitizers look for bugs in
#     the code that runs here, and scripts/test.sh's Release build runs every kernel test under
#     every target.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/install-deps.sh --fuzz
# A build-asan/ configured by gcc (before this script) cannot switch compilers in place.
if [ -f build-asan/CMakeCache.txt ] && ! grep -q '^CMAKE_CXX_COMPILER:.*clang' build-asan/CMakeCache.txt; then
  rm -rf build-asan
fi
CC=clang CXX=clang++ cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_CXX_FLAGS_RELEASE="-O1 -DNDEBUG" -DATTOGRAD_SANITIZE=address,undefined \
  -DATTOGRAD_WERROR=ON -DATTOGRAD_FUZZ=ON -DATTOGRAD_HWY_TARGETS=native \
  -DATTOGRAD_DOWNLOAD=OFF -DATTOGRAD_MPI=OFF -DATTOGRAD_BENCH=OFF >/dev/null
if [ $# -eq 0 ]; then set -- all; fi
cmake --build build-asan -j "$(nproc)" --target "$@"
