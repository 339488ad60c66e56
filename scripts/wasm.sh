#!/usr/bin/env bash
# The WebAssembly build: the core build of attograd (no downloads, no MPI, no benchmarks, and no
# BPE tokenizer, for which Debian has no wasm PCRE2) cross-compiled with Debian's emscripten
# 3.1.6 for Highway's WASM target, in build-wasm/ (cmake/wasm.cmake says how). Builds the page
# (web/, into build-wasm/page/) and the test programs, then runs them with CTest: the kernel,
# autograd and nn tests and the page's share of the gpt and lecture tests under node (label
# `wasm`), the page's JavaScript API, its parity with the native build, and the page in headless
# Chromium (label `browser`). With the tests it also builds the companion site (scripts/site.sh:
# the chapters and the page, in build-site/), which a browser test of the same label checks.
#   bash scripts/wasm.sh            install what is missing, build, run the wasm tests
#   bash scripts/wasm.sh --no-test  install and build the page only (what scripts/playground.sh runs)
# The parity tests compare the page with a native build of this checkout: build/ (the one
# scripts/test.sh makes; ATTOGRAD_NATIVE_BUILD=dir for another), where this script builds the
# two programs they run, the CLI and attograd_api_native.
set -euo pipefail
cd "$(dirname "$0")/.."

test=1
[ "${1:-}" = "--no-test" ] && test=0
bash scripts/install-deps.sh --wasm
[ $test = 0 ] || bash scripts/install-deps.sh --browser  # the page's browser test
# Debian's emcc runs its JavaScript optimizer on node and finds node's acorn module there.
export NODE_PATH=/usr/share/nodejs${NODE_PATH:+:$NODE_PATH}
jobs=${ATTOGRAD_JOBS:-$(nproc)}
native=$(realpath -m "${ATTOGRAD_NATIVE_BUILD:-build}")
emcmake cmake -S . -B build-wasm -G Ninja -DCMAKE_BUILD_TYPE=Release -DATTOGRAD_DOWNLOAD=OFF \
  -DATTOGRAD_MPI=OFF -DATTOGRAD_BENCH=OFF -DATTOGRAD_BPE=OFF \
  "-DATTOGRAD_NATIVE_BUILD=$native" >/dev/null
if [ $test = 0 ]; then
  cmake --build build-wasm -j "$jobs" --target attograd_page
  exit 0
fi
if [ ! -f "$native/CMakeCache.txt" ]; then
  cmake -S . -B "$native" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
fi
cmake --build "$native" -j "$jobs" --target attograd_cli attograd_api_native
cmake --build build-wasm -j "$jobs" --target wasm_tests
# The site from the page just built: 2 s (1 s of it mkdocs'), and site_test 35 to 48 s, on the
# 2-core machine beside other builds (2026-12-07).
bash scripts/site.sh --page-built
ctest --test-dir build-wasm --output-on-failure -j "$jobs"
