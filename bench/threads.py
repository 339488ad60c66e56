#!/usr/bin/python3
"""The engine's thread pool against the OpenMP build it replaced, training steps, interleaved.

    /usr/bin/python3 bench/threads.py POOL_TRAIN_BENCH OMP_TRAIN_BENCH
    /usr/bin/python3 bench/threads.py build/bench/train_bench build-omp/bench/train_bench \\
        --configs nano baby gpt2 --rounds 7 --seconds 1

Both arguments are train_bench binaries (bench/train_bench.cc): this branch's, and one built from
commit 34a3456, the last with OpenMP (git worktree add /tmp/omp 34a3456; cmake -S /tmp/omp -B
build-omp; cmake --build build-omp --target train_bench). For each config and each condition it
starts four step servers, pool and OpenMP at 1 and 2 threads, warms them up, then asks them in
turn for the same number of steps, round after round (A1 B1 A2 B2, B1 A1 B2 A2, ...), so that all
four see the same machine weather; every figure is a median over the rounds.

The OpenMP build runs as its CLI ran it: GOMP_SPINCOUNT=10000 (idle workers spin about 0.1 ms,
then sleep). The pool runs with its defaults. The conditions:
  quiet  nothing else started by this script (the machine may still be shared: load is printed)
  busy   one competing busy process, `yes > /dev/null`, started by this script for the condition
The table gives ms/step, OpenMP / pool (> 1: the pool is faster) at each thread count, and the
2-thread step over the 1-thread step of each build (< 1: the second thread helps).

    /usr/bin/python3 bench/threads.py POOL_TRAIN_BENCH --spins 0 20 100 1000 --configs nano

sweeps the pool's spin bound instead (train_bench --spin): the 1-thread server at the default
against a 2-thread server per spin, interleaved the same way.

    /usr/bin/python3 bench/threads.py NEW_TRAIN_BENCH OLD_TRAIN_BENCH --mixed-precision bf16

An A/B of a change to the engine runs the same way, the new build in the pool's column and the
old one in OpenMP's; --mixed-precision bf16 trains every server in bf16 mixed precision
(train_bench --mixed-precision; the OpenMP build of 34a3456 predates it).
"""
import argparse
import os
import statistics
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

sys.dont_write_bytecode = True  # no __pycache__ folder beside this script from the import below
from compare import machine_line  # noqa: E402

CONFIGS = ["femto", "pico", "nano", "baby", "gpt2"]


class Server:
    def __init__(self, binary, config, threads, env, extra=()):
        self.proc = subprocess.Popen([binary, "--serve", config, "--threads", str(threads), *extra],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)
        self.header = self.proc.stdout.readline().strip()
        if not self.header.startswith("ready"):
            raise RuntimeError(f"{binary} did not start: {self.header!r}")

    def seconds_per_step(self, k):
        self.proc.stdin.write(f"steps {k}\n")
        self.proc.stdin.flush()
        words = self.proc.stdout.readline().split()
        if len(words) != 5:
            raise RuntimeError(f"server stopped: {words}")
        return float(words[0]) / k

    def close(self):
        self.proc.stdin.write("quit\n")
        self.proc.stdin.flush()
        self.proc.wait(timeout=120)


def swapped(keys):
    """keys with each adjacent pair of the same thread count in the other order (pool/1t omp/1t
    -> omp/1t pool/1t); with --spins, the whole list reversed."""
    if any(b not in ("pool", "omp") for b, _ in keys):
        return keys[::-1]
    return [(b, t) for t in (1, 2) for b in ("omp", "pool")]


