"""Method 4 (part 1): multi-head attention is not identifiable from queries.

f(X) = sum_h sum_j softmax_j(x_n^T A_h x_j) v_h^T x_j. Two heads with the same attention matrix A share
their softmax weights, so only v_1 + v_2 is visible: (v_1, v_2) and (v_1 + w, v_2 - w) give the same
function for every w; permuting the heads changes nothing either. Hence no query algorithm can recover
the per-head parameters, only the function.
"""

from __future__ import annotations

import numpy as np

from .data import check_rng, random_single_head
from .model import as_sequence, as_sequence_batch, check_dim

__all__ = ["MultiHeadAttention", "nonidentifiable_pair"]


class MultiHeadAttention:
    """Sum of H single-head attention regressors read out at the last position.

    Parameters
    ----------
    As : (H, d, d) attention matrices A_h; vs : (H, d) value vectors v_h.
    """

    def __init__(self, As: np.ndarray, vs: np.ndarray) -> None:
        As_arr = np.asarray(As, dtype=np.float64)
        vs_arr = np.asarray(vs, dtype=np.float64)
        if As_arr.ndim != 3 or As_arr.shape[1] != As_arr.shape[2] or As_arr.shape[0] < 1:
            raise ValueError(f"As must have shape (H, d, d) with H >= 1, got {As_arr.shape}")
        if vs_arr.shape != As_arr.shape[:2]:
            raise ValueError(f"vs must have shape (H, d) = {As_arr.shape[:2]}, got {vs_arr.shape}")
        if not (np.all(np.isfinite(As_arr)) and np.all(np.isfinite(vs_arr))):
            raise ValueError("As and vs must be finite")
        self.As, self.vs = As_arr, vs_arr
        self.n_heads, self.d = As_arr.shape[0], As_arr.shape[1]

    def __call__(self, X: np.ndarray) -> float:
        """f(X) for one sequence of shape (n, d)."""
        X = as_sequence(X, self.d)
        s = (X[-1] @ self.As) @ X.T  # (H, n): s_hj = x_n^T A_h x_j
        s = s - s.max(axis=1, keepdims=True)
        w = np.exp(s)
        alpha = w / w.sum(axis=1, keepdims=True)
        return float(np.sum(alpha * (self.vs @ X.T)))

    def batch(self, X: np.ndarray) -> np.ndarray:
        """f on a batch (batch, n, d) of equal-length sequences; returns (batch,)."""
        X = as_sequence_batch(X, self.d)
        q = np.einsum("bd,hde->bhe", X[:, -1, :], self.As)
        s = np.einsum("bhe,bje->bhj", q, X)
        s = s - s.max(axis=2, keepdims=True)
        w = np.exp(s)
        alpha = w / w.sum(axis=2, keepdims=True)
        return np.einsum("bhj,bhj->b", alpha, np.einsum("hd,bjd->bhj", self.vs, X))


def nonidentifiable_pair(
    d: int, n_heads: int, rng: np.random.Generator, scale: float = 1.0
) -> tuple[MultiHeadAttention, MultiHeadAttention]:
    """Two multi-head models with the same input-output map but per-head parameters O(1) apart.

    Heads 0 and 1 of the first model share one attention matrix A; the second model replaces their
    value vectors (v_0, v_1) by (v_0 + w, v_1 - w) with w ~ N(0, I_d), and lists its heads in reverse
    order (head permutation, the other symmetry). All other heads are random full-rank heads.

    Parameters
    ----------
    d : token dimension; n_heads : H >= 2; rng : generator; scale : entry scale of each A_h.

    Returns
    -------
    (first, second) MultiHeadAttention models.
    """
    d = check_dim(d)
    n_heads = check_dim(n_heads, "n_heads")
    rng = check_rng(rng)
    if n_heads < 2:
        raise ValueError(
            "n_heads must be >= 2: a single head is identifiable (Method 1); only several heads can "
            "trade value vectors without changing the function"
        )
    heads = [random_single_head(d, d, rng, scale=scale) for _ in range(n_heads)]
    As = np.stack([h.A for h in heads])
    As[1] = As[0]  # two heads with one attention pattern
    vs = np.stack([h.v for h in heads])
    w = rng.standard_normal(d)
    vs2 = vs.copy()
    vs2[0] += w
    vs2[1] -= w
    first = MultiHeadAttention(As, vs)
    second = MultiHeadAttention(As[::-1].copy(), vs2[::-1].copy())
    return first, second
