#!/usr/bin/python3
"""attograd against PyTorch, training steps (or generation), interleaved in one run: the ratio table.

    /usr/bin/python3 bench/compare.py                    # every config, 1 and 2 threads
    /usr/bin/python3 bench/compare.py --configs nano baby --threads 1 --rounds 9
    /usr/bin/python3 bench/compare.py --generate         # greedy decoding, GPT-2 small, batch 1
    /usr/bin/python3 bench/compare.py --configs nano baby gpt2 --precisions bf16
                                                         # bf16 mixed precision on both sides

For each config and thread count it starts a step server for attograd (build/bench/train_bench
--serve) and one for every PyTorch variant (bench/torch_reference.py --serve), then asks them in
turn for the same number of steps, A B A B ..., so that all see the same machine weather; the
ratio is the median PyTorch ms/step over the median attograd ms/step (> 1: attograd faster).

PyTorch gets its best CPU settings, and the table proves it:
- its variants, the allocator (jemalloc with MALLOC_CONF=dirty_decay_ms:-1,muzzy_decay_ms:-1, or
  glibc's malloc: jemalloc without that setting made PyTorch 3.7x slower on this kind of machine)
  times AdamW's path (foreach on or off), all start and run side by side for a few turns, and
  the fastest is the one measured (--torch-variant picks one instead); the table names it;
- passive OpenMP waiting, and OpenBLAS with its AVX-512 kernels (this machine's
  OPENBLAS_CORETYPE=Haswell and OPENBLAS_L2_SIZE are removed from its environment) with
  OPENBLAS_NUM_THREADS set to the thread count (else OpenBLAS uses both cores in a "1 thread" run);
- each PyTorch server measures its own matmul rate and OpenBLAS's in the same process at one
  GPT-2 shape, and the table prints both: when PyTorch's is below 75% of OpenBLAS's, PyTorch is
  not at its best and the row prints no ratio (exit status 1), rather than a flattering one.
attograd runs with its thread pool's defaults.

--precisions f32 bf16 (the default) adds a bf16 row after each f32 one: attograd's train_bench
--mixed-precision bf16 (its Linear, matmul and lm_head products with bf16 operands and f32
sums; attention, layer norm, the loss, the weights, gradients and AdamW f32) against PyTorch's
step with forward and loss under torch.autocast("cpu", dtype=torch.bfloat16) (f32 master weights
and AdamW; bf16 Linear layers and attention products with bf16 outputs: PyTorch's recommended
CPU mixed precision), raced and measured as the f32 rows are. The GEMM column then also names
PyTorch's bf16 torch.mm rate, the kernel its autocast Linear layers run; the refusal rule stays
on the f32 rates, which tell whether PyTorch's set-up is at its best.

Every row also states both sides' rates as a share of the machine's limit: train_bench --peak
measures the core's f32 FMA peak, its bf16 dot-product peak (vdpbf16ps, where the CPU has
AVX512-BF16) and its AMX peak (tdpbf16ps, where the CPU has AMX-BF16) at each thread count in the
same run (bench/peak.h), before the rows and again after them, and the step's FLOPs are
gpt_flops_per_token's (train_bench's flops_per_step: 6 per parameter of the products and the
attention scores, per token). A f32 row is a share of the FMA peak, a bf16 row of the fastest
bf16 unit the CPU has, the one both sides' bf16 products run on (oneDNN's and attograd's alike
take AMX where it is): AMX, else vdpbf16ps, else the FMA.

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
# The training step's precisions: train_bench --mixed-precision's names (autograd/autocast.h's
# kMatmulPrecisionNames); bf16 is torch.autocast on PyTorch's side.
PRECISIONS = ["f32", "bf16"]
SHAPES = {  # (V, L, H, C, T, B), as in train_bench.cc and torch_reference.py
    "femto": (65, 1, 1, 2, 16, 32),
    "pico": (65, 3, 3, 6, 32, 32),
    "nano": (65, 4, 4, 128, 64, 16),
    "baby": (65, 6, 6, 384, 256, 8),
    "gpt2": (50257, 12, 12, 768, 64, 4),
}
JEMALLOC = "/usr/lib/x86_64-linux-gnu/libjemalloc.so.2"
# jemalloc returns freed pages to the kernel after 10 s by default (dirty, then muzzy decay);
# PyTorch frees and reallocates its activations every step, so every step page-faults them back.
JEMALLOC_CONF = "dirty_decay_ms:-1,muzzy_decay_ms:-1"
# PyTorch's matmul below this fraction of OpenBLAS's rate in the same process: no ratio.
MIN_TORCH_GEMM_FRACTION = 0.75


class Server:
    def __init__(self, argv, env):
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)
        self.header = self.proc.stdout.readline().strip()
        if not self.header.startswith("ready"):
            raise RuntimeError(f"{argv[0]} did not start: {self.header!r}")

    def info(self):
        """The header's "key value" pairs after "ready NAME", e.g. {"params": "809856", ...}."""
        words = self.header.split()[2:]
        return dict(zip(words[0::2], words[1::2]))

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
    """attograd's environment and PyTorch's base one (without its allocator) for `threads`."""
    base = {k: v for k, v in os.environ.items()
            if k not in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE", "OMP_WAIT_POLICY", "GOMP_SPINCOUNT",
                         "LD_PRELOAD", "MALLOC_CONF")}
    ours = dict(base)  # attograd's threads are its own pool's (autograd/kernels/thread_pool.h)
    # PyTorch: passive OpenMP, and OpenBLAS (which runs its own threads, 2 by default here) held
    # to the same thread count.
    theirs = dict(base, OMP_WAIT_POLICY="passive", OPENBLAS_NUM_THREADS=str(threads))
    return ours, theirs


