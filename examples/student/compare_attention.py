#!/usr/bin/env python3
"""Compares a NumPy attention script's steps with attograd's (the student track's S8,
docs/exercises.md#s8-attention-in-numpy), step by step, and says where they first differ.

    build/examples/attention_by_hand --json --Q "1,0;0,1;1,1" --K "0,1;1,1;1,0" --V "1,2;3,4;5,6" \\
        | python3 examples/student/compare_attention.py SCRIPT -
    python3 examples/student/compare_attention.py SCRIPT attention.json

SCRIPT defines attention_steps(Q, K, V), returning NumPy arrays S, S_scaled, masked, A and Z
(examples/student/attention_numpy.py). The JSON is `attention_by_hand --json`'s (its Q, K and V
are the inputs; null is a masked -inf), from a file or, for "-", from stdin. Exit code 0 when
every step agrees to 1e-9, 1 at the first step that differs (or when the script fails), 2 for
wrong arguments.
"""
import importlib.util
import json
import math
import sys

STEPS = ["S", "S_scaled", "masked", "A", "Z"]


def load(path):
    spec = importlib.util.spec_from_file_location("attention_numpy", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def hint(step, yours, ours, d_k, np):
    """A sentence naming the likely mistake, or ""."""
    if step == "S" and yours.shape == ours.T.shape and np.allclose(yours, ours.T):
        return ("your S is attograd's transposed: row t of S is query t against every key, "
                "S = Q Kᵀ (Q @ K.T), not K Qᵀ")
    if step == "S_scaled":
        finite = np.isfinite(ours) & (ours != 0)
        ratio = yours[finite] / ours[finite]
        if ratio.size and np.allclose(ratio, ratio[0]):
            return (f"your S_scaled is {ratio[0]:.2f}x attograd's: did you divide by "
                    f"sqrt(d_k) = {math.sqrt(d_k):.2f}?")
    if step == "masked":
        T = ours.shape[0]
        for t in range(T):
            for j in range(T):
                if np.isinf(ours[t, j]) != np.isinf(yours[t, j]):
                    if j > t:
                        late = " is the mask one token late?" if j == t + 1 else ""
                        return f"position ({t}, {j}) is not masked:{late} mask every key j > t"
                    return f"position ({t}, {j}) is masked: query {t} may see key {j} (j <= t)"
    if step == "A":
        for t, s in enumerate(yours.sum(axis=-1)):
            if not math.isclose(s, 1.0, rel_tol=1e-9):
                return (f"row {t} of A sums to {s:.2f}: is the softmax over the right axis? "
                        "Each row (axis=-1) must sum to 1")
    return ""


def main(argv):
    if len(argv) != 3:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    try:
        import numpy as np
    except ImportError:
        print(f"{sys.executable} cannot import NumPy: install Debian's python3-numpy and run "
              "this with /usr/bin/python3 (a pyenv or venv python3 first on PATH may lack it)",
              file=sys.stderr)
        return 2

    script, source = argv[1], argv[2]
    try:
        ours_json = json.load(sys.stdin if source == "-" else open(source, encoding="utf-8"))
        for name in ["Q", "K", "V"] + STEPS:
            ours_json[name]
    except (OSError, ValueError, KeyError, TypeError) as e:
        print(f"{source}: not attention_by_hand --json's output ({type(e).__name__}: {e}); is "
              "build/examples/attention_by_hand built? (cmake --build build --target "
              "attention_by_hand)", file=sys.stderr)
        return 2

    def matrix(name):
        return np.array([[-math.inf if v is None else v for v in row] for row in ours_json[name]],
                        dtype=float)

    Q, K, V = matrix("Q"), matrix("K"), matrix("V")
    try:
        theirs = load(script).attention_steps(Q.copy(), K.copy(), V.copy())
    except NotImplementedError as e:
        print(f"{script}: {e}")
        return 1
    for step in STEPS:
        if step not in theirs:
            print(f"{script}: attention_steps returned no '{step}' (it returns {sorted(theirs)})")
            return 1
        yours, ours = np.asarray(theirs[step], dtype=float), matrix(step)
        if yours.shape != ours.shape:
            print(f"{step}: your shape is {yours.shape}, attograd's {ours.shape}")
            return 1
        if not np.allclose(yours, ours, rtol=1e-9, atol=1e-12):
            t, j = next((t, j) for t in range(ours.shape[0]) for j in range(ours.shape[1])
                        if not np.isclose(yours[t, j], ours[t, j], rtol=1e-9, atol=1e-12))
            print(f"{step} differs from attograd's, first at ({t}, {j}): yours {yours[t, j]!r}, "
                  f"attograd's {ours[t, j]!r}")
            said = hint(step, yours, ours, ours_json["d_k"], np)
            if said:
                print(said)
            return 1
        print(f"{step} {ours.shape}: agrees")
    print("every step agrees with attograd to 1e-9")
    if np.array_equal(Q, K):
        # S = Q Kᵀ is then symmetric, and a transposed S (K Qᵀ) agrees as well (issue 34).
        print("(this input has Q = K, so S is symmetric and a transposed S agrees too: run it "
              "again with a K of its own, as docs/exercises.md#s8-attention-in-numpy does)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
