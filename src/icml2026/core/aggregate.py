"""Summaries over seeds: mean, sample standard deviation, n and a bootstrap 95% interval of the mean.

Used by the report (several seeds of one experiment) and by sweeps. The interval comes from the shared
:func:`icml2026.core.stats.bootstrap_ci` (``scipy.stats.bootstrap``, percentile), drawing from its own fixed
stream (``seed=0``) so that the same values always give the same interval.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

__all__ = ["summarize", "bootstrap_ci"]


def bootstrap_ci(values: list[float], *, level: float = 0.95, n_boot: int = 2000, seed: int = 0) -> tuple[float, float]:
    """Percentile bootstrap interval of the mean of the finite ``values`` ((nan, nan) when there are none)."""
    from .stats import bootstrap_ci as _bootstrap

    if not 0 < level < 1:
        raise ValueError(f"level must be in (0, 1), got {level}")
    x = np.asarray([v for v in values if math.isfinite(v)], dtype=float)
    ci = _bootstrap(x, np.random.default_rng(seed), n_resamples=n_boot, level=level)
    return ci.low, ci.high


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
