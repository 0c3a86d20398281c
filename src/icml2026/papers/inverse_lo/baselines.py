"""Prior online inverse linear optimisation methods, with the constants of the official NeurIPS-2025 notebook.

All three keep a prediction theta_t in Theta = the Euclidean unit ball (w* is normalised to the sphere),
recommend x_hat_t = argmax_{x in X_t} <theta_t, x>, and update from the surrogate gradient
x_hat_t - x_t. D = diam(Theta) = 2; K = diameter of the action sets (``action_diameter``).

* ``OnlineGradientLearner``: Barmann, Martin, Pokutta, Schneider (2020), O(sqrt T).
* ``OnlineNewtonStepLearner``: Sakaue, Tsuchiya, Bao, Oki (NeurIPS 2025), O(d log T).
* ``CuttingPlaneLearner``: Gollapudi et al. (NeurIPS 2021) style, centroid of surviving ball samples.
"""

from __future__ import annotations

import numpy as np

from .feasible_sets import FeasibleSet

__all__ = [
    "OnlineGradientLearner",
    "OnlineNewtonStepLearner",
    "CuttingPlaneLearner",
    "project_ball",
    "project_ball_in_norm",
]

PREDICTION_DIAMETER = 2.0  # D: diameter of the unit ball Theta (notebook: D = 2.0)


def project_ball(v: np.ndarray, radius: float = 1.0) -> np.ndarray:
    """Euclidean projection onto {||theta|| <= radius}, shape (d,)."""
    nrm = float(np.linalg.norm(v))
    return v if nrm <= radius else v * (radius / nrm)


def project_ball_in_norm(
    A: np.ndarray, b: np.ndarray, radius: float = 1.0, tol: float = 1e-6, max_iter: int = 100
) -> np.ndarray:
    """Generalised projection argmin_{||theta|| <= radius} ||theta - A^{-1} b||_A (ONS update).

    theta = (A + lambda I)^{-1} b with lambda = 0 if that is feasible, else lambda >= 0 found by bisection
    so that ||(A + lambda I)^{-1} b|| = radius (tolerance ``tol``, at most ``max_iter`` halvings), as in
    the official notebook. A: (d, d) SPD, b: (d,).
    """
    eye = np.eye(A.shape[0])
    theta = np.linalg.solve(A, b)
    if np.linalg.norm(theta) <= radius:
        return theta
    lo, hi = 0.0, 1.0
    while np.linalg.norm(np.linalg.solve(A + hi * eye, b)) > radius:
        hi *= 2.0
    mid = hi
    for _ in range(max_iter):
        mid = 0.5 * (lo + hi)
        theta = np.linalg.solve(A + mid * eye, b)
        nrm = np.linalg.norm(theta)
        if abs(nrm - radius) < tol:
            return theta
        if nrm > radius:
            lo = mid
        else:
            hi = mid
    return np.linalg.solve(A + mid * eye, b)


class _BallLearner:
    """Shared parts: theta in the unit ball, greedy recommendation, lazily fixed action diameter K."""

    def __init__(self, d: int, action_diameter: float | None):
        if isinstance(d, bool) or not isinstance(d, (int, np.integer)) or d < 1:
            raise ValueError(f"d must be a positive integer, got {d!r}")
        if action_diameter is not None and not (np.isfinite(action_diameter) and action_diameter > 0):
            raise ValueError(f"action_diameter must be a positive number, got {action_diameter!r}")
        self.d = int(d)
        self.action_diameter = action_diameter
        self.theta_ = np.zeros(self.d)
        self.n_resets = 0
        self._last: tuple[int, np.ndarray] | None = None
        self._ready = False

    def _init_constants(self) -> None:
        """Set the step sizes from K (called once, at the first feasible set)."""

    def _check(self, feasible_set: FeasibleSet) -> None:
        if not isinstance(feasible_set, FeasibleSet):
            raise TypeError(f"feasible_set must be a FeasibleSet, got {type(feasible_set).__name__}")
        if feasible_set.d != self.d:
            raise ValueError(f"feasible set has dimension {feasible_set.d}, the learner has d={self.d}")
        if not self._ready:
            if self.action_diameter is None:
                # Deviation: the notebook hard-codes K for its segment (K = 2); with no K given we take
                # the first feasible set's diameter bound and keep it fixed for the whole run.
                self.action_diameter = max(float(feasible_set.diameter_bound()), 1e-12)
            self._init_constants()
            self._ready = True

    def recommend(self, feasible_set: FeasibleSet) -> np.ndarray:
        """x_hat_t = argmax_{x in X_t} <theta_t, x>, shape (d,)."""
        self._check(feasible_set)
        x_hat = feasible_set.maximize(self.theta_)
        self._last = (id(feasible_set), x_hat)
        return x_hat

    def _recommendation_for(self, feasible_set: FeasibleSet) -> np.ndarray:
        if self._last is not None and self._last[0] == id(feasible_set):
            return self._last[1]
        return self.recommend(feasible_set)

    def _gradient(self, feasible_set: FeasibleSet, x_observed: np.ndarray) -> np.ndarray:
        self._check(feasible_set)
        x_obs = feasible_set.validate_member(x_observed, "observed action")
        x_hat = self._recommendation_for(feasible_set)
        self._last = None
        return (x_hat - x_obs).astype(float)


