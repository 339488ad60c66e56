#!/usr/bin/python3
"""Time to loss: attograd's `train` against nanoGPT's own train.py, the same run, interleaved.

    /usr/bin/python3 bench/nanogpt.py --nanogpt ~/nanoGPT --corpus input.txt
    /usr/bin/python3 bench/nanogpt.py --nanogpt ~/nanoGPT --corpus input.txt --threads 2 --busy
    /usr/bin/python3 bench/nanogpt.py --nanogpt ~/nanoGPT --corpus input.txt --mixed-precision bf16

nanoGPT is not a dependency: give a copy of its repository (github.com/karpathy/nanoGPT) with
--nanogpt, and the character corpus its README trains on (Tiny Shakespeare, char-rnn's
input.txt) with --corpus. The script never changes that copy: it runs train.py from a scratch
folder that links to it, with data/shakespeare_char/ prepared as nanoGPT's prepare.py does
(sorted characters, the first 90% of the characters train, the rest validate; attograd's char
tokenizer and split give the same ids and the same split).

The run is nanoGPT README's CPU command, the same on both sides:

    python train.py config/train_shakespeare_char.py --device=cpu --compile=False --eval_iters=20
      --log_interval=1 --block_size=64 --batch_size=12 --n_layer=4 --n_head=4 --n_embd=128
      --max_iters=2000 --lr_decay_iters=2000 --dropout=0.0

(4 layers, 4 heads, n_embd 128, block 64, batch 12, lr 1e-3 -> 1e-4 after 100 warmup steps,
AdamW betas 0.9 / 0.99, weight decay 0.1, clip 1.0, eval every 250 steps on 20 batches, a
checkpoint when val improves). Differences that remain: nanoGPT's Linear and LayerNorm layers
have no biases (its bias = False), attograd's have; the two draw different random batches and
initial weights. --mixed-precision bf16 runs attograd's products in bf16 (train
--mixed-precision bf16: AMX or AVX512-BF16 where the CPU has them), while nanoGPT's train.py on
the CPU runs f32 whatever its dtype setting says (it enters no autocast on the CPU).

Each round runs nanoGPT, then attograd (A B A B ...). For each process the driver stamps every
line it prints with the wall time since the process started, so the whole run is counted:
start-up, data loading, evaluation, checkpoints, plots. The target is the lowest val loss
nanoGPT reached in that round; time to loss is when the first evaluation at or below it was
printed. ratio = nanoGPT's time to its loss / attograd's time to the same loss (> 1: attograd
faster), the median over rounds. The two models differ (above), so attograd may end a little
above nanoGPT's best; the last column therefore also compares the times to the loss both runs
reach (the higher of the two bests).

PyTorch runs at its proven best here (bench/compare.py races the variants; this script uses the
winner measured for nano on this kind of machine unless --torch-allocator says otherwise):
jemalloc with its page decay off, passive OpenMP, OpenBLAS with its AVX-512 kernels and the
same thread count, and OMP_NUM_THREADS set (nanoGPT does not call torch.set_num_threads). It
prints those settings and PyTorch's own GEMM rate beside OpenBLAS's, measured in a process with
that same environment.
"""
import argparse
import os
import pickle
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.dont_write_bytecode = True  # no __pycache__ folder beside this script from the import below
from compare import JEMALLOC, JEMALLOC_CONF, MIN_TORCH_GEMM_FRACTION, environments  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent


def nanogpt_args(steps):
    """nanoGPT README's CPU command, with `steps` iterations."""
    return ["config/train_shakespeare_char.py", "--device=cpu", "--compile=False", "--eval_iters=20",
            "--log_interval=1", "--block_size=64", "--batch_size=12", "--n_layer=4", "--n_head=4",
            "--n_embd=128", f"--max_iters={steps}", f"--lr_decay_iters={steps}", "--dropout=0.0"]


