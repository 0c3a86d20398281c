"""Fourier projection pooling: a variable-length feature map -> a fixed set of tokens (Sec. "pooling").

Features ``h(t)`` (N samples at ``fs``) are split into ``S = round(T_total / T_seg)`` segments; inside a
segment, with local time ``t`` in ``[0, T_seg]``, the token of basis function ``phi_m`` is the quadrature

    c_{s,m} = sum_n phi_m(t_n) h_n dt_n  ~  int_0^{T_seg} phi_m(t) h(t) dt,

with ``phi_0 = 1`` and then alternating ``sin(2 pi k t / T_seg)``, ``cos(2 pi k t / T_seg)``, k = 1, 2, ...
and ``dt_n = t_{n+1} - t_n`` (the last one repeated). The S*M tokens do not depend on ``fs``.
"""

from __future__ import annotations

import math

import numpy as np
import torch
from torch import nn

from .spline_conv import check_fs, check_signal

__all__ = ["fourier_basis", "projection_matrix", "FourierProjectionPool"]


def fourier_basis(t: np.ndarray, n_modes: int, segment_s: float) -> np.ndarray:
    """``phi_m(t)`` for m = 0..M-1: 1, sin(2 pi t/T), cos(2 pi t/T), sin(4 pi t/T), ...

    Parameters
    ----------
    t : (N,) local times in seconds.

    Returns
    -------
    (M, N) float64 array.
    """
    t = np.asarray(t, dtype=np.float64)
    if t.ndim != 1 or not np.all(np.isfinite(t)):
        raise ValueError(f"t must be a finite 1-D array of seconds, got shape {t.shape}")
    if isinstance(n_modes, bool) or not isinstance(n_modes, (int, np.integer)) or n_modes < 1:
        raise ValueError(f"n_modes must be a positive integer, got {n_modes!r}")
    if not (isinstance(segment_s, (int, float)) and math.isfinite(segment_s) and segment_s > 0):
        raise ValueError(f"segment_s must be a positive number of seconds, got {segment_s!r}")
    out = np.empty((n_modes, t.size))
    out[0] = 1.0
    for m in range(1, n_modes):
        k = (m + 1) // 2
        arg = 2.0 * np.pi * k * t / segment_s
        out[m] = np.sin(arg) if m % 2 == 1 else np.cos(arg)
    return out


def projection_matrix(n_samples: int, fs: float, n_modes: int, segment_s: float) -> np.ndarray:
    """The linear map ``W`` (S*M, N) with ``tokens = W @ h`` (row ``s*M + m`` gives ``c_{s,m}``).

    Sample ``n`` (time ``n/fs``) belongs to segment ``floor(t_n / T_seg)`` with local time
    ``clip(t_n - s T_seg, 0, T_seg)``; ``S = round(N / fs / T_seg)``. Samples after ``S T_seg`` belong to no
    segment and are dropped, as in the official code (a 2.9 s window with 2 s segments has one segment and its
    last 0.9 s is not pooled).
    """
    fs = check_fs(fs)
    if isinstance(n_samples, bool) or not isinstance(n_samples, (int, np.integer)) or n_samples < 1:
        raise ValueError(f"n_samples must be a positive integer, got {n_samples!r}")
    duration = n_samples / fs
    n_seg = int(round(duration / segment_s))
    if n_seg < 1:
        raise ValueError(
            f"the window lasts {duration:g} s, shorter than half a pooling segment ({segment_s:g} s)"
        )
    t = np.arange(n_samples) / fs
    seg = np.floor(t / segment_s + 1e-9).astype(int)  # >= n_seg: past the last whole segment, dropped
    local = np.clip(t - seg * segment_s, 0.0, segment_s)
    dt = np.full(n_samples, 1.0 / fs)  # t_{n+1} - t_n on a uniform grid, the last one repeated
    phi = fourier_basis(local, n_modes, segment_s) * dt  # (M, N)
    w = np.zeros((n_seg * n_modes, n_samples))
    for s in range(n_seg):
        mask = seg == s
        w[s * n_modes : (s + 1) * n_modes, mask] = phi[:, mask]
    return w


class FourierProjectionPool(nn.Module):
    """Fourier projection pooling to ``S * n_modes`` rate-independent tokens.

    Parameters
    ----------
    n_modes : M, basis functions per segment (paper: 50 in CV runs, 100 in the single-split script).
    segment_s : T_seg, segment length in seconds (paper: 5).
    """

    def __init__(self, n_modes: int, segment_s: float) -> None:
        super().__init__()
        if isinstance(n_modes, bool) or not isinstance(n_modes, int) or n_modes < 1:
            raise ValueError(f"n_modes must be a positive integer, got {n_modes!r}")
        if not (isinstance(segment_s, (int, float)) and math.isfinite(segment_s) and segment_s > 0):
            raise ValueError(f"segment_s must be a positive number of seconds, got {segment_s!r}")
        self.n_modes = n_modes
        self.segment_s = float(segment_s)
        self._cache: dict[tuple[int, float], torch.Tensor] = {}

    def n_segments(self, n_samples: int, fs: float) -> int:
        """S = round(T_total / T_seg) for a window of ``n_samples`` at ``fs``."""
        return int(round(n_samples / fs / self.segment_s))

    def matrix(self, n_samples: int, fs: float) -> torch.Tensor:
        """Cached projection matrix (S*M, N), float32."""
        key = (n_samples, round(float(fs), 9))
        if key not in self._cache:
            w = projection_matrix(n_samples, fs, self.n_modes, self.segment_s)
            self._cache[key] = torch.as_tensor(w, dtype=torch.float32)
        return self._cache[key]

    def forward(self, h: torch.Tensor, fs: float | None = None) -> torch.Tensor:
        """Project features onto the per-segment Fourier basis.

        Parameters
        ----------
        h : (B, d, N) features at ``fs`` Hz.
        fs : sampling rate in Hz.

        Returns
        -------
        tokens : (B, S*M, d).
        """
        fs = check_fs(fs)
        check_signal(h, fs, what="feature map")
        w = self.matrix(h.shape[-1], fs).to(device=h.device, dtype=h.dtype)
        return torch.einsum("kn,bdn->bkd", w, h)

    def extra_repr(self) -> str:
        return f"n_modes={self.n_modes}, segment_s={self.segment_s}"
