#!/usr/bin/python3
"""nanoGPT's ckpt.pt as a Hugging Face GPT-2 model.safetensors, and its loss in nanoGPT's own code.

    /usr/bin/python3 bench/nanogpt_ckpt.py --nanogpt /tmp/nanoGPT --ckpt out/ckpt.pt \\
        --out DIR --ids val_ids.txt

bench/nanogpt.py runs it after each nanoGPT run, so that `attograd eval --hf-gpt2` scores
nanoGPT's model and attograd's (its checkpoint through `attograd export`) with one code path.
It writes DIR/model.safetensors with GPT-2's tensor names ("transformer.h.0.attn.c_attn.weight",
...): nanoGPT's Linear weights (out, in) transposed to GPT-2's Conv1D (in, out), the lm_head
left out (it is wte), and zeros for the biases of a model trained with bias = False (what
`attograd export` writes for --no-bias; a zero bias adds nothing). No config.json is written:
nanoGPT's MLP computes the exact GELU (nn.GELU(), erf), GPT-2's config would have to say "gelu"
where attograd computes only GPT-2's tanh approximation ("gelu_new") and refuses any other; the
caller passes --n-head instead. So attograd evaluates nanoGPT's weights with the tanh GELU.

To show what that costs, the same windows are also scored here, in nanoGPT's own model.py from
the --nanogpt copy: once as nanoGPT trained it (erf GELU) and once with the tanh GELU that
attograd computes. The windows are `attograd eval`'s: consecutive, non-overlapping windows of
block_size predictions, each from an empty context, the last one shorter; the loss is the mean
over all predictions. It prints

    iter_num 2000 n_head 4 block_size 64 bias False
    loss_gelu 1.23456789
    loss_gelu_tanh 1.23456789

(iter_num: the optimizer steps the checkpoint's weights have taken.)
"""
import argparse
import json
import struct
import sys
from pathlib import Path

import numpy as np
import torch
import torch.nn as nn


def gpt2_tensors(sd, args):
    """(name, array) in GPT-2's order, from nanoGPT's state dict sd and model_args args."""
    C = args["n_embd"]
    linear = {"attn.c_attn": 3 * C, "attn.c_proj": C, "mlp.c_fc": 4 * C, "mlp.c_proj": C}

    def get(name, n):
        if name in sd:
            return sd[name].float().numpy()
        if args["bias"] or not name.endswith(".bias"):
            sys.exit(f"nanogpt_ckpt.py: the checkpoint has no {name}")
        return np.zeros(n, dtype=np.float32)  # bias = False

    out = [("wte.weight", get("transformer.wte.weight", None)),
           ("wpe.weight", get("transformer.wpe.weight", None))]
    for i in range(args["n_layer"]):
        h = f"transformer.h.{i}."
        for part in ("ln_1", "attn.c_attn", "attn.c_proj", "ln_2", "mlp.c_fc", "mlp.c_proj"):
            w = get(h + part + ".weight", None)
            # Linear (out, in) -> Conv1D (in, out); a LayerNorm's weight is a vector
            out.append((f"h.{i}.{part}.weight", np.ascontiguousarray(w.T) if part in linear else w))
            out.append((f"h.{i}.{part}.bias", get(h + part + ".bias", linear.get(part, C))))
    out += [("ln_f.weight", get("transformer.ln_f.weight", None)), ("ln_f.bias", get("transformer.ln_f.bias", C))]
    return out


def write_safetensors(path, tensors):
    """The safetensors format: an 8-byte little-endian header length, the JSON header (padded
    with spaces to 8 bytes), then each tensor's bytes in order."""
    header, offset = {"__metadata__": {"format": "pt"}}, 0
    for name, a in tensors:
        assert a.dtype == np.float32
        header["transformer." + name] = {"dtype": "F32", "shape": list(a.shape),
                                         "data_offsets": [offset, offset + a.nbytes]}
        offset += a.nbytes
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text)
        for _, a in tensors:
            f.write(a.astype("<f4").tobytes())


@torch.no_grad()
def windows_loss(model, ids, T):
    """The mean NLL over ids[1:] in consecutive windows of T predictions (attograd eval's)."""
    total, count = 0.0, 0
    starts = list(range(0, len(ids) - 1, T))
    full = [s for s in starts if s + T + 1 <= len(ids)]
    for k in range(0, len(full), 64):  # full windows, 64 at a time
        x = torch.stack([ids[s:s + T] for s in full[k:k + 64]])
        y = torch.stack([ids[s + 1:s + T + 1] for s in full[k:k + 64]])
        _, loss = model(x, y)
        total += loss.double().item() * y.numel()
        count += y.numel()
    for s in starts[len(full):]:  # the shorter last window
        x, y = ids[s:len(ids) - 1][None], ids[s + 1:][None]
        _, loss = model(x, y)
        total += loss.double().item() * y.numel()
        count += y.numel()
    assert count == len(ids) - 1
    return total / count


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--nanogpt", required=True, type=Path, help="the copy of nanoGPT that trained it")
    ap.add_argument("--ckpt", required=True, type=Path, help="nanoGPT's ckpt.pt")
    ap.add_argument("--out", required=True, type=Path, help="the directory for model.safetensors")
    ap.add_argument("--ids", required=True, type=Path, help="whitespace-separated token ids to score")
    args = ap.parse_args()
    sys.path.insert(0, str(args.nanogpt))
    from model import GPT, GPTConfig  # nanoGPT's model.py

    ckpt = torch.load(args.ckpt, map_location="cpu")
    sd = {k.removeprefix("_orig_mod."): v for k, v in ckpt["model"].items()}
    margs = ckpt["model_args"]
    args.out.mkdir(parents=True, exist_ok=True)
    write_safetensors(args.out / "model.safetensors", gpt2_tensors(sd, margs))

    model = GPT(GPTConfig(**margs))
    model.load_state_dict(sd)
    model.eval()
    ids = torch.tensor([int(w) for w in args.ids.read_text().split()], dtype=torch.long)
    T = margs["block_size"]
    print(f"iter_num {ckpt['iter_num']} n_head {margs['n_head']} block_size {T} bias {margs['bias']}")
    print(f"loss_gelu {windows_loss(model, ids, T):.9g}")
    for block in model.transformer.h:
        block.mlp.gelu = nn.GELU(approximate="tanh")
    print(f"loss_gelu_tanh {windows_loss(model, ids, T):.9g}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
