#!/usr/bin/python3
"""Time to loss: attograd's `train` against nanoGPT's own train.py, the same run, interleaved,
and both final models' loss on the whole val split, measured by one code path.

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
      --max_iters=2000 --lr_decay_iters=2000 --dropout=0.0 --always_save_checkpoint=True

(4 layers, 4 heads, n_embd 128, block 64, batch 12, lr 1e-3 -> 1e-4 after 100 warmup steps, AdamW
betas 0.9 / 0.99, weight decay 0.1 on the 2-D weights, clip 1.0, eval every 250 steps on 20 batches;
a checkpoint at every evaluation, so that ckpt.pt holds the last one's weights). On attograd's side
it is nanoGPT's model too: `--no-bias` (nanoGPT's bias = False). Read side by side, the two agree in
everything else that decides the loss: the init (N(0, 0.02²), both residual projections N(0, (0.02 /
sqrt(2 n_layer))²), wte tied to the head, LayerNorm 1), the learning rate at every step (nanoGPT's
get_lr is nn::cosine_lr), AdamW as torch computes it (eps 1e-8, decoupled decay on every 2-D tensor,
embeddings included, none on LayerNorm gains), the clipping factor 1 / (norm + 1e-6), batches of
uniform random windows of the train split, the loss at step 0 (attograd's 4.1674, nanoGPT's lines
4.1676 and 4.1649; ln 65 = 4.1744). The one difference left in the model: nanoGPT's MLP computes the
exact GELU (erf), attograd GPT-2's tanh approximation (0.0001 nats or less on the final models,
below). (nanoGPT takes one step more after its last evaluation, which its ckpt.pt does not hold.)
--mixed-precision bf16 runs attograd's products in bf16 (train --mixed-precision bf16: AMX or
AVX512-BF16 where the CPU has them), while nanoGPT's train.py on the CPU runs f32 whatever its dtype
setting says (it enters no autocast on the CPU).

Round r of each thread count runs both with seed --first-seed + r (default 1337, nanoGPT's own:
round 0 is nanoGPT's run as its README gives it). nanoGPT has no seed option, so train.py runs
under a small wrapper that adds the offset to its one torch.manual_seed call (SEEDED_TRAIN);
attograd gets it as --seed and --init-seed.

The loss, measured the same way. Each side's val lines are estimates on 20 random batches (12 x 64
tokens), different batches on the two sides, and their error is larger than the difference sought:
on 8 seeds (2026-12-06) the estimate at step 2,000 missed the whole split's loss by 0.015 to 0.020
(sd), so a comparison of two such lines, or of their minima, says little. After each round both
final models (step 2,000) are therefore scored on the whole val split by one code path, `attograd
eval --hf-gpt2 FILE --ids val_ids.txt`: attograd's checkpoint goes through `attograd export`,
nanoGPT's ckpt.pt through bench/nanogpt_ckpt.py (GPT-2's names, Conv1D layout, zero biases), and
val_ids.txt holds nanoGPT's val.bin (the last 10% of the characters, 111,540 ids; attograd's own
split is the same, `attograd eval --checkpoint --corpus` gives the same loss to 9 digits). The
windows are eval's: consecutive, non-overlapping, 64 predictions each from an empty context (111,539
predictions). nanogpt_ckpt.py also scores nanoGPT's weights in its own model.py on the same windows,
with its erf GELU and with the tanh GELU attograd computes: the last column of the loss table, which
shows what the GELU costs and that the conversion is exact (nanoGPT's model.py with the tanh GELU
gives attograd eval's number to the 4 digits printed; 3e-8 apart in a check at 9 digits). The script
prints, per seed, both losses and their difference, then their means, standard deviations over the
seeds and the standard error of the difference of the means.

Measured 2026-12-06 (8 seeds, 1337 to 1344, --steps 2000; Zen 5, 2 vCPUs AMD EPYC, busy with
other builds; losses do not depend on the machine's load):

    /usr/bin/python3 bench/nanogpt.py --nanogpt /tmp/nanoGPT --corpus tinyshakespeare.txt \
      --rounds 4 --first-seed 1337        (and --first-seed 1341)

    same-split val loss      mean     sd over seeds   range
    nanoGPT                  1.9059   0.0088          1.8953 - 1.9212
    attograd --no-bias       1.9104   0.0079          1.8974 - 1.9216
    attograd with biases     1.9007   0.0079          1.8921 - 1.9163   (by hand, see docs)

attograd - nanoGPT: +0.0044 (standard error 0.0042), within the 0.01 asked; one seed's
difference ranged from -0.0062 to +0.0235, so one round cannot tell 0.01 apart. The 0.022 the
docs measured before (one seed, attograd with biases, 20-batch lines) was the two estimates'
errors: at seed 1337 nanoGPT's line read 1.8857 for a model of 1.8984, attograd's 1.9076 for one
of 1.9009.

Time. Each round runs nanoGPT, then attograd (A B A B ...). For each process the driver stamps
every line it prints with the wall time since the process started, so the whole run is counted:
start-up, data loading, evaluation, checkpoints, plots. Since both sides reach the same loss at
step 2,000 (above, within the seeds' noise), the time to nanoGPT's final loss is attograd's whole
run: "whole run ratio" = nanoGPT's wall time / attograd's, the median over rounds, is the summary
to read. The older columns remain: the target is the lowest 20-batch val line of nanoGPT's
round, time to loss is when each side's first line at or below it was printed, ratio = nanoGPT's
time / attograd's (> 1: attograd faster); and the times to the loss both runs' lines reach (the
higher of the two minima). Those lines are the noisy estimates above, so these two ratios move
with them (a minimum over noisy estimates is biased low).

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
SEED = 1337  # nanoGPT's torch.manual_seed(1337), attograd's --seed and --init-seed defaults


def nanogpt_args(steps):
    """nanoGPT README's CPU command, with `steps` iterations; and a checkpoint at every
    evaluation, so that ckpt.pt holds the weights of the last one (step `steps`), not of the one
    its 20 batches guessed best."""
    return ["config/train_shakespeare_char.py", "--device=cpu", "--compile=False", "--eval_iters=20",
            "--log_interval=1", "--block_size=64", "--batch_size=12", "--n_layer=4", "--n_head=4",
            "--n_embd=128", f"--max_iters={steps}", f"--lr_decay_iters={steps}", "--dropout=0.0",
            "--always_save_checkpoint=True"]


def attograd_args(steps, seed):
    """The same run in attograd's words: nanoGPT's model (no biases: its bias = False), its
    defaults written out (beta1 0.9, weight decay 0.1, clip 1.0), train_shakespeare_char.py's lr,
    min_lr, warmup and beta2, and the README's flags; `seed` for the weights and the batches."""
    return ["--n-layer", "4", "--n-head", "4", "--n-embd", "128", "--block-size", "64", "--dropout", "0",
            "--no-bias", "--batch-size", "12", "--steps", str(steps), "--lr", "1e-3", "--min-lr", "1e-4",
            "--warmup", "100", "--decay-steps", str(steps), "--beta1", "0.9", "--beta2", "0.99",
            "--weight-decay", "0.1", "--grad-clip", "1", "--eval-interval", "250", "--eval-iters", "20",
            "--log-interval", "1", "--seed", str(seed), "--init-seed", str(seed)]


