#!/usr/bin/env python3
"""PyTorch's side of serialize_test: a file attograd's save_module wrote loads strictly into a
torch.nn.Module with the same names, and a file torch's state_dict makes loads into attograd.

safetensors (the Python package) is not installed here, so the files are read and written by
hand (tests/safetensors_io.py), as safetensors.torch.load_file / save_file do:

  torch_module_check.py IN_FILE OUT_FILE [WRONG_FILE]

Loads IN_FILE into Net (below) with load_state_dict(strict=True) and prints Net(x) for the x
below; then seeds torch with 0, builds a second Net, writes its state_dict to OUT_FILE (F64)
and prints its Net(x) on a second line. Values are printed with repr (17 significant digits).
With WRONG_FILE, a third line holds what load_state_dict(strict=True) says of it (the
RuntimeError's message on one line), or "loaded". One run for all, since importing torch takes
seconds. Exit 1 with the reason when IN_FILE is not what torch's module expects.
"""
import os
import sys

import torch
from torch import nn

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from safetensors_io import read_safetensors, write_safetensors  # noqa: E402 (tests/)


class Net(nn.Module):
    """attograd's Net in serialize_test.cc: the same names, shapes and computation."""

    def __init__(self):
        super().__init__()
        self.register_buffer("scale", torch.ones(2, dtype=torch.float64))
        self.fc1 = nn.Linear(3, 4, dtype=torch.float64)
        self.norm = nn.LayerNorm(4, dtype=torch.float64)
        self.fc2 = nn.Linear(4, 2, dtype=torch.float64)

    def forward(self, x):
        return self.fc2(torch.tanh(self.norm(self.fc1(x)))) * self.scale


def strict_load_error(path):
    """What Net().load_state_dict(file, strict=True) raises, on one line; None if it loads."""
    try:
        Net().load_state_dict(read_safetensors(path)[1], strict=True)
    except RuntimeError as e:
        return str(e).replace("\n", " ")
    return None


def main():
    in_file, out_file = sys.argv[1], sys.argv[2]
    x = torch.tensor([[0.5, -1.0, 2.0], [1.5, 0.25, -0.75]], dtype=torch.float64)
    meta, tensors = read_safetensors(in_file)
    if meta.get("format") != "pt":
        print(f"torch_module_check: metadata format is {meta.get('format')!r}, expected 'pt'",
              file=sys.stderr)
        sys.exit(1)
    error = strict_load_error(in_file)
    if error is not None:
        print("torch_module_check: " + error, file=sys.stderr)
        sys.exit(1)
    net = Net()
    net.load_state_dict(tensors, strict=True)
    with torch.no_grad():
        print(" ".join(repr(v) for v in net(x).flatten().tolist()))
        torch.manual_seed(0)
        other = Net()
        other.scale.fill_(3.0)
        write_safetensors(out_file, other.state_dict(), {"format": "pt"})
        print(" ".join(repr(v) for v in other(x).flatten().tolist()))
    if len(sys.argv) > 3:
        print(strict_load_error(sys.argv[3]) or "loaded")


if __name__ == "__main__":
    main()
