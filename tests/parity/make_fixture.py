#!/usr/bin/python3
"""Writes the PyTorch reference that attograd's GPT-2 parity test compares against.

In the spirit of llm.c's test_gpt2: a small GPT-2 is built here in plain PyTorch (no
`transformers`, no `safetensors` package: the Debian python has neither), run once forward
and backward on a fixed batch and trained for 10 AdamW steps; everything attograd must
reproduce is written to two safetensors files that are committed, so CI needs no PyTorch.

Regenerate (from the repository root, Debian 12):

    apt-get install -y python3-torch           # Debian's PyTorch, for /usr/bin/python3
    /usr/bin/python3 tests/parity/make_fixture.py

Use /usr/bin/python3 explicitly: a `python3` found first on PATH (pyenv, venv) does not see
Debian's torch. The committed files were made with Debian's python3-torch 1.13.1+dfsg-4
(torch.__version__ says "1.13.0a0"), CPU, float32, one thread, in about a second. Re-running
with the same version gives bit-identical files; another version may differ in the last bits
of the floats, which the C++ tolerances absorb.

Outputs (tests/parity/fixture/):

  model.safetensors      the weights, as Hugging Face's GPT2LMHeadModel names them
                         ("transformer.h.0.attn.c_attn.weight", ...), Conv1D weights (c_attn,
                         attn.c_proj, c_fc, mlp.c_proj) in HF's (in, out) layout, plus the
                         "attn.bias" causal-mask buffers that older HF files carry (attograd's
                         importer must skip them). No lm_head.weight: it is tied to wte, and
                         HF's safetensors files drop the duplicate too.
  config.json            HF-style config (n_layer, n_head, n_embd, vocab_size, n_positions):
                         n_head is not recoverable from the weights, so the importer reads it here.
  reference.safetensors  idx (B, T) I64, targets (B, T) I64, logits (B, T, V) F32, loss () F32,
                         position_losses (B, T) F32 (per-position cross-entropy), loss_seq0 () F32
                         (mean over row 0), grad.<key> for every weight key above (same name
                         after "grad.", same layout as the weight), adamw_losses (10,) F32 and
                         adamw_lr (1,) F64.

The batch is one random sequence of 2T + 1 tokens cut into two rows (row 1 continues row 0),
so `attograd eval --ids` over the whole sequence, in windows of block_size = T, must give
`loss`, and over its first T + 1 ids must give `loss_seq0`.

Model (GPT-2, Radford et al. 2019, as HF's modeling_gpt2.py computes it): pre-LayerNorm blocks
(eps 1e-5), causal self-attention scaled by 1/sqrt(head_dim), GELU with the tanh approximation,
learned positions, tied lm_head, dropout 0. Init as GPT-2: weights N(0, 0.02), the two residual
projections (attn.c_proj, mlp.c_proj) N(0, 0.02 / sqrt(2 n_layer)), biases 0, LayerNorm 1 and 0.

Then the init is made discriminating (`make_discriminating`). Pure GPT-2 init is a poor test
input: biases 0 and LayerNorm gains 1 mean a bias added along the wrong axis or a swapped
gain/bias changes no logit at all, and at n_embd 64 (GPT-2's 0.02 is tuned for 768) attention
scores are ~0.02, so attention is almost uniform and a wrong 1/sqrt(head_dim) scale moves the
logits by only ~5e-3. So every 2-D weight is scaled by sqrt(768 / n_embd) (the activation sizes
of GPT-2 small at init), biases get N(0, 0.02) and LayerNorm parameters N(0, 0.1) added. The
script prints how far the logits move under each of several deliberate bugs and refuses to write
a fixture where one moves them by less than 10x the C++ logits tolerance (1e-5 x max|logits|).
The closest call is exact-erf GELU instead of the tanh approximation (~5e-4): the two
formulas never differ by more than ~5e-4 anywhere, so no input can make that gap much larger.

AdamW: torch.optim.AdamW(lr 1e-3, betas (0.9, 0.95), eps 1e-8) with two parameter groups,
weight_decay 0.1 on the 2-D weights (wte, wpe, Conv1D weights) and 0 on biases and LayerNorm,
as nanoGPT and attograd's nn::AdamW. The loss is recorded before each step, on the same batch.
"""

import json
import math
import os
import struct
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

