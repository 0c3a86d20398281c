"""Exact float32 helpers: correctly rounded arithmetic on rationals and bitwise comparisons.

Everything here is scalar and exact: a float32 number is converted to a :class:`fractions.Fraction`,
combined exactly, and rounded once to float32 with round-to-nearest-even (the IEEE 754 default that
numpy and torch use on CPU). These helpers let the constructor *prove*, point by point, that a sum gives
the same float32 result under every summation order and with or without fused multiply-add.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

__all__ = [
    "F32_MAX",
    "F32_MIN_NORMAL",
    "F32_MIN_SUBNORMAL",
    "round_f32",
    "is_f32_exact",
    "ulp_f32",
    "floor_log2",
    "pow2",
    "same_value",
    "count_mismatches",
    "Dyadic",
    "dyadic",
    "dyadic_add",
    "dyadic_mul",
    "round_dyadic_f32",
]

F32_MAX = float(np.finfo(np.float32).max)
F32_MIN_NORMAL = 2.0**-126
F32_MIN_SUBNORMAL = 2.0**-149
_EMIN = -126  # smallest normal exponent of float32
_P = 24  # float32 precision (significand bits, implicit bit included)


def floor_log2(q: Fraction | float) -> int:
    """Exact floor(log2 |q|) of a non-zero rational."""
    q = abs(Fraction(q))
    if q == 0:
        raise ValueError("floor_log2 of zero")
    e = q.numerator.bit_length() - q.denominator.bit_length()
    if Fraction(2) ** e > q:
        e -= 1
    if Fraction(2) ** (e + 1) <= q:
        e += 1
    return e


def pow2(e: int) -> float:
    """2**e as a Python float (exact for -1074 <= e <= 1023)."""
    return math.ldexp(1.0, e)


def _as_dyadic(q: Fraction | float | int) -> tuple[int, int] | None:
    if isinstance(q, float):
        return dyadic(q)
    if isinstance(q, int):
        return q, 0
    q = Fraction(q)
    d = q.denominator
    if d & (d - 1) == 0:
        return q.numerator, -(d.bit_length() - 1)
    return None


def round_f32(q: Fraction | float | int) -> float:
    """Round an exact rational to float32 (round-to-nearest-even, gradual underflow, overflow to inf).

    Returns a Python float whose value is the float32 result (exact in float64).
    """
    dy = _as_dyadic(q)
    if dy is not None:
        return round_dyadic_f32(dy)
    q = Fraction(q)
    if q == 0:
        return 0.0
    sign = -1.0 if q < 0 else 1.0
    a = abs(q)
    e = max(floor_log2(a), _EMIN)
    quantum = Fraction(2) ** (e - (_P - 1))
    n = round(a / quantum)  # Fraction.__round__ rounds half to even
    if n.bit_length() + e - (_P - 1) > 128:
        return sign * math.inf
    return sign * float(n * quantum)


Dyadic = tuple[int, int]  # (m, e) stands for the exact number m * 2**e


def dyadic(x: float) -> Dyadic:
    """Exact dyadic form of a finite float (every float is m * 2**e)."""
    n, d = float(x).as_integer_ratio()
    return n, -(d.bit_length() - 1)


def dyadic_add(a: Dyadic, b: Dyadic) -> Dyadic:
    """Exact sum of two dyadic numbers."""
    e = min(a[1], b[1])
    return (a[0] << (a[1] - e)) + (b[0] << (b[1] - e)), e


def dyadic_mul(a: Dyadic, b: Dyadic) -> Dyadic:
    """Exact product of two dyadic numbers."""
    return a[0] * b[0], a[1] + b[1]


def round_dyadic_f32(a: Dyadic) -> float:
    """Round m * 2**e to float32 (nearest, ties to even; gradual underflow; overflow to inf).

    Same result as :func:`round_f32`, with integer arithmetic only (much faster than Fractions).
    """
    m, e = a
    if m == 0:
        return 0.0
    sign = -1.0 if m < 0 else 1.0
    m = abs(m)
    q = max(e + m.bit_length() - 1, _EMIN) - (_P - 1)  # exponent of the float32 quantum at this size
    shift = q - e
    if shift <= 0:
        n = m << (-shift)
    else:
        n = m >> shift
        rem = m - (n << shift)
        half = 1 << (shift - 1)
        if rem > half or (rem == half and n & 1):
            n += 1
    if n.bit_length() + q > 128:
        return sign * math.inf
    return sign * math.ldexp(n, q)


def is_f32_exact(q: Fraction | float) -> bool:
    """True when the rational ``q`` is exactly a (finite) float32 number."""
    r = round_f32(q)
    if not math.isfinite(r):
        return False
    dy = _as_dyadic(q)
    if dy is not None:
        m, e = dyadic_add(dy, (-dyadic(r)[0], dyadic(r)[1]))
        return m == 0
    return Fraction(r) == Fraction(q)


def ulp_f32(x: float) -> float:
    """Unit in the last place of float32 ``x`` (spacing to the next float32 away from zero)."""
    x = abs(float(np.float32(x)))
    if x == 0.0:
        return F32_MIN_SUBNORMAL
    e = max(floor_log2(x), _EMIN)
    return pow2(e - (_P - 1))


def same_value(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Elementwise bitwise equality of float32 values, with +0 == -0 and NaN equal to nothing.

    Parameters
    ----------
    a, b : arrays of the same shape (cast to float32).
    """
    a32 = np.asarray(a, dtype=np.float32)  # NaN is a value here (a network output), never equal to anything
    b32 = np.asarray(b, dtype=np.float32)
    if a32.shape != b32.shape:  # no broadcasting: a (1,) target must not stand in for every point
        raise ValueError(f"a and b need the same shape, got {a32.shape} and {b32.shape}")
    bits_equal = a32.view(np.uint32) == b32.view(np.uint32)
    both_zero = (a32 == 0) & (b32 == 0)
    return (bits_equal | both_zero) & ~np.isnan(a32)


def count_mismatches(got: np.ndarray, want: np.ndarray) -> int:
    """Number of entries where ``got`` and ``want`` differ bitwise (+0 and -0 treated as equal)."""
    return int(np.count_nonzero(~same_value(got, want)))
