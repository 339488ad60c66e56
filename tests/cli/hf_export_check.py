#!/usr/bin/env python3
"""An independent reader of `attograd export`'s Hugging Face GPT-2 directory.

transformers is not installable here, so this script does what GPT2LMHeadModel.from_pretrained
relies on, with json, struct, numpy and torch only: it reads DIR/config.json alone for the
architecture, reads DIR/model.safetensors by hand (8-byte header length, JSON header, raw
little-endian bytes), checks that the file is what from_pretrained expects (metadata format
"pt", exactly the tensor names and shapes GPT2LMHeadModel.save_pretrained writes, Conv1D
weights (in, out), F32, no lm_head.weight since the head is tied), builds GPT-2 in torch from
those (token + learned position embeddings, pre-LayerNorm blocks, causal attention scaled by
1/sqrt(head_dim), GELU's tanh form, the head tied to wte), and compares its results with
attograd's:

  hf_export_check.py DIR IDS_FILE --loss L [--logits FILE]

IDS_FILE holds whitespace-separated token ids; the loss is the mean next-token loss of the
sequence cut into consecutive, non-overlapping windows of n_positions predictions, as
`attograd eval --ids` computes it, and must equal L within 1e-5. FILE holds the logits of the
first window, (T, vocab_size) little-endian float32, to match within 1e-5 x max(1, max|logits|).
Exit 0 when everything matches, 1 with the reason otherwise.
"""
import argparse
import json
import math
import os
import sys

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from safetensors_io import read_safetensors  # noqa: E402 (tests/safetensors_io.py)


def fail(why):
    print("hf_export_check: " + why, file=sys.stderr)
    sys.exit(1)


def expected_shapes(cfg):
    V, P, C, L = cfg["vocab_size"], cfg["n_positions"], cfg["n_embd"], cfg["n_layer"]
    inner = cfg["n_inner"] if cfg.get("n_inner") is not None else 4 * C
    s = {"wte.weight": [V, C], "wpe.weight": [P, C], "ln_f.weight": [C], "ln_f.bias": [C]}
    for i in range(L):
        h = f"h.{i}."
        s.update({h + "ln_1.weight": [C], h + "ln_1.bias": [C],
                  h + "attn.c_attn.weight": [C, 3 * C], h + "attn.c_attn.bias": [3 * C],
                  h + "attn.c_proj.weight": [C, C], h + "attn.c_proj.bias": [C],
                  h + "ln_2.weight": [C], h + "ln_2.bias": [C],
                  h + "mlp.c_fc.weight": [C, inner], h + "mlp.c_fc.bias": [inner],
                  h + "mlp.c_proj.weight": [inner, C], h + "mlp.c_proj.bias": [C]})
    return {"transformer." + k: v for k, v in s.items()}