# The config: small enough that the whole fixture stays near 1 MB, big enough for several
# heads (n_head 4, head_dim 16), two blocks (residual fan-out across layers) and T = block_size.
CONFIG = dict(n_layer=2, n_head=4, n_embd=64, vocab_size=512, n_positions=32)
B = 2
T = CONFIG["n_positions"]
SEED = 1234
ADAMW_STEPS = 10
ADAMW_LR = 1e-3
ADAMW_BETAS = (0.9, 0.95)
ADAMW_EPS = 1e-8
ADAMW_WEIGHT_DECAY = 0.1
LOGITS_TOLERANCE = 1e-5  # the C++ test's (times max(1, max|logits|)); every deliberate bug must beat it 10x

HERE = os.path.dirname(os.path.abspath(__file__))
OUT_DIR = os.path.join(HERE, "fixture")


class Conv1D(nn.Module):
    """HF's GPT-2 linear layer: weight stored (in, out), y = x W + b (the transpose of nn.Linear)."""

    def __init__(self, n_in, n_out):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(n_in, n_out))
        self.bias = nn.Parameter(torch.zeros(n_out))

    def forward(self, x):
        size_out = x.size()[:-1] + (self.weight.size(1),)
        return torch.addmm(self.bias, x.reshape(-1, x.size(-1)), self.weight).view(size_out)


class Bugs:
    """Deliberate deviations, only used to measure how sensitive the fixture is."""

    attn_scale_one_over_hs = False  # 1/head_dim instead of 1/sqrt(head_dim)
    no_causal_mask = False
    gelu_erf = False               # exact GELU instead of the tanh approximation
    ln_eps = 1e-5
    conv1d_not_transposed = False  # y = x W^T for the (square) attn.c_proj
    c_fc_bias_shifted = False       # c_fc bias rolled by one element (a wrong broadcast)
    ln_gain_bias_swapped = False


class CausalSelfAttention(nn.Module):
    def __init__(self, n_embd, n_head, n_positions):
        super().__init__()
        self.n_head = n_head
        self.c_attn = Conv1D(n_embd, 3 * n_embd)
        self.c_proj = Conv1D(n_embd, n_embd)
        # The buffer older HF checkpoints carry as "h.N.attn.bias": (1, 1, n_positions, n_positions).
        self.register_buffer("bias", torch.tril(torch.ones(n_positions, n_positions)).view(1, 1, n_positions, n_positions))

    def forward(self, x, bugs):
        Bn, Tn, C = x.size()
        hs = C // self.n_head
        q, k, v = self.c_attn(x).split(C, dim=2)
        q = q.view(Bn, Tn, self.n_head, hs).transpose(1, 2)  # (B, NH, T, HS)
        k = k.view(Bn, Tn, self.n_head, hs).transpose(1, 2)
        v = v.view(Bn, Tn, self.n_head, hs).transpose(1, 2)
        scale = 1.0 / hs if bugs.attn_scale_one_over_hs else 1.0 / math.sqrt(hs)
        att = (q @ k.transpose(-2, -1)) * scale  # (B, NH, T, T)
        if not bugs.no_causal_mask:
            mask = self.bias[:, :, :Tn, :Tn].bool()
            att = att.masked_fill(~mask, float("-inf"))
        att = F.softmax(att, dim=-1)
        y = (att @ v).transpose(1, 2).contiguous().view(Bn, Tn, C)
        if bugs.conv1d_not_transposed:
            return F.linear(y, self.c_proj.weight, self.c_proj.bias)
        return self.c_proj(y)


class MLP(nn.Module):
    def __init__(self, n_embd):
        super().__init__()
        self.c_fc = Conv1D(n_embd, 4 * n_embd)
        self.c_proj = Conv1D(4 * n_embd, n_embd)

    def forward(self, x, bugs):
        h = self.c_fc(x)
        if bugs.c_fc_bias_shifted:
            h = h - self.c_fc.bias + torch.roll(self.c_fc.bias, 1)
        h = F.gelu(h) if bugs.gelu_erf else F.gelu(h, approximate="tanh")
        return self.c_proj(h)


def layer_norm(ln, x, bugs):
    if bugs.ln_gain_bias_swapped:
        return F.layer_norm(x, (x.size(-1),), ln.bias, ln.weight, bugs.ln_eps)
    return F.layer_norm(x, (x.size(-1),), ln.weight, ln.bias, bugs.ln_eps)


