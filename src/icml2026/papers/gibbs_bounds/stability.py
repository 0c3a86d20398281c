"""Langevin (ULA) chains against the exact Gibbs posterior of a class small enough to enumerate.

The abstract's claim "the bounds are stable under approximation with Langevin Monte Carlo" needs a
setting where the exact Gibbs posterior is known. Here the class is the 2-D linear family
``h_theta(x) = theta . x`` on the finite domain of :mod:`.finite` (uniform on a grid of ``[-1, 1]^2``,
planted rule through the origin with label noise), the loss is the sigmoid loss
``l(theta; x, y) = sigmoid(-(2y - 1) theta . x)`` in ``(0, 1)`` (smooth, so Langevin applies) and the
prior is ``N(0, s^2 I)``.

* Exact: the Gibbs posterior ``Q_beta ∝ exp(-beta L_S) pi`` on a fine grid of theta (enumeration of
  the discretised class, i.e. a quadrature of the continuous posterior): ``E_Q L_S``, ``E_Q L`` (the true
  risk of the loss, exact over the finite domain) and ``KL(Q_beta || pi)``.
* ULA: ``theta <- theta - h grad U(theta) + sqrt(2 h) xi`` for ``U = beta L_S + |theta|^2 / (2 s^2)``
  with ``h = eta / (beta c + 1/s^2)``, where ``c`` bounds the curvature of ``L_S`` (so ``eta`` is the step
  relative to the stability limit), many independent chains started from prior draws.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.special import expit, logsumexp

from icml2026.core.validate import as_array, finite_number, positive_int

from .finite import make_finite_linear_problem

__all__ = [
    "LinearSigmoidProblem",
    "make_linear_sigmoid_problem",
    "exact_gibbs_linear",
    "ula_linear_chains",
    "SIGMOID_CURVATURE",
]

SIGMOID_CURVATURE = 1.0 / (6.0 * np.sqrt(3.0))  # max |sigma''(m)|, the curvature of the sigmoid loss


@dataclass(frozen=True)
class LinearSigmoidProblem:
    """One training sample of the 2-D linear class.

    Attributes
    ----------
    points : (M, 2) domain (uniform marginal); p_label_one : (M,) ``P(y = 1 | x)``.
    z_train : (n, 2) ``(2 y_i - 1) x_i`` of the training sample.
    prior_std : prior standard deviation s.
    """

    points: np.ndarray
    p_label_one: np.ndarray
    z_train: np.ndarray
    prior_std: float

    @property
    def n_train(self) -> int:
        return int(self.z_train.shape[0])

    @property
    def curvature(self) -> float:
        """Upper bound on the largest eigenvalue of the Hessian of ``L_S``."""
        return float(SIGMOID_CURVATURE * np.max(np.sum(self.z_train**2, axis=1)))

    def train_loss(self, theta: np.ndarray) -> np.ndarray:
        """``L_S(theta)`` for (..., 2) thetas."""
        return np.mean(expit(-(theta @ self.z_train.T)), axis=-1)

    def risk(self, theta: np.ndarray) -> np.ndarray:
        """Exact true risk of the sigmoid loss, ``E_x [p1 sigma(-theta.x) + (1 - p1) sigma(theta.x)]``."""
        s = theta @ self.points.T
        return np.mean(self.p_label_one * expit(-s) + (1.0 - self.p_label_one) * expit(s), axis=-1)


def make_linear_sigmoid_problem(
    n_train: int,
    rng: np.random.Generator,
    *,
    grid_size: int = 20,
    eta: float = 0.1,
    prior_std: float = 1.5,
    target_angle: float = 0.7,
) -> LinearSigmoidProblem:
    """Draw an i.i.d. training sample of size ``n_train`` from the finite domain of :mod:`.finite`."""
    n_train = positive_int(n_train, "n_train")
    prior_std = finite_number(prior_std, "prior_std", lo=0.0, lo_open=True)
    fin = make_finite_linear_problem(1, 1, grid_size, eta, target_angle=target_angle, target_offset=0.0)
    idx = rng.integers(0, fin.points.shape[0], size=n_train)
    y = (rng.random(n_train) < fin.p_label_one[idx]).astype(float)
    z = (2.0 * y - 1.0)[:, None] * fin.points[idx]
    return LinearSigmoidProblem(fin.points, fin.p_label_one, z, prior_std)


def exact_gibbs_linear(
    prob: LinearSigmoidProblem,
    betas: np.ndarray,
    *,
    half_width_sd: float = 6.0,
    n_grid: int = 301,
    chunk: int = 20000,
) -> dict[str, np.ndarray]:
    """Exact ``E_Q L_S``, ``E_Q L`` and ``KL(Q_beta || pi)`` by enumeration of a theta grid.

    The grid spans ``+- half_width_sd`` prior standard deviations per axis with ``n_grid`` points per
    axis; each grid point carries its prior mass, so the discrete KL is the continuous one up to
    quadrature error (see the tests: it matches the closed form at beta = 0 and converges in n_grid).

    Returns
    -------
    dict of (B,) arrays ``train_loss``, ``risk``, ``kl``.
    """
    b = as_array(betas, "betas", ndim=1)
    if np.any(b < 0):
        raise ValueError("betas must be >= 0")
    n_grid = positive_int(n_grid, "n_grid", minimum=3)
    r = finite_number(half_width_sd, "half_width_sd", lo=0.0, lo_open=True) * prob.prior_std
    g = np.linspace(-r, r, n_grid)
    theta = np.stack(np.meshgrid(g, g, indexing="ij"), axis=-1).reshape(-1, 2)
    log_prior = -0.5 * np.sum(theta**2, axis=1) / prob.prior_std**2
    log_prior -= logsumexp(log_prior)
    ls = np.concatenate([prob.train_loss(theta[s : s + chunk]) for s in range(0, theta.shape[0], chunk)])
    rk = np.concatenate([prob.risk(theta[s : s + chunk]) for s in range(0, theta.shape[0], chunk)])
    logits = -b[:, None] * ls[None, :] + log_prior[None, :]
    logq = logits - logsumexp(logits, axis=1, keepdims=True)
    q = np.exp(logq)
    return {
        "train_loss": q @ ls,
        "risk": q @ rk,
        "kl": np.maximum(np.sum(q * (logq - log_prior[None, :]), axis=1), 0.0),
    }


def ula_linear_chains(
    prob: LinearSigmoidProblem,
    betas: np.ndarray,
    *,
    eta: float,
    n_steps: int,
    n_chains: int,
    rng: np.random.Generator,
    eval_every: int = 10,
) -> dict[str, np.ndarray]:
    """Run ``n_chains`` ULA chains per beta for ``n_steps`` steps from prior draws.

    Returns
    -------
    dict with ``steps`` (E,) the evaluated step numbers and (E, B) arrays ``train_loss`` and ``risk``:
    the chain averages of ``L_S(theta_t)`` and ``L(theta_t)`` at those steps (the caller forms ergodic
    averages over any window).
    """
    b = as_array(betas, "betas", ndim=1)
    if np.any(b < 0):
        raise ValueError("betas must be >= 0")
    eta = finite_number(eta, "eta", lo=0.0, hi=2.0, lo_open=True, hi_open=True)
    n_steps = positive_int(n_steps, "n_steps")
    n_chains = positive_int(n_chains, "n_chains")
    eval_every = positive_int(eval_every, "eval_every")
    s2 = prob.prior_std**2
    h = eta / (b * prob.curvature + 1.0 / s2)  # (B,): eta times the stability scale 1/Lipschitz(grad U)
    z = prob.z_train
    n = prob.n_train
    theta = prob.prior_std * rng.standard_normal((b.size, n_chains, 2))
    steps, tl, rk = [], [], []
    for t in range(1, n_steps + 1):
        m = theta @ z.T  # (B, C, n) margins
        sg = expit(-m)
        grad_ls = -((sg * (1.0 - sg)) @ z) / n  # d/dtheta mean sigma(-theta.z)
        grad_u = b[:, None, None] * grad_ls + theta / s2
        theta = theta - h[:, None, None] * grad_u + np.sqrt(2.0 * h)[:, None, None] * rng.standard_normal(theta.shape)
        if t % eval_every == 0:
            steps.append(t)
            tl.append(np.mean(prob.train_loss(theta), axis=1))
            rk.append(np.mean(prob.risk(theta), axis=1))
    if not np.all(np.isfinite(theta)):
        raise FloatingPointError(f"ULA diverged (eta = {eta})")
    return {"steps": np.array(steps), "train_loss": np.array(tl), "risk": np.array(rk)}
