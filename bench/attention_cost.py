#!/usr/bin/python3
"""The T×T cost of attention, measured: time of one head against T, beside the T² it should follow.

    /usr/bin/python3 bench/attention_cost.py                     # runs/figures/attention_cost.{csv,svg}
    TIMINGS=1 bash scripts/figures.sh                            # docs/figures/attention_cost.svg

Runs build/bench/kernels_bench's attention benchmarks (the fused causal attention kernel the model
trains with, one head of head_dim 64, 1 thread, float32, T = 8 ... 1024), three repetitions each,
and keeps the median CPU time of the forward and of forward + backward. The CSV holds them with
the model's count of the two products' FLOPs, 4 T² head_dim (docs/03-attention.md); the SVG draws
both times on log-log axes with a line through the T = 1024 point of slope 2 (time ∝ T²), so the
quadratic regime shows as the curve becoming parallel to it.

A timing, so scripts/figures.sh remakes it only when asked (TIMINGS=1): its numbers change with
the machine and its load, and every other figure is remade byte for byte (docs/03-attention.md
says which run made the committed one).
"""
import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
HEAD_DIM = 64


def measure(bench, json_path):
    env = {k: v for k, v in os.environ.items() if k not in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")}
    # The report goes to a file: the program prints its SIMD target on stdout first.
    subprocess.run([bench, "--benchmark_filter=^attention/f32/hs64/", "--benchmark_repetitions=3",
                    "--benchmark_report_aggregates_only=true", f"--benchmark_out={json_path}",
                    "--benchmark_out_format=json"], env=env, capture_output=True, text=True, check=True)
    out = Path(json_path).read_text()
    times = {}  # (T, "forward" | "forward+backward") -> median CPU µs
    for b in json.loads(out)["benchmarks"]:
        if b.get("aggregate_name") != "median":
            continue
        # attention/f32/hs64/T<T>/<what>/real_time_median
        parts = b["run_name"].split("/")
        T, what = int(parts[3][1:]), parts[4]
        scale = {"ns": 1e-3, "us": 1.0, "ms": 1e3}[b["time_unit"]]
        times[(T, what)] = b["cpu_time"] * scale
    lengths = sorted({T for T, _ in times})
    if not lengths:
        sys.exit(f"attention_cost.py: {bench} ran no attention benchmark")
    return [(T, times[(T, "forward")], times[(T, "forward+backward")]) for T in lengths]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bench", default=str(ROOT / "build" / "bench" / "kernels_bench"),
                    help="the kernels benchmark (default build/bench/kernels_bench)")
    ap.add_argument("--out", default=str(ROOT / "runs" / "figures"), help="folder of the SVG")
    ap.add_argument("--work", default=str(ROOT / "runs" / "figures"),
                    help="folder of the data: the benchmark's JSON and the CSV")
    args = ap.parse_args()
    if not Path(args.bench).exists():
        sys.exit(f"attention_cost.py: {args.bench} not found: build it (cmake --build build --target kernels_bench)")
    out, work = Path(args.out), Path(args.work)
    out.mkdir(parents=True, exist_ok=True)
    work.mkdir(parents=True, exist_ok=True)
    rows = measure(args.bench, work / "attention_cost.json")
    csv = work / "attention_cost.csv"
    with open(csv, "w") as f:
        f.write("T,forward_us,forward_backward_us,flops_qk_av\n")
        for T, fwd, both in rows:
            f.write(f"{T},{fwd:.4g},{both:.4g},{4 * T * T * HEAD_DIM}\n")
    T_max, fwd_max, both_max = rows[-1]
    script = f"""set terminal svg size 640,420 font "sans,12" background rgb "white"
set output '{out / "attention_cost.svg"}'
set datafile separator ","
set logscale xy 2
set xlabel "T (tokens in the context)"
set ylabel "CPU time per head (µs)"
set key top left
set grid
set title "Attention's T×T cost: one head, head\\\\_dim {HEAD_DIM}, 1 thread"
plot '{csv}' using 1:3 skip 1 with linespoints title "forward + backward", \\
     '{csv}' using 1:2 skip 1 with linespoints title "forward", \\
     {both_max} * (x / {T_max})**2 with lines dashtype 2 title "∝ T² (through T = {T_max})"
"""
    subprocess.run(["gnuplot"], input=script, text=True, check=True)
    for T, fwd, both in rows:
        print(f"T {T:5d}: forward {fwd:9.2f} µs, forward + backward {both:9.2f} µs")
    print(f"wrote {csv} and {out / 'attention_cost.svg'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