# nanoGPT has no seed option: train.py calls torch.manual_seed(1337) once, and that one generator
# draws the initial weights, the batches and the evaluation batches. This wrapper, run in its
# place, adds an offset to that seed (0: nanoGPT's own run) and then runs train.py unchanged.
SEEDED_TRAIN = """import runpy, sys, torch
offset = int(sys.argv.pop(1))
manual_seed = torch.manual_seed
torch.manual_seed = lambda seed: manual_seed(seed + offset)
sys.argv[0] = "train.py"
runpy.run_path("train.py", run_name="__main__")
"""


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
    (work / "seeded_train.py").write_text(SEEDED_TRAIN)
    # The val split's ids as `attograd eval --ids` reads them: both final models are scored on
    # exactly the tokens nanoGPT's val.bin holds.
    (work / "val_ids.txt").write_text(" ".join(str(stoi[c]) for c in text[int(n * 0.9):]) + "\n")
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


def run_quietly(argv, what):
    """Runs argv to its end; its stdout, or the end of its output and exit when it fails."""
    out = subprocess.run([str(a) for a in argv], capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"nanogpt.py: {what} failed with status {out.returncode}:\n{(out.stdout + out.stderr)[-2000:]}")
    return out.stdout


def attograd_eval(attograd, weights, ids, n_head=None):
    """`attograd eval --hf-gpt2 weights --ids ids`: the mean loss over ids in consecutive,
    non-overlapping windows of block_size predictions (printed to 9 digits)."""
    out = run_quietly([attograd, "eval", "--hf-gpt2", weights, "--ids", ids] +
                      (["--n-head", n_head] if n_head else []), f"attograd eval of {weights}")
    m = re.search(r"^loss (\S+) nats/token$", out, re.M)
    if not m:
        sys.exit(f"nanogpt.py: no loss line in attograd eval's output:\n{out}")
    return float(m.group(1))


