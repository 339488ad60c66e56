#!/usr/bin/python3
"""attograd against PyTorch, training steps (or generation), interleaved in one run: the ratio table.

    /usr/bin/python3 bench/compare.py                    # every config, 1 and 2 threads
    /usr/bin/python3 bench/compare.py --configs nano baby --threads 1 --rounds 9
    /usr/bin/python3 bench/compare.py --generate         # greedy decoding, GPT-2 small, batch 1

For each config and thread count it starts two step servers, build/bench/train_bench --serve
(attograd) and bench/torch_reference.py --serve (PyTorch), warms both up, then asks them in turn
for the same number of steps, A B A B ..., so that both see the same machine weather; the
ratio is the median PyTorch ms/step over the median attograd ms/step (> 1: attograd faster).
PyTorch gets its best CPU settings: jemalloc preloaded, passive OpenMP waiting, and OpenBLAS
with its AVX-512 kernels (this machine's OPENBLAS_CORETYPE=Haswell and OPENBLAS_L2_SIZE are
removed from its environment) and OPENBLAS_NUM_THREADS set to the thread count (else OpenBLAS
uses both cores in a "1 thread" run). attograd runs with its thread pool's defaults.

With --generate the servers are build/bench/generate_bench --serve and bench/torch_generate.py
--serve, a "step" is one decode step with the KV cache (one token), and the table adds the
memory-bandwidth bound generate_bench measures (weights read once per token; see its header).
"""
import argparse
import os
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CONFIGS = ["femto", "pico", "nano", "baby", "gpt2"]
SHAPES = {  # (V, L, H, C, T, B), as in train_bench.cc and torch_reference.py
    "femto": (65, 1, 1, 2, 16, 32),
    "pico": (65, 3, 3, 6, 32, 32),
    "nano": (65, 4, 4, 128, 64, 16),
    "baby": (65, 6, 6, 384, 256, 8),
    "gpt2": (50257, 12, 12, 768, 64, 4),
}
JEMALLOC = "/usr/lib/x86_64-linux-gnu/libjemalloc.so.2"


class Server:
    def __init__(self, argv, env):
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)
        self.header = self.proc.stdout.readline().strip()
        if not self.header.startswith("ready"):
            raise RuntimeError(f"{argv[0]} did not start: {self.header!r}")

    def steps(self, k):
        """Runs k steps; returns (seconds per step, allocations per step, peak RSS MiB)."""
        self.proc.stdin.write(f"steps {k}\n")
        self.proc.stdin.flush()
        words = self.proc.stdout.readline().split()
        if len(words) != 5:
            raise RuntimeError(f"server stopped: {words}")
        return float(words[0]) / k, int(words[2]) / k, float(words[4])

    def close(self):
        self.proc.stdin.write("quit\n")
        self.proc.stdin.flush()
        self.proc.wait(timeout=60)


