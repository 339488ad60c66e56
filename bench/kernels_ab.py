#!/usr/bin/python3
"""Two kernels_bench binaries (or one binary under two environments) against each other, interleaved.

    /usr/bin/python3 bench/kernels_ab.py OLD_KERNELS_BENCH NEW_KERNELS_BENCH \\
        --filter 'matmul/f32/gpt2 (c_fc|lm_head)/.*/t1/attograd' --rounds 3

Each round runs every side once over the same cases, every other round in the reverse order
(A B, B A, A B, ...), so that both see the same machine weather, with OpenBLAS's VM overrides
unset as for every benchmark (docs/performance.md).
A side is BINARY or NAME=BINARY, optionally with environment settings after a colon:
NAME=BINARY:VAR@VALUE,VAR@VALUE. The table gives, per case, the first side's median ms and the
first side's time over each other side's (> 1: the other side is faster), medians over the
rounds of each case's per-iteration times.
"""
import argparse
import collections
import json
import os
import statistics
import subprocess
import tempfile


def parse_side(text, index):
    name, sep, rest = text.partition("=")
    if not sep:
        name, rest = f"side{index}", text
    binary, _, settings = rest.partition(":")
    env = {}
    for item in filter(None, settings.split(",")):
        key, _, value = item.partition("@")
        env[key] = value
    return name, binary, env


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("sides", nargs="+", help="BINARY or NAME=BINARY[:VAR@VALUE,...]; the first is the base")
    ap.add_argument("--filter", required=True, help="--benchmark_filter for every side")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--min-time", type=float, default=0.3, help="--benchmark_min_time per case")
    args = ap.parse_args()
    sides = [parse_side(s, i) for i, s in enumerate(args.sides)]
    times = collections.defaultdict(lambda: collections.defaultdict(list))
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(args.rounds):
            # Every other round in the reverse order (A B, then B A): threads.py's servers showed
            # that a fixed order can favour one position by 3-4% (bench/threads.py).
            for name, binary, settings in (sides if r % 2 == 0 else sides[::-1]):
                env = dict(os.environ)
                env.pop("OPENBLAS_CORETYPE", None)
                env.pop("OPENBLAS_L2_SIZE", None)
                env.update(settings)
                out = os.path.join(tmp, "out.json")
                subprocess.run([binary, f"--benchmark_filter={args.filter}",
                                f"--benchmark_min_time={args.min_time}", f"--benchmark_out={out}",
                                "--benchmark_out_format=json"],
                               env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                with open(out) as f:
                    for b in json.load(f)["benchmarks"]:
                        if b.get("run_type") == "iteration":
                            times[b["run_name"]][name].append(b["real_time"])
    base = sides[0][0]
    others = [name for name, _, _ in sides[1:]]
    print("| case | " + base + " ms | " + " | ".join(f"{base} / {o}" for o in others) + " |")
    print("|---|---|" + "---|" * len(others))
    for case, by_side in sorted(times.items()):
        base_ms = statistics.median(by_side[base])
        ratios = [f"{base_ms / statistics.median(by_side[o]):.3f}x" if by_side[o] else "-" for o in others]
        print(f"| {case.replace('/real_time', '')} | {base_ms:.3f} | " + " | ".join(ratios) + " |")
    print(f"\nmedians of {args.rounds} interleaved rounds; --benchmark_filter='{args.filter}'")


if __name__ == "__main__":
    main()