def same_split_losses(args, run_dir, nanogpt_out, ids, tmp):
    """Both final models scored the same way: attograd's checkpoint through `attograd export`,
    nanoGPT's ckpt.pt through bench/nanogpt_ckpt.py, both to GPT-2 safetensors files, both read
    by `attograd eval --hf-gpt2` over the whole val split. Returns (nanoGPT's, attograd's, and
    nanoGPT's in its own model.py with its erf GELU and with attograd's tanh GELU)."""
    run_quietly([args.attograd, "export", "--checkpoint", run_dir, "--out", tmp / "attograd_hf", "--overwrite"],
                "attograd export")
    out = run_quietly([sys.executable, ROOT / "bench" / "nanogpt_ckpt.py", "--nanogpt", args.nanogpt, "--ckpt",
                       nanogpt_out / "ckpt.pt", "--out", tmp / "nanogpt_hf", "--ids", ids], "nanogpt_ckpt.py")
    fields = dict(line.split(" ", 1) for line in out.splitlines()
                  if line.startswith(("iter_num ", "loss_gelu ", "loss_gelu_tanh ")))
    info = fields["iter_num"].split()  # "2000 n_head 4 block_size 64 bias False"
    if int(info[0]) != args.steps:
        sys.exit(f"nanogpt.py: nanoGPT's ckpt.pt is of step {info[0]}, not {args.steps}")
    nanogpt = attograd_eval(args.attograd, tmp / "nanogpt_hf" / "model.safetensors", ids, info[2])
    attograd = attograd_eval(args.attograd, tmp / "attograd_hf" / "model.safetensors", ids)
    return nanogpt, attograd, float(fields["loss_gelu"]), float(fields["loss_gelu_tanh"])


def val_predictions(work):
    """The predictions `attograd eval --ids` scores: one fewer than the val split's ids."""
    return f"{len((work / 'val_ids.txt').read_text().split()) - 1:,}"


