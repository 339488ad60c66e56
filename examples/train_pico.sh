#!/usr/bin/env bash
# The homework in one command: train pico (3 layers, 3 heads, n_embd 6; 2,028 parameters with the
# Bible's 73 characters) on the King James Bible (offline, from Debian's bible-kjv), print
# train/val loss and perplexity next to the unigram baseline, plot them, and sample from two
# prompts at three temperatures. Installs missing packages and builds first; the run itself takes
# about 30 s on 2 cores (28 s measured; docs/05-training.md, "Expected output", shows what a
# correct run prints).
# It evaluates every 100 steps up to step 2,000, where the curves cross the unigram and bigram
# baselines, then every 2,000 (evaluation has batches of its own: the weights are the same).
# Extra arguments go to `attograd train` and override the settings below (e.g. --corpus
# shakespeare, --pos-encoding rope, --steps 5000); set OUT=dir to write somewhere else.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/install-deps.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
# attention_by_hand too: docs/README.md's reading path starts with it (chapter 3).
cmake --build build --target attograd_cli attention_by_hand

out=${OUT:-runs/pico}
build/cli/attograd train --preset pico --corpus kjv --out "$out" --overwrite \
  --steps 20000 --batch-size 64 --lr 1e-2 --min-lr 1e-3 --warmup 200 \
  --eval-interval 2000 --eval-early 100 --eval-iters 50 --log-interval 1000 "$@"

echo
build/cli/attograd sample --checkpoint "$out/ckpt.safetensors" \
  --prompt "And God said" --prompt "The LORD is" \
  --temperature 0.5 --temperature 1.0 --temperature 1.5 --max-new-tokens 200
echo
# Where everything is, once more after the samples (train printed the plots' names before them).
echo "$out/ holds the run: loss and perplexity plots (PNG, SVG), the CSV logs, ckpt.safetensors" \
  "(the last step), best.safetensors (the lowest val loss) and run.json (docs/05-training.md)"
