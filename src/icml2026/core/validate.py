"""Argument checks for public functions: arrays of the right shape, finite, in range, of equal length.

Every public metric and estimator of every paper validates its inputs with these, so that bad input gives a
clear ``ValueError`` naming the argument, never a crash deep in numpy or a silently wrong number.
"""

from __future__ import annotations

import math
import numbers
from typing import Any

import numpy as np

__all__ = ["as_array", "as_probabilities", "as_labels", "same_length", "positive_int", "finite_number"]


def as_array(
    x: Any,
    name: str,
    *,
    ndim: int | tuple[int, ...] | None = None,
    dtype: Any = float,
    finite: bool = True,
    lo: float | None = None,
    hi: float | None = None,
    min_size: int = 1,
) -> np.ndarray:
    """``x`` as a numpy array of ``dtype``; ValueError naming ``name`` on a wrong ndim, NaN/inf, a value
    outside ``[lo, hi]`` or fewer than ``min_size`` elements."""
    try:
        arr = np.asarray(x, dtype=dtype)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name}: cannot be read as an array of {np.dtype(dtype).name}: {exc}") from None
    if ndim is not None:
        allowed = (ndim,) if isinstance(ndim, int) else ndim
        if arr.ndim not in allowed:
            raise ValueError(f"{name}: expected {' or '.join(f'{d}-D' for d in allowed)}, got shape {arr.shape}")
    if arr.size < min_size:
        raise ValueError(f"{name}: needs at least {min_size} element(s), got {arr.size}")
    if np.issubdtype(arr.dtype, np.floating) or np.issubdtype(arr.dtype, np.complexfloating):
        if finite and not np.all(np.isfinite(arr)):
            raise ValueError(f"{name}: contains NaN or inf")
        if not finite and np.any(np.isnan(arr)):
            raise ValueError(f"{name}: contains NaN")
    if lo is not None and arr.size and arr.min() < lo:
        raise ValueError(f"{name}: values must be >= {lo:g}, found {arr.min():g}")
    if hi is not None and arr.size and arr.max() > hi:
        raise ValueError(f"{name}: values must be <= {hi:g}, found {arr.max():g}")
    return arr


def as_probabilities(x: Any, name: str, *, ndim: int | tuple[int, ...] | None = None,
                     rows_sum_to_one: bool = False, atol: float = 1e-6) -> np.ndarray:
    """Probabilities in [0, 1] (rows summing to 1 when ``rows_sum_to_one``, within ``atol``)."""
    p = as_array(x, name, ndim=ndim, lo=0.0, hi=1.0)
    if rows_sum_to_one:
        s = p.sum(axis=-1)
        if not np.allclose(s, 1.0, atol=atol):
            worst = float(s.flat[int(np.argmax(np.abs(s - 1.0)))])
            raise ValueError(f"{name}: each row must sum to 1, found a row summing to {worst:g}")
    return p


def as_labels(x: Any, name: str, *, n_classes: int | None = None, binary: bool = False) -> np.ndarray:
    """Integer class labels (1-D); ``binary`` requires 0/1 (bools accepted)."""
    arr = np.asarray(x)
    if arr.dtype == bool:
        arr = arr.astype(np.int64)
    if arr.ndim != 1:
        raise ValueError(f"{name}: expected 1-D labels, got shape {arr.shape}")
    if arr.size == 0:
        raise ValueError(f"{name}: is empty")
    if not np.issubdtype(arr.dtype, np.integer):
        f = np.asarray(arr, dtype=float)
        if not np.all(np.isfinite(f)) or not np.all(f == np.round(f)):
            raise ValueError(f"{name}: labels must be integers")
        arr = f.astype(np.int64)
    if binary and not np.all((arr == 0) | (arr == 1)):
        raise ValueError(f"{name}: labels must be 0 or 1")
    if n_classes is not None and (arr.min() < 0 or arr.max() >= n_classes):
        raise ValueError(f"{name}: labels must lie in 0..{n_classes - 1}")
    return arr


def same_length(**arrays: Any) -> int:
    """The common length of the named arrays; ValueError listing the lengths when they differ."""
    lengths = {k: len(v) for k, v in arrays.items()}
    if len(set(lengths.values())) > 1:
        raise ValueError("arguments must have the same length: " + ", ".join(f"{k}={n}" for k, n in lengths.items()))
    return next(iter(lengths.values()), 0)


def positive_int(x: Any, name: str, *, minimum: int = 1, maximum: int | None = None) -> int:
    """An int >= ``minimum`` (and <= ``maximum``); bools and floats are refused."""
    if isinstance(x, bool) or not isinstance(x, numbers.Integral):
        raise ValueError(f"{name}: expected an integer, got {x!r}")
    x = int(x)
    if x < minimum or (maximum is not None and x > maximum):
        hi = "" if maximum is None else f" and <= {maximum}"
        raise ValueError(f"{name}: must be >= {minimum}{hi}, got {x}")
    return x


def finite_number(x: Any, name: str, *, lo: float | None = None, hi: float | None = None,
                  lo_open: bool = False, hi_open: bool = False) -> float:
    """A finite real number in the given range."""
    if isinstance(x, bool) or not isinstance(x, numbers.Real):
        raise ValueError(f"{name}: expected a number, got {x!r}")
    v = float(x)
    if not math.isfinite(v):
        raise ValueError(f"{name}: must be finite, got {v}")
    if lo is not None and (v < lo or (lo_open and v == lo)):
        raise ValueError(f"{name}: must be {'>' if lo_open else '>='} {lo:g}, got {v:g}")
    if hi is not None and (v > hi or (hi_open and v == hi)):
        raise ValueError(f"{name}: must be {'<' if hi_open else '<='} {hi:g}, got {v:g}")
    return v