def torch_variants(choice, precision="f32"):
    """The PyTorch variants to try: (name, extra environment, torch_reference.py arguments), for
    the step in `precision` (bf16: under torch.autocast)."""
    allocators = [("glibc", {})]
    if os.path.exists(JEMALLOC):
        allocators.insert(0, ("jemalloc", {"LD_PRELOAD": JEMALLOC, "MALLOC_CONF": JEMALLOC_CONF}))
    elif not (choice or "").startswith("glibc"):
        # Without jemalloc the race would crown a glibc variant and call it PyTorch's best: on a
        # fresh Zen 5 VM (2026-12-06) that made baby's PyTorch step 1,499 ms against jemalloc's
        # 1,169 ms the day before, and the ratio 1.85x instead of about 1.1x.
        sys.exit(f"compare.py: jemalloc is not installed ({JEMALLOC} is missing), and PyTorch's "
                 "fastest variant on these machines uses it, so a ratio without it would flatter "
                 "attograd. Install it (apt-get install libjemalloc2), or pass --torch-variant "
                 "glibc+foreach-on (or -off) to measure glibc's malloc alone, knowingly.")
    autocast = ["--autocast", "bf16"] if precision == "bf16" else []
    variants = [(f"{name}+foreach-{fe}", env, ["--foreach", fe] + autocast)
                for name, env in allocators for fe in ("on", "off")]
    if choice:
        variants = [v for v in variants if v[0] == choice]
        if not variants:
            sys.exit(f"compare.py: --torch-variant {choice} is not available here (jemalloc at {JEMALLOC}?)")
    return variants


def turns(servers, k, rounds):
    """Each server's (median seconds per step, median allocations per step, last peak RSS MiB)
    over `rounds` turns of k steps, A B C A B C ..."""
    results = [[] for _ in servers]
    for _ in range(rounds):
        for i, server in enumerate(servers):
            results[i].append(server.steps(k))
    return [(statistics.median(r[0] for r in rs), statistics.median(r[1] for r in rs), rs[-1][2])
            for rs in results]


def measure_peak(bench, threads, seconds=1.0):
    """train_bench --peak: {"f32_fma_gflops": ..., "f64_fma_gflops": ..., "bf16_dot_gflops": ...,
    "amx_bf16_gflops": ..., "target": "AVX3"} at `threads` threads."""
    env, _ = environments(threads)
    out = subprocess.run([str(bench), "--peak", "--threads", str(threads), "--peak-seconds", str(seconds)],
                         capture_output=True, text=True, env=env, check=True).stdout.split()
    if out[:1] != ["peak"]:
        raise RuntimeError(f"{bench} --peak printed {out!r}")
    values = dict(zip(out[3::2], out[4::2]))
    return {k: (v if k == "target" else float(v)) for k, v in values.items()}


def machine_line(bench):
    """`bench --machine`: the line naming this CPU (bench/machine.h), which every benchmark prints
    first, since the VMs change CPU between sessions under the same model name."""
    return subprocess.run([str(bench), "--machine"], capture_output=True, text=True, check=True).stdout.strip()


def peak_for(peak, precision):
    """The limit a row is a share of: the FMA peak for f32; for bf16 the AMX peak where the CPU has
    AMX, else the bf16 dot peak (vdpbf16ps), else the FMA peak."""
    if precision == "bf16":
        for unit in ("amx_bf16_gflops", "bf16_dot_gflops"):
            if peak.get(unit, 0) > 0:
                return peak[unit]
    return peak["f32_fma_gflops"]


