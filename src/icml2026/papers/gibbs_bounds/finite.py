"""An exact finite-hypothesis-class setting: the Gibbs posterior by enumeration.

Hypotheses are 2-D linear classifiers ``h(x) = 1[cos(a) x_1 + sin(a) x_2 > b]`` on a grid of angles a
and offsets b, with a uniform prior. The data distribution is uniform on a finite grid of points of
``[-1, 1]^2`` with labels from a planted linear rule flipped with probability ``eta``, so the true risk
of every hypothesis, and of every Gibbs posterior, is computed exactly.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.special import logsumexp

from icml2026.core.validate import as_array, finite_number, positive_int, same_length

__all__ = [
    "FiniteClassProblem",
    "make_finite_linear_problem",
    "sample_empirical_risks",
    "gibbs_posterior",
    "log_partition",
    "gibbs_expected",
    "exact_gibbs_kl",
    "gibbs_expected_curve",
]


@dataclass(frozen=True)
class FiniteClassProblem:
    """A finite class on a finite domain.

    Attributes
    ----------
    points : (M, 2) the domain (uniform marginal).
    p_label_one : (M,) ``P(y = 1 | x)``.
    predictions : (H, M) 0/1 predictions of each hypothesis on each point.
    true_risk : (H,) exact 0-1 risk of each hypothesis.
    """

    points: np.ndarray
    p_label_one: np.ndarray
    predictions: np.ndarray
    true_risk: np.ndarray

    @property
    def n_hypotheses(self) -> int:
        return int(self.predictions.shape[0])


def make_finite_linear_problem(
    n_angles: int = 50,
    n_offsets: int = 40,
    grid_size: int = 20,
    eta: float = 0.1,
    target_angle: float = 0.7,
    target_offset: float = 0.1,
) -> FiniteClassProblem:
    """``n_angles * n_offsets`` linear classifiers (default 2,000, the brief's size) on a
    ``grid_size x grid_size`` grid of ``[-1, 1]^2``; label noise ``eta`` around a planted rule."""
    n_angles, n_offsets = positive_int(n_angles, "n_angles"), positive_int(n_offsets, "n_offsets")
    grid_size = positive_int(grid_size, "grid_size")
    eta = finite_number(eta, "eta", lo=0.0, hi=0.5, hi_open=True)
    target_angle = finite_number(target_angle, "target_angle")
    target_offset = finite_number(target_offset, "target_offset")
    g = np.linspace(-1.0, 1.0, grid_size)
    pts = np.stack(np.meshgrid(g, g, indexing="ij"), axis=-1).reshape(-1, 2)
    target = (np.cos(target_angle) * pts[:, 0] + np.sin(target_angle) * pts[:, 1] > target_offset)
    p1 = np.where(target, 1.0 - eta, eta)
    angles = np.linspace(0.0, 2.0 * np.pi, n_angles, endpoint=False)
    offsets = np.linspace(-1.2, 1.2, n_offsets)
    a_grid, b_grid = np.meshgrid(angles, offsets, indexing="ij")
    a, b = a_grid.ravel(), b_grid.ravel()
    proj = np.cos(a)[:, None] * pts[None, :, 0] + np.sin(a)[:, None] * pts[None, :, 1]
    preds = (proj > b[:, None]).astype(np.int8)
    true_risk = np.mean(np.where(preds == 1, 1.0 - p1[None, :], p1[None, :]), axis=1)
    return FiniteClassProblem(pts, p1, preds, true_risk)


def sample_empirical_risks(problem: FiniteClassProblem, n: int, rng: np.random.Generator) -> np.ndarray:
    """Draw an i.i.d. sample of size n and return the (H,) empirical 0-1 risks of all hypotheses."""
    n = positive_int(n, "n")
    idx = rng.integers(0, problem.points.shape[0], size=n)
    y = (rng.random(n) < problem.p_label_one[idx]).astype(np.int8)
    return np.mean(problem.predictions[:, idx] != y[None, :], axis=1)


def _risks(emp_risk: np.ndarray, name: str = "emp_risk") -> np.ndarray:
    """A non-empty finite 1-D array of per-hypothesis losses."""
    return as_array(emp_risk, name, ndim=1)


def _beta(beta: float) -> float:
    return finite_number(beta, "beta", lo=0.0)


def _log_prior(n_h: int, log_prior: np.ndarray | None) -> np.ndarray:
    if log_prior is None:
        return np.full(n_h, -np.log(n_h))
    lp = as_array(log_prior, "log_prior", ndim=1, finite=False)  # -inf: a hypothesis of prior mass 0
    if lp.shape != (n_h,) or not np.isclose(logsumexp(lp), 0.0, atol=1e-9):
        raise ValueError("log_prior must be an (H,) array of log-probabilities summing to one")
    return lp


def log_partition(emp_risk: np.ndarray, beta: float, log_prior: np.ndarray | None = None) -> float:
    """``ln Z(beta) = ln E_pi exp(-beta L_S)`` (exact, by enumeration)."""
    lr = _risks(emp_risk)
    beta = _beta(beta)
    return float(logsumexp(-beta * lr + _log_prior(lr.size, log_prior)))


def gibbs_posterior(emp_risk: np.ndarray, beta: float, log_prior: np.ndarray | None = None) -> np.ndarray:
    """``Q_beta(h) = pi(h) exp(-beta L_S(h)) / Z(beta)`` as an (H,) probability vector."""
    beta = _beta(beta)
    lr = _risks(emp_risk)
    logits = -beta * lr + _log_prior(lr.size, log_prior)
    return np.exp(logits - logsumexp(logits))


def gibbs_expected(
    values: np.ndarray, emp_risk: np.ndarray, beta: float, log_prior: np.ndarray | None = None
) -> float:
    """``E_{Q_beta}[values]`` for an (H,) array (e.g. the empirical or the true risks)."""
    v = as_array(values, "values", ndim=1)
    q = gibbs_posterior(emp_risk, beta, log_prior)
    same_length(values=v, emp_risk=q)
    return float(q @ v)


def exact_gibbs_kl(emp_risk: np.ndarray, beta: float, log_prior: np.ndarray | None = None) -> float:
    """``KL(Q_beta || pi) = sum_h Q(h) ln(Q(h) / pi(h))`` computed directly from the enumeration."""
    lr = _risks(emp_risk)
    beta = _beta(beta)
    lp = _log_prior(lr.size, log_prior)
    logits = -beta * lr + lp
    logq = logits - logsumexp(logits)
    q = np.exp(logq)
    return float(max(np.sum(q * (logq - lp)), 0.0))


def gibbs_expected_curve(
    values: np.ndarray, emp_risk: np.ndarray, betas: np.ndarray, log_prior: np.ndarray | None = None,
    chunk: int = 4096,
) -> np.ndarray:
    """``E_{Q_gamma}[values]`` for every gamma in ``betas`` (vectorised :func:`gibbs_expected`).

    Hypotheses with equal empirical risk have posterior weights in a fixed ratio, so they are pooled
    first (at most n + 1 distinct risks for a sample of size n): exact, and much faster.

    Returns
    -------
    (G,) array for the (G,) ``betas``.
    """
    lr = _risks(emp_risk)
    v = as_array(values, "values", ndim=1)
    same_length(values=v, emp_risk=lr)
    lp = _log_prior(lr.size, log_prior)
    g = as_array(betas, "betas", ndim=1)
    if np.any(g < 0):
        raise ValueError("betas must be >= 0")
    chunk = positive_int(chunk, "chunk")
    uniq, inv = np.unique(lr, return_inverse=True)
    prior = np.exp(lp)
    mass = np.bincount(inv, weights=prior, minlength=uniq.size)
    vbar = np.bincount(inv, weights=prior * v, minlength=uniq.size) / mass
    log_mass = np.log(mass)
    out = np.empty(g.size)
    for s in range(0, g.size, chunk):
        logits = -g[s : s + chunk, None] * uniq[None, :] + log_mass[None, :]
        logits -= logits.max(axis=1, keepdims=True)
        w = np.exp(logits)
        out[s : s + chunk] = (w @ vbar) / w.sum(axis=1)
    return out
