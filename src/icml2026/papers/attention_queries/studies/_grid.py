"""Grids and reductions that several experiments' sweeps share."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

__all__ = ["NOISE_KINDS_RUN", "check_pow2_range", "nanmax", "over_bar", "powers_of_two"]

#: The adversaries every noisy sweep runs (oracle.NOISE_KINDS).
NOISE_KINDS_RUN = ("uniform", "adversarial", "worst_case")


def powers_of_two(lo: int, hi: int) -> list[int]:
    """The powers of two from ``lo`` to ``hi`` (both powers of two, see :func:`check_pow2_range`)."""
    return [2**k for k in range(int(math.log2(lo)), int(math.log2(hi)) + 1)]


def check_pow2_range(lo: int, hi: int, lo_name: str, hi_name: str) -> None:
    """Both ends powers of two (the grids double), ``lo <= hi``; messages start with the field's name."""
    for x, name in ((lo, lo_name), (hi, hi_name)):
        if x < 1 or x & (x - 1):
            raise ValueError(f"{name} = {x}: must be a power of two")
    if lo > hi:
        raise ValueError(f"{lo_name} = {lo}: must be <= {hi_name} ({hi})")


def over_bar(err: float, bar: float | None) -> float:
    """``err / bar`` (0 when both are 0, inf for an error where the bar claims none or there is no bar)."""
    if bar is not None and bar > 0:
        return err / bar
    return 0.0 if err == 0 else float("inf")


def nanmax(values: Sequence[float]) -> float:
    """Largest non-NaN value (NaN when there is none); refusals are counted by their own check."""
    arr = np.asarray(list(values), dtype=np.float64)
    return float(np.nanmax(arr)) if np.any(np.isfinite(arr)) else math.nan