def gpt2_logits(w, cfg, idx):
    """GPT-2's forward as modeling_gpt2.py computes it; idx (T,) -> logits (T, V)."""
    C, NH, eps = cfg["n_embd"], cfg["n_head"], cfg["layer_norm_epsilon"]
    T = idx.shape[0]
    g = lambda name: w["transformer." + name]
    x = g("wte.weight")[idx] + g("wpe.weight")[:T]
    mask = torch.tril(torch.ones(T, T, dtype=torch.bool))
    for i in range(cfg["n_layer"]):
        h = f"h.{i}."
        a = F.layer_norm(x, (C,), g(h + "ln_1.weight"), g(h + "ln_1.bias"), eps)
        q, k, v = (a @ g(h + "attn.c_attn.weight") + g(h + "attn.c_attn.bias")).split(C, dim=-1)
        q, k, v = (t.view(T, NH, C // NH).transpose(0, 1) for t in (q, k, v))
        att = (q @ k.transpose(-2, -1)) / math.sqrt(C // NH)
        att = att.masked_fill(~mask, float("-inf")).softmax(dim=-1)
        y = (att @ v).transpose(0, 1).reshape(T, C)
        x = x + y @ g(h + "attn.c_proj.weight") + g(h + "attn.c_proj.bias")
        m = F.layer_norm(x, (C,), g(h + "ln_2.weight"), g(h + "ln_2.bias"), eps)
        m = F.gelu(m @ g(h + "mlp.c_fc.weight") + g(h + "mlp.c_fc.bias"), approximate="tanh")
        x = x + m @ g(h + "mlp.c_proj.weight") + g(h + "mlp.c_proj.bias")
    x = F.layer_norm(x, (C,), g("ln_f.weight"), g("ln_f.bias"), eps)
    return x @ g("wte.weight").T  # the head tied to wte


def main():
    p = argparse.ArgumentParser()
    p.add_argument("dir")
    p.add_argument("ids")
    p.add_argument("--loss", type=float, required=True)
    p.add_argument("--logits")
    a = p.parse_args()
    torch.set_num_threads(1)

    with open(os.path.join(a.dir, "config.json")) as f:
        cfg = json.load(f)
    want = {"model_type": "gpt2", "architectures": ["GPT2LMHeadModel"],
            "activation_function": "gelu_new", "layer_norm_epsilon": 1e-5,
            "tie_word_embeddings": True, "scale_attn_weights": True,
            "scale_attn_by_inverse_layer_idx": False, "n_inner": None}
    for key, value in want.items():
        if cfg.get(key, "absent") != value:
            fail(f"config.json: {key} is {cfg.get(key, 'absent')!r}, expected {value!r}")
    for key in ("resid_pdrop", "embd_pdrop", "attn_pdrop", "n_ctx"):
        if key not in cfg:
            fail(f"config.json has no {key}")

    try:
        meta, w = read_safetensors(os.path.join(a.dir, "model.safetensors"), dtypes=("F32",))
    except ValueError as e:
        fail(str(e))
    if meta != {"format": "pt"}:
        fail(f"metadata is {meta}, expected {{'format': 'pt'}} (from_pretrained needs it)")
    shapes = expected_shapes(cfg)
    if set(w) != set(shapes):
        fail(f"tensor names differ from GPT2LMHeadModel's: missing {sorted(set(shapes) - set(w))}, "
             f"unexpected {sorted(set(w) - set(shapes))}")
    for name, shape in shapes.items():
        if list(w[name].shape) != shape:
            fail(f"{name} is {list(w[name].shape)}, expected {shape}")

    with open(a.ids) as f:
        ids = [int(t) for t in f.read().split()]
    T = cfg["n_positions"]
    nll, n = 0.0, 0
    first = None
    with torch.no_grad():
        for start in range(0, len(ids) - 1, T):
            window = torch.tensor(ids[start:start + T + 1])
            logits = gpt2_logits(w, cfg, window[:-1])
            if first is None:
                first = logits
            nll += F.cross_entropy(logits.double(), window[1:], reduction="sum").item()
            n += window.shape[0] - 1
    loss = nll / n
    print(f"hf_export_check: loss {loss:.9g} (attograd {a.loss:.9g}), {n} predictions")
    if not abs(loss - a.loss) <= 1e-5:
        fail(f"loss {loss:.9g} differs from attograd's {a.loss:.9g} by {abs(loss - a.loss):.3g}")
    if a.logits:
        ours = np.fromfile(a.logits, dtype="<f4")
        if ours.size != first.numel():
            fail(f"{a.logits} holds {ours.size} values, expected {tuple(first.shape)}")
        ours = torch.from_numpy(ours.reshape(tuple(first.shape)))
        diff = (ours - first).abs().max().item()
        tol = 1e-5 * max(1.0, first.abs().max().item())
        print(f"hf_export_check: max |logits difference| {diff:.3g} (tolerance {tol:.3g})")
        if not diff <= tol:
            fail(f"the logits differ from attograd's by up to {diff:.3g} (tolerance {tol:.3g})")


if __name__ == "__main__":
    main()