class Block(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.ln_1 = nn.LayerNorm(cfg["n_embd"], eps=1e-5)
        self.attn = CausalSelfAttention(cfg["n_embd"], cfg["n_head"], cfg["n_positions"])
        self.ln_2 = nn.LayerNorm(cfg["n_embd"], eps=1e-5)
        self.mlp = MLP(cfg["n_embd"])

    def forward(self, x, bugs):
        x = x + self.attn(layer_norm(self.ln_1, x, bugs), bugs)
        return x + self.mlp(layer_norm(self.ln_2, x, bugs), bugs)


class GPT2LMHeadModel(nn.Module):
    """Module names mirror HF's, so state-dict keys are "transformer.h.0.ln_1.weight", ..."""

    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg
        self.transformer = nn.ModuleDict(dict(
            wte=nn.Embedding(cfg["vocab_size"], cfg["n_embd"]),
            wpe=nn.Embedding(cfg["n_positions"], cfg["n_embd"]),
            h=nn.ModuleList([Block(cfg) for _ in range(cfg["n_layer"])]),
            ln_f=nn.LayerNorm(cfg["n_embd"], eps=1e-5),
        ))
        self.lm_head = nn.Linear(cfg["n_embd"], cfg["vocab_size"], bias=False)
        self.lm_head.weight = self.transformer.wte.weight  # tied: one Parameter, two uses

    def gpt2_init(self):
        std = 0.02
        residual_std = 0.02 / math.sqrt(2 * self.cfg["n_layer"])
        for name, p in self.named_parameters():
            if name.endswith("ln_1.weight") or name.endswith("ln_2.weight") or name.endswith("ln_f.weight"):
                nn.init.ones_(p)
            elif name.endswith(".bias"):
                nn.init.zeros_(p)
            elif name.endswith("c_proj.weight"):  # attn.c_proj and mlp.c_proj
                nn.init.normal_(p, 0.0, residual_std)
            else:
                nn.init.normal_(p, 0.0, std)

    def forward(self, idx, targets=None, bugs=None):
        bugs = bugs or Bugs()
        pos = torch.arange(idx.size(1), dtype=torch.long)
        x = self.transformer.wte(idx) + self.transformer.wpe(pos)
        for block in self.transformer.h:
            x = block(x, bugs)
        x = layer_norm(self.transformer.ln_f, x, bugs)
        logits = self.lm_head(x)
        loss = None
        if targets is not None:
            loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))
        return logits, loss


def make_discriminating(model):
    """Moves the GPT-2 init away from its special values so that every part of the computation
    shows in the logits (see the module docstring): weights scaled by sqrt(768 / n_embd), biases
    N(0, 0.02), LayerNorm gains and biases perturbed by N(0, 0.1)."""
    width_scale = math.sqrt(768 / model.cfg["n_embd"])
    with torch.no_grad():
        for name, p in model.named_parameters():
            if p.dim() >= 2:
                p.mul_(width_scale)
            else:
                p.add_(torch.randn_like(p) * (0.1 if ".ln_" in name else 0.02))