class OnlineGradientLearner(_BallLearner):
    """Online gradient descent (Barmann et al. 2020): theta <- Proj(theta - eta (x_hat_t - x_t)).

    eta = D K / sqrt(T) as in the official notebook (D = 2, K = ``action_diameter``, T = ``horizon``).
    """

    def __init__(self, d: int, horizon: int = 10_000, action_diameter: float | None = None):
        super().__init__(d, action_diameter)
        if isinstance(horizon, bool) or not isinstance(horizon, (int, np.integer)) or horizon < 1:
            raise ValueError(f"horizon must be a positive integer, got {horizon!r}")
        self.horizon = int(horizon)

    def _init_constants(self) -> None:
        assert self.action_diameter is not None
        self.eta_ = PREDICTION_DIAMETER * self.action_diameter / np.sqrt(self.horizon)

    def observe(self, feasible_set: FeasibleSet, x_observed: np.ndarray) -> None:
        grad = self._gradient(feasible_set, x_observed)
        self.theta_ = project_ball(self.theta_ - self.eta_ * grad)


class OnlineNewtonStepLearner(_BallLearner):
    """Online Newton step (Sakaue et al. 2025), O(d log T) regret.

    H = D K, eta = 1/(5H), alpha = 2/(1 + 2 eta H)^2, gamma = alpha/2, eps = d/(D^2 gamma^2), A_0 = eps I.
    Each round g_t = eta (x_hat_t - x_t), A_t = A_{t-1} + g_t g_t^T, b = A_t theta_t - g_t/gamma,
    theta_{t+1} = argmin_{||theta|| <= 1} ||theta - A_t^{-1} b||_{A_t}.
    """

    def __init__(self, d: int, action_diameter: float | None = None):
        super().__init__(d, action_diameter)

    def _init_constants(self) -> None:
        assert self.action_diameter is not None
        H = PREDICTION_DIAMETER * self.action_diameter
        self.eta_ = 1.0 / (5.0 * H)
        alpha = 2.0 / (1.0 + 2.0 * self.eta_ * H) ** 2
        self.gamma_ = alpha / 2.0
        eps = self.d / (PREDICTION_DIAMETER**2 * self.gamma_**2)
        self.A_ = eps * np.eye(self.d)

    def observe(self, feasible_set: FeasibleSet, x_observed: np.ndarray) -> None:
        grad = self._gradient(feasible_set, x_observed)  # validates the set first (K and eta fixed there)
        grad = self.eta_ * grad
        if not np.any(grad):
            return  # g_t = 0 leaves A_t and theta unchanged (b = A theta)
        self.A_ = self.A_ + np.outer(grad, grad)
        b = self.A_ @ self.theta_ - grad / self.gamma_
        self.theta_ = project_ball_in_norm(self.A_, b)


class CuttingPlaneLearner(_BallLearner):
    """Cutting plane (Gollapudi et al. 2021 style, as in the notebook): centroid of surviving samples.

    Keep ``n_samples`` uniform samples of the unit ball (notebook: d * 10^4); theta_t = their mean; after
    x_t keep the samples c with <c - theta_t, x_t - x_hat_t> >= 0; if none survive, re-sample
    ``n_resample`` = 1000 points from the ball and count the event in ``n_resets``.
    """

    def __init__(
        self,
        d: int,
        n_samples: int | None = None,
        rng: np.random.Generator | None = None,
        n_resample: int = 1000,
    ):
        super().__init__(d, action_diameter=1.0)  # K is not used by the cutting-plane method
        n = 10_000 * self.d if n_samples is None else n_samples
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
            raise ValueError(f"n_samples must be a positive integer, got {n_samples!r}")
        if n_resample < 1:
            raise ValueError(f"n_resample must be a positive integer, got {n_resample!r}")
        self.rng = np.random.default_rng(0) if rng is None else rng
        self.n_resample = int(n_resample)
        self.samples_ = self._sample_ball(int(n))
        self.theta_ = self.samples_.mean(axis=0)

    def _sample_ball(self, n: int) -> np.ndarray:
        x = self.rng.standard_normal((n, self.d))
        x /= np.linalg.norm(x, axis=1, keepdims=True)
        return x * (self.rng.random((n, 1)) ** (1.0 / self.d))

    def observe(self, feasible_set: FeasibleSet, x_observed: np.ndarray) -> None:
        normal = -self._gradient(feasible_set, x_observed)  # x_t - x_hat_t
        if not np.any(normal):
            return
        keep = (self.samples_ - self.theta_) @ normal >= 0
        self.samples_ = self.samples_[keep]
        if self.samples_.shape[0] == 0:
            self.samples_ = self._sample_ball(self.n_resample)
            self.n_resets += 1
        self.theta_ = self.samples_.mean(axis=0)