def attograd_args(steps):
    """The same run in attograd's words (nanoGPT's defaults written out: beta1 0.9, weight decay
    0.1, clip 1.0; train_shakespeare_char.py's lr, min_lr, warmup and beta2; the README's flags)."""
    return ["--n-layer", "4", "--n-head", "4", "--n-embd", "128", "--block-size", "64", "--dropout", "0",
            "--batch-size", "12", "--steps", str(steps), "--lr", "1e-3", "--min-lr", "1e-4", "--warmup", "100",
            "--decay-steps", str(steps), "--beta1", "0.9", "--beta2", "0.99", "--weight-decay", "0.1",
            "--grad-clip", "1", "--eval-interval", "250", "--eval-iters", "20", "--log-interval", "1"]


NANOGPT_EVAL = re.compile(r"^step (\d+): train loss ([\d.]+), val loss ([\d.]+)")
ATTOGRAD_EVAL = re.compile(r"^eval at step (\d+): train loss ([\d.]+) .*val loss ([\d.]+)")


def prepare_nanogpt(nanogpt, corpus, work):
    """A scratch folder that runs nanoGPT's train.py: links to its sources, and
    data/shakespeare_char/{train,val}.bin and meta.pkl written as its prepare.py writes them."""
    for name in ("train.py", "model.py", "configurator.py", "config"):
        if not (nanogpt / name).exists():
            sys.exit(f"nanogpt.py: {nanogpt / name} not found: --nanogpt must be a copy of "
                     "github.com/karpathy/nanoGPT")
        (work / name).symlink_to(nanogpt / name)
    import numpy as np  # Debian's python3-numpy, which PyTorch needs anyway
    text = corpus.read_text(encoding="utf-8")
    chars = sorted(set(text))
    stoi = {c: i for i, c in enumerate(chars)}
    n = len(text)
    data = work / "data" / "shakespeare_char"
    data.mkdir(parents=True)
    np.array([stoi[c] for c in text[:int(n * 0.9)]], dtype=np.uint16).tofile(data / "train.bin")
    np.array([stoi[c] for c in text[int(n * 0.9):]], dtype=np.uint16).tofile(data / "val.bin")
    with open(data / "meta.pkl", "wb") as f:
        pickle.dump({"vocab_size": len(chars), "itos": dict(enumerate(chars)), "stoi": stoi}, f)
    return len(chars)


def torch_environment(threads, allocator):
    _, env = environments(threads)
    env["OMP_NUM_THREADS"] = str(threads)
    if allocator == "jemalloc":
        if not os.path.exists(JEMALLOC):
            sys.exit(f"nanogpt.py: {JEMALLOC} not found: install libjemalloc2 or pass --torch-allocator glibc")
        env.update(LD_PRELOAD=JEMALLOC, MALLOC_CONF=JEMALLOC_CONF)
    return env


def gemm_rates(env, threads):
    """PyTorch's and OpenBLAS's GEMM rates in a process with nanoGPT's environment."""
    code = ("import sys; sys.path.insert(0, %r); from torch_reference import gemm_rates; import torch; "
            "torch.set_num_threads(%d); print(*gemm_rates(%d))") % (str(ROOT / "bench"), threads, threads)
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    torch_rate, blas_rate = out.stdout.split()
    return float(torch_rate), (None if blas_rate == "None" else float(blas_rate))


def run_stamped(argv, cwd, env, pattern, log):
    """Runs argv, stamping each line of its output with seconds since start; returns
    (total seconds, [(seconds, step, val loss)] for each evaluation line matching pattern)."""
    start = time.perf_counter()
    evals = []
    with subprocess.Popen(argv, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True, bufsize=1) as proc:
        for line in proc.stdout:
            now = time.perf_counter() - start
            log.write(f"{now:9.3f} {line}")
            m = pattern.match(line)
            if m:
                evals.append((now, int(m.group(1)), float(m.group(3))))
    total = time.perf_counter() - start
    if proc.returncode != 0:
        log.flush()
        with open(log.name) as f:
            tail = "".join(f.readlines()[-15:])
        sys.exit(f"nanogpt.py: {argv[0]} failed with status {proc.returncode}; the end of its output "
                 f"(all of it with --keep DIR):\n{tail}")
    return total, evals


