#!/usr/bin/env python3
"""S8. Attention in NumPy, about 20 minutes (docs/exercises.md#s8-attention-in-numpy).

The lecture's exercise, T = 3 and d_k = 2: write attention_steps with NumPy (Debian's
python3-numpy), then compare each step with attograd's, from the root of the checkout:

    build/examples/attention_by_hand --json --Q "1,0;0,1;1,1" --K "0,1;1,1;1,0" --V "1,2;3,4;5,6" | python3 examples/student/compare_attention.py examples/student/attention_numpy.py -

`python3 examples/student/attention_numpy.py` prints your steps. The answer is
examples/student/answers/attention_numpy.py: open it after trying.
"""
import numpy as np


def attention_steps(Q, K, V):
    """Q (T, d_k), K (T, d_k), V (T, d_v): NumPy arrays of floats. Returns a dict of the steps:

    S         Q Kᵀ                                            (T, T)
    S_scaled  S / sqrt(d_k)                                   (T, T)
    masked    S_scaled with -np.inf where key j > query t     (T, T)   np.triu(..., k=1) helps
    A         the softmax of each row of masked               (T, T)   each row sums to 1
    Z         A V                                             (T, d_v)
    """
    raise NotImplementedError("not implemented yet: see docs/exercises.md#s8-attention-in-numpy")


if __name__ == "__main__":
    # K differs from Q, as in the comparison above: with Q = K, S would be symmetric.
    Q = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    K = np.array([[0.0, 1.0], [1.0, 1.0], [1.0, 0.0]])
    V = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    for name, value in attention_steps(Q, K, V).items():
        print(f"{name} {value.shape}\n{value}\n")
