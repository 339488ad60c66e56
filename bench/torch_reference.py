#!/usr/bin/python3
"""PyTorch's side of the training-step comparison (bench/compare.py runs it).

The same GPT-2 as attograd's (pre-LayerNorm blocks, tanh GELU, tied lm_head, learned positions,
dropout 0), the same configs, and the same step: zero_grad, forward, cross-entropy, backward,
clip_grad_norm_(1.0), AdamW (betas 0.9 / 0.95, weight decay 0.1 on the 2-D weights only).
PyTorch runs in its best CPU settings here: the caller (bench/compare.py) sets the allocator
(jemalloc with its decay disabled, or glibc's malloc) and OMP_WAIT_POLICY=passive, OpenBLAS uses
its AVX-512 kernels (OPENBLAS_CORETYPE unset), and --foreach chooses AdamW's CPU path: the
multi-tensor (foreach) one or the per-tensor loop. compare.py starts every variant, times them
side by side and keeps the fastest; which one wins depends on the model and the day (issue 7
saw foreach ahead below a million parameters, the loop above).

    /usr/bin/python3 bench/torch_reference.py --serve nano --threads 1 --foreach off
    /usr/bin/python3 bench/torch_reference.py --serve nano --autocast bf16

prints "ready nano params N foreach off torch_gemm_gflops X openblas_gemm_gflops Y", where X and
Y are this process's own matmul rates at one GPT-2 shape (gemm_rates below), then answers
"steps K" on stdin with the seconds K steps took; "quit" ends: the protocol of
bench/train_bench.cc's --serve mode.

With --autocast bf16 the step's forward and loss run under torch.autocast("cpu",
dtype=torch.bfloat16), PyTorch's recommended CPU mixed precision: the parameters (master
weights), their gradients and AdamW stay f32, the Linear layers and matmuls (attention's two
products included) run in bf16 with bf16 outputs, and backward runs outside the context, as
PyTorch's AMP examples have it. The header then adds "autocast bf16 torch_bf16_gemm_gflops Z":
Z is torch.mm's rate on bf16 operands at the same shape (oneDNN's bf16 kernel where PyTorch has
it), the product autocast's Linear layers run. attograd's side is train_bench --mixed-precision
bf16 (autograd/autocast.h): its products take bf16 operands and give f32 outputs, and its
attention stays f32.
"""
import contextlib
import argparse
import ctypes
import math
import resource
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

# (vocab_size, n_layer, n_head, n_embd, T, B): the five configs of issue 7, as in train_bench.cc.
CONFIGS = {
    "femto": (65, 1, 1, 2, 16, 32),
    "pico": (65, 3, 3, 6, 32, 32),
    "nano": (65, 4, 4, 128, 64, 16),
    "baby": (65, 6, 6, 384, 256, 8),
    "gpt2": (50257, 12, 12, 768, 64, 4),
}


class Block(nn.Module):
    def __init__(self, n_embd, n_head, T):
        super().__init__()
        self.n_head = n_head
        self.ln_1 = nn.LayerNorm(n_embd)
        self.c_attn = nn.Linear(n_embd, 3 * n_embd)
        self.attn_proj = nn.Linear(n_embd, n_embd)
        self.ln_2 = nn.LayerNorm(n_embd)
        self.c_fc = nn.Linear(n_embd, 4 * n_embd)
        self.mlp_proj = nn.Linear(4 * n_embd, n_embd)
        self.register_buffer("mask", torch.tril(torch.ones(T, T, dtype=torch.bool)))

    def attention(self, x):
        B, T, C = x.shape
        q, k, v = self.c_attn(x).split(C, dim=2)
        q, k, v = (t.view(B, T, self.n_head, C // self.n_head).transpose(1, 2) for t in (q, k, v))
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = att.masked_fill(~self.mask[:T, :T], float("-inf")).softmax(dim=-1)
        y = (att @ v).transpose(1, 2).contiguous().view(B, T, C)
        return self.attn_proj(y)

    def forward(self, x):
        x = x + self.attention(self.ln_1(x))
        return x + self.mlp_proj(F.gelu(self.c_fc(self.ln_2(x)), approximate="tanh"))


class GPT(nn.Module):
    def __init__(self, V, L, H, C, T):
        super().__init__()
        self.wte = nn.Embedding(V, C)
        self.wpe = nn.Embedding(T, C)
        self.h = nn.ModuleList(Block(C, H, T) for _ in range(L))
        self.ln_f = nn.LayerNorm(C)
        for p in self.parameters():
            if p.dim() >= 2:
                nn.init.normal_(p, std=0.02)

    def forward(self, idx, targets):
        x = self.wte(idx) + self.wpe(torch.arange(idx.size(1)))
        for block in self.h:
            x = block(x)
        logits = self.ln_f(x) @ self.wte.weight.t()
        return F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))


# The GEMM both rates are measured at: GPT-2 small's c_fc at B T = 256, (256, 768) @ (768, 3072).
GEMM_M, GEMM_K, GEMM_N = 256, 768, 3072


def best_rate(call, seconds):
    """GFLOP/s of call() at the GEMM shape, best of repeated calls for about `seconds`."""
    call()  # warm-up: packing buffers, threads
    fastest, deadline = math.inf, time.perf_counter() + seconds
    while time.perf_counter() < deadline:
        start = time.perf_counter()
        call()
        fastest = min(fastest, time.perf_counter() - start)
    return 2.0 * GEMM_M * GEMM_K * GEMM_N / fastest / 1e9


