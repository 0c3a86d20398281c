"""Method 3: recovery from a noisy oracle with additive tolerance tau, with an error bar.

The oracle answers f(X) + eta with |eta| <= tau, and query tokens must have norm <= B_x (``norm_bound``).
The queries are those of Method 1, spent for signal-to-noise (our reconstruction of the brief's Method 3):

* v from single tokens at the full norm budget (s = B_x): each v_i to within tau / B_x;
* directions c_j = e_j + sign(v_j) v / ||v|| (a basis, ||c_j|| <= 2), so every margin |v^T c_j| is at
  least ||v||, the most a unit-scale direction can have (Method 1's e_j can have margin |v_j| ~ 1/d);
* each pair query (s (e_i + c_j), s e_i) starts at the largest admissible scale s_max = B_x / ||e_i + c_j||,
  is halved while its weight leaves [window, 1 - window], and is then re-asked once at the scale that
  minimises its predicted error (|logit| ~ 2, or s_max when the norm bound binds) if that at least halves
  it. The error of one measurement b^T A c is ~ tau / (s^3 |v^T c| alpha (1 - alpha)).

Every measurement carries an error bar (the noise bound propagated exactly through the two-token identity
and the logit), so the estimate comes with ||A_hat - A||_F <= ||dM||_F ||C^{-1}||_2 for ANY noise within
the tolerance. When the conditions of the statement cannot be met (margin hidden by the noise, no scale
resolving the softmax weight under the norm bound, or an error bar as large as A itself) the method raises
:class:`NoisyConditionError` naming the condition. :func:`noisy_error_bound` is the a-priori statement:
error <= K tau d ||C^{-1}|| / (margin s*^3) with s* = min(B_x / 3, sqrt(2 / max|b^T A c|)), polynomial in
d, 1/eps, ||A||, 1/B_x and 1/margin.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from icml2026.core.validate import as_array

from .data import check_rng
from .exact import check_identifiable
from .model import HeadEstimate, check_dim
from .oracle import SignPatternAdversary, as_counting
from .precision import NoiseModel, resolve_precision
from .queries import L_STAR, NoisyConditionError, learn_value, margin_directions, measure_bilinear

__all__ = [
    "recover_noisy",
    "margin_directions",
    "noisy_error_bound",
    "search_adversary",
    "AdversarySearch",
    "NoisyConditionError",
]

_SIGMA_PRIME_LSTAR = float(np.exp(-L_STAR) / (1 + np.exp(-L_STAR)) ** 2)  # sigma'(L*) ~ 0.105


def recover_noisy(
    oracle: Callable[[np.ndarray], float],
    d: int,
    tau: float,
    *,
    norm_bound: float = 1.0,
    n_repeats: int = 1,
    window: float = 0.05,
    batch: bool = True,
    precision: float | str | None = None,
    max_relative_error: float = 1.0,
) -> HeadEstimate:
    """Method 3: estimate (A, v) from a tau-noisy oracle, with error bars.

    Parameters
    ----------
    oracle : noisy callable f(X) + eta, |eta| <= tau (e.g. a NoisyOracle), counted if not a CountingOracle.
    d : token dimension.
    tau : the oracle's tolerance (the error bars assume |eta| <= tau for every answer).
    norm_bound : B_x, the largest token norm a query may use.
    n_repeats : ask each query this many times and keep the median answer (random noise only).
    window : a query is re-asked at half the scale while its softmax weight is outside [window, 1 - window].
    batch : send each round of queries as one batch.
    precision : the oracle's relative rounding on top of tau (None: float64; see ``precision.py``).
    max_relative_error : raise NoisyConditionError when the error bar of A reaches this fraction of ||A||_F.

    Returns
    -------
    HeadEstimate with ``error_bound_A`` (Frobenius) and ``error_bound_v`` (max-abs); n_queries counts
    every call: (d^2 + d) n_repeats + retries (halvings and at most one SNR re-ask per pair).
    """
    d = check_dim(d)
    if isinstance(tau, bool) or not isinstance(tau, (int, float, np.floating)) or not np.isfinite(tau) or tau < 0:
        raise ValueError(f"tau must be a finite number >= 0, got {tau!r}")
    if (
        isinstance(norm_bound, bool)
        or not isinstance(norm_bound, (int, float, np.floating))
        or not np.isfinite(norm_bound)
        or norm_bound <= 0
    ):
        raise ValueError(f"norm_bound must be a finite positive number, got {norm_bound!r}")
    n_repeats = check_dim(n_repeats, "n_repeats")
    if not 0.0 < window < 0.5:
        raise ValueError(f"window must be in (0, 0.5), got {window}")
    if not (np.isfinite(max_relative_error) and max_relative_error > 0):
        raise ValueError(f"max_relative_error must be a finite positive number, got {max_relative_error!r}")
    counter = as_counting(oracle)
    start = counter.n_queries
    B = float(norm_bound)
    f_single = B * learn_value(counter, d, scale=B, batch=batch, n_repeats=n_repeats)  # answers f(B e_i)
    eps, source = resolve_precision(precision, f_single)
    noise = NoiseModel(tau=float(tau), eps=eps, source=source)
    v = f_single / B
    v_err = float(np.max(noise.bound(np.abs(f_single)))) / B  # |v_hat_i - v_i| <= v_err
    try:
        check_identifiable(v, tol=2.0 * v_err)
    except ValueError as exc:
        raise NoisyConditionError(
            f"margin condition violated: every |v_i| <= {2 * v_err:.3g} = 2 tau / B_x, the value vector is "
            f"indistinguishable from 0 at tolerance tau = {tau:.3g} with norm bound B_x = {B:.3g} "
            "(not identifiable at this noise level); raise norm_bound or lower tau"
        ) from exc
    # Deviation: the brief reuses Method 1's directions (margin |v_j|, ~1/d); these have margin >= ||v||.
    C = margin_directions(v)
    rows = np.repeat(np.eye(d), d, axis=0)  # b = e_i
    cols = np.tile(C.T, (d, 1))  # c = c_j
    longest = np.maximum(np.linalg.norm(rows + cols, axis=1), np.linalg.norm(rows, axis=1))
    s_max = B / longest
    meas = measure_bilinear(
        counter,
        v,
        rows,
        cols,
        scale=s_max,  # largest scale the norm budget allows: max |v^T c| signal
        saturation=window,
        shrink=2.0,
        batch=batch,
        n_repeats=n_repeats,
        noise=noise,
        v_err=v_err,
        s_max=s_max,
        # Deviation: one SNR re-ask per pair (counted) on top of the brief's "scale so that |logit| <= ~1".
        adapt=True,
    )
    C_inv = np.linalg.inv(C)
    A = meas.y.reshape(d, d) @ C_inv  # A = M C^{-1}
    assert meas.dy is not None
    bound_A = float(np.linalg.norm(meas.dy)) * float(np.linalg.norm(C_inv, 2))
    norm_A = float(np.linalg.norm(A))
    if bound_A >= max_relative_error * max(norm_A - bound_A, 0.0):
        binding = float(np.mean(meas.scales >= s_max * (1 - 1e-9)))
        raise NoisyConditionError(
            f"norm condition violated: the error bar ||A_hat - A||_F <= {bound_A:.3g} is not below "
            f"{max_relative_error:g} x ||A||_F (||A_hat||_F = {norm_A:.3g}) at tau = {tau:.3g}: with token "
            f"norms <= B_x = {B:.3g} ({binding:.0%} of the queries at that bound) and margin "
            f"min |v^T c| = {float(np.min(np.abs(C.T @ v))):.3g} the noise swamps the softmax signal; "
            f"the error scales like 1/B_x^3 there, so B_x ~ {B * (bound_A / max(norm_A, 1e-300) * 4) ** (1 / 3):.2g} "
            "or a smaller tau is needed"
        )
    return HeadEstimate(
        A=A,
        v=v,
        n_queries=counter.n_queries - start,
        n_rescale_queries=meas.n_rescale,
        rank=None,
        method="noisy",
        n_measurements=d * d,
        error_bound_A=bound_A,
        error_bound_v=v_err,
        precision=eps,
        precision_source=source,
    )


def noisy_error_bound(A: np.ndarray, v: np.ndarray, tau: float, norm_bound: float = 1.0) -> float:
    """A-priori bound on ||A_hat - A||_F of :func:`recover_noisy` (our derivation of the paper's
    "O(tau poly(d, ||A||, 1/margin))" statement), to first order in tau, from the true (A, v):

        ||A_hat - A||_F <= d ||C^{-1}||_2 * 2 * delta_alpha / (s*^2 sigma'(L*)),
        delta_alpha = (tau (1 + s*/B_x) + s* (tau/B_x) ||c||_1) / (s* margin),
        s* = min(min_t s_max,t, sqrt(L* / max|b^T A c|)),  margin = min_j |v^T c_j| >= ||v||,

    where the factor 2 is the SNR re-ask threshold and sigma'(L*) ~ 0.105 the softmax slope at |logit|
    L* ~ 2. Polynomial: linear in tau, d (and ||C^{-1}|| <= 1 + sqrt(d)/2), 1/margin; ||A||^{3/2} when
    the logits bind, 1/B_x^3 when the norm bound binds. float64 rounding is neglected.
    """
    v = as_array(v, "v", ndim=1, dtype=np.float64)
    A = as_array(A, "A", ndim=2, dtype=np.float64)
    if A.shape != (v.size, v.size):
        raise ValueError(f"A: expected shape ({v.size}, {v.size}) to match v, got {A.shape}")
    d = A.shape[0]
    C = margin_directions(v)
    margin = float(np.min(np.abs(C.T @ v)))
    Y = float(np.max(np.abs(A @ C)))  # max_ij |e_i^T A c_j|
    longest = max(float(np.max(np.linalg.norm(np.eye(d)[:, None, :] + C.T[None, :, :], axis=2))), 1.0)
    s_lim = norm_bound / longest
    s_star = min(s_lim, np.sqrt(L_STAR / Y)) if Y > 0 else s_lim
    c_l1 = float(np.max(np.abs(C).sum(axis=0)))
    tau_v = tau / norm_bound
    d_alpha = (tau * (1 + s_star / norm_bound) + s_star * tau_v * c_l1) / (s_star * margin)
    dy = 2.0 * d_alpha / (s_star**2 * _SIGMA_PRIME_LSTAR)
    return float(d * dy * np.linalg.norm(np.linalg.inv(C), 2))


@dataclass
class AdversarySearch:
    """Result of :func:`search_adversary`: the worst relative error found and its sign pattern."""

    worst_error: float
    worst_bound_ratio: float  # max over evaluated adversaries of error / error bar (must stay <= 1)
    single: np.ndarray
    rows: np.ndarray
    cols: np.ndarray
    n_evaluations: int
    start_error: float  # error of the starting pattern (the "worst_case" adversary)


def search_adversary(
    head: Callable[[np.ndarray], float],
    A_true: np.ndarray,
    d: int,
    tau: float,
    rng: np.random.Generator,
    *,
    norm_bound: float = 1.0,
    n_passes: int = 1,
    n_random: int = 4,
) -> AdversarySearch:
    """Search for a worse adversary: hill-climb over the 3d signs of :class:`SignPatternAdversary`.

    Starts from the "worst_case" pattern (single tokens -tau, pairs +tau), tries ``n_random`` random
    patterns, then flips one sign at a time (``n_passes`` sweeps) keeping flips that increase the relative
    error of A. Also returns the largest error / error-bar ratio seen (the error bars must hold for all).
    """
    check_rng(rng)
    A_true = np.asarray(A_true, dtype=np.float64)
    v_dir = np.asarray([head(np.eye(d)[i][None, :]) for i in range(d)], dtype=np.float64)
    n_eval = 0
    ratio = 0.0

    def evaluate(single: np.ndarray, rows_: np.ndarray, cols_: np.ndarray) -> float:
        nonlocal n_eval, ratio
        adv = SignPatternAdversary(head, tau, single, rows_, cols_, direction=v_dir)
        est = recover_noisy(adv, d, tau, norm_bound=norm_bound)
        n_eval += 1
        err = float(np.linalg.norm(est.A - A_true))
        assert est.error_bound_A is not None
        ratio = max(ratio, err / max(est.error_bound_A, 1e-300))
        return err / float(np.linalg.norm(A_true))

    best = (-np.ones(d), np.ones(d), np.ones(d))
    start = best_err = evaluate(*best)
    for _ in range(n_random):
        cand = tuple(rng.choice([-1.0, 1.0], size=d) for _ in range(3))
        err = evaluate(*cand)
        if err > best_err:
            best, best_err = cand, err  # type: ignore[assignment]
    for _ in range(n_passes):
        for part in range(3):
            for i in range(d):
                cand = tuple(x.copy() for x in best)
                cand[part][i] *= -1.0
                err = evaluate(*cand)
                if err > best_err:
                    best, best_err = cand, err  # type: ignore[assignment]
    return AdversarySearch(best_err, ratio, *best, n_evaluations=n_eval, start_error=start)
