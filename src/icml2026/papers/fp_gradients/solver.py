"""The per-point scaling solve fl(fl(rho * z) * a) == T (brief, "mechanism 4").

A single float32 multiplication fl(rho * z) does not reach every float32 T (for a fixed rho some
targets are skipped), but two successive roundings do: pick z so that d = fl(rho * z) lies near
m * 2**e, then a near fl(T / d), and check.  All arithmetic is numpy float32 (correctly rounded,
no fused multiply-add), which is what torch does for a product whose sum has a single non-zero term.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

__all__ = ["ScalingSolution", "solve_scaling", "solve_single_scaling"]

# Mantissas tried for d = fl(rho z).  Mantissas close to 2 make the second product fl(d a) land in the
# upper binade, where consecutive products are closer than one ulp of T, so every T is reachable.
_MANTISSAS = np.array([1.9375, 1.875, 1.75, 1.5, 1.375, 1.25, 1.125, 1.0625, 1.0], dtype=np.float64)
_ULP_STEPS = np.arange(-3, 4, dtype=np.int64)  # +-3 ulps around each first guess (brief)


@dataclass(frozen=True)
class ScalingSolution:
    """Floats with fl(fl(rho * z) * a) == target in float32.

    Attributes
    ----------
    z, a : the two float32 factors (stored as Python floats holding float32 values).
    d : fl(rho * z), the rounded intermediate.
    """

    z: float
    a: float
    d: float


def _neighbours(x: np.ndarray) -> np.ndarray:
    """float32 values within +-3 ulps of each entry of ``x`` (shape (n,) -> (n, 7))."""
    bits = x.astype(np.float32).view(np.int32).astype(np.int64)
    stepped = (bits[:, None] + _ULP_STEPS[None, :]).astype(np.int32)
    return stepped.view(np.float32)


def _check_inputs(rho: float, target: float) -> tuple[np.float32, np.float32]:
    r, t = np.float32(rho), np.float32(target)
    if float(r) != float(rho) or float(t) != float(target):
        raise ValueError(f"rho={rho!r} and target={target!r} must be float32 values")
    if not (math.isfinite(float(r)) and math.isfinite(float(t))):
        raise ValueError(f"rho={rho!r} and target={target!r} must be finite")
    return r, t


def solve_scaling(rho: float, target: float, *, prefer_exponent: int | None = None) -> ScalingSolution:
    """Solve fl(fl(rho * z) * a) == target for float32 z, a (mechanism 4 of the brief).

    Parameters
    ----------
    rho : float32 value, the AD seed (non-zero when ``target`` is non-zero).
    target : float32 value T.
    prefer_exponent : the exponent e of d = fl(rho z) ~ m 2**e to try first (the caller uses it to
        steer the magnitudes of z and a); exponents are then tried in order of distance from it.

    Returns
    -------
    ScalingSolution with fl(fl(rho z) a) == target exactly (checked in float32).

    Raises
    ------
    ValueError
        If the inputs are not finite float32 values, if rho == 0 while target != 0, or if no pair is
        found (|T / rho| beyond the range that float32 z and a can span).
    """
    r, t = _check_inputs(rho, target)
    if t == 0:
        return ScalingSolution(z=0.0, a=1.0, d=0.0)
    if r == 0:
        raise ValueError(f"fl(fl(rho z) a) = {float(t)!r} is impossible with rho = 0")
    log_r, log_t = math.log2(abs(float(r))), math.log2(abs(float(t)))
    # z = m 2^e / rho and a = T / d stay normal when possible; if |T / rho| is too extreme for that
    # (beyond ~2^+-252), subnormal z or a are allowed (floor -149 instead of -126).
    for floor_exp in (-126, -149):
        lo = math.ceil(max(-126, log_r + floor_exp, log_t - 127))
        hi = math.floor(min(127, log_r + 127, log_t - floor_exp))
        if lo > hi:
            continue
        e0 = 0 if prefer_exponent is None else int(prefer_exponent)
        e0 = min(max(e0, lo), hi)
        # exponents in order of distance from e0: e0, e0 - 1, e0 + 1, e0 - 2, ...
        offsets = np.arange(0, 2 * (hi - lo) + 2)
        exps = e0 + np.where(offsets % 2 == 0, offsets // 2, -(offsets // 2 + 1))
        exps = exps[(exps >= lo) & (exps <= hi)]
        for start in range(0, exps.size, 4):
            sol = _try_exponents(r, t, exps[start : start + 4], pow2_floor=2.0**floor_exp)
            if sol is not None:
                return sol
    raise ValueError(f"no z, a found with fl(fl(rho z) a) == T for rho={float(r)!r}, T={float(t)!r}")


def _try_exponents(r: np.float32, t: np.float32, exps: np.ndarray, pow2_floor: float) -> ScalingSolution | None:
    """Vectorised search over exponents ``exps`` (in order), mantissas and +-3 ulp neighbours."""
    with np.errstate(over="ignore", under="ignore", invalid="ignore", divide="ignore"):
        guess = (_MANTISSAS[None, :] * np.ldexp(1.0, exps)[:, None] / float(r)).reshape(-1)
        z = _neighbours(guess.astype(np.float32)).reshape(-1)  # (n_e * n_m * 7,)
        d = (r * z).astype(np.float32)
        a0 = (t / d).astype(np.float32)
        ok0 = np.isfinite(z) & np.isfinite(d) & (d != 0) & np.isfinite(a0) & (a0 != 0)
        a = _neighbours(np.where(ok0, a0, np.float32(1.0)))  # (n, 7)
        prod = (d[:, None] * a).astype(np.float32)
        hit = ok0[:, None] & np.isfinite(a) & (prod == t)
        hit &= (np.abs(z) >= np.float32(pow2_floor))[:, None] & (np.abs(a) >= np.float32(pow2_floor))
    idx = np.flatnonzero(hit.reshape(-1))
    if idx.size == 0:
        return None
    i, j = divmod(int(idx[0]), a.shape[1])
    return ScalingSolution(z=float(z[i]), a=float(a[i, j]), d=float(d[i]))


def solve_single_scaling(rho: float, target: float) -> float | None:
    """Baseline: a single multiplication, z with fl(rho * z) == target, or None when none exists.

    Only the float32 values around target / rho can work (fl is monotone), so checking the +-3 ulp
    neighbours of fl(target / rho) is exhaustive.
    """
    r, t = _check_inputs(rho, target)
    if r == 0:
        return 0.0 if t == 0 else None
    with np.errstate(over="ignore", under="ignore", invalid="ignore"):
        z = _neighbours(np.array([t / r], dtype=np.float32)).reshape(-1)
        hit = np.isfinite(z) & ((r * z).astype(np.float32) == t)
    idx = np.flatnonzero(hit)
    return None if idx.size == 0 else float(z[idx[0]])