def mean_sd(xs):
    """'mean +- sample standard deviation (n)', or the one value."""
    if len(xs) == 1:
        return f"{xs[0]:.4f} (1 seed)"
    return f"{statistics.mean(xs):.4f} +- {statistics.stdev(xs):.4f} (sd over {len(xs)} seeds)"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--nanogpt", required=True, type=Path, help="a copy of github.com/karpathy/nanoGPT")
    ap.add_argument("--corpus", required=True, type=Path, help="Tiny Shakespeare (char-rnn's input.txt)")
    ap.add_argument("--threads", type=int, nargs="+", default=[1])
    ap.add_argument("--rounds", type=int, default=3,
                    help="nanoGPT, attograd pairs per thread count (default 3), round r with seed --first-seed + r")
    ap.add_argument("--first-seed", type=int, default=SEED,
                    help=f"the first round's seed (default {SEED}, nanoGPT's own): attograd's --seed and --init-seed, "
                         f"nanoGPT's torch.manual_seed")
    ap.add_argument("--steps", type=int, default=2000,
                    help="iterations (default 2000, the README's; 250 for a quick check): a multiple of 250, "
                         "nanoGPT's eval_interval, whose last evaluation writes the ckpt.pt scored at the end")
    ap.add_argument("--busy", action="store_true", help="keep one competing busy process running throughout")
    ap.add_argument("--torch-allocator", choices=["jemalloc", "glibc"], default="jemalloc")
    ap.add_argument("--mixed-precision", choices=["f32", "bf16"], default="f32",
                    help="attograd's train --mixed-precision (default f32)")
    ap.add_argument("--attograd", default=str(ROOT / "build" / "cli" / "attograd"))
    ap.add_argument("--keep", type=Path, help="write both runs' stamped output here (default: a temporary folder)")
    args = ap.parse_args()
    if args.rounds < 1 or args.steps < 1 or min(args.threads) < 1:
        sys.exit("nanogpt.py: --rounds, --steps and --threads must be at least 1")
    if args.first_seed < 0:
        sys.exit("nanogpt.py: --first-seed must be at least 0")
    if args.steps % 250 != 0:
        sys.exit(f"nanogpt.py: --steps {args.steps} is not a multiple of 250: nanoGPT evaluates and writes its "
                 "ckpt.pt every 250 steps, and the final models of both must be of the same step")
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
            print("| threads | seed | nanoGPT s (to val, total) | nanoGPT best val | attograd s (to that val, total) | "
                  "attograd best val | ratio | loss both reach: nanoGPT s / attograd s, ratio | whole run ratio |")
            print("|---|---|---|---|---|---|---|---|---|")
            ratios, common_ratios, totals, losses = {}, {}, {}, {}
            for threads in args.threads:
                torch_env = torch_envs[threads]
                ours_env, _ = environments(threads)
                ratios[threads], common_ratios[threads], totals[threads], losses[threads] = [], [], [], []
                for r in range(args.rounds):
                    seed = args.first_seed + r
                    (tmp / "out" / "ckpt.pt").unlink(missing_ok=True)
                    with open(logs / f"nanogpt_t{threads}_s{seed}.log", "w") as log:
                        n_total, n_evals = run_stamped([sys.executable, "-u", "seeded_train.py", str(seed - SEED)] +
                                                       nanogpt_args(args.steps) + [f"--out_dir={tmp / 'out'}"],
                                                       work, torch_env, NANOGPT_EVAL, log)
                    with open(logs / f"attograd_t{threads}_s{seed}.log", "w") as log:
                        a_total, a_evals = run_stamped([args.attograd, "train", "--corpus", str(args.corpus),
                                                        "--out", str(tmp / "run"), "--overwrite", "--threads",
                                                        str(threads), "--mixed-precision", args.mixed_precision] +
                                                       attograd_args(args.steps, seed), ROOT, ours_env,
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
                    totals[threads].append(n_total / a_total)
                    print(f"| {threads} | {seed} | {n_time:.1f}, {n_total:.1f} | {target:.4f} | {a_cell} | "
                          f"{a_best:.4f} | {f'{ratio:.2f}x' if ratio else '-'} | {common:.4f}: {n_common:.1f} / "
                          f"{a_common:.1f}, {n_common / a_common:.2f}x | {n_total / a_total:.2f}x |", flush=True)
                    losses[threads].append((seed,) + same_split_losses(args, tmp / "run", tmp / "out",
                                                                       work / "val_ids.txt", tmp))
            print()
            print(f"Both final models (step {args.steps}) on the whole val split, scored by `attograd eval --hf-gpt2 "
                  f"--ids` (consecutive windows of 64 predictions, {val_predictions(work)} predictions):")
            print()
            print("| threads | seed | nanoGPT | attograd | attograd - nanoGPT | "
                  "nanoGPT in its model.py: erf GELU (as trained), tanh GELU |")
            print("|---|---|---|---|---|---|")
            for threads, rows in losses.items():
                for seed, n, a, own, own_tanh in rows:
                    print(f"| {threads} | {seed} | {n:.4f} | {a:.4f} | {a - n:+.4f} | {own:.4f}, {own_tanh:.4f} |")
            print()
            for threads, rows in losses.items():
                n = [row[1] for row in rows]
                a = [row[2] for row in rows]
                line = (f"{threads} thread(s), same-split val loss: nanoGPT {mean_sd(n)}, attograd {mean_sd(a)}; "
                        f"attograd - nanoGPT {statistics.mean(a) - statistics.mean(n):+.4f}")
                if len(rows) > 1:  # the standard error of a difference of two independent means
                    se = (statistics.variance(n) / len(n) + statistics.variance(a) / len(a)) ** 0.5
                    line += f" (standard error {se:.4f})"
                print(line)
            print()
            for threads, rs in ratios.items():
                print(f"{threads} thread(s): whole runs of {args.steps} steps, median ratio "
                      f"{statistics.median(totals[threads]):.2f}x (nanoGPT's wall time / attograd's; the time to "
                      f"nanoGPT's final loss when the same-split losses agree)")
                if rs:
                    print(f"{threads} thread(s): median ratio {statistics.median(rs):.2f}x over {len(rs)} of "
                          f"{args.rounds} rounds (nanoGPT's time to its lowest 20-batch val line / attograd's to the same)")
                else:
                    print(f"{threads} thread(s): attograd's 20-batch val lines never reached nanoGPT's lowest")
                print(f"{threads} thread(s): to the 20-batch val line both runs reach, median ratio "
                      f"{statistics.median(common_ratios[threads]):.2f}x")
            if args.keep:
                print(f"stamped output of every run: {logs}")
    finally:
        if busy:
            busy.kill()
    return 0


if __name__ == "__main__":
    sys.exit(main())
