"""Block DCT (method step 1), the progressive frequency mask M(t) (step 2), the fixed-size workspace (step 5).

Step numbers refer to the method's numbered steps in the brief; the paper's equation numbers were not available.

Symbols: b = ``block``; D = :func:`dct_matrix`; X = D x D^T per b x b block; keep(t) = :func:`keep_count`;
M(t) = :func:`frequency_mask`; the workspace keeps the first ``ws_keep`` zig-zag coefficients of each block.
"""

from __future__ import annotations

import math
from functools import lru_cache
from typing import Literal

import numpy as np
import torch

__all__ = [
    "dct_matrix",
    "block_dct",
    "block_idct",
    "zigzag_order",
    "keep_count",
    "frequency_mask",
    "tile_mask",
    "to_workspace",
    "from_workspace",
]

Schedule = Literal["cosine", "linear", "fixed"]
Layout = Literal["square", "zigzag", "radial"]


def _block(block: int) -> int:
    if isinstance(block, bool) or not isinstance(block, int) or block < 1 or block > 256:
        raise ValueError(f"block: expected an integer in [1, 256], got {block!r}")
    return block


def dct_matrix(block: int = 8, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """Orthonormal DCT-II matrix D (b x b): ``D[k, n] = s_k cos(pi / b (n + 1/2) k)`` (step 1)."""
    b = _block(block)
    k = torch.arange(b, dtype=torch.float64)[:, None]
    n = torch.arange(b, dtype=torch.float64)[None, :]
    d = torch.cos(math.pi / b * (n + 0.5) * k) * math.sqrt(2.0 / b)
    d[0] = 1.0 / math.sqrt(b)  # s_0 = 1/sqrt(b)
    return d.to(dtype)


def _check_image(x: torch.Tensor, block: int, name: str) -> torch.Tensor:
    if not isinstance(x, torch.Tensor):
        raise ValueError(f"{name}: expected a torch.Tensor, got {type(x).__name__}")
    if x.ndim < 2:
        raise ValueError(f"{name}: expected (..., H, W), got shape {tuple(x.shape)}")
    if not x.is_floating_point():
        raise ValueError(f"{name}: expected a floating-point tensor, got {x.dtype}")
    h, w = x.shape[-2:]
    if h == 0 or w == 0 or h % block or w % block:
        raise ValueError(f"{name}: image sides ({h}, {w}) must be positive multiples of block = {block}")
    if not bool(torch.isfinite(x).all()):
        raise ValueError(f"{name}: contains NaN or inf")
    return x


def _blockwise(x: torch.Tensor, left: torch.Tensor, right: torch.Tensor, block: int) -> torch.Tensor:
    """``left @ B @ right`` for every b x b block B of the last two dims (two matmuls, differentiable)."""
    *lead, h, w = x.shape
    b = block
    blocks = x.reshape(*lead, h // b, b, w // b, b).transpose(-3, -2)  # (..., H/b, W/b, b, b)
    out = left.to(x) @ blocks @ right.to(x)
    return out.transpose(-3, -2).reshape(*lead, h, w)


def block_dct(x: torch.Tensor, block: int = 8) -> torch.Tensor:
    """Per-block 2-D DCT-II, ``X = D x D^T`` (step 1), over any leading batch dims; same shape as ``x``."""
    b = _block(block)
    _check_image(x, b, "x")
    d = dct_matrix(b, torch.float64)
    return _blockwise(x, d, d.T, b)


def block_idct(X: torch.Tensor, block: int = 8) -> torch.Tensor:  # noqa: N803 - the paper's symbol
    """Inverse of :func:`block_dct`, ``x = D^T X D`` (D is orthonormal)."""
    b = _block(block)
    _check_image(X, b, "X")
    d = dct_matrix(b, torch.float64)
    return _blockwise(X, d.T, d, b)


@lru_cache(maxsize=32)
def _zigzag(b: int) -> tuple[tuple[int, int], ...]:
    order: list[tuple[int, int]] = []
    for s in range(2 * b - 1):
        diag = [(i, s - i) for i in range(b) if 0 <= s - i < b]
        order.extend(diag if s % 2 else diag[::-1])  # JPEG: even diagonals run bottom-left -> top-right
    return tuple(order)


def zigzag_order(block: int = 8) -> np.ndarray:
    """JPEG zig-zag scan of a b x b block as a (b*b, 2) array of (row, col) = (vertical, horizontal) freq."""
    return np.array(_zigzag(_block(block)), dtype=np.int64)


def _check_t(t: float) -> float:
    if isinstance(t, bool) or not isinstance(t, (int, float, np.floating, np.integer)):
        raise ValueError(f"t: expected a number in [0, 1], got {t!r}")
    t = float(t)
    if not (0.0 <= t <= 1.0):
        raise ValueError(f"t: must be in [0, 1], got {t}")
    return t


def _check_keeps(min_keep: int, max_keep: int, fixed_keep: int, limit: int | None = None) -> None:
    for name, v in (("min_keep", min_keep), ("max_keep", max_keep), ("fixed_keep", fixed_keep)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
            raise ValueError(f"{name}: expected an integer >= 1, got {v!r}")
        if limit is not None and v > limit:
            raise ValueError(f"{name}: must be <= block * block = {limit}, got {v}")
    if min_keep > max_keep:
        raise ValueError(f"min_keep: must be <= max_keep ({max_keep}), got {min_keep}")


def keep_count(
    t: float,
    schedule: Schedule = "cosine",
    min_keep: int = 8,
    max_keep: int = 64,
    fixed_keep: int = 16,
) -> int:
    """Coefficients kept per block at flow time t: ``round(min_keep + alpha(t) (max_keep - min_keep))`` (step 2).

    ``alpha`` is ``0.5 - 0.5 cos(pi t)`` (cosine, default), ``t`` (linear); ``fixed`` keeps ``fixed_keep``
    at every t. t = 0 is the noise end (fewest coefficients), t = 1 the data end.
    """
    t = _check_t(t)
    _check_keeps(min_keep, max_keep, fixed_keep)
    if schedule == "fixed":
        return int(fixed_keep)
    if schedule == "cosine":
        alpha = 0.5 - 0.5 * math.cos(math.pi * t)
    elif schedule == "linear":
        alpha = t
    else:
        raise ValueError(f"schedule: must be 'cosine', 'linear' or 'fixed', got {schedule!r}")
    # round half up (not Python's banker's rounding) so that keep(t) is monotone in alpha
    return int(math.floor(min_keep + alpha * (max_keep - min_keep) + 0.5))


@lru_cache(maxsize=256)
def _layout_mask(block: int, layout: str, keep: int) -> np.ndarray:
    b = block
    m = np.zeros((b, b), dtype=np.float32)
    if layout == "square":
        s = int(math.isqrt(keep))  # s = floor(sqrt(keep)): exactly s^2 low-frequency entries
        m[:s, :s] = 1.0
    elif layout == "zigzag":
        for r, c in _zigzag(b)[:keep]:
            m[r, c] = 1.0
    elif layout == "radial":
        rank = {rc: i for i, rc in enumerate(_zigzag(b))}
        cells = sorted(((r, c) for r in range(b) for c in range(b)), key=lambda rc: (rc[0] ** 2 + rc[1] ** 2, rank[rc]))
        for r, c in cells[:keep]:
            m[r, c] = 1.0
    else:
        raise ValueError(f"layout: must be 'square', 'zigzag' or 'radial', got {layout!r}")
    m.setflags(write=False)
    return m


def frequency_mask(
    t: float,
    block: int = 8,
    layout: Layout = "square",
    schedule: Schedule = "cosine",
    min_keep: int = 8,
    max_keep: int = 64,
    fixed_keep: int = 16,
) -> torch.Tensor:
    """The per-block 0/1 mask M(t) (b x b) of step 2 with ``keep_count(t, ...)`` low-frequency entries.

    ``square``: the top-left s x s entries, s = floor(sqrt(keep)) (the code's default); ``zigzag``: the first
    ``keep`` entries of the JPEG scan; ``radial``: the ``keep`` entries of smallest ``k^2 + l^2``.
    """
    b = _block(block)
    _check_keeps(min_keep, max_keep, fixed_keep, b * b)
    keep = keep_count(t, schedule, min_keep, max_keep, fixed_keep)
    return torch.from_numpy(_layout_mask(b, layout, keep).copy())


def tile_mask(mask: torch.Tensor, height: int, width: int) -> torch.Tensor:
    """Repeat a (b, b) block mask over an (height, width) image."""
    b = mask.shape[-1]
    if mask.ndim != 2 or mask.shape[0] != b or height % b or width % b:
        raise ValueError(f"mask: expected (b, b) with b dividing ({height}, {width}), got {tuple(mask.shape)}")
    return mask.repeat(height // b, width // b)


def to_workspace(X: torch.Tensor, ws_keep: int = 16, block: int = 8) -> torch.Tensor:  # noqa: N803
    """The workspace (step 5): the first ``ws_keep`` zig-zag coefficients of every block.

    ``X`` (..., H, W) block-DCT coefficients -> (..., H/b * W/b, ws_keep), one row per block (row-major):
    the policy reads one token per block. Its size is fixed by the image size alone.
    """
    b = _block(block)
    _check_image(X, b, "X")
    if isinstance(ws_keep, bool) or not isinstance(ws_keep, int) or not 1 <= ws_keep <= b * b:
        raise ValueError(f"ws_keep: expected an integer in [1, {b * b}], got {ws_keep!r}")
    *lead, h, w = X.shape
    blocks = X.reshape(*lead, h // b, b, w // b, b).transpose(-3, -2).reshape(*lead, (h // b) * (w // b), b * b)
    zz = torch.as_tensor(zigzag_order(b)[:ws_keep], device=X.device)
    return blocks[..., zz[:, 0] * b + zz[:, 1]]


def from_workspace(ws: torch.Tensor, height: int, width: int, block: int = 8) -> torch.Tensor:
    """Inverse layout of :func:`to_workspace`: coefficients (..., n_blocks, k) -> (..., H, W), others zero."""
    b = _block(block)
    if not isinstance(ws, torch.Tensor) or ws.ndim < 2:
        raise ValueError(f"ws: expected a tensor of shape (..., n_blocks, k), got {getattr(ws, 'shape', type(ws))}")
    if torch.is_floating_point(ws) and torch.isnan(ws).any():
        raise ValueError("ws: contains NaN")
    n_blocks, k = ws.shape[-2:]
    if height % b or width % b or n_blocks != (height // b) * (width // b) or not 1 <= k <= b * b:
        raise ValueError(f"ws: shape {tuple(ws.shape)} does not fit a {height} x {width} image in {b} x {b} blocks")
    lead = ws.shape[:-2]
    flat = ws.new_zeros(*lead, n_blocks, b * b)
    zz = torch.as_tensor(zigzag_order(b)[:k], device=ws.device)
    flat[..., zz[:, 0] * b + zz[:, 1]] = ws
    blocks = flat.reshape(*lead, height // b, width // b, b, b).transpose(-3, -2)
    return blocks.reshape(*lead, height, width)
