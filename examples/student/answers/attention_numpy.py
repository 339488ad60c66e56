#!/usr/bin/env python3
"""S8's answer (examples/student/attention_numpy.py): the lecture's attention in NumPy.

    build/examples/attention_by_hand --json --Q "1,0;0,1;1,1" --K "0,1;1,1;1,0" --V "1,2;3,4;5,6" | python3 examples/student/compare_attention.py examples/student/answers/attention_numpy.py -
"""
import numpy as np


def attention_steps(Q, K, V):
    """Q (T, d_k), K (T, d_k), V (T, d_v) -> the steps S, S_scaled, masked, A, Z."""
    T, d_k = Q.shape
    S = Q @ K.T  # (T, T): S[t, j] = q_t · k_j
    S_scaled = S / np.sqrt(d_k)
    future = np.triu(np.ones((T, T), dtype=bool), k=1)  # True where key j > query t
    masked = np.where(future, -np.inf, S_scaled)
    # Row softmax: subtract each row's max (finite: every row keeps its diagonal) before exp.
    e = np.exp(masked - masked.max(axis=-1, keepdims=True))
    A = e / e.sum(axis=-1, keepdims=True)
    return {"S": S, "S_scaled": S_scaled, "masked": masked, "A": A, "Z": A @ V}


if __name__ == "__main__":
    # K differs from Q, as in the comparison above: with Q = K, S would be symmetric.
    Q = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    K = np.array([[0.0, 1.0], [1.0, 1.0], [1.0, 0.0]])
    V = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    for name, value in attention_steps(Q, K, V).items():
        print(f"{name} {value.shape}\n{value}\n")
