"""Method 3: recovery from a noisy oracle with additive tolerance tau.

The oracle answers f(X) + eta with |eta| <= tau, and queries must have token norms <= B_x (``norm_bound``).
The queries are those of Method 1, spent differently (brief, Method 3): tokens are scaled to the norm
budget, which makes |v^T c| as large as allowed, and the scale is halved while the answer's softmax
weight lies outside [window, 1 - window] (|logit| <= log((1 - window) / window), about 2.9 for 0.05).
The error in alpha is then about tau / (s |v^T c|) and the error in b^T A c about that divided by
alpha (1 - alpha) s^2: linear in tau, polynomial in d, ||A|| and 1 / margin. Repeating every query and
keeping the median answer reduces random (not adversarial) noise.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from .exact import check_identifiable
from .model import HeadEstimate, check_dim
from .oracle import as_counting
from .queries import choose_directions, learn_value, measure_bilinear

__all__ = ["recover_noisy"]


def recover_noisy(
    oracle: Callable[[np.ndarray], float],
    d: int,
    tau: float,
    *,
    norm_bound: float = 1.0,
    n_repeats: int = 1,
    window: float = 0.05,
    batch: bool = True,
) -> HeadEstimate:
    """Method 3: estimate (A, v) from a tau-noisy oracle with error O(tau poly(d, ||A||, 1/margin)).

    Parameters
    ----------
    oracle : noisy callable f(X) + eta, |eta| <= tau (e.g. a NoisyOracle), counted if not a CountingOracle.
    d : token dimension.
    tau : the oracle's tolerance (used to decide whether v is distinguishable from zero).
    norm_bound : B_x, the largest token norm a query may use.
    n_repeats : ask each query this many times and keep the median answer (odd values work best).
    window : accept a query only when its softmax weight is in [window, 1 - window]; otherwise halve s.
    batch : send each round of queries as one batch.

    Returns
    -------
    HeadEstimate; n_queries = (d^2 + d) n_repeats + n_rescale_queries.
    """
    d = check_dim(d)
    if isinstance(tau, bool) or not np.isfinite(tau) or tau < 0:
        raise ValueError(f"tau must be a finite number >= 0, got {tau!r}")
    if isinstance(norm_bound, bool) or not np.isfinite(norm_bound) or norm_bound <= 0:
        raise ValueError(f"norm_bound must be a finite positive number, got {norm_bound!r}")
    n_repeats = check_dim(n_repeats, "n_repeats")
    if not 0.0 < window < 0.5:
        raise ValueError(f"window must be in (0, 0.5), got {window}")
    counter = as_counting(oracle)
    start = counter.n_queries
    v = learn_value(counter, d, scale=norm_bound, batch=batch, n_repeats=n_repeats)  # error <= tau / B_x
    check_identifiable(v, tol=2.0 * tau / norm_bound)
    C = choose_directions(v)
    rows = np.repeat(np.eye(d), d, axis=0)  # b = e_i
    cols = np.tile(C.T, (d, 1))  # c = c_j
    longest = np.maximum(np.linalg.norm(rows + cols, axis=1), np.linalg.norm(rows, axis=1))
    meas = measure_bilinear(
        counter,
        v,
        rows,
        cols,
        scale=norm_bound / longest,  # largest scale the norm budget allows: max |v^T c| signal
        saturation=window,
        shrink=2.0,
        batch=batch,
        n_repeats=n_repeats,
    )
    A = np.linalg.solve(C.T, meas.y.reshape(d, d).T).T  # A = M C^{-1}
    return HeadEstimate(
        A=A,
        v=v,
        n_queries=counter.n_queries - start,
        n_rescale_queries=meas.n_rescale,
        rank=None,
        method="noisy",
        n_measurements=d * d,
    )
