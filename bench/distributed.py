#!/usr/bin/python3
"""Data-parallel ranks against threads on one machine, interleaved in one run: the tokens/s table.

    /usr/bin/python3 bench/distributed.py                         # nano and baby, 5 rounds
    /usr/bin/python3 bench/distributed.py --configs nano --rounds 9 --ranks 2

For each config it trains the same model on the same global batch two ways, in turn, A B A B ...,
so that both see the same machine weather:
  A: mpirun -np N attograd train --threads 1 --batch-size B/N   (N ranks of 1 thread)
  B: attograd train --threads N --batch-size B                  (1 process of N threads)
Each run's rate is taken from its train_log.csv between step --skip and its last step (the
first steps carry start-up, MPI_Init and the first allocations), and the table gives the
median tokens/s of each and the median of the per-round ratios A / B (> 1: the ranks are
faster). The corpus is Debian's bible-kjv (attograd's default, offline), char tokens.
"""
import argparse
import csv
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# (train options, global batch B, steps): nano and baby-shakespeare as in bench/compare.py.
CONFIGS = {
    "nano": (["--preset", "nano"], 16, 60),
    "baby": (["--preset", "nano", "--n-layer", "6", "--n-head", "6", "--n-embd", "384",
              "--block-size", "256"], 8, 14),
}


def tokens_per_second(run_dir, skip, tokens_per_step):
    """The rate between step `skip` and the last step, from the cumulative tokens_per_s of the log."""
    with open(run_dir / "train_log.csv") as f:
        rows = list(csv.DictReader(f))
    seconds = {int(r["step"]): int(r["step"]) * tokens_per_step / float(r["tokens_per_s"]) for r in rows}
    last = max(seconds)
    if skip >= last:
        raise SystemExit(f"--skip {skip} leaves no steps of {last}")
    return (last - skip) * tokens_per_step / (seconds[last] - seconds[skip])


def run(argv, env):
    p = subprocess.run(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if p.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed ({p.returncode}):\n{p.stdout}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--configs", nargs="+", default=list(CONFIGS), choices=list(CONFIGS))
    ap.add_argument("--ranks", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--skip", type=int, default=4, help="steps left out of each rate")
    ap.add_argument("--binary", default=str(ROOT / "build/cli/attograd"))
    args = ap.parse_args()
    mpirun = shutil.which("mpirun")
    if mpirun is None:
        raise SystemExit("mpirun not found: apt-get install openmpi-bin libopenmpi-dev (scripts/install-deps.sh)")
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    n = args.ranks
    print(f"{n} ranks x 1 thread (A) against 1 process x {n} threads (B), {args.rounds} rounds "
          f"interleaved, rate from step {args.skip} on; load {os.getloadavg()[0]:.2f}")
    print("| model | global batch | A: ranks tok/s | B: threads tok/s | A / B (median of rounds) |")
    print("|---|---|---|---|---|")
    with tempfile.TemporaryDirectory(prefix="attograd_bench_distributed_") as tmp:
        for name in args.configs:
            options, batch, steps = CONFIGS[name]
            if batch % n:
                raise SystemExit(f"{name}: global batch {batch} is not a multiple of {n} ranks")
            block = int(options[options.index("--block-size") + 1]) if "--block-size" in options else 64
            common = [args.binary, "train", *options, "--steps", str(steps), "--eval-interval", "0",
                      "--eval-iters", "1", "--log-interval", str(steps), "--warmup", "2"]
            ranks_cmd = [mpirun, "--oversubscribe", "-np", str(n), *common,
                         "--threads", "1", "--batch-size", str(batch // n)]
            threads_cmd = [*common, "--threads", str(n), "--batch-size", str(batch)]
            a, b = [], []
            for r in range(args.rounds):
                for cmd, rates in ((ranks_cmd, a), (threads_cmd, b)):
                    out = Path(tmp) / f"{name}_{len(rates)}_{'a' if rates is a else 'b'}"
                    run(cmd + ["--out", str(out)], env)
                    rates.append(tokens_per_second(out, args.skip, batch * block))
                print(f"  round {r + 1}: A {a[-1]:,.0f}  B {b[-1]:,.0f} tok/s", file=sys.stderr)
            ratio = statistics.median(x / y for x, y in zip(a, b))
            print(f"| {name} | {batch} x {block} | {statistics.median(a):,.0f} | "
                  f"{statistics.median(b):,.0f} | {ratio:.2f} |", flush=True)


if __name__ == "__main__":
    main()
