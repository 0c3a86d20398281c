"""Baselines for the low-rank methods.

* :func:`recover_exact` (Method 1, d^2 + d queries, no rank assumption) is the reference the low-rank
  methods are measured against; it is re-exported here under that role.
* :func:`least_squares_recovery`: the naive route without a low-rank prior: the same random rank-one
  measurements y_t = b_t^T A c_t as compressed sensing, solved by minimum-norm least squares over all d^2
  entries. It is exact once m >= d^2 and fails below, where compressed sensing already succeeds.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from .data import check_rng
from .exact import check_identifiable, recover_exact
from .low_rank import _random_pairs
from .model import HeadEstimate, check_dim
from .oracle import as_counting
from .queries import learn_value, measure_bilinear

__all__ = ["recover_exact", "least_squares_recovery"]


def least_squares_recovery(
    oracle: Callable[[np.ndarray], float],
    d: int,
    n_measurements: int,
    rng: np.random.Generator,
    *,
    batch: bool = True,
) -> HeadEstimate:
    """Naive baseline: min-norm least squares A = argmin ||X||_F s.t. b_t^T X c_t = y_t (no rank prior).

    Parameters
    ----------
    oracle : callable f(X) -> float; d : token dimension; n_measurements : m random rank-one
    measurements (Gaussian, as in compressed sensing); rng : generator.

    Returns
    -------
    HeadEstimate with n_queries = d + m + rescales.
    """
    d = check_dim(d)
    m = check_dim(n_measurements, "n_measurements")
    rng = check_rng(rng)
    counter = as_counting(oracle)
    start = counter.n_queries
    v = learn_value(counter, d, batch=batch)
    check_identifiable(v)
    Bm, Cm = _random_pairs(v, m, rng)
    meas = measure_bilinear(counter, v, Bm, Cm, batch=batch)
    Phi = (Bm[:, :, None] * Cm[:, None, :]).reshape(m, d * d)  # row-major vec(b c^T) = kron(b, c)
    A = np.linalg.lstsq(Phi, meas.y, rcond=None)[0].reshape(d, d)
    return HeadEstimate(
        A=A,
        v=v,
        n_queries=counter.n_queries - start,
        n_rescale_queries=meas.n_rescale,
        rank=int(np.linalg.matrix_rank(A)),
        method="least_squares",
        n_measurements=m,
    )