def write_safetensors(path, tensors, metadata):
    """The safetensors format by hand: u64 LE header size, JSON header, raw LE bytes.

    Tensors are laid out in the order given; the header is space-padded to a multiple of 8 bytes
    as the reference implementation does. Written to a temporary file, then renamed."""
    dtypes = {torch.float32: "F32", torch.float64: "F64", torch.int64: "I64"}
    header = {"__metadata__": metadata}
    blobs, offset = [], 0
    for name, t in tensors.items():
        t = t.detach().contiguous().cpu()
        if t.dtype not in dtypes:
            raise ValueError(f"{name}: unsupported dtype {t.dtype}")
        data = t.numpy().astype(t.numpy().dtype.newbyteorder("<"), copy=False).tobytes()
        header[name] = {"dtype": dtypes[t.dtype], "shape": list(t.shape), "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    h = json.dumps(header, separators=(",", ":")).encode("utf-8")
    h += b" " * (-len(h) % 8)
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for b in blobs:
            f.write(b)
    os.replace(tmp, path)


def sensitivity(model, idx, reference_logits):
    """max |Δlogits| under each deliberate bug: how much the fixture can tell apart."""
    out = {}
    cases = {
        "attention scale 1/HS instead of 1/sqrt(HS)": dict(attn_scale_one_over_hs=True),
        "no causal mask": dict(no_causal_mask=True),
        "exact (erf) GELU instead of tanh": dict(gelu_erf=True),
        "LayerNorm eps 1e-6 instead of 1e-5": dict(ln_eps=1e-6),
        "attn.c_proj weight not transposed": dict(conv1d_not_transposed=True),
        "c_fc bias shifted by one element": dict(c_fc_bias_shifted=True),
        "LayerNorm gain and bias swapped": dict(ln_gain_bias_swapped=True),
    }
    with torch.no_grad():
        for label, fields in cases.items():
            bugs = Bugs()
            for k, v in fields.items():
                setattr(bugs, k, v)
            logits, _ = model(idx, bugs=bugs)
            out[label] = (logits - reference_logits).abs().max().item()
    return out


def main():
    torch.manual_seed(SEED)
    torch.set_num_threads(1)  # one summation order: reruns give identical bytes
    model = GPT2LMHeadModel(CONFIG)
    model.gpt2_init()
    make_discriminating(model)
    model.eval()  # no dropout anywhere; eval() only documents it

    # One sequence of 2T + 1 tokens, cut into two rows of T predictions each.
    seq = torch.randint(0, CONFIG["vocab_size"], (B * T + 1,), dtype=torch.long)
    idx = torch.stack([seq[b * T:(b + 1) * T] for b in range(B)])
    targets = torch.stack([seq[b * T + 1:(b + 1) * T + 1] for b in range(B)])

    # Weight keys as HF names them: transformer.* (the tied lm_head is dropped by
    # named_parameters' de-duplication), plus the attn.bias buffers.
    weights = {}
    for name, p in model.named_parameters():
        weights[name] = p.detach().clone()
    for i in range(CONFIG["n_layer"]):
        weights[f"transformer.h.{i}.attn.bias"] = model.transformer.h[i].attn.bias.clone()

    # Forward and backward once.
    model.zero_grad(set_to_none=True)
    logits, loss = model(idx, targets)
    loss.backward()
    grads = {"grad." + name: p.grad.detach().clone() for name, p in model.named_parameters()}
    with torch.no_grad():
        position_losses = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1), reduction="none").view(B, T)
        loss_seq0 = position_losses[0].mean()

    margins = sensitivity(model, idx, logits.detach())
    print(f"max |Δlogits| under a deliberate bug (the C++ test allows {LOGITS_TOLERANCE:g} x max(1, max|logits|)):")
    for label, d in margins.items():
        print(f"  {d:10.3e}  {label}")
    bar = 10 * LOGITS_TOLERANCE * max(1.0, logits.abs().max().item())
    weakest = min(margins.values())
    if weakest < bar:
        sys.exit(f"make_fixture.py: the fixture is not discriminating enough ({weakest:.3e} < {bar:.3e})")

    # 10 AdamW steps on the same batch, continuing from the same weights.
    decay = [p for p in model.parameters() if p.dim() >= 2]
    no_decay = [p for p in model.parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": ADAMW_WEIGHT_DECAY},
                             {"params": no_decay, "weight_decay": 0.0}],
                            lr=ADAMW_LR, betas=ADAMW_BETAS, eps=ADAMW_EPS)
    adamw_losses = []
    for _ in range(ADAMW_STEPS):
        opt.zero_grad(set_to_none=True)
        _, step_loss = model(idx, targets)
        adamw_losses.append(step_loss.item())
        step_loss.backward()
        opt.step()

    os.makedirs(OUT_DIR, exist_ok=True)
    meta = {"format": "pt", "generator": "tests/parity/make_fixture.py", "torch_version": torch.__version__}
    write_safetensors(os.path.join(OUT_DIR, "model.safetensors"), weights, meta)
    with open(os.path.join(OUT_DIR, "config.json"), "w") as f:
        json.dump(dict(model_type="gpt2", activation_function="gelu_new", layer_norm_epsilon=1e-5,
                       n_ctx=CONFIG["n_positions"], **CONFIG), f, indent=2, sort_keys=True)
        f.write("\n")
    ref = {
        "idx": idx, "targets": targets, "logits": logits, "loss": loss,
        "position_losses": position_losses, "loss_seq0": loss_seq0,
        **grads,
        "adamw_losses": torch.tensor(adamw_losses, dtype=torch.float32),
        "adamw_lr": torch.tensor([ADAMW_LR], dtype=torch.float64),  # F64: exactly the lr torch used
    }
    ref_meta = dict(meta, seed=str(SEED), adamw=json.dumps(dict(lr=ADAMW_LR, betas=ADAMW_BETAS, eps=ADAMW_EPS,
                                                                  weight_decay=ADAMW_WEIGHT_DECAY, steps=ADAMW_STEPS)))
    write_safetensors(os.path.join(OUT_DIR, "reference.safetensors"), ref, ref_meta)
    print(f"torch {torch.__version__}: loss {loss.item():.9g}, loss_seq0 {loss_seq0.item():.9g}, "
          f"adamw_losses {' '.join(f'{x:.6f}' for x in adamw_losses)}")
    print(f"wrote {OUT_DIR}/model.safetensors, config.json, reference.safetensors")


if __name__ == "__main__":
    main()
