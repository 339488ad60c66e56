#!/usr/bin/python3
"""PyTorch's side of the generation comparison (bench/compare.py --generate runs it).

The same GPT-2 as bench/torch_reference.py (its modules, GPT-2 small's shape: V 50257, 12 layers,
12 heads, n_embd 768, block 1024, random init) decoded greedily at batch 1 by a hand-written
KV-cache loop, written the fast way: the keys and values go into caches preallocated for the
whole block (slice assignment, no torch.cat), the lm_head runs on the last position only, and
everything runs under torch.inference_mode(). The prompt (8 random ids) is fed in one pass, then
one token per step; only the decode steps are timed, as in bench/generate_bench.cc.

    /usr/bin/python3 bench/torch_generate.py --serve gpt2 --threads 1

prints "ready ...", then answers "steps K" on stdin with the seconds of K decode steps (K + 1
tokens are generated after the prompt); "quit" ends: the protocol of generate_bench --serve.
"""
import math
import sys
import time

import torch
import torch.nn.functional as F

sys.dont_write_bytecode = True  # no __pycache__ folder beside this script from the import below
from torch_reference import GPT, serve_args, serve_steps  # noqa: E402

# (vocab_size, n_layer, n_head, n_embd, block_size, prompt): as kConfigs in generate_bench.cc.
CONFIGS = {
    "gpt2": (50257, 12, 12, 768, 1024, 8),
    "gpt2_long": (50257, 12, 12, 768, 1024, 960),
    "nano": (65, 4, 4, 128, 64, 4),
}


class Decoder:
    def __init__(self, V, L, H, C, T, prompt):
        torch.manual_seed(1337)
        self.model = GPT(V, L, H, C, T).eval()
        self.H, self.C, self.T = H, C, T
        self.prompt = torch.randint(0, V, (1, prompt))
        # (B, NH, block_size, HS) per layer, allocated once.
        self.k = [torch.empty(1, H, T, C // H) for _ in range(L)]
        self.v = [torch.empty(1, H, T, C // H) for _ in range(L)]

    def step(self, idx, pos):
        """Logits (V,) of the last of idx's positions pos .. pos + T - 1, caching their keys and values."""
        m, H, C = self.model, self.H, self.C
        B, T = idx.shape
        x = m.wte(idx) + m.wpe(torch.arange(pos, pos + T))
        for i, block in enumerate(m.h):
            q, k, v = block.c_attn(block.ln_1(x)).split(C, dim=2)
            q, k, v = (t.view(B, T, H, C // H).transpose(1, 2) for t in (q, k, v))
            self.k[i][:, :, pos:pos + T] = k
            self.v[i][:, :, pos:pos + T] = v
            keys, values = self.k[i][:, :, :pos + T], self.v[i][:, :, :pos + T]
            att = (q @ keys.transpose(-2, -1)) * (1.0 / math.sqrt(C // H))
            if T > 1:  # query t sees keys j <= pos + t
                att = att.masked_fill(~block.mask[pos:pos + T, :pos + T], float("-inf"))
            y = (att.softmax(dim=-1) @ values).transpose(1, 2).reshape(B, T, C)
            x = x + block.attn_proj(y)
            x = x + block.mlp_proj(F.gelu(block.c_fc(block.ln_2(x)), approximate="tanh"))
        return F.linear(m.ln_f(x[:, -1]), m.wte.weight)[0]

    def decode(self, steps):
        """Generates steps + 1 greedy tokens after the prompt; returns the seconds of the last steps."""
        n = self.prompt.size(1)
        if not 1 <= steps <= self.T - n - 1:
            raise ValueError(f"decode steps must be in [1, {self.T - n - 1}], got {steps}")
        with torch.inference_mode():
            token = self.step(self.prompt, 0).argmax()
            start = time.perf_counter()
            for pos in range(n, n + steps):
                token = self.step(token.view(1, 1), pos).argmax()
            token.item()
            return time.perf_counter() - start


def main():
    args = serve_args(__doc__, CONFIGS)
    d = Decoder(*CONFIGS[args.serve])
    params = sum(p.numel() for p in d.model.parameters())
    print(f"ready {args.serve} params {params}", flush=True)
    return serve_steps("torch_generate", d.decode)


if __name__ == "__main__":
    sys.exit(main())
