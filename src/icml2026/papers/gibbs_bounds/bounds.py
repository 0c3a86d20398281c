"""The bound: KL of the Gibbs posterior from an integral over inverse temperature, and PAC-Bayes-kl.

Maurer, Mirzaei & Pontil (arXiv:2510.06028):

* Identity (log-partition): ``d/dbeta ln Z(beta) = -E_{Q_beta}[L_S]`` and ``ln Z(0) = 0`` give
  ``KL(Q_beta || pi) = int_0^beta E_{Q_gamma}[L_S] dgamma - beta E_{Q_beta}[L_S]``.
* PAC-Bayes-kl (Seeger 2002; Maurer 2004): with probability >= 1 - delta, for every Q,
  ``kl(E_Q L_S || E_Q L) <= (KL(Q || pi) + ln(2 sqrt(n) / delta)) / n``.
* Predicted / bounded test error: ``kl^{-1}(train error, B)``, the largest q with ``kl(p || q) <= B``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.optimize import brentq

__all__ = [
    "KL_INVERSE_CAP",
    "BoundCurve",
    "kl_bernoulli",
    "kl_inverse_upper",
    "gibbs_kl",
    "pac_bayes_complexity",
    "pac_bayes_kl_bound",
    "relaxed_kl_bound",
    "bound_curve",
    "calibrate_lambda",
]

KL_INVERSE_CAP = 1.0 - 1e-12  # kl^{-1} never returns 1 itself (kl(p || 1) is infinite for p < 1)


def _check_prob(name: str, value: float) -> float:
    v = float(value)
    if not (0.0 <= v <= 1.0) or math.isnan(v):
        raise ValueError(f"{name} must lie in [0, 1], got {value!r}")
    return v


def kl_bernoulli(p: float, q: float) -> float:
    """Bernoulli relative entropy ``kl(p || q) = p ln(p/q) + (1-p) ln((1-p)/(1-q))`` (0 ln 0 = 0)."""
    p, q = _check_prob("p", p), _check_prob("q", q)
    out = 0.0
    if p > 0.0:
        out += math.inf if q == 0.0 else p * math.log(p / q)
    if p < 1.0:
        out += math.inf if q == 1.0 else (1.0 - p) * math.log((1.0 - p) / (1.0 - q))
    return out


def kl_inverse_upper(q: float, bound: float) -> float:
    """Upper kl inversion (Eq. of the PAC-Bayes-kl bound): ``max{r in [q, 1) : kl(q || r) <= bound}``.

    Parameters
    ----------
    q : the empirical risk in [0, 1] (the brief's ``p``).
    bound : the right-hand side ``B >= 0`` of the PAC-Bayes-kl inequality.

    Returns
    -------
    float : the root of ``kl(q || r) = bound`` on ``[q, 1)`` found by Brent's method to 1e-14 (tighter
    than the 1e-5 bisection of the official code), or ``KL_INVERSE_CAP = 1 - 1e-12`` when even that
    value satisfies the inequality (a huge ``bound``).
    """
    q = _check_prob("q (empirical risk)", q)
    b = float(bound)
    if math.isnan(b) or b < 0.0:
        raise ValueError(f"bound must be a non-negative number, got {bound!r}")
    if q >= KL_INVERSE_CAP or kl_bernoulli(q, KL_INVERSE_CAP) <= b:
        return KL_INVERSE_CAP
    if b == 0.0:
        return q
    return float(brentq(lambda r: kl_bernoulli(q, r) - b, q, KL_INVERSE_CAP, xtol=1e-14, rtol=1e-15))


def _validate_grid(betas: np.ndarray, losses: np.ndarray, loss_bound: float) -> None:
    if betas.ndim != 1 or betas.size < 1:
        raise ValueError(f"betas must be a non-empty 1-D array, got shape {betas.shape}")
    if losses.shape != betas.shape:
        raise ValueError(f"mean_train_losses has shape {losses.shape}, betas has shape {betas.shape}")
    if not (np.all(np.isfinite(betas)) and np.all(np.isfinite(losses))):
        raise ValueError("betas and mean_train_losses must be finite")
    if betas[0] != 0.0:
        raise ValueError(
            f"the beta grid must start at 0 (the prior average loss), got betas[0] = {betas[0]}; "
            "omitting beta_0 = 0 under-estimates the KL"
        )
    if np.any(np.diff(betas) <= 0):
        raise ValueError(f"betas must be strictly increasing, got {betas.tolist()}")
    if not (loss_bound > 0 and math.isfinite(loss_bound)):
        raise ValueError(f"loss_bound must be a positive finite number, got {loss_bound}")
    if np.any(losses < 0) or np.any(losses > loss_bound):
        raise ValueError(
            f"mean train losses must lie in [0, loss_bound = {loss_bound}], got range "
            f"[{losses.min()}, {losses.max()}]"
        )


def gibbs_kl(
    betas: np.ndarray,
    mean_train_losses: np.ndarray,
    *,
    lam: float = 1.0,
    loss_bound: float = 1.0,
    rule: str = "left",
) -> np.ndarray:
    """KL(Q_beta_k || pi) at every grid point from the log-partition identity (brief, identity 1).

    ``Gamma_k = lam * (I_k - beta_k Lbar_k)`` with the left-Riemann sum
    ``I_k = sum_{j<k} (beta_{j+1} - beta_j) Lbar_j``. Because ``E_{Q_gamma}[L_S]`` is non-increasing in
    gamma, the left rule over-estimates the integral, hence the KL, when the ``Lbar_j`` are exact.
    ``rule="trapezoid"`` gives the trapezoid rule (for fine grids and checks of the identity).

    Parameters
    ----------
    betas : (K+1,) strictly increasing inverse temperatures with ``betas[0] = 0``, in the units of the
        loss whose Gibbs posterior ``exp(-beta L_S) pi`` is sampled.
    mean_train_losses : (K+1,) ``Lbar_k = E_{Q_beta_k}[L_S]``, each in ``[0, loss_bound]``.
    lam : calibration factor (brief: lam = 1 is the uncalibrated value); must be positive.
    loss_bound : upper end of the loss range.
    rule : ``"left"`` (the paper's rule) or ``"trapezoid"``.

    Returns
    -------
    (K+1,) array of KL estimates in nats (``Gamma_0 = 0``). Not clipped: noisy ``Lbar`` can make an
    entry slightly negative; :func:`bound_curve` clips at 0 (a KL is never negative).
    """
    b = np.asarray(betas, dtype=float)
    lbar = np.asarray(mean_train_losses, dtype=float)
    _validate_grid(b, lbar, loss_bound)
    if not lam > 0 or not math.isfinite(lam):
        raise ValueError(f"lam must be a positive finite number, got {lam}")
    widths = np.diff(b)
    if rule == "left":
        pieces = widths * lbar[:-1]
    elif rule == "trapezoid":
        pieces = widths * 0.5 * (lbar[:-1] + lbar[1:])
    else:
        raise ValueError(f"rule must be 'left' or 'trapezoid', got {rule!r}")
    integral = np.concatenate([[0.0], np.cumsum(pieces)])  # I_k
    return lam * (integral - b * lbar)  # Gamma_k


def pac_bayes_complexity(kl: float, n: int, delta: float) -> float:
    """``B = (KL + ln(2 sqrt(n) / delta)) / n``, the right-hand side of the PAC-Bayes-kl bound."""
    if isinstance(n, bool) or int(n) != n or n < 1:
        raise ValueError(f"n must be a positive integer, got {n!r}")
    d = float(delta)
    if not 0.0 < d < 1.0:
        raise ValueError(f"delta must lie in the open interval (0, 1), got {delta!r}")
    k = float(kl)
    if math.isnan(k) or k < 0.0:
        raise ValueError(f"kl must be a non-negative number, got {kl!r}")
    return (k + math.log(2.0 * math.sqrt(n) / d)) / n


def pac_bayes_kl_bound(train_risk: float, kl: float, n: int, delta: float) -> float:
    """PAC-Bayes-kl upper bound on the true risk of Q: ``kl^{-1}(E_Q L_S, (KL + ln(2 sqrt n/delta))/n)``.

    Parameters
    ----------
    train_risk : ``E_Q L_S`` in [0, 1] (any [0, 1]-valued loss, e.g. the 0-1 error).
    kl : ``KL(Q || pi) >= 0`` in nats.
    n : sample size.
    delta : confidence parameter in (0, 1).
    """
    return kl_inverse_upper(train_risk, pac_bayes_complexity(kl, n, delta))


def relaxed_kl_bound(train_risk: float, kl: float, n: int, delta: float) -> float:
    """Relaxed form ``L_S + sqrt(2 L_S B) + 2 B`` of the kl inversion (early version of the code)."""
    p = _check_prob("train_risk", train_risk)
    b = pac_bayes_complexity(kl, n, delta)
    return p + math.sqrt(2.0 * p * b) + 2.0 * b


@dataclass(frozen=True)
class BoundCurve:
    """Bounds along a beta grid (brief, "Bound-computation algorithm").

    Attributes
    ----------
    betas : (K+1,) grid, ``betas[0] = 0``.
    kl : (K+1,) KL estimates ``max(Gamma_k, 0)`` (nats), calibrated by ``lam``.
    complexity : (K+1,) ``B_k``.
    bound01 : (K+1,) ``kl^{-1}(train01_k, B_k)``; entry 0 is set to ``chance``.
    bound_loss : (K+1,) ``kl^{-1}(Lbar_k / loss_bound, B_k)`` (surrogate-loss bound, normalised).
    lam : the calibration factor used.
    """

    betas: np.ndarray
    kl: np.ndarray
    complexity: np.ndarray
    bound01: np.ndarray
    bound_loss: np.ndarray
    lam: float


def bound_curve(
    betas: np.ndarray,
    mean_train_losses: np.ndarray,
    train01: np.ndarray,
    n: int,
    delta: float,
    *,
    lam: float = 1.0,
    loss_bound: float = 1.0,
    chance: float = 0.5,
) -> BoundCurve:
    """Algorithm of the official ``plot.py``: KL by the left-Riemann rule, then PAC-Bayes-kl per beta.

    Parameters
    ----------
    betas, mean_train_losses : as in :func:`gibbs_kl`.
    train01 : (K+1,) ergodic 0-1 training errors of the chains, in [0, 1].
    n : training-sample size; delta : confidence in (0, 1).
    lam : calibration factor; loss_bound : range of the surrogate loss; chance : bound01 at beta = 0.
    """
    t01 = np.asarray(train01, dtype=float)
    lbar = np.asarray(mean_train_losses, dtype=float)
    if t01.shape != np.shape(betas):
        raise ValueError(f"train01 has shape {t01.shape}, betas has shape {np.shape(betas)}")
    if np.any(t01 < 0) or np.any(t01 > 1) or not np.all(np.isfinite(t01)):
        raise ValueError("train01 must lie in [0, 1]")
    chance = _check_prob("chance", chance)
    gam = np.maximum(gibbs_kl(betas, lbar, lam=lam, loss_bound=loss_bound), 0.0)
    comp = np.array([pac_bayes_complexity(g, n, delta) for g in gam])
    b01 = np.array([kl_inverse_upper(p, c) for p, c in zip(t01, comp, strict=True)])
    b01[0] = chance  # brief: bound01_0 is set to chance level
    bl = np.array([kl_inverse_upper(p / loss_bound, c) for p, c in zip(lbar, comp, strict=True)])
    return BoundCurve(np.asarray(betas, dtype=float), gam, comp, b01, bl, float(lam))


def calibrate_lambda(
    betas: np.ndarray,
    mean_train_losses: np.ndarray,
    train01: np.ndarray,
    n: int,
    delta: float,
    *,
    target: float = 0.5,
    lam_range: tuple[float, float] = (0.1, 100.0),
    tol: float = 0.01,
    loss_bound: float = 1.0,
) -> float:
    """Calibration on random labels (brief): the smallest lam in ``lam_range`` with
    ``min_{k>=1} bound01_k >= target`` (the true test error of random labels), by bisection to ``tol``.

    The bound is non-decreasing in lam (the clipped KL is), so bisection applies. Returns the lower
    end when it already suffices and the upper end when even that fails (the caller should check).
    """
    lo, hi = float(lam_range[0]), float(lam_range[1])
    if not 0 < lo < hi:
        raise ValueError(f"lam_range must satisfy 0 < lo < hi, got {lam_range}")
    if not math.isfinite(hi):
        raise ValueError(f"lam_range must be finite, got {lam_range}")
    if not (tol > 0 and math.isfinite(tol)):
        raise ValueError(f"tol must be a positive finite number, got {tol}")
    target = _check_prob("target", target)

    def ok(lam: float) -> bool:
        c = bound_curve(betas, mean_train_losses, train01, n, delta, lam=lam, loss_bound=loss_bound)
        return bool(np.min(c.bound01[1:]) >= target) if c.bound01.size > 1 else True

    if ok(lo):
        return lo
    if not ok(hi):
        return hi
    while hi - lo > tol:
        mid = 0.5 * (lo + hi)
        if ok(mid):
            hi = mid
        else:
            lo = mid
    return hi
