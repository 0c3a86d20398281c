"""Method 1: exact recovery of a single attention head from d^2 + d noiseless queries.

Steps (brief, Method 1): learn v from d single-token queries; choose directions c_j with v^T c_j != 0;
measure M_ij = e_i^T A c_j with d^2 two-token queries; return A = M C^{-1}. Softmax saturation is
handled by rescaling the query (step 4); those retries are counted and reported separately.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from .affine import learn_query_bias, learn_value_affine, offset_noise
from .model import HeadEstimate, check_dim
from .oracle import CountingOracle, as_counting
from .precision import (
    FLOAT64_EPS,
    NoiseModel,
    estimate_precision,
    representable_in,
    resolve_precision,
    saturation_for_precision,
)
from .queries import choose_directions, learn_value, margin_directions, measure_bilinear

__all__ = ["recover_exact", "check_identifiable", "NotIdentifiableError", "pair_scale", "PILOT_LOGIT_FRACTION"]


class NotIdentifiableError(ValueError):
    """The learned value vector is zero (up to the noise level): A cannot be identified."""


def check_identifiable(v: np.ndarray, tol: float = 0.0) -> None:
    """Raise if the learned value vector is zero: then f is identically zero and A is unidentifiable."""
    if np.max(np.abs(v)) <= tol:
        raise NotIdentifiableError(
            "the value vector v is zero (every single-token answer is 0 up to the noise level): the "
            "target function is identically zero and its attention matrix A is not identifiable"
        )


def _resolve(
    counter: CountingOracle, d: int, v_answers: np.ndarray, precision: float | str | None
) -> tuple[float, str, int]:
    """(eps, source, probe queries) for a recovery's ``precision`` argument (see precision.py)."""
    if isinstance(precision, str) and precision == "estimate":
        before = counter.n_queries
        eps = estimate_precision(counter, d)
        return eps, "estimated", counter.n_queries - before
    eps, source = resolve_precision(precision, v_answers)
    if source.startswith("auto:") and eps > 4 * FLOAT64_EPS and d >= 2:
        # The single-token answers are v_i themselves: float32 weights in a float64 model look like a
        # float32 oracle. One counted pair answer (through the softmax) settles it.
        before = counter.n_queries
        X = np.zeros((2, d))
        X[0, 0], X[0, 1], X[1, 0], X[1, 1] = (
            0.7310585786300049,
            0.2689414213699951,
            0.3775406687981454,
            0.6224593312018546,
        )
        pair = float(counter(X))
        if not representable_in(np.array([pair]), source.split(":", 1)[1]):
            # the pair answer has more digits than the inferred type holds: a float64 computation
            eps, source = FLOAT64_EPS, "auto:float64 (low-precision weights, float64 arithmetic)"
        return eps, source, counter.n_queries - before
    return eps, source, 0


def pair_scale(y_seen: np.ndarray, saturation: float, s_now: float = 1.0) -> float:
    """Query scale for the remaining pairs after a pilot: the largest s <= 1 at which the largest |b^T A c|
    seen so far would give a logit of PILOT_LOGIT_FRACTION log((1 - w) / w) (saves rescale retries)."""
    y_max = float(np.max(np.abs(y_seen))) if y_seen.size else 0.0
    limit = PILOT_LOGIT_FRACTION * float(np.log((1 - saturation) / saturation))
    if y_max == 0.0:
        return s_now
    return float(min(1.0, np.sqrt(limit / y_max)))


# The pilot row's largest logit is put at this fraction of the acceptance limit: the largest |b^T A c| of
# the whole matrix may then be up to 1/fraction times the pilot row's without a retry (our choice).
PILOT_LOGIT_FRACTION = 0.15


