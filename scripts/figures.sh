#!/usr/bin/env bash
# Regenerates every figure of docs/ into docs/figures/, each from an attograd command (the docs
# show the command under each figure). The data of each figure (CSV) stays in $WORK.
#
#   bash scripts/figures.sh                      # trains pico first with examples/train_pico.sh
#   PICO_RUN=runs/pico bash scripts/figures.sh   # reuses a finished train_pico.sh run
#   TIMINGS=1 bash scripts/figures.sh            # also the timed figure (bench/attention_cost.py)
#
# Time on the 2-core reference VM, built: about 30 s for train_pico.sh, under 10 seconds for
# the rest (1.9 s measured with PICO_RUN). Needs gnuplot and Graphviz (installed first, by
# scripts/install-deps.sh, unless ATTOGRAD is given).
# Environment: ATTOGRAD (the binary; default: build it), PICO_RUN, WORK (default runs/figures),
# FIGURES (default docs/figures). tests/cli/figures_script_test.cc runs this script with a short
# training of its own and checks the CSV data, and the heatmaps' SVG cells against it.
set -euo pipefail
cd "$(dirname "$0")/.."

# A wrong PICO_RUN is named before anything is built or drawn.
if [[ -n ${PICO_RUN:-} && ! -f $PICO_RUN/ckpt.safetensors ]]; then
  echo "figures.sh: PICO_RUN=$PICO_RUN holds no ckpt.safetensors; give the --out directory of a" \
    "finished examples/train_pico.sh run, or leave PICO_RUN unset to train one" >&2
  exit 2
fi

if [[ -z ${ATTOGRAD:-} ]]; then
  bash scripts/install-deps.sh  # gnuplot and Graphviz draw the figures
  cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build build --target attograd_cli
  ATTOGRAD=build/cli/attograd
fi
WORK=${WORK:-runs/figures}
FIGURES=${FIGURES:-docs/figures}
if [[ -z ${PICO_RUN:-} ]]; then
  OUT=runs/pico bash examples/train_pico.sh
  PICO_RUN=runs/pico
fi
mkdir -p "$WORK" "$FIGURES"
keep() { cp "$WORK/$1" "$FIGURES/$2"; }  # keep FILE_IN_WORK NAME_IN_DOCS

# Chapter 1: the recorded graph (the .dot is kept beside the .svg).
"$ATTOGRAD" graph --expr neuron --out "$FIGURES/graph_neuron.dot"
"$ATTOGRAD" graph --expr femto --out "$FIGURES/graph_femto.dot"

# Chapter 3: positions, the sqrt(d_k) experiment, the mask, pico's attention maps.
"$ATTOGRAD" figure sinusoidal --block-size 64 --n-embd 32 --out "$WORK"
keep sinusoidal.svg sinusoidal.svg
"$ATTOGRAD" figure rope --n-embd 8 --n-head 1 --out "$WORK"
keep rope.svg rope.svg
"$ATTOGRAD" figure rope-qk --out "$WORK"
keep rope-qk.svg rope_qk.svg
"$ATTOGRAD" figure scaling --out "$WORK"
keep scaling.svg softmax_scaling.svg
"$ATTOGRAD" figure mask --out "$WORK"
keep mask.svg causal_mask.svg
"$ATTOGRAD" attention --checkpoint "$PICO_RUN/ckpt.safetensors" --prompt "And God " --attribution \
  --out "$WORK/attention" | tee "$WORK/attention.txt"
keep attention/all_heads.svg pico_attention.svg
keep attention/layer2_head0.svg pico_attention_layer2_head0.svg
# Chapter 3, the computation drawn: the 2-token worked example step by step, and pico's 3 heads
# (n_embd 6) split, attended and concatenated on 4 tokens.
"$ATTOGRAD" figure attention-steps --out "$WORK"
keep attention-steps.svg attention_steps.svg
"$ATTOGRAD" figure heads --block-size 4 --out "$WORK"
keep heads.svg heads.svg

# Chapter 4: the block diagram of pico (vocab_size 73: the King James Bible's characters).
"$ATTOGRAD" figure blocks --preset pico --vocab-size 73 --out "$WORK"
keep blocks.svg pico_blocks.svg
# Chapter 4: one pico block pre-LN (what attograd computes) beside post-LN.
"$ATTOGRAD" figure pre-post-ln --out "$WORK"
keep pre-post-ln.svg pre_post_ln.svg

# Chapter 5: the loss and perplexity of the pico run, with the unigram and bigram baselines.
cp "$PICO_RUN/loss.svg" "$FIGURES/pico_loss.svg"
cp "$PICO_RUN/perplexity.svg" "$FIGURES/pico_perplexity.svg"
cp "$PICO_RUN/eval_log.csv" "$PICO_RUN/baselines.csv" "$WORK/"

# Chapter 3, timed (only with TIMINGS=1: its numbers change with the machine and its load, so a
# default run keeps the committed one and every figure it writes comes out byte for byte): the
# T×T cost of attention, measured on one head (needs build/bench/kernels_bench).
if [[ -n ${TIMINGS:-} ]]; then
  cmake --build build --target kernels_bench
  /usr/bin/python3 bench/attention_cost.py --out "$FIGURES" --work "$WORK"
fi

echo "figures in $FIGURES, their data in $WORK"
