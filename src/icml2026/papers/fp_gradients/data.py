"""Target tables: random grid domains, extreme random values/gradients, and mild targets for figures."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from icml2026.core.validate import finite_number, positive_int

from .losses import PhiLike, phi_seeds

__all__ = ["Targets", "grid_points", "random_targets", "mild_targets"]


@dataclass(frozen=True)
class Targets:
    """A finite domain and the tables to represent: xs (K,), values g (K,), grads h (K,), float32."""

    xs: np.ndarray
    values: np.ndarray
    grads: np.ndarray


def grid_points(k: int, rng: np.random.Generator, delta_log2: int = -6) -> np.ndarray:
    """K sorted distinct points on the brief's dyadic grid (float32).

    Every x is a multiple of Delta/4, neighbours are >= Delta apart, |x| <= 2^20 Delta, with
    Delta = 2^delta_log2: x = Delta (2 u + q/4), u distinct integers in [-2^19, 2^19), q in {0..3}.
    """
    k = positive_int(k, "k", maximum=2**19)
    # |x| <= 2^(delta_log2 + 20) must stay a finite float32 and Delta / 4 a non-zero one.
    delta_log2 = positive_int(delta_log2, "delta_log2", minimum=-140, maximum=100)
    u = np.sort(rng.choice(np.arange(-(2**19), 2**19), size=k, replace=False))
    q = rng.integers(0, 4, size=k)
    return (np.ldexp(1.0, delta_log2) * (2 * u + q / 4)).astype(np.float32)


def _random_finite_floats(n: int, rng: np.random.Generator, max_abs: float) -> np.ndarray:
    """Uniformly random float32 bit patterns, kept when finite and |v| <= max_abs."""
    out = np.empty(0, dtype=np.float32)
    while out.size < n:
        bits = rng.integers(0, 2**32, size=2 * n + 8, dtype=np.uint64).astype(np.uint32)
        vals = bits.view(np.float32)
        vals = vals[np.isfinite(vals) & (np.abs(vals) <= max_abs)]
        out = np.concatenate([out, vals])
    return out[:n]


def random_targets(
    k: int,
    rng: np.random.Generator,
    phi: PhiLike,
    *,
    delta_log2: int = -6,
    grad_log10_range: tuple[float, float] = (-20.0, 20.0),
    zero_grad_fraction: float = 0.1,
) -> Targets:
    """Random targets with the brief's extremes (Acceptance 1-2).

    Values are random float32 bit patterns (so every exponent is equally likely), with |g| <= 1e18 for
    "half_square" (so the seed g and rho * g stay finite) and <= 3e37 otherwise.  When k >= 5 the
    specials g = 0, g = 1e-40 (subnormal), g = +-3e37 (+-1e18 for half_square) and one h = 0 are placed
    at random positions.  Gradients have log10-uniform magnitudes in ``grad_log10_range`` and random
    signs; a fraction is exactly 0.  Where the seed D^AD phi(g) is 0 (e.g. softplus at g = -3e37, or
    0.5 y^2 at g = 0) the gradient target is set to 0, as Claim 1's conditions require.
    """
    k = positive_int(k, "k")
    lo = finite_number(grad_log10_range[0], "grad_log10_range[0]", lo=-45.0, hi=38.0)
    hi = finite_number(grad_log10_range[1], "grad_log10_range[1]", lo=lo, hi=38.0)  # float32 range
    zero_grad_fraction = finite_number(zero_grad_fraction, "zero_grad_fraction", lo=0.0, hi=1.0)
    xs = grid_points(k, rng, delta_log2)
    big = 1e18 if phi == "half_square" else 3e37
    g = _random_finite_floats(k, rng, big)
    h = (rng.choice([-1.0, 1.0], size=k) * 10.0 ** rng.uniform(lo, hi, size=k)).astype(np.float32)
    h[rng.random(k) < zero_grad_fraction] = 0
    if k >= 5:
        pos = rng.permutation(k)[:5]
        g[pos[0]], g[pos[1]], g[pos[2]], g[pos[3]] = 0.0, np.float32(1e-40), big, -big
        h[pos[4]] = 0.0
    rho = phi_seeds(phi, g)
    h[rho == 0] = 0.0
    return Targets(xs=xs, values=g.astype(np.float32), grads=h)


def mild_targets(k: int, rng: np.random.Generator) -> Targets:
    """Readable targets for figures, timing and the trained baseline.

    xs: k sorted distinct multiples of 1/64 in [-k/16, k/16); g = sin(1.5 * 2 pi t) of the rescaled
    position t in [0, 1]; h uniform in [-3, 3].
    """
    k = positive_int(k, "k", minimum=2)
    xs = (np.sort(rng.choice(np.arange(-4 * k, 4 * k), size=k, replace=False)) / 64.0).astype(np.float32)
    t = (xs - xs[0]) / (xs[-1] - xs[0])
    g = np.sin(3 * np.pi * t).astype(np.float32)
    h = rng.uniform(-3, 3, size=k).astype(np.float32)
    return Targets(xs=xs, values=g, grads=h)