def environments(threads):
    base = {k: v for k, v in os.environ.items()
            if k not in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE", "OMP_WAIT_POLICY", "GOMP_SPINCOUNT")}
    ours = dict(base)  # attograd's threads are its own pool's (autograd/kernels/thread_pool.h)
    # PyTorch as issue 7 measured it at its best: passive OpenMP, jemalloc, and OpenBLAS (which
    # runs its own threads, 2 by default here) held to the same thread count.
    theirs = dict(base, OMP_WAIT_POLICY="passive", OPENBLAS_NUM_THREADS=str(threads))
    if os.path.exists(JEMALLOC):
        theirs["LD_PRELOAD"] = JEMALLOC
    return ours, theirs


def measure(config, threads, rounds, bench, seconds_per_round, torch_script="torch_reference.py"):
    ours_env, torch_env = environments(threads)
    ours = Server([str(bench), "--serve", config, "--threads", str(threads)], ours_env)
    theirs = Server([sys.executable, str(ROOT / "bench" / torch_script), "--serve", config,
                     "--threads", str(threads)], torch_env)
    try:
        # Warm-up (caches, allocators, threads), and a step count that makes each turn
        # last about seconds_per_round.
        a, _, _ = ours.steps(3)
        b, _, _ = theirs.steps(3)
        k = max(1, int(seconds_per_round / max(a, b, 1e-6)))
        a_times, b_times, allocs = [], [], []
        for _ in range(rounds):
            t, n, rss_a = ours.steps(k)
            a_times.append(t)
            allocs.append(n)
            t, _, rss_b = theirs.steps(k)
            b_times.append(t)
        return {
            "ours_ms": 1e3 * statistics.median(a_times), "torch_ms": 1e3 * statistics.median(b_times),
            "allocs": statistics.median(allocs), "rss_ours": rss_a, "rss_torch": rss_b, "steps": k,
            "header": ours.header.split(),
        }
    finally:
        ours.close()
        theirs.close()


def compare_generation(args):
    """The --generate table: tokens/s of greedy decoding and the bandwidth bound."""
    print("| model | threads | attograd tokens/s | PyTorch tokens/s | ratio | bound tokens/s (GB/s read) | "
          "attograd % of bound | PyTorch % of bound | attograd new storage/token |")
    print("|---|---|---|---|---|---|---|---|---|")
    for threads in args.threads:
        r = measure("gpt2", threads, args.rounds, args.bench, args.seconds, "torch_generate.py")
        header = dict(zip(r["header"][2::2], r["header"][3::2]))  # ready gpt2 params N bytes_per_token B ...
        gbs = float(header["bandwidth_gbs"])
        bound = gbs * 1e9 / float(header["bytes_per_token"])
        ours, theirs = 1e3 / r["ours_ms"], 1e3 / r["torch_ms"]
        print(f"| GPT-2 small, batch 1 | {threads} | {ours:.1f} | {theirs:.1f} | {ours / theirs:.2f}x | "
              f"{bound:.1f} ({gbs:.1f}) | {100 * ours / bound:.0f}% | {100 * theirs / bound:.0f}% | "
              f"{r['allocs']:g} |", flush=True)
    print(f"\nratio = attograd tokens/s / PyTorch tokens/s (> 1: attograd faster); medians of {args.rounds} "
          f"interleaved turns of about {args.seconds} s each, decode steps only (the prompt's pass untimed).")
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--configs", nargs="+", default=CONFIGS, choices=CONFIGS)
    ap.add_argument("--threads", nargs="+", type=int, default=[1, 2])
    ap.add_argument("--rounds", type=int, default=7, help="A B pairs per config (default 7)")
    ap.add_argument("--seconds", type=float, default=1.0, help="length of one turn (default 1 s)")
    ap.add_argument("--generate", action="store_true", help="compare greedy decoding instead of training steps")
    ap.add_argument("--bench", help="the attograd server (default build/bench/train_bench, or generate_bench)")
    args = ap.parse_args()
    args.bench = args.bench or str(ROOT / "build" / "bench" / ("generate_bench" if args.generate else "train_bench"))
    if not Path(args.bench).exists():
        sys.exit(f"compare.py: {args.bench} not found: build first (cmake --build build)")
    if args.generate:
        return compare_generation(args)
    print("| model (V, L, H, C, T, B) | threads | attograd ms/step | PyTorch ms/step | ratio | "
          "attograd allocs/step | peak RSS attograd / PyTorch MiB |")
    print("|---|---|---|---|---|---|---|")
    for config in args.configs:
        for threads in args.threads:
            r = measure(config, threads, args.rounds, args.bench, args.seconds)
            shape = ", ".join(str(v) for v in SHAPES[config])
            print(f"| {config} ({shape}) | {threads} | {r['ours_ms']:.3f} | {r['torch_ms']:.3f} | "
                  f"{r['torch_ms'] / r['ours_ms']:.2f}x | {r['allocs']:g} | "
                  f"{r['rss_ours']:.0f} / {r['rss_torch']:.0f} |", flush=True)
    print("\nratio = PyTorch time / attograd time (> 1: attograd faster); medians of "
          f"{args.rounds} interleaved turns of about {args.seconds} s each.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
