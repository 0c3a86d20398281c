"""Summaries over seeds: mean, sample standard deviation, n and a bootstrap 95% interval of the mean.

Used by the report (several seeds of one experiment) and by sweeps. The bootstrap draws from its own fixed
stream (``seed=0``) so that the same values always give the same interval.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

__all__ = ["summarize", "bootstrap_ci"]


def bootstrap_ci(values: list[float], *, level: float = 0.95, n_boot: int = 2000, seed: int = 0) -> tuple[float, float]:
    """Percentile bootstrap interval of the mean of the finite ``values`` ((nan, nan) when there are none)."""
    x = np.asarray([v for v in values if math.isfinite(v)], dtype=float)
    if x.size == 0:
        return float("nan"), float("nan")
    if x.size == 1:
        return float(x[0]), float(x[0])
    if not 0 < level < 1:
        raise ValueError(f"level must be in (0, 1), got {level}")
    rng = np.random.default_rng(seed)
    means = x[rng.integers(0, x.size, size=(n_boot, x.size))].mean(axis=1)
    a = (1 - level) / 2
    lo, hi = np.quantile(means, [a, 1 - a])
    return float(lo), float(hi)


def summarize(values: list[float]) -> dict[str, Any]:
    """``{"n", "n_finite", "mean", "sd", "min", "max", "ci95"}`` of ``values`` (non-finite values are counted apart)."""
    finite = [float(v) for v in values if math.isfinite(v)]
    if not finite:
        nan = float("nan")
        return {"n": len(values), "n_finite": 0, "mean": nan, "sd": nan, "min": nan, "max": nan, "ci95": [nan, nan]}
    arr = np.asarray(finite)
    return {
        "n": len(values),
        "n_finite": len(finite),
        "mean": float(arr.mean()),
        "sd": float(arr.std(ddof=1)) if arr.size > 1 else 0.0,
        "min": float(arr.min()),
        "max": float(arr.max()),
        "ci95": list(bootstrap_ci(finite)),
    }