def recover_exact(
    oracle: Callable[[np.ndarray], float],
    d: int,
    *,
    batch: bool = True,
    saturation: float | None = None,
    precision: float | str | None = "auto",
    affine: bool = False,
) -> HeadEstimate:
    """Method 1 (exact O(d^2) algorithm): recover (A, v) with d^2 + d queries plus counted rescales.

    Parameters
    ----------
    oracle : callable f(X) -> float on (n, d) arrays; wrapped in a CountingOracle if it is not one.
    d : token dimension.
    batch : send the d value queries and the pair queries (non-adaptive given v) as batches.
    saturation : softmax-saturation threshold of step 4; None: from the precision (brief: 1e-9 in float64).
    precision : the oracle's relative precision: ``"auto"`` (default: inferred for free from the answers'
        float type), ``"estimate"`` (12 counted linearity probes), None / "float64", or a number.
        Below float64 precision the saturation threshold is raised (``saturation_for_precision``) and every
        pair is re-asked once at its SNR-optimal scale when that at least halves its error bar.
    affine : the head has biases (a real layer's, see ``affine.py``): also learn the value offset c_0
        (1 query) and the query-bias vector w (d queries), d^2 + 2d + 1 queries in all.

    Returns
    -------
    HeadEstimate with A (d, d), v (d,), n_queries = d^2 + d + n_rescale_queries (+ probes), error_bound_A.

    Notes
    -----
    The first row of pairs (b = e_1) is a pilot: the remaining d^2 - d pairs are asked at the scale that puts
    its largest logit at 15% of the acceptance limit, so large entries of A cost O(d log) retries, not O(d^2).
    """
    d = check_dim(d)
    counter: CountingOracle = as_counting(oracle)
    start = counter.n_queries
    if affine:  # step 1 for the affine head: c_0 and v from d + 1 single tokens
        terms = learn_value_affine(counter, d, batch=batch)
        v, c0, answers = terms.v, terms.value_offset, terms.answers
    else:
        v = learn_value(counter, d, batch=batch)  # step 1: d queries
        c0, answers = 0.0, v
    eps, source, n_probe = _resolve(counter, d, answers, precision)
    if saturation is None:
        saturation = saturation_for_precision(eps)
    if isinstance(saturation, bool) or not 0.0 < saturation < 0.5:
        raise ValueError(f"saturation must be in (0, 0.5), got {saturation}")
    low_precision = eps > 4 * FLOAT64_EPS
    noise = NoiseModel(tau=0.0, eps=eps, source=source)
    v_err = float(np.max(noise.bound(np.abs(answers))))
    v_err += float(noise.bound(abs(c0)))  # v = answer - c_0 (0 for the homogeneous head)
    noise = offset_noise(noise, c0)
    check_identifiable(v, tol=2.0 * v_err if low_precision else 0.0)
    # step 3: columns c_j. Below float64 precision the margin |v^T c_j| matters (errors ~ 1/margin):
    # Deviation: c_j = e_j + sign(v_j) v/||v|| (margin >= ||v||) instead of the brief's e_j (margin |v_j|).
    C = margin_directions(v) if low_precision else choose_directions(v)
    rows = np.repeat(np.eye(d), d, axis=0)  # pair (i, j) -> b = e_i
    cols = np.tile(C.T, (d, 1))  # pair (i, j) -> c = c_j
    kw: dict[str, Any] = dict(saturation=saturation, batch=batch, noise=noise, v_err=v_err, adapt=low_precision)
    w: np.ndarray | None = None
    n_bias_rescale = 0
    if affine:  # the query bias w from d pairs (s c_j, 0), then removed from every logit
        kw["value_offset"] = c0
        w, w_err, n_bias_rescale = learn_query_bias(counter, v, C, kw)
        kw.update(w=w, w_err=w_err)
    # Deviation: the brief asks all d^2 pairs at s = 1; a pilot row sets the others' scale (fewer retries).
    pilot = measure_bilinear(counter, v, rows[:d], cols[:d], **kw)  # type: ignore[arg-type]
    s_rest = pair_scale(pilot.y, saturation)
    rest = measure_bilinear(counter, v, rows[d:], cols[d:], scale=s_rest, **kw)  # type: ignore[arg-type]
    y = np.concatenate([pilot.y, rest.y])
    dy = np.concatenate([pilot.dy, rest.dy])  # type: ignore[list-item]
    M = y.reshape(d, d)  # M_ij = e_i^T A c_j, i.e. M = A C
    A = np.linalg.solve(C.T, M.T).T  # A = M C^{-1}
    bound = float(np.linalg.norm(dy)) * float(np.linalg.norm(np.linalg.inv(C), 2))
    return HeadEstimate(
        A=A,
        v=v,
        n_queries=counter.n_queries - start,
        n_rescale_queries=pilot.n_rescale + rest.n_rescale + n_bias_rescale,
        rank=None,
        method="exact",
        n_measurements=d * d + (d if affine else 0),
        error_bound_A=bound,
        error_bound_v=v_err,
        precision=eps,
        precision_source=source,
        n_probe_queries=n_probe,
        w=w,
        value_offset=c0 if affine else None,
    )
