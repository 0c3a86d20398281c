"""The oracle's precision and the error model every measurement is judged against.

A real attention head answers in float32 (or float16/bfloat16), not float64, and Method 3's oracle adds
noise |eta| <= tau. Both are described by one :class:`NoiseModel`: an answer f(X) for a query whose
value terms are of size ``scale_f`` is trusted to within

    tau + eps * safety * scale_f

(``tau`` absolute, ``eps`` relative). From this bound every measurement gets an error bar (see
:func:`queries.measure_bilinear`), and the rank tolerance of Method 2b and the softmax-saturation
threshold follow from ``eps`` instead of being fixed at float64 values.

The precision is either given (``precision=1e-7``), inferred for free from the answers' representability
(``"auto"``: the narrowest of float16, bfloat16, float32 and float64 in which every answer seen so far is
exactly representable; a float32 network returns float32 numbers even when wrapped to Python floats), or
estimated from counted linearity probes (``"estimate"``: f((x)) + f((y)) - f((x + y)) is 0 in exact
arithmetic for single-token queries, so its size measures the oracle's rounding).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

__all__ = [
    "NoiseModel",
    "FLOAT64_EPS",
    "infer_precision",
    "representable_in",
    "estimate_precision",
    "resolve_precision",
    "saturation_for_precision",
    "PRECISION_SAFETY",
    "LowPrecisionHead",
]

FLOAT64_EPS = float(np.finfo(np.float64).eps)
# Rounding of a softmax-weighted sum accumulates a few roundings per term; the eps of the answers' type is
# multiplied by this to bound the error of one answer (our choice; checked on float32 and float16 oracles).
# Deviation: the brief has no precision model (float64 assumed); this factor is ours.
PRECISION_SAFETY = 8.0
_BRIEF_SATURATION = 1e-9  # brief, Method 1 step 4 (float64 oracle)


@dataclass(frozen=True)
class NoiseModel:
    """Error bound of one answer: |f_returned - f| <= tau + eps * PRECISION_SAFETY * scale_f.

    tau : additive tolerance of the oracle (Method 3); eps : relative precision (machine epsilon of the
    oracle's arithmetic); source : how eps was obtained ("float64", "given", "auto:float32", "estimated").
    """

    tau: float = 0.0
    eps: float = FLOAT64_EPS
    source: str = "float64"

    def bound(self, scale_f: np.ndarray | float) -> np.ndarray:
        return self.tau + self.eps * PRECISION_SAFETY * np.abs(np.asarray(scale_f, dtype=np.float64))


def _representable(values: np.ndarray, dtype: type) -> bool:
    with np.errstate(over="ignore", invalid="ignore"):
        cast = values.astype(dtype).astype(np.float64)
    return bool(np.all(cast == values))


def _representable_bf16(values: np.ndarray) -> bool:
    f32 = values.astype(np.float32)
    if not np.all(f32.astype(np.float64) == values):
        return False
    return bool(np.all((f32.view(np.uint32) & np.uint32(0xFFFF)) == 0))


def representable_in(values: np.ndarray, name: str) -> bool:
    """Whether every value is exactly representable in the float type ``name`` (as infer_precision names)."""
    a = np.asarray(values, dtype=np.float64).reshape(-1)
    if name == "bfloat16":
        return _representable_bf16(a)
    if name in ("float16", "float32"):
        return _representable(a, np.float16 if name == "float16" else np.float32)
    return True


def infer_precision(answers: np.ndarray) -> tuple[float, str]:
    """(eps, name) of the coarsest float type that represents every answer exactly (free, no query).

    A float64 computation gives answers that are float32-representable with probability ~2^-29 each, so
    a few answers decide. Answers that are all small integers (e.g. exact zeros) fit every type: with fewer
    than 3 non-integer answers the result is float64 (nothing to go on).
    """
    a = np.asarray(answers, dtype=np.float64).reshape(-1)
    informative = a[np.isfinite(a) & (a != np.round(a))]
    if informative.size < 3:
        return FLOAT64_EPS, "float64"
    # coarsest first: bfloat16 values (8 significant bits) of moderate size are also float16 values
    if _representable_bf16(informative):
        return 2.0**-7, "bfloat16"
    if _representable(informative, np.float16):
        return float(np.finfo(np.float16).eps), "float16"
    if _representable(informative, np.float32):
        return float(np.finfo(np.float32).eps), "float32"
    return FLOAT64_EPS, "float64"


def estimate_precision(
    oracle: Callable[[np.ndarray], float], d: int, rng: np.random.Generator | None = None, n_probes: int = 4
) -> float:
    """Relative precision of the oracle from ``3 n_probes`` counted single-token linearity probes.

    For a single token, f((x)) = v^T x exactly, so r = |f(x) + f(y) - f(x + y)| / (|f(x)| + |f(y)| +
    |f(x + y)|) is pure rounding. Returns max(max_k r_k, float64 eps). Random Gaussian x, y (a fixed stream
    when rng is None) keep the sums away from exactly representable values.
    """
    gen = rng if rng is not None else np.random.default_rng(7)
    worst = FLOAT64_EPS
    for _ in range(n_probes):
        x, y = gen.standard_normal(d) / math.sqrt(d), gen.standard_normal(d) / math.sqrt(d)
        fx, fy, fxy = (float(oracle(t[None, :])) for t in (x, y, x + y))
        den = abs(fx) + abs(fy) + abs(fxy)
        if den > 0:
            worst = max(worst, abs(fx + fy - fxy) / den)
    return worst


def resolve_precision(precision: float | str | None, answers: np.ndarray) -> tuple[float, str]:
    """(eps, source) from a ``precision`` argument: None / "float64", "auto", or a number in (0, 0.5)."""
    if precision is None or precision == "float64":
        return FLOAT64_EPS, "float64"
    if precision == "auto":
        eps, name = infer_precision(answers)
        return eps, f"auto:{name}"
    if isinstance(precision, str):
        raise ValueError(f"precision must be None, 'auto', 'estimate' or a number in (0, 0.5), got {precision!r}")
    if isinstance(precision, bool) or not isinstance(precision, (int, float, np.floating)):
        raise TypeError(f"precision must be a number, None, 'auto' or 'estimate', got {type(precision).__name__}")
    p = float(precision)
    if not (np.isfinite(p) and 0.0 < p < 0.5):
        raise ValueError(f"precision must be a finite number in (0, 0.5), got {precision!r}")
    return max(p, FLOAT64_EPS), "given"


def saturation_for_precision(eps: float) -> float:
    """Softmax-saturation threshold from the precision: the brief's 1e-9 for a float64 oracle, else
    clip(sqrt(eps) / 4, 1e-9, 0.05).

    A weight alpha is known to within ~eps (relative to the answer), so its logit to ~eps / alpha; at
    alpha = sqrt(eps) / 4 that is ~4 sqrt(eps): half the digits, the most a saturated answer can keep.
    # Deviation: the brief fixes 1e-9 (right for float64 only); float32 gives 6e-5, float16 5.5e-3.
    """
    if eps <= 4 * FLOAT64_EPS:
        return _BRIEF_SATURATION
    return float(min(0.05, max(_BRIEF_SATURATION, math.sqrt(eps) / 4.0)))


class LowPrecisionHead:
    """A single-head attention oracle evaluated in float32 or float16 (as a real network would answer).

    A, v and the query tokens are cast to ``dtype`` and every operation runs in it; the answer is returned
    as a Python float holding the ``dtype`` value. The reference parameters are the float64 ``A``, ``v``.
    """

    DTYPES = {"float32": np.float32, "float16": np.float16}

    def __init__(self, A: np.ndarray, v: np.ndarray, dtype: str = "float32") -> None:
        if dtype not in self.DTYPES:
            raise ValueError(f"dtype must be one of {', '.join(self.DTYPES)}, got {dtype!r}")
        self.dtype = self.DTYPES[dtype]
        self.A = np.asarray(A, dtype=np.float64)
        self.v = np.asarray(v, dtype=np.float64)
        if self.A.ndim != 2 or self.A.shape[0] != self.A.shape[1] or self.v.shape != (self.A.shape[0],):
            raise ValueError(f"A must be (d, d) and v (d,), got {self.A.shape} and {self.v.shape}")
        self.d = self.A.shape[0]
        self._A = self.A.astype(self.dtype)
        self._v = self.v.astype(self.dtype)

    def batch(self, X: np.ndarray) -> np.ndarray:
        Xl = np.asarray(X, dtype=np.float64).astype(self.dtype)
        if Xl.ndim != 3 or Xl.shape[2] != self.d:
            raise ValueError(f"a batch must have shape (batch, n, d={self.d}), got {Xl.shape}")
        q = Xl[:, -1, :] @ self._A
        s = np.einsum("bjd,bd->bj", Xl, q)
        s = s - s.max(axis=1, keepdims=True)
        w = np.exp(s)
        out = np.einsum("bj,bj->b", w, Xl @ self._v) / w.sum(axis=1)
        return out.astype(self.dtype).astype(np.float64)

    def __call__(self, X: np.ndarray) -> float:
        return float(self.batch(np.asarray(X, dtype=np.float64)[None])[0])
