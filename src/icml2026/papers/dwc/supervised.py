"""Supervised sanity fit: regress a DWC (or the MLP actor's mean) onto a known control law by MSE."""

from __future__ import annotations

import numpy as np
import torch

from .baselines import DWCActor, MLPActor

__all__ = ["fit_mse"]


def fit_mse(actor: DWCActor | MLPActor, states: np.ndarray, actions: np.ndarray, steps: int, lr: float,
            batch_size: int, generator: torch.Generator) -> list[float]:
    """Adam on ``mean((tanh(z(x)) * scale + bias - a)^2)``; the normaliser is fitted to ``states`` first.

    Parameters
    ----------
    states : (n, obs_dim); actions : (n, act_dim) targets.

    Returns
    -------
    list of per-step training losses.
    """
    x = torch.as_tensor(np.asarray(states, np.float64))
    y = torch.as_tensor(np.asarray(actions, np.float32))
    if x.ndim != 2 or y.ndim != 2 or x.shape[0] != y.shape[0]:
        raise ValueError(f"states (n, obs_dim) and actions (n, act_dim) must match, got {x.shape}, {y.shape}")
    actor.normalizer.update(x)
    opt = torch.optim.Adam(actor.parameters(), lr=lr)
    losses = []
    for _ in range(steps):
        idx = torch.randint(0, x.shape[0], (batch_size,), generator=generator)
        z = actor.dist_params(x[idx])[0]
        pred = torch.tanh(z) * actor.action_scale + actor.action_bias
        loss = ((pred - y[idx]) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        actor.after_step()
        losses.append(float(loss.detach()))
    return losses
