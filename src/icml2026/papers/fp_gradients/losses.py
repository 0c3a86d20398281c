"""Losses phi and their AD seeds D^AD phi(y), as the framework (torch autograd) computes them.

The seed rho = D^AD phi(f(x)) starts the reverse pass through the network.  It is part of the problem
(it depends on how phi is written and on torch's kernels), so for softplus and user callables the seed is
always taken from torch autograd, one point at a time (a 0-d tensor per point, so that torch's
vectorised-versus-scalar kernel choice cannot depend on the point's position in a batch).  For identity
and 0.5 y^2 the seeds are also available in closed form (1 and y; checked against torch in the tests).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch

__all__ = ["PhiLike", "BUILTIN_PHIS", "resolve_phi", "phi_seeds"]

PhiLike = str | Callable[[torch.Tensor], torch.Tensor]


def _identity(y: torch.Tensor) -> torch.Tensor:
    return y


def _half_square(y: torch.Tensor) -> torch.Tensor:
    # pow's backward is grad * (2 * y**1): fl(0.5 * fl(2 * y)) == y exactly, subnormals included.
    return 0.5 * y.pow(2)


def _softplus(y: torch.Tensor) -> torch.Tensor:
    return torch.nn.functional.softplus(y)


BUILTIN_PHIS: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
    "identity": _identity,
    "half_square": _half_square,
    "softplus": _softplus,
}


def resolve_phi(phi: PhiLike) -> tuple[str, Callable[[torch.Tensor], torch.Tensor]]:
    """Name and torch function of a loss: a built-in name or any torch-differentiable callable.

    Raises
    ------
    ValueError
        For an unknown name.
    TypeError
        For something that is neither a string nor callable.
    """
    if isinstance(phi, str):
        if phi not in BUILTIN_PHIS:
            raise ValueError(f"unknown phi {phi!r}; built-ins are {sorted(BUILTIN_PHIS)} or pass a callable")
        return phi, BUILTIN_PHIS[phi]
    if callable(phi):
        return getattr(phi, "__name__", "callable"), phi
    raise TypeError(f"phi must be a built-in name or a callable on torch tensors, got {type(phi).__name__}")


def phi_seeds(phi: PhiLike, y: np.ndarray) -> np.ndarray:
    """D^AD phi(y_k) for every entry of ``y`` (float32), as computed by torch autograd.

    Parameters
    ----------
    phi : built-in name or callable (elementwise on a 0-d float32 tensor, returning a 0-d tensor).
    y : (n,) float32 values f(x_k).

    Returns
    -------
    (n,) float32 seeds.
    """
    name, fn = resolve_phi(phi)
    y32 = np.asarray(y, dtype=np.float32).reshape(-1)
    if name == "identity" and fn is _identity:
        return np.ones_like(y32)
    if name == "half_square" and fn is _half_square:
        return y32.copy()
    out = np.empty_like(y32)
    # Deviation: one 0-d autograd call per point, so the seed cannot depend on the batch position.
    for k, value in enumerate(y32):
        t = torch.tensor(value, dtype=torch.float32, requires_grad=True)
        loss = fn(t)
        if not isinstance(loss, torch.Tensor) or loss.numel() != 1:
            raise TypeError("phi must map a 0-d tensor to a 0-d tensor (a scalar loss)")
        (grad,) = torch.autograd.grad(loss.reshape(()), t, allow_unused=True)
        out[k] = 0.0 if grad is None else float(grad.detach())
    return out
