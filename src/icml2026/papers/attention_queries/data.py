"""Generators of planted targets and random query sequences (all data here is synthetic)."""

from __future__ import annotations

import numpy as np

from icml2026.core.validate import as_array

from .model import SingleHeadAttention, check_dim

__all__ = ["random_single_head", "random_sequences", "check_rng", "relative_error"]


def check_rng(rng: object, what: str = "rng") -> np.random.Generator:
    if not isinstance(rng, np.random.Generator):
        raise TypeError(f"{what} must be a numpy.random.Generator, got {type(rng).__name__}")
    return rng


def check_rank(rank: object, d: int) -> int:
    if isinstance(rank, bool) or not isinstance(rank, (int, np.integer)):
        raise TypeError(f"rank must be an integer in [1, d={d}], got {type(rank).__name__} {rank!r}")
    if not 1 <= rank <= d:
        raise ValueError(f"rank must be in [1, d={d}], got {rank}")
    return int(rank)


def random_single_head(d: int, rank: int, rng: np.random.Generator, scale: float = 1.0) -> SingleHeadAttention:
    """A planted head (brief, "CPU-scale reproduction plan").

    W_Q, W_K (d, r) have i.i.d. N(0, 1/d) entries and are then both multiplied by sqrt(scale * d), so
    that the entries of A = W_Q W_K^T / sqrt(r) have standard deviation ``scale`` (the brief: "A scaled
    so entries are O(1)"); v ~ N(0, I_d). The head keeps its factors (see ``from_factors``).

    Parameters
    ----------
    d : token dimension; rank : head dimension r in [1, d]; rng : generator; scale : entry scale of A.
    """
    d = check_dim(d)
    rank = check_rank(rank, d)
    rng = check_rng(rng)
    if isinstance(scale, bool) or not np.isfinite(scale) or scale <= 0:
        raise ValueError(f"scale must be a finite positive number, got {scale!r}")
    # Deviation: the brief's N(0, 1/d) factors give entries of A of size 1/d; rescaled to size `scale`.
    gain = np.sqrt(scale * d)
    W_Q = gain * rng.normal(0.0, 1.0 / np.sqrt(d), size=(d, rank))
    W_K = gain * rng.normal(0.0, 1.0 / np.sqrt(d), size=(d, rank))
    v = rng.standard_normal(d)
    return SingleHeadAttention.from_factors(W_Q, W_K, v)


def random_sequences(d: int, n_sequences: int, max_len: int, rng: np.random.Generator) -> list[np.ndarray]:
    """Random test sequences: lengths uniform in [1, max_len], tokens N(0, I_d / d) (unit norm on average)."""
    d = check_dim(d)
    check_dim(n_sequences, "n_sequences")
    check_dim(max_len, "max_len")
    lengths = rng.integers(1, max_len + 1, size=n_sequences)
    return [rng.normal(0.0, 1.0 / np.sqrt(d), size=(int(n), d)) for n in lengths]


def relative_error(estimate: np.ndarray, truth: np.ndarray) -> float:
    """||estimate - truth||_F / ||truth||_F (absolute error when truth is zero).

    ``truth`` must be finite; a non-finite ``estimate`` (a failed recovery) gives NaN or inf, which fails any
    check on the error. The shapes must match exactly (no broadcasting).
    """
    t = as_array(truth, "truth", dtype=np.float64)
    e = np.asarray(estimate, dtype=np.float64)
    if e.shape != t.shape:
        raise ValueError(f"estimate has shape {e.shape}, truth has shape {t.shape}")
    den = float(np.linalg.norm(t))
    num = float(np.linalg.norm(e - t))
    return num / den if den > 0 else num