def measure(args, config):
    """{(build, threads): [ms/step per round]} for one config under the current condition; with
    --spins, {("pool", 1): ..., (spin, 2): ...}."""
    base = {k: v for k, v in os.environ.items() if k not in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT", "OMP_NUM_THREADS")}
    if args.spins:
        keys = [("pool", 1)] + [(spin, 2) for spin in args.spins]
        start = {key: (args.pool, base, () if key[0] == "pool" else ("--spin", str(key[0]))) for key in keys}
    else:
        keys = [(b, t) for t in (1, 2) for b in ("pool", "omp")]
        start = {("pool", t): (args.pool, base, ()) for t in (1, 2)}
        start.update({("omp", t): (args.omp, dict(base, GOMP_SPINCOUNT="10000"), ()) for t in (1, 2)})
    servers = {}
    try:
        for key in keys:
            binary, env, extra = start[key]
            if args.mixed_precision:
                extra = (*extra, "--mixed-precision", args.mixed_precision)
            servers[key] = Server(binary, config, key[1], env, extra)
        warm = {key: servers[key].seconds_per_step(args.warmup) for key in keys}
        k = max(1, int(args.seconds / max(warm.values())))
        times = {key: [] for key in keys}
        for r in range(args.rounds):
            # Every other round in the other order (A B, then B A): with a fixed order the second
            # side of a pair ran 3-4% faster at 1 thread than the first, whichever of two binaries
            # was there (nano, Zen 5, 2026-12-07), which biased every ratio.
            for key in (keys if r % 2 == 0 else swapped(keys)):
                times[key].append(1e3 * servers[key].seconds_per_step(k))
            print(f"  {config} round {r + 1}: " + "  ".join(f"{b}/{t}t {times[(b, t)][-1]:.1f}" for b, t in keys),
                  file=sys.stderr, flush=True)
        return times, k
    finally:
        for s in servers.values():
            s.close()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("pool", help="train_bench of this branch (the thread pool)")
    ap.add_argument("omp", nargs="?", help="train_bench of commit 34a3456 (OpenMP); not with --spins")
    ap.add_argument("--spins", nargs="+", type=int, help="sweep the pool's spin bound (microseconds) instead")
    ap.add_argument("--configs", nargs="+", default=["nano", "baby", "gpt2"], choices=CONFIGS)
    ap.add_argument("--conditions", nargs="+", default=["quiet", "busy"], choices=["quiet", "busy"])
    ap.add_argument("--rounds", type=int, default=7, help="rounds of the four servers (default 7)")
    ap.add_argument("--seconds", type=float, default=1.0, help="length of one turn (default 1 s)")
    ap.add_argument("--warmup", type=int, default=2, help="untimed steps per server first (default 2)")
    ap.add_argument("--mixed-precision", choices=["bf16"],
                    help="every server trains in this mixed precision (train_bench --mixed-precision)")
    args = ap.parse_args()
    if (args.omp is None) == (args.spins is None):
        sys.exit("threads.py: give the OpenMP build's train_bench, or --spins, not both")
    for b in (args.pool, args.omp or args.pool):
        if not Path(b).exists():
            sys.exit(f"threads.py: {b} not found: build train_bench first")
    print(f"{datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC, {os.cpu_count()} CPUs, "
          f"{' '.join(sys.argv)}")
    print(machine_line(args.pool))
    if args.spins:
        print("| config | condition | load before | steps/turn | pool 1t | " +
              " | ".join(f"2t, spin {s} us | 2t / 1t" for s in args.spins) + " |")
        print("|---" * (5 + 2 * len(args.spins)) + "|")
    else:
        print("| config | condition | load before | steps/turn | pool 1t | OpenMP 1t | OpenMP / pool 1t | "
              "pool 2t | OpenMP 2t | OpenMP / pool 2t | pool 2t / 1t | OpenMP 2t / 1t |")
        print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for condition in args.conditions:
        for config in args.configs:
            load = os.getloadavg()[0]
            busy = None
            if condition == "busy":
                busy = subprocess.Popen(["yes"], stdout=subprocess.DEVNULL)
                time.sleep(0.5)
            try:
                times, k = measure(args, config)
            finally:
                if busy is not None:
                    busy.kill()
                    busy.wait()
            med = {key: statistics.median(v) for key, v in times.items()}
            # Ratios of medians of per-round ratios: each round's pair saw the same weather.
            def ratio(a, b):
                return statistics.median(x / y for x, y in zip(times[a], times[b]))
            if args.spins:
                print(f"| {config} | {condition} | {load:.2f} | {k} | {med[('pool', 1)]:.2f} | " +
                      " | ".join(f"{med[(s, 2)]:.2f} | {ratio((s, 2), ('pool', 1)):.2f}" for s in args.spins) +
                      " |", flush=True)
                continue
            print(f"| {config} | {condition} | {load:.2f} | {k} | {med[('pool', 1)]:.2f} | {med[('omp', 1)]:.2f} | "
                  f"{ratio(('omp', 1), ('pool', 1)):.2f} | {med[('pool', 2)]:.2f} | {med[('omp', 2)]:.2f} | "
                  f"{ratio(('omp', 2), ('pool', 2)):.2f} | {ratio(('pool', 2), ('pool', 1)):.2f} | "
                  f"{ratio(('omp', 2), ('omp', 1)):.2f} |", flush=True)
    print(f"\nms/step medians of {args.rounds} interleaved rounds; ratios are medians of the per-round ratios.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
