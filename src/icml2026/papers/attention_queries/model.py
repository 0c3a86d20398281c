"""The target models: single-head attention regressor and the recovered-head record.

Single-head attention with readout at the last position (the brief's "Problem setting"):

    s_j = x_n^T A x_j,   A = W_Q W_K^T / sqrt(r),   alpha = softmax(s_1..s_n),   f(X) = sum_j alpha_j v^T x_j.

The last token attends to itself and there is no causal mask (the readout position is the last one, so a
causal mask would change nothing).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["SingleHeadAttention", "HeadEstimate", "as_sequence", "as_sequence_batch", "check_dim"]


def check_dim(d: object, name: str = "d") -> int:
    """Validate a dimension: a positive int (bool rejected)."""
    if isinstance(d, bool) or not isinstance(d, (int, np.integer)):
        raise TypeError(f"{name} must be a positive integer, got {type(d).__name__} {d!r}")
    if d < 1:
        raise ValueError(f"{name} must be a positive integer, got {d}")
    return int(d)


def as_sequence(X: object, d: int) -> np.ndarray:
    """``X`` as a finite float64 array of shape (n, d) with n >= 1, or a clear ValueError."""
    arr = np.asarray(X, dtype=np.float64)
    if arr.ndim != 2:
        raise ValueError(f"a query sequence must be a 2-D array of shape (n, d={d}), got shape {arr.shape}")
    if arr.shape[0] < 1:
        raise ValueError("a query sequence must hold at least one token (n >= 1)")
    if arr.shape[1] != d:
        raise ValueError(f"query tokens have dimension {arr.shape[1]}, but the model has d={d}")
    if not np.all(np.isfinite(arr)):
        raise ValueError("a query sequence must be finite (no NaN or inf)")
    return arr


def as_sequence_batch(X: object, d: int) -> np.ndarray:
    """``X`` as a finite float64 array of shape (batch, n, d) with n >= 1, or a clear ValueError."""
    arr = np.asarray(X, dtype=np.float64)
    if arr.ndim != 3:
        raise ValueError(
            f"a batch of equal-length sequences must be a 3-D array (batch, n, d={d}), got shape {arr.shape}"
        )
    if arr.shape[1] < 1:
        raise ValueError("sequences in a batch must hold at least one token (n >= 1)")
    if arr.shape[2] != d:
        raise ValueError(f"query tokens have dimension {arr.shape[2]}, but the model has d={d}")
    if not np.all(np.isfinite(arr)):
        raise ValueError("a query batch must be finite (no NaN or inf)")
    return arr


class SingleHeadAttention:
    """Single-head attention regressor f(X) = sum_j softmax_j(x_n^T A x_j) v^T x_j (brief, "Problem setting").

    Parameters
    ----------
    A : (d, d) array, the bilinear attention form W_Q W_K^T / sqrt(r).
    v : (d,) array, the composed value-output-readout vector W_V W_O u.

    Build from factors with :meth:`from_factors`; the logits are then computed through the factors,
    as a real network would, so that gauge changes (W_Q G, W_K G^{-T}) are visible only in rounding.
    """

    def __init__(self, A: np.ndarray, v: np.ndarray) -> None:
        A_arr = np.asarray(A, dtype=np.float64)
        v_arr = np.asarray(v, dtype=np.float64)
        if A_arr.ndim != 2 or A_arr.shape[0] != A_arr.shape[1] or A_arr.shape[0] < 1:
            raise ValueError(f"A must be a square (d, d) matrix with d >= 1, got shape {A_arr.shape}")
        d = A_arr.shape[0]
        if v_arr.shape != (d,):
            raise ValueError(f"v must have shape (d,) = ({d},) to match A, got shape {v_arr.shape}")
        if not (np.all(np.isfinite(A_arr)) and np.all(np.isfinite(v_arr))):
            raise ValueError("A and v must be finite")
        self.A = A_arr
        self.v = v_arr
        self.d = d
        self.W_Q: np.ndarray | None = None
        self.W_K: np.ndarray | None = None

    @classmethod
    def from_factors(cls, W_Q: np.ndarray, W_K: np.ndarray, v: np.ndarray) -> SingleHeadAttention:
        """The head with A = W_Q W_K^T / sqrt(r) for W_Q, W_K of shape (d, r); logits use the factors."""
        W_Q = np.asarray(W_Q, dtype=np.float64)
        W_K = np.asarray(W_K, dtype=np.float64)
        if W_Q.ndim != 2 or W_Q.shape != W_K.shape or W_Q.shape[1] < 1:
            raise ValueError(f"W_Q and W_K must both have shape (d, r) with r >= 1, got {W_Q.shape} and {W_K.shape}")
        r = W_Q.shape[1]
        head = cls(W_Q @ W_K.T / np.sqrt(r), v)
        head.W_Q, head.W_K = W_Q, W_K
        return head

    def _query_vectors(self, last: np.ndarray) -> np.ndarray:
        """q = A^T x_n for each last token (rows of ``last``), i.e. s_j = q . x_j."""
        if self.W_Q is not None and self.W_K is not None:
            r = self.W_Q.shape[1]
            return (last @ self.W_Q) @ self.W_K.T / np.sqrt(r)
        return last @ self.A

    def __call__(self, X: np.ndarray) -> float:
        """f(X) for one sequence X of shape (n, d); returns a Python float."""
        X = as_sequence(X, self.d)
        s = X @ self._query_vectors(X[-1])  # s_j = x_n^T A x_j
        s = s - s.max()
        w = np.exp(s)
        return float((w @ (X @ self.v)) / w.sum())

    def batch(self, X: np.ndarray) -> np.ndarray:
        """f on a batch of equal-length sequences, X of shape (batch, n, d); returns shape (batch,)."""
        X = as_sequence_batch(X, self.d)
        q = self._query_vectors(X[:, -1, :])  # (batch, d)
        s = np.einsum("bjd,bd->bj", X, q)
        s = s - s.max(axis=1, keepdims=True)
        w = np.exp(s)
        return np.einsum("bj,bj->b", w, X @ self.v) / w.sum(axis=1)

    def __repr__(self) -> str:
        return f"SingleHeadAttention(d={self.d}, rank={np.linalg.matrix_rank(self.A)})"


@dataclass
class HeadEstimate:
    """A head recovered from queries.

    Attributes
    ----------
    A : (d, d) estimate of the bilinear form W_Q W_K^T / sqrt(r).
    v : (d,) estimate of the value vector.
    n_queries : every oracle call made by the recovery, rescaling retries included.
    n_rescale_queries : the retries made because a query saturated the softmax (Method 1, step 4).
    rank : the rank used or estimated (None for the full-rank exact method).
    method : which algorithm produced the estimate.
    n_measurements : bilinear measurements b^T A c taken (not counting retries).
    error_bound_A : bound on ||A_hat - A||_F from the answers' error model (None when not computed).
    error_bound_v : bound on max_i |v_hat_i - v_i| (None when not computed).
    precision : the oracle's relative precision used (eps), and ``precision_source`` how it was obtained.
    n_probe_queries : queries spent on estimating the precision or verifying a given rank (in n_queries).
    fallback : non-empty when the method switched to another (e.g. adaptive -> exact at r >= d/2).
    w : (d,) the affine head's query-bias vector (logit term w^T x_j), None for the homogeneous head.
    value_offset : the affine head's constant c_0 (value bias), None for the homogeneous head.
    """

    A: np.ndarray
    v: np.ndarray
    n_queries: int
    n_rescale_queries: int = 0
    rank: int | None = None
    method: str = ""
    n_measurements: int = 0
    error_bound_A: float | None = None
    error_bound_v: float | None = None
    precision: float | None = None
    precision_source: str = ""
    n_probe_queries: int = 0
    fallback: str = ""
    w: np.ndarray | None = None
    value_offset: float | None = None
