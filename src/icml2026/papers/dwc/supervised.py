"""Supervised sanity fit: regress a DWC (or the MLP actor's mean) onto a known control law by MSE."""

from __future__ import annotations

import numpy as np
import torch

from icml2026.core.validate import as_array, finite_number, positive_int, same_length

from .baselines import DWCActor, MLPActor
from .sac import module_device

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

    Runs on the actor's device; the minibatch indices are drawn on the CPU ``generator`` and moved there.
    """
    xs = as_array(states, "states", ndim=2)
    ys = as_array(actions, "actions", ndim=2)
    same_length(states=xs, actions=ys)
    if xs.shape[1] != actor.obs_dim or ys.shape[1] != actor.act_dim:
        raise ValueError(f"states (n, {actor.obs_dim}) and actions (n, {actor.act_dim}) must match the actor, "
                         f"got {xs.shape}, {ys.shape}")
    steps = positive_int(steps, "steps")
    batch_size = positive_int(batch_size, "batch_size")
    lr = finite_number(lr, "lr", lo=0.0, lo_open=True)
    x = torch.as_tensor(xs)
    y = torch.as_tensor(ys.astype(np.float32))
    actor.normalizer.update(x)
    dev = module_device(actor)
    x, y = x.to(dev), y.to(dev)
    opt = torch.optim.Adam(actor.parameters(), lr=lr)
    losses = []
    for _ in range(steps):
        idx = torch.randint(0, x.shape[0], (batch_size,), generator=generator).to(dev)
        z = actor.dist_params(x[idx])[0]
        pred = torch.tanh(z) * actor.action_scale + actor.action_bias
        loss = ((pred - y[idx]) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        actor.after_step()
        losses.append(float(loss.detach()))
    return losses
