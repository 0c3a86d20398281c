"""Vector inputs x in F^d (issue 27): f(x_k) = g_k and the AD gradient vector D^AD(phi o f)(x_k) = h_k.

Our extension of the scalar construction (construction.py), checked coordinate by coordinate.  Per
point k and coordinate c (sigma_kc = 4 / Delta_kc, Delta_kc the largest power of two not above the gap
from x_kc to the nearest *different* value in coordinate c):

    layer 1 (3d per point): U_c = ReLU(s_c x_c - s_c x_kc), V_c = ReLU(-s_c x_c + s_c x_kc),
                            Vp_c = ReLU(s_pc (x_kc - x_c) + c_pc)                      (one input each)
    layer 2: S0 = ReLU(lam - lam sum_c (U_c + V_c))   (R0 alike with lam_c, when split)
             Q_c = ReLU(mu_c (1 + 2^-jq) - mu_vc Vp_c - mu_c U_c - mu_c sum_{c' != c} (U_c' + V_c'))
    gain layers: S, (R,) X^c_i = ReLU(beta X^c_{i-1} + c R_{i-1})  for every c
    last hidden: SF = ReLU(S_n), G_c = ReLU(a_c X^c_n + c_G R_n);   output y = w SF + sum_c z_c G_c

At x_k every U and V sits at its kink (value 0, masked), so Q_c's slope is mu_c s_c in x_c and 0 in
every other coordinate; at any other point some coordinate differs by >= Delta_kc, which makes S0, R0
and every Q_c negative in every summation order (all their other terms are <= 0).  Each chain is
planned by the scalar planner in the "absorbed" regime (|z_c P_c| <= ulp(g)/8), so the output sum of
d + 1 non-zero terms gives g in every order and with or without FMA; the planner proves it per point.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from torch import nn

from icml2026.core.validate import as_array

from .construction import (
    ConstructionError,
    PointPlan,
    SparseLayer,
    _gain_candidates,
    _pad,
    _plan_all,
    _PlanFailure,
    _robust_sum,
    _simulate,
    _sparse,
    _to_sequential,
    _vp_weights,
    point_scales,
)
from .floats import pow2
from .losses import PhiLike, phi_seeds, resolve_phi

__all__ = [
    "VectorConstruction",
    "build_vector_construction",
    "construct_vector",
    "coordinate_scales",
    "random_vector_targets",
]

_MAX_DIM = 4  # the output sum has d + 1 terms; every order and FMA choice is enumerated per point


@dataclass
class VectorConstruction:
    """Per point and coordinate plans (``plans[k][c]``), the gain depth and the coordinate layers."""

    plans: list[list[PointPlan]]
    n_chain: int
    layers: list[SparseLayer] = field(repr=False)

    @property
    def dim(self) -> int:
        return len(self.plans[0])

    @property
    def widths(self) -> list[int]:
        return [self.dim] + [layer.n_out for layer in self.layers]

    @property
    def n_params(self) -> int:
        return int(sum(layer.n_out * layer.n_in + layer.n_out for layer in self.layers))

    @property
    def split_value(self) -> bool:
        return any(p.lam_c is not None for row in self.plans for p in row)

    def to_sequential(self) -> nn.Sequential:
        """The dense torch network (nn.Linear(d, .) first), float32, CPU."""
        return _to_sequential(self.layers)


def coordinate_scales(xs: np.ndarray) -> np.ndarray:
    """(K, d) log2 sigma_kc: for each coordinate, the scalar rule applied to its distinct values."""
    xs = as_array(xs, "xs", ndim=2)
    k, d = xs.shape
    out = np.zeros((k, d), dtype=np.int64)
    for c in range(d):
        uniq, inv = np.unique(xs[:, c].astype(np.float64), return_inverse=True)
        try:
            sl = point_scales(uniq.astype(np.float32))
        except ConstructionError as exc:
            raise ConstructionError(f"coordinate {c} (x[:, {c}] over its distinct values): {exc}") from None
        out[:, c] = sl[inv.reshape(-1)]
    return out


def _validate_vector(xs, values, grads):  # type: ignore[no-untyped-def]
    arrs = []
    for name, arr, nd in (("xs", xs, 2), ("values", values, 1), ("grads", grads, 2)):
        a = np.asarray(arr)
        if a.ndim != nd:
            raise ValueError(f"{name} must be {nd}-dimensional for vector inputs, got shape {a.shape}")
        a64 = a.astype(np.float64)
        a32 = a64.astype(np.float32)
        lossy = ~np.isnan(a64) & (a32.astype(np.float64) != a64)
        if np.any(lossy):
            raise ValueError(f"{name} holds a value that is not a float32 (cast it to float32 first)")
        if not np.all(np.isfinite(a32)):
            raise ValueError(f"{name} holds a non-finite value; targets must be finite floats")
        arrs.append(a32)
    xs32, g32, h32 = arrs
    k, d = xs32.shape
    if k == 0 or d == 0:
        raise ValueError(f"xs needs at least one point and one coordinate, got shape {xs32.shape}")
    if d > _MAX_DIM:
        raise ValueError(f"xs has d={d} coordinates; at most {_MAX_DIM} are supported (see the card)")
    if g32.shape != (k,) or h32.shape != (k, d):
        raise ValueError(f"values must have shape ({k},) and grads ({k}, {d}), got {g32.shape} and {h32.shape}")
    keys = {tuple(float(v) + 0.0 for v in row) for row in xs32}  # +0.0 folds -0.0 into 0.0
    if len(keys) != k:
        raise ValueError("xs holds the same point twice (+0.0 and -0.0 count as the same value)")
    return xs32, g32, h32


def build_vector_construction(
    xs: np.ndarray, values: np.ndarray, grads: np.ndarray, phi: PhiLike
) -> VectorConstruction:
    """Plan the vector-input network (module docstring): f(x_k) = g_k, D^AD(phi o f)(x_k) = h_k in F^d.

    Parameters
    ----------
    xs : (K, d) distinct float32 points, d <= 4.
    values : (K,) float32 targets g_k.
    grads : (K, d) float32 gradient targets h_k (one entry per coordinate).
    phi : the loss (built-in name or torch-differentiable callable).

    Raises
    ------
    ConstructionError
        Seed conditions (as in Claim 1, per coordinate), a coordinate's grid condition, or a point
        whose d + 1 output terms cannot be made order-robust, naming the point and coordinate.
    """
    xs32, g32, h32 = _validate_vector(xs, values, grads)
    resolve_phi(phi)
    k, d = xs32.shape
    rho = phi_seeds(phi, g32)
    problems = []
    for i in range(k):
        if not math.isfinite(float(rho[i])):
            problems.append(f"point {i}: seed D^AD phi(g={float(g32[i])!r}) = {float(rho[i])!r} is not finite")
        elif rho[i] == 0 and np.any(h32[i] != 0):
            problems.append(f"point {i}: seed D^AD phi(g={float(g32[i])!r}) = 0 but h_k != 0 (unreachable)")
    if problems:
        raise ConstructionError(
            "; ".join(problems[:5]) + (f" (and {len(problems) - 5} more)" if len(problems) > 5 else "")
        )
    sls = coordinate_scales(xs32)
    per_coord: list[list[PointPlan]] = []
    for c in range(d):
        cands: list[list[tuple[str, int]]] = []
        for i in range(k):
            h = float(h32[i, c])
            if h == 0:
                cands.append([])
            else:
                # Deviation: coordinate 0 may use any regime; the others use "absorbed_deep" (|z P| <
                # 2^-151, invisible in every order), so at most two output terms matter.
                if c == 0:
                    cands.append(_gain_candidates(float(g32[i]), h, float(rho[i]), int(sls[i, c])))
                else:
                    deep = _gain_candidates(0.0, h, float(rho[i]), int(sls[i, c]))
                    cands.append([("absorbed_deep", gain) for rg, gain in deep if rg == "absorbed"])
        plans, failures = _plan_all(xs32[:, c], g32, h32[:, c], rho, sls[:, c], cands)
        if failures:
            hint = (
                ""
                if c == 0
                else " (coordinates after the first need |z P| < 2^-151 at the output, which tiny seeds "
                "|rho| with large |h| cannot reach: condition of the vector construction, see the card)"
            )
            raise ConstructionError(f"coordinate {c}: no exact plan found for " + "; ".join(failures[:5]) + hint)
        per_coord.append(plans)
    n = max([len(p.beta) for row in per_coord for p in row] + [0])
    rows = [[_pad(per_coord[c][i], n) for c in range(d)] for i in range(k)]
    bad = []
    for i, row in enumerate(rows):
        try:
            y = _simulate_output(row)
        except _PlanFailure as exc:
            bad.append(f"point {i}: {exc}")
            continue
        if y != float(g32[i]):
            bad.append(f"point {i}: the {d} + 1 output terms give {y!r} instead of g={float(g32[i])!r}")
    if bad:
        raise ConstructionError("; ".join(bad[:5]))
    return VectorConstruction(plans=rows, n_chain=n, layers=_assemble_vector(rows, n))


def _simulate_output(row: list[PointPlan]) -> float:
    """f(x_k) = fl(w lam + sum_c z_c P_c), proved the same in every order and FMA choice."""
    terms = []
    for p in row:
        _, _, top = _simulate(p)  # also proves the chain's own sums and its gradient coordinate
        if p.z != 0:
            terms.append((p.z, top))
    first = row[0]
    return _robust_sum([(first.w, first.lam), *terms], max_terms=_MAX_DIM + 1)


def _assemble_vector(rows: list[list[PointPlan]], n: int) -> list[SparseLayer]:
    k, d = len(rows), len(rows[0])
    split = any(p.lam_c is not None for row in rows for p in row)
    nv = 2 if split else 1  # value units per block (S, and R when split)
    b = nv + d
    layers = []
    # layer 1: per point, per coordinate: U, V, Vp (reading input column c)
    r1, c1, v1, b1 = [], [], [], []
    for i, row in enumerate(rows):
        for c, p in enumerate(row):
            s = pow2(p.sigma_log2)
            sx = s * p.x
            s_p, _, _, b_vp = _vp_weights(p)
            base = 3 * (d * i + c)
            r1 += [base, base + 1, base + 2]
            c1 += [c, c, c]
            v1 += [s, -s, -s_p]
            b1 += [-sx, sx, b_vp]
    layers.append(_sparse(np.array(r1), np.array(c1), np.array(v1), np.array(b1), d, True))
    # layer 2: S0, (R0,) Q_1..Q_d
    r2, c2, v2, b2 = [], [], [], []
    for i, row in enumerate(rows):
        p0 = row[0]
        uv = [3 * (d * i + c) + j for c in range(d) for j in (0, 1)]
        blk = b * i
        r2 += [blk] * len(uv)
        c2 += uv
        v2 += [-p0.lam] * len(uv)
        b2.append(p0.lam)
        if split:
            r2 += [blk + 1] * len(uv)
            c2 += uv
            v2 += [-p0.const_scale] * len(uv)
            b2.append(p0.const_scale)
        for c, p in enumerate(row):
            _, _, mu_v, _ = _vp_weights(p)
            q = blk + nv + c
            base = 3 * (d * i + c)
            r2 += [q, q]
            c2 += [base + 2, base]
            v2 += [-mu_v, -p.mu]
            for c2_ in range(d):
                if c2_ != c:
                    o = 3 * (d * i + c2_)
                    r2 += [q, q]
                    c2 += [o, o + 1]
                    v2 += [-p.mu, -p.mu]
            b2.append(p.mu * (1 + 2.0**-p.jq))
    layers.append(_sparse(np.array(r2), np.array(c2), np.array(v2), np.array(b2), 3 * d * k, True))
    # gain layers
    for li in range(n):
        rr, cc, vv = [], [], []
        for i, row in enumerate(rows):
            blk = b * i
            rr += [blk]
            cc += [blk]
            vv += [1.0]
            rcol = blk + 1 if split else blk
            if split:
                rr += [blk + 1]
                cc += [blk + 1]
                vv += [1.0]
            for c, p in enumerate(row):
                x = blk + nv + c
                rr += [x, x]
                cc += [rcol, x]
                vv += [p.c_chain[li], p.beta[li]]
        layers.append(_sparse(np.array(rr), np.array(cc), np.array(vv), np.zeros(b * k), b * k, True))
    # last hidden: SF, G_1..G_d
    rr, cc, vv = [], [], []
    for i, row in enumerate(rows):
        blk, out = b * i, (1 + d) * i
        rcol = blk + 1 if split else blk
        rr += [out]
        cc += [blk]
        vv += [1.0]
        for c, p in enumerate(row):
            rr += [out + 1 + c, out + 1 + c]
            cc += [rcol, blk + nv + c]
            vv += [p.c_g, p.a]
    layers.append(_sparse(np.array(rr), np.array(cc), np.array(vv), np.zeros((1 + d) * k), b * k, True))
    # output
    vals = []
    for row in rows:
        vals += [row[0].w] + [p.z for p in row]
    layers.append(
        _sparse(
            np.zeros((1 + d) * k, dtype=np.int64),
            np.arange((1 + d) * k),
            np.array(vals),
            np.zeros(1),
            (1 + d) * k,
            False,
        )
    )
    return layers


def construct_vector(xs: np.ndarray, values: np.ndarray, grads: np.ndarray, phi: PhiLike) -> nn.Sequential:
    """Vector inputs: a float32 ReLU nn.Sequential with f(x_k) = g_k and gradient vector h_k, bit-exactly."""
    return build_vector_construction(xs, values, grads, phi).to_sequential()


def random_vector_targets(
    k: int, d: int, rng: np.random.Generator, phi: PhiLike, *, min_seed: float = 1e-18
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Random vector targets: (xs (K, d), values (K,), grads (K, d)) over the whole float32 range.

    Each coordinate is a random grid (``random_targets``), and the first K // 2 points share their
    second coordinate (so that points differ in some coordinates only).  Values and gradients span all
    floats as in ``random_targets``; where the seed is 0 the gradient is 0 (Claim 1's condition), and
    where |seed| < ``min_seed`` only coordinate 0 keeps a gradient target (the vector construction's
    condition, see the card).
    """
    from icml2026.core.validate import positive_int

    from .data import random_targets

    k = positive_int(k, "k")
    d = positive_int(d, "d", maximum=_MAX_DIM)
    cols = [random_targets(k, rng, phi) for _ in range(d)]
    xs = np.stack([c.xs for c in cols], 1)
    if d > 1:
        xs[: k // 2, 1] = xs[0, 1]
    g = cols[0].values.copy()
    h = np.stack([c.grads for c in cols], 1)
    rho = phi_seeds(phi, g)
    h[rho == 0] = 0
    h[np.abs(rho) < min_seed, 1:] = 0
    return xs.astype(np.float32), g.astype(np.float32), h.astype(np.float32)