def bf16_gemm_rate(seconds=0.3):
    """torch.mm's rate on bf16 operands at the GEMM shape, in GFLOP/s: what autocast's Linear
    layers run."""
    a = torch.randn(GEMM_M, GEMM_K, dtype=torch.bfloat16)
    b = torch.randn(GEMM_K, GEMM_N, dtype=torch.bfloat16)
    c = torch.empty(GEMM_M, GEMM_N, dtype=torch.bfloat16)
    return best_rate(lambda: torch.mm(a, b, out=c), seconds)


def gemm_rates(threads, seconds=0.3):
    """This process's f32 matmul rates in GFLOP/s, best of repeated calls for about `seconds`
    each: PyTorch's own (torch.mm, as its Linear layers run) and OpenBLAS's cblas_sgemm called
    directly through the same loaded library with the same thread count. The two should agree
    within noise when PyTorch is set up well; compare.py refuses a ratio when they do not.
    OpenBLAS's rate is None when libopenblas.so.0 cannot be loaded."""
    a = torch.randn(GEMM_M, GEMM_K)
    b = torch.randn(GEMM_K, GEMM_N)
    c = torch.empty(GEMM_M, GEMM_N)
    torch_rate = best_rate(lambda: torch.mm(a, b, out=c), seconds)
    try:
        blas = ctypes.CDLL("libopenblas.so.0")
    except OSError:
        return torch_rate, None
    blas.openblas_set_num_threads(ctypes.c_int(threads))
    ptr = ctypes.POINTER(ctypes.c_float)
    pa, pb, pc = (ctypes.cast(t.data_ptr(), ptr) for t in (a, b, c))
    row_major, no_trans = 101, 111  # CblasRowMajor, CblasNoTrans
    one, zero = ctypes.c_float(1.0), ctypes.c_float(0.0)
    blas_rate = best_rate(lambda: blas.cblas_sgemm(row_major, no_trans, no_trans, GEMM_M, GEMM_N, GEMM_K, one, pa,
                                                   GEMM_K, pb, GEMM_N, zero, pc, GEMM_N), seconds)
    return torch_rate, blas_rate


def main():
    args = serve_args(__doc__, CONFIGS, foreach=True)
    torch.manual_seed(1337)
    V, L, H, C, T, B = CONFIGS[args.serve]
    model = GPT(V, L, H, C, T)
    params = sum(p.numel() for p in model.parameters())
    decay = [p for p in model.parameters() if p.dim() >= 2]
    rest = [p for p in model.parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": rest, "weight_decay": 0.0}],
                            lr=3e-4, betas=(0.9, 0.95), eps=1e-8, foreach=args.foreach == "on")
    data = torch.randint(0, V, (max(100000, 20 * T * B),))

    def autocast():
        if args.autocast == "bf16":
            return torch.autocast("cpu", dtype=torch.bfloat16)
        return contextlib.nullcontext()

    def step():
        starts = torch.randint(0, data.numel() - T - 1, (B,))
        x = torch.stack([data[s:s + T] for s in starts])
        y = torch.stack([data[s + 1:s + T + 1] for s in starts])
        opt.zero_grad(set_to_none=True)
        with autocast():
            loss = model(x, y)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()

    def steps(k):
        start = time.perf_counter()
        for _ in range(k):
            step()
        return time.perf_counter() - start

    torch_gflops, blas_gflops = gemm_rates(args.threads)
    bf16 = f" autocast bf16 torch_bf16_gemm_gflops {bf16_gemm_rate():.1f}" if args.autocast == "bf16" else ""
    print(f"ready {args.serve} params {params} foreach {args.foreach} torch_gemm_gflops {torch_gflops:.1f} "
          f"openblas_gemm_gflops {-1 if blas_gflops is None else round(blas_gflops, 1)}{bf16}", flush=True)
    return serve_steps("torch_reference", steps)


def serve_args(doc, configs, foreach=False):
    """Parses "--serve NAME --threads N" (NAME a key of configs), and "--foreach on|off" and
    "--autocast off|bf16" when foreach is True (the training server), and sets PyTorch's thread
    count."""
    ap = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--serve", required=True, choices=sorted(configs))
    ap.add_argument("--threads", type=int, default=1)
    if foreach:
        ap.add_argument("--foreach", choices=["on", "off"], default="off",
                        help="AdamW's multi-tensor path (on) or its per-tensor loop (off)")
        ap.add_argument("--autocast", choices=["off", "bf16"], default="off",
                        help='forward and loss under torch.autocast("cpu", dtype=torch.bfloat16)')
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    return args


def serve_steps(program, run):
    """The serve loop (bench/bench_main.h's protocol): each "steps K" line on stdin gets
    "<seconds> allocs -1 rss_mib <MiB>", with seconds = run(K); "quit" or the end of input returns
    0, a malformed line 2."""
    for line in sys.stdin:
        words = line.split()
        if words == ["quit"]:
            break
        if len(words) != 2 or words[0] != "steps" or not words[1].isdigit() or int(words[1]) < 1:
            print(f"{program}: expected 'steps K' (K >= 1) or 'quit'", file=sys.stderr)
            return 2
        secs = run(int(words[1]))
        rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(f"{secs:.9f} allocs -1 rss_mib {rss:.1f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
