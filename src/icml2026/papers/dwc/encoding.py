"""Observation normalisation and thermometer encoding (brief, architecture steps 1 and 2)."""

from __future__ import annotations

import numpy as np
import torch
from scipy.stats import norm
from torch import nn

__all__ = ["CLIP", "thermometer_thresholds", "thermometer_encode", "ObsNormalizer"]

#: Normalised observations are clipped to [-CLIP, CLIP]; the outermost thresholds sit on the clip range.
CLIP = 10.0
#: Variance floor of the normaliser, ``x_hat = (x - mu) / sqrt(var + EPS)``.
EPS = 1e-8


def thermometer_thresholds(bits: int) -> np.ndarray:
    """Gaussian-quantile thermometer thresholds ``tau_m = s * Phi^{-1}(q_m)`` (brief, step 2).

    The quantiles are ``{1/B, ..., (B-1)/B} U {0.5}`` sorted, and ``s = CLIP / Phi^{-1}((B-1)/B)`` puts the
    outermost threshold on the clip range, so the thresholds are symmetric with 0.0 in the middle.

    Parameters
    ----------
    bits : B, an odd integer >= 3 (the paper's default is 63).

    Returns
    -------
    np.ndarray, shape (B,), float64, strictly increasing.
    """
    if isinstance(bits, bool) or not isinstance(bits, (int, np.integer)):
        raise TypeError(f"bits must be an int, got {type(bits).__name__}")
    if bits < 3 or bits % 2 == 0:
        raise ValueError(f"bits must be an odd integer >= 3, got {bits}")
    b = int(bits)
    q = np.sort(np.concatenate([np.arange(1, b) / b, [0.5]]))
    z = norm.ppf(q)
    s = CLIP / norm.ppf((b - 1) / b)
    tau = s * z
    # Exact symmetry (the two halves are computed from 1-q and q, which differ in the last ulp).
    tau = 0.5 * (tau - tau[::-1])
    tau[b // 2] = 0.0
    tau[0], tau[-1] = -CLIP, CLIP
    return tau


def thermometer_encode(x_hat: torch.Tensor, thresholds: torch.Tensor) -> torch.Tensor:
    """Thermometer bits ``[x_hat_j > tau_m]`` in dimension-major order (bit ``j * B + m``).

    Parameters
    ----------
    x_hat : (batch, obs_dim) normalised observations.
    thresholds : (B,) thresholds.

    Returns
    -------
    torch.Tensor, (batch, obs_dim * B), bool.
    """
    if x_hat.ndim != 2:
        raise ValueError(f"x_hat: expected shape (batch, obs_dim), got {tuple(x_hat.shape)}")
    if thresholds.ndim != 1 or thresholds.numel() < 1:
        raise ValueError(f"thresholds: expected shape (B,), got {tuple(thresholds.shape)}")
    # (the meta device carries shapes only: no values to check)
    if x_hat.device.type != "meta" and not bool(torch.isfinite(x_hat).all()):
        raise ValueError("x_hat: contains NaN or inf (a NaN compares False with every threshold)")
    bits = x_hat.unsqueeze(-1) > thresholds.to(x_hat.dtype)
    return bits.reshape(x_hat.shape[0], -1)


class ObsNormalizer(nn.Module):
    """Running mean/variance of observations (parallel-variance update), ``clip((x-mu)/sqrt(var+eps))``.

    Statistics are float64 buffers so that the deployed (frozen) normaliser is exported exactly.
    """

    mean: torch.Tensor
    var: torch.Tensor
    count: torch.Tensor

    def __init__(self, obs_dim: int) -> None:
        super().__init__()
        if isinstance(obs_dim, bool) or not isinstance(obs_dim, (int, np.integer)) or obs_dim < 1:
            raise ValueError(f"obs_dim must be a positive int, got {obs_dim!r}")
        self.obs_dim = int(obs_dim)
        self.register_buffer("mean", torch.zeros(obs_dim, dtype=torch.float64))
        self.register_buffer("var", torch.ones(obs_dim, dtype=torch.float64))
        self.register_buffer("count", torch.zeros((), dtype=torch.float64))

    @torch.no_grad()
    def update(self, x: torch.Tensor | np.ndarray) -> None:
        """Chan et al. parallel update of mean/var with a batch ``x`` of shape (n, obs_dim) or (obs_dim,)."""
        if isinstance(x, torch.Tensor):
            x = x.detach().cpu().numpy()
        try:
            arr = np.asarray(x, dtype=np.float64)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"x: cannot be read as an array of numbers: {exc}") from None
        if arr.ndim not in (1, 2) or arr.shape[-1] != self.obs_dim:
            raise ValueError(f"x must have shape ({self.obs_dim},) or (n, {self.obs_dim}), got {arr.shape}")
        if arr.size == 0:
            raise ValueError(f"x: empty batch, shape {arr.shape}")
        if not np.all(np.isfinite(arr)):
            raise ValueError("x: contains NaN or inf (the running statistics would be poisoned)")
        xt = torch.as_tensor(arr, device=self.mean.device).reshape(-1, self.obs_dim)
        n = float(xt.shape[0])
        b_mean = xt.mean(0)
        b_var = xt.var(0, unbiased=False)
        tot = self.count + n
        delta = b_mean - self.mean
        new_mean = self.mean + delta * n / tot
        m2 = self.var * self.count + b_var * n + delta**2 * self.count * n / tot
        self.mean.copy_(new_mean)
        self.var.copy_(m2 / tot)
        self.count.copy_(tot)

    def normalize(self, x: torch.Tensor) -> torch.Tensor:
        """Normalised, clipped observation in float64, shape of ``x``."""
        if not isinstance(x, torch.Tensor):
            raise ValueError(f"x: expected a torch.Tensor, got {type(x).__name__}")
        if x.ndim < 1 or x.shape[-1] != self.obs_dim:
            raise ValueError(f"x: expected last dimension {self.obs_dim}, got shape {tuple(x.shape)}")
        x64 = x.to(torch.float64)
        return torch.clamp((x64 - self.mean) / torch.sqrt(self.var + EPS), -CLIP, CLIP)