def time_to(evals, target):
    """Seconds until the first evaluation at or below target, or None."""
    return next((t for t, _, val in evals if val <= target + 1e-12), None)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--nanogpt", required=True, type=Path, help="a copy of github.com/karpathy/nanoGPT")
    ap.add_argument("--corpus", required=True, type=Path, help="Tiny Shakespeare (char-rnn's input.txt)")
    ap.add_argument("--threads", type=int, nargs="+", default=[1])
    ap.add_argument("--rounds", type=int, default=3, help="nanoGPT, attograd pairs per thread count (default 3)")
    ap.add_argument("--steps", type=int, default=2000,
                    help="iterations (default 2000, the README's; fewer for a quick check). nanoGPT evaluates "
                         "every 250 steps and attograd also at its last one: a multiple of 250 compares both at "
                         "the same steps")
    ap.add_argument("--busy", action="store_true", help="keep one competing busy process running throughout")
    ap.add_argument("--torch-allocator", choices=["jemalloc", "glibc"], default="jemalloc")
    ap.add_argument("--mixed-precision", choices=["f32", "bf16"], default="f32",
                    help="attograd's train --mixed-precision (default f32)")
    ap.add_argument("--attograd", default=str(ROOT / "build" / "cli" / "attograd"))
    ap.add_argument("--keep", type=Path, help="write both runs' stamped output here (default: a temporary folder)")
    args = ap.parse_args()
    if args.rounds < 1 or args.steps < 1 or min(args.threads) < 1:
        sys.exit("nanogpt.py: --rounds, --steps and --threads must be at least 1")
    # attograd runs from the repository's root and nanoGPT from a scratch folder: paths given
    # relative to where this script was started are made absolute first.
    args.corpus, args.nanogpt = args.corpus.resolve(), args.nanogpt.resolve()
    args.attograd = str(Path(args.attograd).resolve())
    if not args.corpus.is_file():
        sys.exit(f"nanogpt.py: --corpus {args.corpus} is not a file: give Tiny Shakespeare (char-rnn's input.txt)")
    if not Path(args.attograd).exists():
        sys.exit(f"nanogpt.py: {args.attograd} not found: build first (cmake --build build --target attograd_cli)")
    busy = subprocess.Popen(["sh", "-c", "while :; do :; done"]) if args.busy else None
    try:
        with tempfile.TemporaryDirectory(prefix="attograd_nanogpt_") as tmp:
            tmp = Path(tmp)
            logs = args.keep or tmp / "logs"
            logs.mkdir(parents=True, exist_ok=True)
            work = tmp / "nanogpt"
            work.mkdir()
            vocab = prepare_nanogpt(args.nanogpt, args.corpus, work)
            print(f"corpus {args.corpus} ({vocab} characters); nanoGPT at {args.nanogpt}; attograd "
                  f"--mixed-precision {args.mixed_precision}; "
                  f"{'one busy process running' if busy else 'no other load started'}")
            # PyTorch's settings and GEMM rate per thread count, printed before the table (an HTML
            # comment between a table's rows would end it in Markdown).
            torch_envs = {}
            for threads in args.threads:
                torch_env = torch_environment(threads, args.torch_allocator)
                torch_gemm, blas_gemm = gemm_rates(torch_env, threads)
                settings = (f"PyTorch {threads} thread(s): {args.torch_allocator}"
                            f"{' ' + JEMALLOC_CONF if args.torch_allocator == 'jemalloc' else ''}, "
                            f"OMP_WAIT_POLICY=passive, OMP_NUM_THREADS={threads}, OPENBLAS_NUM_THREADS={threads}; "
                            f"GEMM {torch_gemm:.0f} GFLOP/s PyTorch, "
                            f"{'?' if blas_gemm is None else f'{blas_gemm:.0f}'} OpenBLAS")
                print(f"<!-- {settings} -->", flush=True)
                if blas_gemm is not None and torch_gemm < MIN_TORCH_GEMM_FRACTION * blas_gemm:
                    sys.exit(f"nanogpt.py: PyTorch is not at its best here ({settings}): no comparison")
                torch_envs[threads] = torch_env
            print("| threads | round | nanoGPT s (to val, total) | nanoGPT best val | attograd s (to that val, total) | "
                  "attograd best val | ratio | loss both reach: nanoGPT s / attograd s, ratio |")
            print("|---|---|---|---|---|---|---|---|")
            ratios, common_ratios = {}, {}
            for threads in args.threads:
                torch_env = torch_envs[threads]
                ours_env, _ = environments(threads)
                ratios[threads], common_ratios[threads] = [], []
                for r in range(args.rounds):
                    with open(logs / f"nanogpt_t{threads}_r{r}.log", "w") as log:
                        n_total, n_evals = run_stamped([sys.executable, "-u", "train.py"] + nanogpt_args(args.steps) +
                                                       [f"--out_dir={tmp / 'out'}"], work, torch_env,
                                                       NANOGPT_EVAL, log)
                    with open(logs / f"attograd_t{threads}_r{r}.log", "w") as log:
                        a_total, a_evals = run_stamped([args.attograd, "train", "--corpus", str(args.corpus),
                                                        "--out", str(tmp / "run"), "--overwrite", "--threads",
                                                        str(threads), "--mixed-precision", args.mixed_precision] +
                                                       attograd_args(args.steps), ROOT, ours_env,
                                                       ATTOGRAD_EVAL, log)
                    if not n_evals or not a_evals:
                        # without --keep the logs go with the temporary folder when this exits
                        where = f"see the logs in {logs}" if args.keep else "rerun with --keep DIR to read both runs"
                        sys.exit(f"nanogpt.py: no evaluation lines read; {where}")
                    target = min(val for _, _, val in n_evals)
                    n_time, a_time = time_to(n_evals, target), time_to(a_evals, target)
                    a_best = min(val for _, _, val in a_evals)
                    ratio = n_time / a_time if a_time else None
                    if ratio:
                        ratios[threads].append(ratio)
                    common = max(target, a_best)
                    n_common, a_common = time_to(n_evals, common), time_to(a_evals, common)
                    common_ratios[threads].append(n_common / a_common)
                    a_cell = f"{a_time:.1f}, {a_total:.1f}" if a_time else f"not reached, {a_total:.1f}"
                    print(f"| {threads} | {r + 1} | {n_time:.1f}, {n_total:.1f} | {target:.4f} | {a_cell} | "
                          f"{a_best:.4f} | {f'{ratio:.2f}x' if ratio else '-'} | {common:.4f}: {n_common:.1f} / "
                          f"{a_common:.1f}, {n_common / a_common:.2f}x |", flush=True)
            print()
            for threads, rs in ratios.items():
                if rs:
                    print(f"{threads} thread(s): median ratio {statistics.median(rs):.2f}x over {len(rs)} of "
                          f"{args.rounds} rounds (nanoGPT's time to its best val loss / attograd's time to the same)")
                else:
                    print(f"{threads} thread(s): attograd never reached nanoGPT's val loss")
                print(f"{threads} thread(s): to the loss both runs reach, median ratio "
                      f"{statistics.median(common_ratios[threads]):.2f}x")
            if args.keep:
                print(f"stamped output of every run: {logs}")
    finally:
        if busy:
            busy.kill()
    return 0


if __name__ == "__main__":
    sys.exit(main())
