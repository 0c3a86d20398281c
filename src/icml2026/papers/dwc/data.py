"""A known smooth control law for the supervised sanity fit: saturated LQR on a linearised cart-pole."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.linalg import solve_continuous_are

from icml2026.core.validate import as_array, finite_number, positive_int

__all__ = ["ControlLaw", "lqr_cartpole_law", "sample_states"]


@dataclass(frozen=True)
class ControlLaw:
    """``a = scale * tanh(-K x / scale)`` with LQR gain ``K`` (act_dim, obs_dim); states ~ N(0, diag(std^2))."""

    gain: np.ndarray
    scale: float
    state_std: np.ndarray

    def __call__(self, x: np.ndarray) -> np.ndarray:
        """Actions (batch, act_dim) for states (batch, obs_dim)."""
        x = as_array(x, "x", ndim=2)
        if x.shape[1] != self.gain.shape[1]:
            raise ValueError(f"x: expected shape (batch, {self.gain.shape[1]}), got {x.shape}")
        return self.scale * np.tanh(-(x @ self.gain.T) / self.scale)


def lqr_cartpole_law(scale: float = 3.0) -> ControlLaw:
    """LQR gain of the cart-pole linearised at the upright position (m_cart = 1, m_pole = 0.1, l = 0.5).

    State ``(x, theta, x_dot, theta_dot)`` as in gymnasium's InvertedPendulum; Q = I, R = 1.
    """
    scale = finite_number(scale, "scale", lo=0.0, lo_open=True)
    m_c, m_p, ell, grav = 1.0, 0.1, 0.5, 9.81
    a = np.zeros((4, 4))
    a[0, 2] = a[1, 3] = 1.0
    a[2, 1] = -m_p * grav / m_c
    a[3, 1] = (m_c + m_p) * grav / (m_c * ell)
    b = np.array([[0.0], [0.0], [1.0 / m_c], [-1.0 / (m_c * ell)]])
    p = solve_continuous_are(a, b, np.eye(4), np.eye(1))
    gain = b.T @ p  # R^{-1} B^T P with R = 1
    return ControlLaw(gain=gain, scale=scale, state_std=np.array([0.3, 0.1, 0.5, 0.5]))


def sample_states(law: ControlLaw, n: int, rng: np.random.Generator) -> np.ndarray:
    """``n`` states (n, obs_dim) drawn from N(0, diag(state_std^2))."""
    n = positive_int(n, "n")
    return rng.normal(size=(n, law.gain.shape[1])) * law.state_std
