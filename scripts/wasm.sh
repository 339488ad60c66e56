#!/usr/bin/env bash
# The WebAssembly build: the core build of attograd (no downloads, no MPI, no benchmarks, and no
# BPE tokenizer, for which Debian has no wasm PCRE2) cross-compiled with Debian's emscripten
# 3.1.6 for Highway's WASM target, in build-wasm/ (cmake/wasm.cmake says how). Builds the
# page's module (web/) and the test programs, then runs them under node with CTest (label
# `wasm`) and the page in headless Chromium (label `browser`): every kernel against its scalar twin, the ops' gradient checks in f64, the nn layers,
# the model, checkpoints and the lecture's worked examples.
#   bash scripts/wasm.sh            install what is missing, build, run the wasm tests
#   bash scripts/wasm.sh --no-test  install and build only (what scripts/playground.sh runs)
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/install-deps.sh --wasm
[ "${1:-}" = "--no-test" ] || bash scripts/install-deps.sh --browser  # the page's browser test
# Debian's emcc runs its JavaScript optimizer on node and finds node's acorn module there.
export NODE_PATH=/usr/share/nodejs${NODE_PATH:+:$NODE_PATH}
jobs=${ATTOGRAD_JOBS:-$(nproc)}
emcmake cmake -S . -B build-wasm -G Ninja -DCMAKE_BUILD_TYPE=Release -DATTOGRAD_DOWNLOAD=OFF \
  -DATTOGRAD_MPI=OFF -DATTOGRAD_BENCH=OFF -DATTOGRAD_BPE=OFF >/dev/null
if [ "${1:-}" = "--no-test" ]; then
  cmake --build build-wasm -j "$jobs" --target attograd_page
else
  cmake --build build-wasm -j "$jobs" --target wasm_tests
  # Every test of this build: the Boost.Test programs and the page's API under node (label
  # wasm), and the page in headless Chromium (browser).
  ctest --test-dir build-wasm --output-on-failure -j "$jobs"
fi