def measure(config, threads, rounds, bench, seconds_per_round, variant=None, precision="f32"):
    ours_env, torch_env = environments(threads)
    ours = Server([str(bench), "--serve", config, "--threads", str(threads), "--mixed-precision", precision],
                  ours_env)
    candidates = []
    try:
        for name, env, argv in torch_variants(variant, precision):
            candidates.append((name, Server([sys.executable, str(ROOT / "bench" / "torch_reference.py"), "--serve",
                                             config, "--threads", str(threads)] + argv, dict(torch_env, **env))))
        # Warm-up (caches, allocators, threads), and a step count that makes each turn
        # last about seconds_per_round.
        a, _, _ = ours.steps(3)
        warm = [server.steps(3)[0] for _, server in candidates]
        k = max(1, int(seconds_per_round / max([a] + warm + [1e-6])))
        tried = ""
        if len(candidates) > 1:
            # The variants' race: a few shorter turns side by side, then the fastest stays.
            probe = [t for t, _, _ in turns([s for _, s in candidates], max(1, k // 2), 3)]
            tried = ", ".join(f"{n} {1e3 * t:.3g}" for (n, _), t in zip(candidates, probe))
            best = min(range(len(candidates)), key=lambda i: probe[i])
            for i, (_, server) in enumerate(candidates):
                if i != best:
                    server.close()
            candidates = [candidates[best]]
        name, theirs = candidates[0]
        (a_time, allocs, rss_a), (b_time, _, rss_b) = turns([ours, theirs], k, rounds)
        info = theirs.info()
        return {
            "ours_ms": 1e3 * a_time, "torch_ms": 1e3 * b_time,
            "allocs": allocs, "rss_ours": rss_a, "rss_torch": rss_b, "steps": k,
            "header": ours.header.split(), "variant": name, "tried": tried,
            "torch_gemm": float(info["torch_gemm_gflops"]), "blas_gemm": float(info["openblas_gemm_gflops"]),
            "torch_bf16_gemm": float(info.get("torch_bf16_gemm_gflops", "nan")),
        }
    finally:
        ours.close()
        for _, server in candidates:
            server.close()


def measure_generation(threads, rounds, bench, seconds_per_round):
    """The --generate pair: attograd's generate_bench against torch_generate.py (glibc malloc and
    jemalloc are not raced here: a decode step allocates little)."""
    ours_env, torch_env = environments(threads)
    if os.path.exists(JEMALLOC):
        torch_env = dict(torch_env, LD_PRELOAD=JEMALLOC, MALLOC_CONF=JEMALLOC_CONF)
    ours = Server([str(bench), "--serve", "gpt2", "--threads", str(threads)], ours_env)
    theirs = Server([sys.executable, str(ROOT / "bench" / "torch_generate.py"), "--serve", "gpt2",
                     "--threads", str(threads)], torch_env)
    try:
        a, _, _ = ours.steps(3)
        b, _, _ = theirs.steps(3)
        k = max(1, int(seconds_per_round / max(a, b, 1e-6)))
        (a_time, allocs, _), (b_time, _, _) = turns([ours, theirs], k, rounds)
        return {"ours_ms": 1e3 * a_time, "torch_ms": 1e3 * b_time, "allocs": allocs,
                "header": ours.header.split()}
    finally:
        ours.close()
        theirs.close()


def compare_generation(args):
    """The --generate table: tokens/s of greedy decoding and the bandwidth bound."""
    print("| model | threads | attograd tokens/s | PyTorch tokens/s | ratio | bound tokens/s (GB/s read) | "
          "attograd % of bound | PyTorch % of bound | attograd new storage/token |")
    print("|---|---|---|---|---|---|---|---|---|")
    for threads in args.threads:
        r = measure_generation(threads, args.rounds, args.bench, args.seconds)
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
    ap.add_argument("--precisions", nargs="+", default=PRECISIONS, choices=PRECISIONS,
                    help="f32 rows, and bf16 mixed precision rows against torch.autocast (default both)")
    ap.add_argument("--rounds", type=int, default=7, help="A B pairs per config (default 7)")
    ap.add_argument("--seconds", type=float, default=1.0, help="length of one turn (default 1 s)")
    ap.add_argument("--generate", action="store_true", help="compare greedy decoding instead of training steps")
    ap.add_argument("--bench", help="the attograd server (default build/bench/train_bench, or generate_bench)")
    ap.add_argument("--torch-variant", choices=[f"{a}+foreach-{f}" for a in ("jemalloc", "glibc") for f in ("on", "off")],
                    help="measure this PyTorch variant only, instead of racing them all and keeping the fastest")
    args = ap.parse_args()
    args.bench = args.bench or str(ROOT / "build" / "bench" / ("generate_bench" if args.generate else "train_bench"))
    if not Path(args.bench).exists():
        sys.exit(f"compare.py: {args.bench} not found: build first (cmake --build build)")
    print(machine_line(args.bench))  # train_bench and generate_bench share bench_main's --machine
    if args.generate:
        return compare_generation(args)
    torch_variants(args.torch_variant)  # refuses before any run when PyTorch could not be at its best
    peaks = {t: measure_peak(args.bench, t) for t in args.threads}
    print("| model (V, L, H, C, T, B) | threads | precision | attograd ms/step | PyTorch ms/step | ratio | "
          "attograd GFLOP/s (of peak) | PyTorch GFLOP/s (of peak) | "
          "PyTorch variant | GEMM GFLOP/s PyTorch / OpenBLAS | attograd allocs/step | "
          "peak RSS attograd / PyTorch MiB |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    refused, races = [], []
    for config in args.configs:
        for threads in args.threads:
            for precision in args.precisions:
                r = measure(config, threads, args.rounds, args.bench, args.seconds, args.torch_variant, precision)
                shape = ", ".join(str(v) for v in SHAPES[config])
                ratio = f"{r['torch_ms'] / r['ours_ms']:.2f}x"
                header = dict(zip(r["header"][2::2], r["header"][3::2]))  # ready NAME params N flops_per_step F ...
                flops, limit = float(header["flops_per_step"]), peak_for(peaks[threads], precision)
                ours_rate, torch_rate = flops / r["ours_ms"] / 1e6, flops / r["torch_ms"] / 1e6
                rates = (f"{ours_rate:.1f} ({100 * ours_rate / limit:.0f}%) | "
                         f"{torch_rate:.1f} ({100 * torch_rate / limit:.0f}%)")
                where = f"{config} at {threads} thread(s) in {precision}"
                if r["blas_gemm"] > 0 and r["torch_gemm"] < MIN_TORCH_GEMM_FRACTION * r["blas_gemm"]:
                    refused.append(f"{where}: PyTorch's matmul ran at {r['torch_gemm']:.0f} GFLOP/s "
                                   f"against OpenBLAS's {r['blas_gemm']:.0f} in the same process")
                    ratio = "refused"
                if r["tried"]:
                    races.append(f"{where}: {r['tried']}")
                gemm = f"{r['torch_gemm']:.0f} / {r['blas_gemm']:.0f}"
                if precision == "bf16":
                    gemm = f"bf16 {r['torch_bf16_gemm']:.0f} (f32 {r['torch_gemm']:.0f}) / f32 {r['blas_gemm']:.0f}"
                print(f"| {config} ({shape}) | {threads} | {precision} | {r['ours_ms']:.3f} | {r['torch_ms']:.3f} | "
                      f"{ratio} | {rates} | {r['variant']} | {gemm} | {r['allocs']:g} | "
                      f"{r['rss_ours']:.0f} / {r['rss_torch']:.0f} |", flush=True)
    after = {t: measure_peak(args.bench, t) for t in args.threads}
    print("\nratio = PyTorch time / attograd time (> 1: attograd faster); medians of "
          f"{args.rounds} interleaved turns of about {args.seconds} s each, after PyTorch's variants "
          "raced and the fastest stayed. GEMM: each PyTorch server's own f32 matmul rate and OpenBLAS's "
          "(cblas_sgemm) in the same process, (256, 768) @ (768, 3072); in a bf16 row also PyTorch's "
          "torch.mm on bf16 operands, what its autocast Linear layers run.")
    print("of peak = the step's FLOPs (gpt_flops_per_token) per second over the machine's peak at that thread "
          "count, measured by train_bench --peak before the rows (f32 rows: FMA; bf16 rows: AMX where the CPU "
          "has it, else vdpbf16ps, else FMA). The peaks, GFLOP/s, before / after the rows:")
    for t in args.threads:
        b, a = peaks[t], after[t]
        print(f"  {t} thread(s), {b['target']}: f32 FMA {b['f32_fma_gflops']:.1f} / {a['f32_fma_gflops']:.1f}, "
              f"bf16 dot {b['bf16_dot_gflops']:.1f} / {a['bf16_dot_gflops']:.1f}, "
              f"AMX {b['amx_bf16_gflops']:.1f} / {a['amx_bf16_gflops']:.1f}")
    if races:
        print("PyTorch's variants, ms/step in the race (3 turns side by side):\n  " + "\n  ".join(races))
    if refused:
        print("no ratio where PyTorch is not at its best (below "
              f"{MIN_TORCH_GEMM_FRACTION:.0%} of OpenBLAS's rate):\n  " + "\n  ".join(refused), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
