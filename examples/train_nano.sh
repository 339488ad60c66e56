#!/usr/bin/env bash
# nanoGPT's CPU config (4 layers, 4 heads, n_embd 128, block 64, ~0.8M parameters) on the King
# James Bible, with its β₂ of 0.99: long enough to produce recognisable words. About 5 minutes
# on 2 cores.
# Extra arguments go to `attograd train` and override the settings below; OUT=dir moves the run.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/install-deps.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build --target attograd_cli

out=${OUT:-runs/nano}
build/cli/attograd train --preset nano --corpus kjv --out "$out" --overwrite \
  --steps 2000 --batch-size 12 --lr 1e-3 --min-lr 1e-4 --warmup 100 --weight-decay 0.1 \
  --beta2 0.99 --eval-interval 250 --eval-iters 20 --log-interval 50 "$@"

echo
build/cli/attograd sample --checkpoint "$out/ckpt.safetensors" \
  --prompt "And God said" --prompt "In the beginning" \
  --temperature 0.5 --temperature 0.8 --temperature 1.0 --max-new-tokens 300
