"""Method 1: exact recovery of a single attention head from d^2 + d noiseless queries.

Steps (brief, Method 1): learn v from d single-token queries; choose directions c_j with v^T c_j != 0;
measure M_ij = e_i^T A c_j with d^2 two-token queries; return A = M C^{-1}. Softmax saturation is
handled by rescaling the query (step 4); those retries are counted and reported separately.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from .model import HeadEstimate, check_dim
from .oracle import CountingOracle, as_counting
from .queries import choose_directions, learn_value, measure_bilinear

__all__ = ["recover_exact", "check_identifiable", "NotIdentifiableError"]


class NotIdentifiableError(ValueError):
    """The learned value vector is zero (up to the noise level): A cannot be identified."""


def check_identifiable(v: np.ndarray, tol: float = 0.0) -> None:
    """Raise if the learned value vector is zero: then f is identically zero and A is unidentifiable."""
    if np.max(np.abs(v)) <= tol:
        raise NotIdentifiableError(
            "the value vector v is zero (every single-token answer is 0 up to the noise level): the "
            "target function is identically zero and its attention matrix A is not identifiable"
        )


def recover_exact(
    oracle: Callable[[np.ndarray], float],
    d: int,
    *,
    batch: bool = True,
    saturation: float = 1e-9,
) -> HeadEstimate:
    """Method 1 (exact O(d^2) algorithm): recover (A, v) with d^2 + d queries plus counted rescales.

    Parameters
    ----------
    oracle : callable f(X) -> float on (n, d) arrays; wrapped in a CountingOracle if it is not one.
    d : token dimension.
    batch : send the d value queries and the d^2 pair queries (non-adaptive given v) as batches.
    saturation : softmax-saturation threshold of step 4 (brief: 1e-9).

    Returns
    -------
    HeadEstimate with A (d, d), v (d,), n_queries = d^2 + d + n_rescale_queries.
    """
    d = check_dim(d)
    if not 0.0 < saturation < 0.5:
        raise ValueError(f"saturation must be in (0, 0.5), got {saturation}")
    counter: CountingOracle = as_counting(oracle)
    start = counter.n_queries
    v = learn_value(counter, d, batch=batch)  # step 1: d queries
    check_identifiable(v)
    C = choose_directions(v)  # step 3: columns c_j
    rows = np.repeat(np.eye(d), d, axis=0)  # pair (i, j) -> b = e_i
    cols = np.tile(C.T, (d, 1))  # pair (i, j) -> c = c_j
    meas = measure_bilinear(counter, v, rows, cols, saturation=saturation, batch=batch)  # step 2
    M = meas.y.reshape(d, d)  # M_ij = e_i^T A c_j, i.e. M = A C
    A = np.linalg.solve(C.T, M.T).T  # A = M C^{-1}
    return HeadEstimate(
        A=A,
        v=v,
        n_queries=counter.n_queries - start,
        n_rescale_queries=meas.n_rescale,
        rank=None,
        method="exact",
        n_measurements=d * d,
    )
