#!/usr/bin/env bash
# The native side of the wasm build's parity and browser tests (CTest fixture `native_checkpoint`,
# tests/wasm/CMakeLists.txt): the native CLI of this checkout trains a small GPT on the page's
# shipped text and writes its checkpoint and the attention weights `attograd attention` prints
# as CSV. The page must load that checkpoint and find the same weights (tests/web/parity_test.js,
# tests/web/browser_test.py), and its "attention is not explanation" rows (`--attribution`: the
# printed lines in attention.log, unrounded in attention/attribution.csv) the page's.
#   tests/web/native_fixture.sh NATIVE_BUILD TEXT OUT_DIR
# NATIVE_BUILD: a native build with cli/attograd and web/attograd_api_native
# (scripts/wasm.sh builds the two). Writes OUT_DIR/run/ckpt.safetensors, OUT_DIR/attention/*.csv
# (layer<L>_head<H>.csv and attribution.csv), OUT_DIR/attention.log and OUT_DIR/prompt.txt.
set -euo pipefail
native=$1 text=$2 out=$3
if [ -z "$native" ]; then
  echo "native_fixture: no native build given: configure build-wasm with" \
    "-DATTOGRAD_NATIVE_BUILD=<a native build of this checkout> (scripts/wasm.sh passes build/)" >&2
  exit 1
fi
cli=$native/cli/attograd
for program in "$cli" "$native/web/attograd_api_native"; do
  if [ ! -x "$program" ]; then
    echo "native_fixture: $program is missing: build it (scripts/wasm.sh builds the native" \
      "targets attograd_cli and attograd_api_native in build/)" >&2
    exit 1
  fi
done
rm -rf "$out"
mkdir -p "$out"
# pico's three layers of three heads with a context of 16: nine maps of 16 x 16, trained a little
# (400 steps) so that the weights are far from uniform. One thread, the default seeds.
"$cli" train --preset pico --block-size 16 --corpus "$text" --out "$out/run" --steps 400 \
  --batch-size 32 --eval-interval 400 --eval-iters 2 --log-interval 400 --threads 1 >"$out/train.log"
prompt="In the beginning"  # 16 characters: the whole context
printf '%s' "$prompt" >"$out/prompt.txt"
"$cli" attention --checkpoint "$out/run/ckpt.safetensors" --prompt "$prompt" \
  --attribution --out "$out/attention" >"$out/attention.log" 2>&1
ls "$out"/attention/layer*_head*.csv "$out/attention/attribution.csv" >/dev/null
echo "native_fixture: $out/run/ckpt.safetensors and $(ls "$out"/attention/*.csv | wc -l) CSV files"
