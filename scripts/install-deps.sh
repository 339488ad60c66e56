#!/usr/bin/env bash
# Installs the Debian 12 packages attograd builds with, skipping those already present.
# Runs apt-get directly as root, through sudo otherwise. Without an option: what the build and
# its tests need. Options, which combine (each adds its set): --fuzz, that and what the clang
# build of scripts/fuzz.sh needs; --format, the formatter of scripts/format.sh; --wasm, what the
# WebAssembly build (scripts/wasm.sh) needs; --browser, the headless browser of the page's tests;
# --site, what renders the companion site (scripts/site.sh).
#   bash scripts/install-deps.sh --format --wasm --browser --site
set -euo pipefail

base=(
  g++ cmake ninja-build       # compiler and build
  pkg-config                  # CMake finds PCRE2 through it
  libhwy-dev                  # Google Highway: portable SIMD with runtime dispatch (the kernels)
  libboost-test-dev           # Boost.Test: the test framework
  libboost-dev                # Boost.Container's small_vector: tensor shapes kept inline (no allocation)
  libcli11-dev                # CLI11: the attograd command line
  bible-kjv                   # the default corpus: King James Bible, offline (gpt/text/corpus.cc runs `bible`)
  libcurl4-openssl-dev        # libcurl: downloads named corpora such as Tiny Shakespeare on first use (optional at build)
  ca-certificates             # so libcurl can verify https servers
  nlohmann-json3-dev          # nlohmann-json: checkpoint (safetensors) headers and metadata
  libpcre2-dev                # PCRE2: GPT-2's pre-tokenisation regex needs Unicode classes (\p{L}) std::regex lacks
  gnuplot-nox                 # gnuplot: training loss and perplexity plots, attention heatmaps (PNG, SVG)
  graphviz                    # dot: renders `attograd graph` and `figure blocks` to SVG (optional: the .dot is written without it)
  libbenchmark-dev            # Google Benchmark: bench/ (kernels and training steps)
  libopenmpi-dev              # Open MPI: data-parallel training, mpirun -np N attograd train (optional at build)
  openmpi-bin                 # mpirun, which starts the ranks (and runs the MPI tests)
  libopenblas-dev             # OpenBLAS: the yardstick bench/ compares matmul against (never linked by the engine)
  python3-numpy               # NumPy: the student track's NumPy exercise and its answer's test (optional: skipped without)
)
format=(
  clang-format-14             # scripts/format.sh: the one version whose output the check expects
)
wasm=(
  cmake ninja-build           # the build
  libhwy-dev libboost-dev libboost-test-dev nlohmann-json3-dev libcli11-dev  # their headers
  emscripten                  # emcc 3.1.6: C++ to WebAssembly (scripts/wasm.sh)
  nodejs                      # node: runs emcc's optimizer and the wasm test programs
  node-acorn                  # the JavaScript parser Debian's emcc loads from NODE_PATH
  python3                     # scripts/playground.sh serves the page with python3 -m http.server
  bible-kjv                   # `bible`: the page's shipped text, Genesis (web/CMakeLists.txt stops without it)
)
browser=(
  chromium                    # the page's tests run in headless Chromium (tests/web/browser_test.py)
  chromium-driver             # chromedriver, through which Selenium drives it
  python3-selenium            # the tests' WebDriver client
)
site=(
  mkdocs                      # renders docs/ into the companion site (mkdocs.yml, scripts/site.sh)
  mkdocs-material             # its theme: navigation, search (lunr, offline) and code highlighting
  python3-pymdownx            # the Markdown extensions mkdocs.yml names (highlight, superfences, slugs)
)
fuzz=(
  "${base[@]}"
  clang                       # clang 14: libFuzzer builds only with clang (scripts/fuzz.sh)
  libclang-rt-dev             # clang's libFuzzer and sanitizer runtimes
)

# No flag: the base set. Each flag adds its set, so flags combine (--format --wasm installs both;
# each used to be read only as the first argument, and the rest were silently ignored).
packages=()
[ $# -eq 0 ] && packages=("${base[@]}")
for flag in "$@"; do
  case "$flag" in
    --format) packages+=("${format[@]}") ;;
    --wasm) packages+=("${wasm[@]}") ;;
    --browser) packages+=("${browser[@]}") ;;
    --site) packages+=("${site[@]}") ;;
    --fuzz) packages+=("${fuzz[@]}") ;;
    *)
      echo "install-deps.sh: unknown option '$flag': give none (the build's packages), or any of" \
        "--format, --wasm, --browser, --site, --fuzz" >&2
      exit 2
      ;;
  esac
done

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "attograd: installing missing packages: ${missing[*]}"
if [ "$(id -u)" -eq 0 ]; then sudo=(); else sudo=(sudo); fi
export DEBIAN_FRONTEND=noninteractive
"${sudo[@]}" apt-get update -qq
"${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
