"""An order-robust float32 ReLU network whose values and AD gradients equal arbitrary targets.

Construction (our own; see the card).  For each point x_k (sigma_k = 4 / Delta_k, Delta_k the largest
power of two not above the distance to the nearest other point) the network holds a private chain of
units; at x_k every other chain is exactly zero and masked.

    layer 1 (3K): U0 = ReLU(s x - s x_k),  V0 = ReLU(-s x + s x_k),  Vp = ReLU(-s x + s x_k + 1)
    layer 2 (2K): S0 = ReLU(lam - lam U0 - lam V0)          value lam at x_k, AD slope 0 (kink)
                  Q  = ReLU(mu (1 + 2^-jq) - mu Vp - mu U0)   value mu 2^-jq,   AD slope mu s
    n chain layers (2K each):  S_i = ReLU(S_{i-1}),  X_i = ReLU(beta_i X_{i-1} + c_i S_{i-1})
    last hidden (2K): SF = ReLU(S_n),  G = ReLU(a X_n + c_G S_n)      (X_0 = Q)
    output: y = w SF + z G

Every value along X is a power of two; c_i cancels all but 2^-g_i of beta_i X_{i-1} ("gain" g_i), so the
ratio of AD slope to forward value grows by up to 2^24 per layer.  At x_k every pre-activation that
matters has at most two non-zero terms with exactly representable products, so its float32 result is the
same in every summation order and with or without fused multiply-add (the constructor proves this per
point with exact rational arithmetic, see ``_robust_sum``).  Hence torch's nn.Linear (BLAS order) and the
left-to-right reference agree bit for bit.  The reverse pass carries the seed rho through single products
only: D^AD(phi o f)(x_k) = s * mu * prod(beta) * fl(a * fl(rho * z)), and (z, a) come from
:func:`solve_scaling`.  The forward value is y = fl(z P + w lam) with P = G's value: either exactly
compensated (z P small enough next to g, or g = 0) or absorbed (|z P| below a quarter ulp of g); the
gain layers make z P as small as that requires.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from fractions import Fraction
from itertools import permutations

import numpy as np
import torch
from torch import nn

from icml2026.core.validate import as_array

from .floats import (
    F32_MAX,
    Dyadic,
    dyadic,
    dyadic_add,
    dyadic_mul,
    floor_log2,
    is_f32_exact,
    pow2,
    round_dyadic_f32,
    round_f32,
    ulp_f32,
)
from .losses import PhiLike, phi_seeds, resolve_phi
from .solver import solve_scaling

__all__ = [
    "PointPlan",
    "SparseLayer",
    "Construction",
    "ConstructionError",
    "build_construction",
    "construct",
    "point_scales",
    "simulate_point",
]

_MAX_CHAIN = 24  # more gain layers than float32's whole exponent range could ever need (24 * 24 bits)
_RANGE = 123  # exponents of the chosen magnitudes are kept inside [-_RANGE, _RANGE] (normal floats)


class ConstructionError(ValueError):
    """The targets violate a condition of the construction; the message names the points and why."""


@dataclass(frozen=True)
class PointPlan:
    """Per-point weights of the construction (paper symbols -> fields: see module docstring).

    ``regime`` is "value_only" (h = 0), "compensated" (y = fl(zP + w lam) with exact zP) or "absorbed"
    (|zP| < ulp(g)/4 so fl(zP + w lam) = w lam = g).
    """

    x: float
    g: float
    h: float
    rho: float
    sigma_log2: int
    regime: str
    lam: float
    mu: float
    jq: int
    beta: tuple[float, ...]
    c_chain: tuple[float, ...]
    a: float
    c_g: float
    z: float
    w: float
    gain: int
    # Vp's slope is sigma_k 2^-vp_shift and Q's weight on Vp is mu 2^vp_shift (same product): the
    # last backward product then scales *down*, so subnormal targets h keep all their bits (issue 27).
    vp_shift: int = 0
    # Value of the second value chain R that supplies the cancellation constants c_i, c_G (R_0 =
    # ReLU(lam_c - lam_c U0 - lam_c V0), R_i = ReLU(R_{i-1})); None: they come from the S chain.  A
    # separate R chain is used when lam > 1 (rho g beyond 2^100), so that c = C / lam_c stays exact.
    lam_c: float | None = None

    @property
    def const_scale(self) -> float:
        return self.lam if self.lam_c is None else self.lam_c


@dataclass(frozen=True)
class SparseLayer:
    """One affine layer stored as coordinates: W[rows[i], cols[i]] = vals[i] (explicit zeros dropped)."""

    rows: np.ndarray
    cols: np.ndarray
    vals: np.ndarray
    bias: np.ndarray
    n_in: int
    relu: bool

    @property
    def n_out(self) -> int:
        return int(self.bias.shape[0])

    def dense(self) -> np.ndarray:
        w = np.zeros((self.n_out, self.n_in), dtype=np.float32)
        w[self.rows, self.cols] = self.vals
        return w


@dataclass
class Construction:
    """The planned network: per-point plans plus the layer weights (sparse), and its torch form."""

    plans: list[PointPlan]
    n_chain: int
    layers: list[SparseLayer] = field(repr=False)

    @property
    def split_value(self) -> bool:
        """True when the layout holds the second value chain R (3 units per point per chain layer)."""
        return any(p.lam_c is not None for p in self.plans)

    @property
    def widths(self) -> list[int]:
        return [1] + [layer.n_out for layer in self.layers]

    @property
    def n_params(self) -> int:
        """Parameters of the dense nn.Sequential (weights + biases)."""
        return int(sum(layer.n_out * layer.n_in + layer.n_out for layer in self.layers))

    @property
    def depth(self) -> int:
        """Number of affine layers."""
        return len(self.layers)

    def to_sequential(self) -> nn.Sequential:
        """The dense torch network: nn.Linear and nn.ReLU only, float32, on CPU."""
        return _to_sequential(self.layers)


def _to_sequential(layers: list[SparseLayer]) -> nn.Sequential:
    """Dense nn.Linear / nn.ReLU network of coordinate layers (float32, CPU)."""
    mods: list[nn.Module] = []
    for layer in layers:
        # skip_init: no default initialisation, so the global torch RNG is left untouched
        lin = torch.nn.utils.skip_init(nn.Linear, layer.n_in, layer.n_out, dtype=torch.float32)
        with torch.no_grad():
            lin.weight.copy_(torch.from_numpy(layer.dense()))
            lin.bias.copy_(torch.from_numpy(layer.bias.astype(np.float32)))
        mods.append(lin)
        if layer.relu:
            mods.append(nn.ReLU())
    return nn.Sequential(*mods)


# ----------------------------------------------------------------------------------------- exactness
def _f(x: float) -> Fraction:
    return Fraction(x)


def _sum_results(products: list[tuple[float, float]], bias: float = 0.0, max_terms: int = 3) -> set[float]:
    """Every float32 result of fl(sum_i u_i v_i + bias) over all orders of the non-zero terms, each product
    rounded first or fused with the running sum (FMA); ``{0.0}`` when no term is non-zero.

    Raises ``_PlanFailure`` if a value is not finite or more than ``max_terms`` terms are non-zero.
    """
    items: list[tuple[Dyadic, float]] = []  # (exact value, its float32 rounding)
    if not all(math.isfinite(u) and math.isfinite(v) for u, v in products) or not math.isfinite(bias):
        raise _PlanFailure("a forward value overflows")
    for u, v in products:
        p = dyadic_mul(dyadic(u), dyadic(v))
        if p[0] != 0:
            items.append((p, round_dyadic_f32(p)))
    if bias != 0:
        items.append((dyadic(bias), bias))
    if not items:
        return {0.0}
    if len(items) > max_terms:
        raise _PlanFailure(f"a sum has more than {max_terms} non-zero terms")
    results = set()
    for order in permutations(range(len(items))):
        accs = {items[order[0]][1]}
        for i in order[1:]:
            exact, rounded = items[i]
            new = set()
            for acc in accs:
                new.add(round_dyadic_f32(dyadic_add(dyadic(acc), dyadic(rounded))))
                new.add(round_dyadic_f32(dyadic_add(dyadic(acc), exact)))
            accs = new
        results |= accs
    return results


def _robust_sum(products: list[tuple[float, float]], bias: float = 0.0, max_terms: int = 3) -> float:
    """fl(sum_i u_i v_i + bias), required to be the same for every order, tree and FMA choice.

    Only the non-zero terms are considered (adding a zero changes at most the sign of a zero).  Every
    ordering of the terms is folded left to right, and each product is either rounded first or fused
    with the running sum (FMA); every binary summation tree of <= 3 terms is such a fold.

    Raises
    ------
    _PlanFailure
        If two evaluations differ (the sum is order- or FMA-dependent) or more than 3 terms are non-zero.
    """
    results = _sum_results(products, bias, max_terms)
    if len(results) != 1:
        vals = sorted(results)
        raise _PlanFailure(f"sum depends on evaluation order/FMA: {vals[:3]}")
    return results.pop()


def _single(u: float, v: float) -> float:
    """A sum with a single non-zero product: fl(u v) in every order (FMA with a zero accumulator too)."""
    if not (math.isfinite(u) and math.isfinite(v)):
        raise _PlanFailure(f"a value or delta overflows to {u * v!r}")
    return round_dyadic_f32(dyadic_mul(dyadic(u), dyadic(v)))


def _bound(*pairs: tuple[float, float]) -> float:
    """Upper bound on |sum u v| (any order); used only for sums whose value never reaches the output."""
    return float(sum(abs(u) * abs(v) for u, v in pairs)) * (1 + 2.0**-20)


class _PlanFailure(Exception):
    pass


# --------------------------------------------------------------------------------------- point scale
def point_scales(xs: np.ndarray) -> np.ndarray:
    """log2 sigma_k for every point: sigma_k = 4 / Delta_k, Delta_k = largest power of two <= gap_k.

    Raises
    ------
    ConstructionError
        If a point's grid condition fails: x_k * sigma_k must be exact and x_k * sigma_k + 1 a float32
        (equivalently x_k +- Delta_k / 4 representable), and |sigma_k x_j| must not overflow.
    """
    xs = as_array(xs, "xs", ndim=1, dtype=np.float32)
    k = xs.size
    order = np.argsort(xs.astype(np.float64), kind="stable")
    srt = xs[order].astype(np.float64)
    gaps = np.full(k, np.inf)
    if k > 1:
        diff = np.diff(srt)
        gaps_sorted = np.minimum(np.r_[np.inf, diff], np.r_[diff, np.inf])
        gaps[order] = gaps_sorted
    out = np.empty(k, dtype=np.int64)
    bad: list[str] = []
    xmax = float(np.max(np.abs(xs))) if k else 0.0
    for i in range(k):
        x = float(xs[i])
        # Deviation: one Delta_k per point (the brief uses one global grid spacing Delta).
        if math.isinf(gaps[i]):
            delta_log2 = (floor_log2(x) - 19) if x != 0 else 0
        else:
            delta_log2 = math.floor(math.log2(gaps[i]))
            # exact guard: Delta_k <= true gap (the float64 gap may be rounded)
            true_gap = min(abs(_f(float(xs[j])) - _f(x)) for j in _neighbour_indices(order, i))
            while Fraction(2) ** delta_log2 > true_gap:
                delta_log2 -= 1
        sigma_log2 = 2 - delta_log2
        if not -149 <= sigma_log2 <= 127:
            bad.append(
                f"x[{i}]={x!r} (nearest neighbour at {gaps[i]:.3g}): sigma_k = 4/Delta_k = 2^{sigma_log2} "
                "is not a float32 (points closer than 2^-125 or farther apart than 2^151 cannot be "
                "localised by one first-layer weight)"
            )
            continue
        sx = _f(x) * Fraction(2) ** sigma_log2
        if not is_f32_exact(sx) or not is_f32_exact(sx + 1) or not is_f32_exact(sx - 1):
            bad.append(
                f"x[{i}]={x!r} (nearest neighbour at {gaps[i]:.3g}, Delta_k=2^{delta_log2}): "
                f"x_k +- Delta_k/4 is not a float32, so the kink offsets cannot be placed exactly"
            )
            continue
        if xmax * pow2(sigma_log2) > 2.0**120:
            bad.append(f"x[{i}]={x!r}: sigma_k * max|x| = 2^{sigma_log2} * {xmax:.3g} would overflow float32")
            continue
        out[i] = sigma_log2
    if bad:
        more = f" (and {len(bad) - 5} more)" if len(bad) > 5 else ""
        raise ConstructionError("grid condition fails at " + "; ".join(bad[:5]) + more)
    return out


def _neighbour_indices(order: np.ndarray, i: int) -> list[int]:
    pos = int(np.flatnonzero(order == i)[0])
    return [int(order[p]) for p in (pos - 1, pos + 1) if 0 <= p < order.size]


# ------------------------------------------------------------------------------------------- gains
def _gain_candidates(g: float, h: float, rho: float, sigma_log2: int) -> list[tuple[str, int]]:
    """(regime, total gain G) pairs in order of preference (fewest gain bits first).

    With no gain the gradient path would contribute Z0 = h / (sigma rho) to y; gain G divides it by 2^G.
    "compensated" needs Z normal and |Z| <= |g|/8 (or g = 0); "absorbed" needs |Z| <= ulp(g)/8 (or
    |Z| < 2^-150 when g = 0).  Neighbouring gains are also listed; the planner's exact simulation
    decides which candidate works.
    """
    zl0 = math.log2(abs(h)) - sigma_log2 - math.log2(abs(rho))
    cands: list[tuple[str, int]] = []
    if g == 0:
        if zl0 >= -120:
            base = max(0, math.ceil(zl0 - 100))
            cands += [("compensated", base), ("compensated", base + 1)]
        base = max(0, math.ceil(zl0 + 152))
        return cands + [("absorbed", base), ("absorbed", base + 1)]
    # |Z| lies in (2^(zl0 - G - 1), 2^(zl0 - G)] up to one rounding, so these gains aim Z at its window.
    za = max(math.log2(abs(g)) - 3, -125)
    base = max(0, math.ceil(zl0 - za))
    cands += [("compensated", gain) for gain in (base, base + 1, base - 1, base + 2, base + 3) if gain >= 0]
    base = max(0, math.ceil(zl0 - math.log2(ulp_f32(g)) + 3 + 1e-6))
    return cands + [("absorbed", base), ("absorbed", base + 1)]


def _layers_for_gain(gain: int) -> int:
    """Gain layers needed: jq and jP carry up to 23 bits each, every chain layer up to 24."""
    return max(0, math.ceil((gain - 46) / 24))


def _mid(lo: float, hi: float) -> int:
    lo_i, hi_i = math.ceil(lo), math.floor(hi)
    if lo_i > hi_i:
        raise _PlanFailure(f"empty magnitude interval [{lo:.1f}, {hi:.1f}]")
    return (lo_i + hi_i) // 2


# ---------------------------------------------------------------------------------------- planning
def _plan_value_only(x: float, g: float, h: float, rho: float, sl: int, n: int) -> PointPlan:
    lam = _value_scale(rho, g)
    return PointPlan(
        lam_c=None if lam == 1 else 1.0,
        x=x,
        g=g,
        h=h,
        rho=rho,
        sigma_log2=sl,
        regime="value_only",
        lam=lam,
        mu=1.0,
        jq=0,
        beta=(1.0,) * n,
        c_chain=(0.0,) * n,
        a=1.0,
        c_g=0.0,
        z=0.0,
        w=_exact_div(g, lam),
        gain=0,
    )


def _value_scale(rho: float, w_total: float) -> float:
    """Value of the S units (a power of two >= 1) keeping the reverse pass rho * w finite."""
    if w_total == 0 or rho == 0:
        return 1.0
    e = math.ceil(math.log2(abs(rho)) + math.log2(abs(w_total))) - 100
    return pow2(max(0, min(e, 126)))  # S values lam <= 2^126 stay finite


def _exact_div(u: float, lam: float) -> float:
    q = _f(u) / _f(lam)
    if not is_f32_exact(q):
        raise _PlanFailure(f"{u!r} / {lam!r} is not exact in float32")
    return float(q)


def _plan_point(
    x: float, g: float, h: float, rho: float, sl: int, n: int, regime: str, gain: int, flip: bool, shift: int
) -> PointPlan:
    """Magnitudes, scaling solve and output weights for one point, one candidate (may raise)."""
    if _layers_for_gain(gain) > n:
        raise _PlanFailure("needs more chain layers")
    jq = min(gain, 23)
    rem = gain - jq
    jp = min(rem, 23)
    rem -= jp
    gains = [rem // n + (1 if i < rem % n else 0) for i in range(n)] if n else []
    sum_g = sum(gains)
    hl, rl = math.log2(abs(h)), math.log2(abs(rho))
    c = hl - sl - jq - sum_g  # = log2|a v_n| + log2|d| (d = fl(rho z))
    # Every magnitude below must stay a normal float32: log2 in [-_RANGE, _RANGE].
    r = _RANGE
    # The value scale lam of the output's value unit is fixed from g (w_total is g up to a factor 2);
    # when it is > 1 the cancellation constants come from a second value chain of value lam_c = 1, so
    # that c = C / lam_c stays exact (0.5 y^2 with |g| >= 2^50 failed before: issue 27).
    lam = _value_scale(rho, g)
    lam_c = None if lam == 1 else 1.0
    lc = lam if lam_c is None else lam_c
    vfloor = -r
    # z = d / rho may be subnormal (down to 2^-145) when rho is huge and h tiny
    dl = _mid(max(c - r, rl - 145, -145), min(c + r, rl + r, r)) + shift  # d; then A = a v_n = 2^(c - dl), z
    vn = _mid(max(c - r, c - dl - r, vfloor), min(c + r, c - dl + r, r))  # v_n; then T = 2^(c - vn), a
    if n == 0:
        v0 = vn
        if not -r <= hl - sl - jq - v0 <= r:
            raise _PlanFailure("reverse-pass magnitude out of range with no chain layers")
    else:
        v0 = _mid(max(hl - sl - jq - r, vfloor), min(hl - sl - jq + r, r - jq))  # delta at Q in range
    vs = [v0 + round((vn - v0) * i / n) for i in range(n + 1)] if n else [v0]
    betas_l = [vs[i] - vs[i - 1] + gains[i - 1] for i in range(1, n + 1)]
    sb = vn + jq + sum_g
    t_exact = _f(h) / Fraction(2) ** (sl + sb)
    if not is_f32_exact(t_exact):
        raise _PlanFailure("scaled target T is not an exact float32")
    sol = solve_scaling(rho, float(t_exact), prefer_exponent=dl)
    z, a = sol.z, sol.a
    if (a < 0) != flip:
        z, a = -z, -a
    big_a = _f(a) * Fraction(2) ** vn
    if not is_f32_exact(big_a) or abs(big_a) < Fraction(2) ** -126:
        raise _PlanFailure("a * v_n is not an exact normal float32")
    p = Fraction(2) ** (floor_log2(big_a) - jp)
    cg_total = p - big_a
    zp = _f(z) * p
    if regime == "compensated":
        w_total = _find_compensation(zp, g)
    else:
        # "absorbed_deep" (vector inputs): |zP| < 2^-151 vanishes next to any partial sum, in any order
        bound = Fraction(2) ** -151 if g == 0 or regime == "absorbed_deep" else Fraction(ulp_f32(g)) / 8
        if abs(zp) > bound:
            raise _PlanFailure("z * P too large to be absorbed")
        w_total = g
    c_chain = tuple(
        _exact_div(float(Fraction(2) ** vs[i] - Fraction(2) ** (vs[i - 1] + betas_l[i - 1])), lc)
        for i in range(1, n + 1)
    )
    if not is_f32_exact(cg_total):
        raise _PlanFailure("G's cancellation constant P - a v_n is not a float32")
    return PointPlan(
        x=x,
        g=g,
        h=h,
        rho=rho,
        sigma_log2=sl,
        regime=regime,
        lam=lam,
        mu=pow2(v0 + jq),
        jq=jq,
        beta=tuple(pow2(b) for b in betas_l),
        c_chain=c_chain,
        a=a,
        c_g=_exact_div(float(cg_total), lc),
        z=z,
        w=_exact_div(w_total, lam),
        gain=gain,
        vp_shift=_vp_shift(h, sl),
        lam_c=lam_c,
    )


def _vp_shift(h: float, sl: int) -> int:
    """m such that the delta at Vp, h 2^(m - sl), is a normal finite float32 (D = fl(s_p delta) = h exactly).

    m > 0 for tiny h (the last product scales down, keeping a subnormal h's low bits), m < 0 for huge h
    on isolated points (sigma_k < 1 would otherwise push the delta past the float32 maximum); else 0.
    """
    hl = floor_log2(h)
    return min(max(0, sl - hl - 125), sl - hl + 120)


def _find_compensation(zp: Fraction, g: float, term: str = "zP") -> float:
    """W with fl(zP + W) == g whether z P is rounded first or fused (FMA); search +-3 ulps.

    With two non-zero terms the summation order cannot matter; z P may be inexact (subnormal), so both
    the rounded and the exact product must give g.
    """
    zp_rounded = _f(round_f32(zp))
    w0 = np.float32(round_f32(_f(g) - zp))
    bits = np.array([w0], dtype=np.float32).view(np.int32)[0]
    for step in (0, -1, 1, -2, 2, -3, 3):
        cand = float(np.array([bits + step], dtype=np.int32).view(np.float32)[0])
        if math.isfinite(cand) and round_f32(zp_rounded + _f(cand)) == g and round_f32(zp + _f(cand)) == g:
            return cand
    raise _PlanFailure(f"no output weight w gives fl({term} + w) == g")


def _vp_weights(plan: PointPlan) -> tuple[float, float, float, float]:
    """(slope s_p, value c_p at x_k, Q's weight mu_v, bias) of Vp = ReLU(s_p (x_k - x) + c_p).

    s_p = sigma_k 2^-m and c_p = 2^-m (m = ``vp_shift``), so the bias is 2^-m (sigma_k x_k + 1) and
    Q = ReLU(mu (1 + 2^-jq) - mu_v Vp - mu U0) with mu_v = mu 2^m keeps value and slope of the m = 0 net.
    """
    m = plan.vp_shift
    s_p = pow2(plan.sigma_log2 - m)
    c_p = pow2(-m)
    mu_v = float(_f(plan.mu) * Fraction(2) ** m)
    b_exact = (_f(pow2(plan.sigma_log2)) * _f(plan.x) + 1) * Fraction(2) ** -m
    for name, q in (("Vp slope", _f(s_p)), ("Vp bias", b_exact), ("Q's weight on Vp", _f(mu_v))):
        if q != 0 and (not is_f32_exact(q) or abs(q) < Fraction(2) ** -149):
            raise _PlanFailure(f"{name} {float(q):.3g} is not a float32 value")
    return s_p, c_p, mu_v, float(b_exact)


def simulate_point(plan: PointPlan) -> tuple[float, float]:
    """Forward value and AD gradient of the network at x_k (see :func:`_simulate`)."""
    y, dx, _ = _simulate(plan)
    return y, dx


def _simulate(plan: PointPlan) -> tuple[float, float, float]:
    """Forward value and AD gradient of the network at x_k, proved order/FMA-independent.

    Evaluates only the point's own units (all others are exactly zero and masked at x_k) with exact
    rational arithmetic; every sum that reaches y or dx is checked by :func:`_robust_sum`.  Returns
    (f(x_k), D^AD(phi o f)(x_k)) as float32 values.
    """
    s = pow2(plan.sigma_log2)
    x = plan.x
    sx = float(_f(s) * _f(x))
    s_p, c_p, mu_v, b_vp = _vp_weights(plan)
    pre_u0 = _robust_sum([(s, x)], -sx)
    pre_v0 = _robust_sum([(-s, x)], sx)
    pre_vp = _robust_sum([(-s_p, x)], b_vp)
    if pre_u0 != 0 or pre_v0 != 0 or pre_vp != c_p:
        raise _PlanFailure("first-layer kinks are not exact at x_k")
    u0, v0, vp = 0.0, 0.0, c_p
    lam, mu, lc = plan.lam, plan.mu, plan.const_scale
    pre_s = _robust_sum([(-lam, u0), (-lam, v0)], lam)
    pre_r = _robust_sum([(-lc, u0), (-lc, v0)], lc)
    pre_q = _robust_sum([(-mu, u0), (-mu_v, vp)], float(_f(mu) * (1 + Fraction(2) ** -plan.jq)))
    sv, rv, xv = max(pre_s, 0.0), max(pre_r, 0.0), max(pre_q, 0.0)
    pres_x = [pre_q]
    for beta, c in zip(plan.beta, plan.c_chain, strict=True):
        pre_x = _robust_sum([(c, rv), (beta, xv)])
        sv, rv, xv = max(_single(1.0, sv), 0.0), max(_single(1.0, rv), 0.0), max(pre_x, 0.0)
        pres_x.append(pre_x)
    pre_g = _robust_sum([(plan.c_g, rv), (plan.a, xv)])
    gv = max(pre_g, 0.0)
    y = _robust_sum([(plan.w, sv), (plan.z, gv)])
    # ---- reverse pass, seed rho (every sum below that reaches dx has one non-zero term)
    rho = plan.rho
    d_g = _single(rho, plan.z) if pre_g > 0 else 0.0
    d_sf = _single(rho, plan.w) if sv > 0 else 0.0
    d_x = _single(plan.a, d_g)
    # bound on the deltas of the value chain(s): S carries d_sf alone when R is separate
    bound_s = _bound((plan.c_g, d_g), (1.0, d_sf)) if plan.lam_c is None else _bound((plan.c_g, d_g))
    bound_s = max(bound_s, abs(d_sf))
    for beta, c, pre_x in zip(reversed(plan.beta), reversed(plan.c_chain), reversed(pres_x[1:]), strict=True):
        d_pre = d_x if pre_x > 0 else 0.0
        bound_s = _bound((c, d_pre), (1.0, bound_s))
        d_x = _single(beta, d_pre)
    d_q = d_x if pres_x[0] > 0 else 0.0
    d_vp = _single(-mu_v, d_q)
    # (The deltas reaching U0 and V0 may overflow: those units sit exactly at their kink, and ReLU's
    # backward masks them with `where`, so even an infinite delta contributes 0.)
    dx = _single(-s_p, d_vp)
    if max(bound_s, abs(d_vp)) > F32_MAX / 2 or not math.isfinite(dx):
        raise _PlanFailure("reverse pass would overflow")
    return y, dx, gv


# ------------------------------------------------------------------------------------------ public
def _validate(xs: np.ndarray, values: np.ndarray, grads: np.ndarray, dtype: str) -> tuple[np.ndarray, ...]:
    if dtype != "float32":
        raise ValueError(
            f"dtype {dtype!r} is not supported: only 'float32' is implemented. The planner's exact "
            "rounding and its magnitude windows (values 2^-123..2^123, 24-bit gain steps) are float32's; "
            "float16 (exponents -14..15) and bfloat16 (8-bit significands) need a format-generic planner, "
            "and torch's CPU half-precision matmul may accumulate in float32, which is not the "
            "round-every-operation semantics the construction is proved for (see the card)"
        )
    out = []
    for name, arr in (("xs", xs), ("values", values), ("grads", grads)):
        a = np.asarray(arr)
        if a.ndim != 1:
            raise ValueError(f"{name} must be one-dimensional, got shape {a.shape}")
        a64 = a.astype(np.float64)
        a32 = a64.astype(np.float32)
        lossy = np.flatnonzero(~np.isnan(a64) & (a32.astype(np.float64) != a64))
        if lossy.size:
            i = int(lossy[0])
            raise ValueError(f"{name}[{i}]={a64[i]!r} is not a float32 value (cast it to float32 first)")
        bad = np.flatnonzero(~np.isfinite(a32))
        if bad.size:
            i = int(bad[0])
            raise ValueError(f"{name}[{i}]={a32[i]!r} is not finite; targets must be finite floats")
        out.append(a32)
    xs32, g32, h32 = out
    if not (xs32.size == g32.size == h32.size):
        raise ValueError(f"xs, values and grads need one entry per point, got {xs32.size}, {g32.size}, {h32.size}")
    if xs32.size == 0:
        raise ValueError("at least one point is needed")
    srt = np.sort(xs32.astype(np.float64))
    dup = np.flatnonzero(np.diff(srt) == 0)
    if dup.size:
        raise ValueError(f"xs holds the point {srt[dup[0]]!r} twice (+0.0 and -0.0 count as the same point)")
    return xs32, g32, h32


#: activations the paper covers: ReLU here, the other five in activations.py (issue 27)
PAPER_ACTIVATIONS = ("relu", "elu", "gelu", "silu", "sigmoid", "tanh")


def check_activation(activation: str) -> None:
    """Refuse an activation outside the paper's six (ReLU, ELU, GELU, SiLU, sigmoid, tanh)."""
    if activation not in PAPER_ACTIVATIONS:
        raise ValueError(f"unknown activation {activation!r}; the paper's are {PAPER_ACTIVATIONS}")


def build_construction(
    xs: np.ndarray,
    values: np.ndarray,
    grads: np.ndarray,
    phi: PhiLike,
    dtype: str = "float32",
    activation: str = "relu",
) -> Construction:
    """Plan the network of Claim 1 (values g and AD gradients h on a finite domain), with its weights.

    Parameters
    ----------
    xs : (K,) distinct float32 inputs x_k.
    values : (K,) float32 targets g_k = f(x_k).
    grads : (K,) float32 targets h_k = D^AD(phi o f)(x_k).
    phi : "identity", "half_square" (0.5 y^2), "softplus", or a torch-differentiable callable.
    dtype : only "float32" (float16 / bfloat16 refused with the reason).
    activation : only "relu" here; the other five are planned by ``build_activation_construction``.

    Raises
    ------
    ConstructionError
        When a condition fails (seed rho_k = D^AD phi(g_k) zero or not finite where needed, a point off
        the grid the construction needs, overflow), naming the points and the reason.
    """
    check_activation(activation)
    if activation != "relu":
        raise ValueError(
            f"build_construction plans the ReLU network; for {activation!r} use "
            "build_activation_construction (or construct(..., activation=...))"
        )
    xs32, g32, h32 = _validate(xs, values, grads, dtype)
    resolve_phi(phi)
    # Deviation: not the brief's 3-hidden-layer fixed-order network (kept in baselines.py), but an
    # order-robust one whose depth (number of gain layers) is chosen from the targets.
    rho = phi_seeds(phi, g32)
    problems = []
    for k in range(xs32.size):
        if not math.isfinite(float(rho[k])):
            problems.append(
                f"point {k} (x={float(xs32[k])!r}): seed D^AD phi(g_k={float(g32[k])!r}) = "
                f"{float(rho[k])!r} is not finite (the reverse pass would produce NaN)"
            )
        elif rho[k] == 0 and h32[k] != 0:
            problems.append(
                f"point {k} (x={float(xs32[k])!r}): seed D^AD phi(g_k={float(g32[k])!r}) = 0 "
                f"but the target gradient h_k={float(h32[k])!r} is non-zero (unreachable)"
            )
    if problems:
        more = f" (and {len(problems) - 5} more)" if len(problems) > 5 else ""
        raise ConstructionError("; ".join(problems[:5]) + more)
    sls = point_scales(xs32)
    cands: list[list[tuple[str, int]]] = []
    for k in range(xs32.size):
        if h32[k] == 0:
            cands.append([])
        else:
            cands.append(_gain_candidates(float(g32[k]), float(h32[k]), float(rho[k]), int(sls[k])))
    plans, failures = _plan_all(xs32, g32, h32, rho, sls, cands)
    if failures:
        more = f" (and {len(failures) - 5} more)" if len(failures) > 5 else ""
        raise ConstructionError("no exact plan found for " + "; ".join(failures[:5]) + more)
    n = max([len(p.beta) for p in plans] + [0])
    plans = [_pad(p, n) for p in plans]
    return Construction(plans=plans, n_chain=n, layers=_assemble(plans, n))


def _pad(plan: PointPlan, n: int) -> PointPlan:
    """The plan with identity gain layers appended (beta = 1, c = 0: X_i = ReLU(X_{i-1}), exact)."""
    extra = n - len(plan.beta)
    if extra == 0:
        return plan
    padded = replace(plan, beta=plan.beta + (1.0,) * extra, c_chain=plan.c_chain + (0.0,) * extra)
    if simulate_point(padded) != simulate_point(plan):  # cannot differ: identity layers are exact
        raise AssertionError("padding changed a point's value or gradient")
    return padded


def _plan_all(xs32, g32, h32, rho, sls, cands):  # type: ignore[no-untyped-def]
    """Plan every point with the fewest gain layers that work for it (a network pads the others)."""
    plans: list[PointPlan] = []
    failures: list[str] = []
    for k in range(xs32.size):
        x, g, h, r, sl = float(xs32[k]), float(g32[k]), float(h32[k]), float(rho[k]), int(sls[k])
        plan, reasons = None, []
        if h == 0:
            n_range: range = range(0, 1)
            options = [("value_only", 0, False, 0)]
        else:
            n_range = range(min(_layers_for_gain(cands[k][0][1]), _MAX_CHAIN), _MAX_CHAIN + 1)
            options = [
                (regime, gain, flip, shift)
                for regime, gain in cands[k]
                for shift in (0, -12, 12, -4, 4)
                for flip in (False, True)
            ]
        for n in n_range:
            for regime, gain, flip, shift in options:
                try:
                    if regime == "value_only":
                        cand = _plan_value_only(x, g, h, r, sl, n)
                    else:
                        cand = _plan_point(x, g, h, r, sl, n, regime, gain, flip, shift)
                    y, dx = simulate_point(cand)
                except (_PlanFailure, ValueError) as exc:
                    reasons.append(str(exc))
                    continue
                if y == g and dx == h:
                    plan = cand
                    break
                reasons.append(f"simulation gave f={y!r}, D={dx!r}")
            if plan is not None:
                break
        if plan is None:
            failures.append(f"point {k} (x={x!r}, g={g!r}, h={h!r}, seed={r!r}): {reasons[-1] if reasons else ''}")
        else:
            plans.append(plan)
    return plans, failures


def _assemble(plans: list[PointPlan], n: int) -> list[SparseLayer]:
    """Sparse weights of the 1 + 1 + n + 1 + 1 affine layers (layout per point k: see module doc)."""
    k_pts = len(plans)
    idx = np.arange(k_pts)
    sig = np.array([pow2(p.sigma_log2) for p in plans])
    x = np.array([p.x for p in plans])
    sx = sig * x  # exact (power-of-two scaling checked in point_scales)
    vpw = np.array([_vp_weights(p) for p in plans]).reshape(-1, 4)
    layers = []
    # layer 1: U0, V0, Vp
    rows = np.stack([3 * idx, 3 * idx + 1, 3 * idx + 2], 1).reshape(-1)
    vals = np.stack([sig, -sig, -vpw[:, 0]], 1).reshape(-1)
    bias = np.stack([-sx, sx, vpw[:, 3]], 1).reshape(-1)
    layers.append(_sparse(rows, np.zeros_like(rows), vals, bias, 1, True))
    # layer 2: S0, (R0,) Q -- blocks of b units per point: S at 0, R at 1 (split layout), X/Q at b - 1
    split = any(p.lam_c is not None for p in plans)
    b = 3 if split else 2
    lam = np.array([p.lam for p in plans])
    lc = np.array([p.const_scale for p in plans])
    mu = np.array([p.mu for p in plans])
    jq = np.array([p.jq for p in plans])
    ones = np.ones(k_pts)
    rows_l, cols_l, vals_l = [b * idx, b * idx, b * idx + b - 1, b * idx + b - 1], [], []
    cols_l = [3 * idx, 3 * idx + 1, 3 * idx, 3 * idx + 2]
    vals_l = [-lam, -lam, -mu, -vpw[:, 2]]
    bias_l = [lam] + ([lc] if split else []) + [mu * (1 + np.ldexp(1.0, -jq))]
    if split:
        rows_l += [b * idx + 1, b * idx + 1]
        cols_l += [3 * idx, 3 * idx + 1]
        vals_l += [-lc, -lc]
    layers.append(
        _sparse(
            np.concatenate(rows_l),
            np.concatenate(cols_l),
            np.concatenate(vals_l),
            np.stack(bias_l, 1).reshape(-1),
            3 * k_pts,
            True,
        )
    )
    # chain layers: S <- S ; (R <- R ;) X <- (c * R, beta * X)     (R is S in the single-chain layout)
    r_col = b * idx + (1 if split else 0)
    for i in range(n):
        c = np.array([p.c_chain[i] for p in plans])
        beta = np.array([p.beta[i] for p in plans])
        rows_l = [b * idx, b * idx + b - 1, b * idx + b - 1] + ([b * idx + 1] if split else [])
        cols_l = [b * idx, r_col, b * idx + b - 1] + ([b * idx + 1] if split else [])
        vals_l = [ones, c, beta] + ([ones] if split else [])
        layers.append(
            _sparse(
                np.concatenate(rows_l),
                np.concatenate(cols_l),
                np.concatenate(vals_l),
                np.zeros(b * k_pts),
                b * k_pts,
                True,
            )
        )
    # last hidden layer: SF <- S ; G <- (c_G * R, a * X)
    c = np.array([p.c_g for p in plans])
    a = np.array([p.a for p in plans])
    layers.append(
        _sparse(
            np.concatenate([2 * idx, 2 * idx + 1, 2 * idx + 1]),
            np.concatenate([b * idx, r_col, b * idx + b - 1]),
            np.concatenate([ones, c, a]),
            np.zeros(2 * k_pts),
            b * k_pts,
            True,
        )
    )
    # output: y = w SF + z G
    vals = np.stack([[p.w for p in plans], [p.z for p in plans]], 1).reshape(-1)
    layers.append(
        _sparse(np.zeros(2 * k_pts, dtype=np.int64), np.arange(2 * k_pts), vals, np.zeros(1), 2 * k_pts, False)
    )
    return layers


def _sparse(rows, cols, vals, bias, n_in, relu) -> SparseLayer:  # type: ignore[no-untyped-def]
    vals32 = np.asarray(vals, dtype=np.float64).astype(np.float32)
    bias32 = np.asarray(bias, dtype=np.float64).astype(np.float32)
    if not (
        np.array_equal(vals32.astype(np.float64), np.asarray(vals, dtype=np.float64))
        and np.array_equal(bias32.astype(np.float64), np.asarray(bias, dtype=np.float64))
    ):
        bad = np.flatnonzero(~np.isfinite(vals32) | (vals32.astype(np.float64) != np.asarray(vals, np.float64)))
        raise ConstructionError(  # the planner checks every weight; this is a last guard, never an assert
            f"a planned weight is not a finite float32 value (entry {int(bad[0]) if bad.size else '?'} of a "
            "layer); the targets or inputs are outside the range the construction covers"
        )
    keep = vals32 != 0
    order = np.lexsort((np.asarray(cols)[keep], np.asarray(rows)[keep]))
    return SparseLayer(
        rows=np.asarray(rows, dtype=np.int64)[keep][order],
        cols=np.asarray(cols, dtype=np.int64)[keep][order],
        vals=vals32[keep][order],
        bias=bias32,
        n_in=int(n_in),
        relu=bool(relu),
    )


def construct(
    xs: np.ndarray,
    values: np.ndarray,
    grads: np.ndarray,
    phi: PhiLike,
    dtype: str = "float32",
    activation: str = "relu",
) -> nn.Sequential:
    """Claim 1: a float32 network f with f(x_k) = g_k and D^AD(phi o f)(x_k) = h_k bit-exactly.

    Returns a plain ``nn.Sequential`` of ``nn.Linear`` and ``nn.ReLU`` layers (float32, CPU); with
    ``activation`` one of "elu", "gelu", "silu", "sigmoid", "tanh", torch's module of that activation
    replaces ``nn.ReLU`` (scalar inputs; see ``activations.build_activation_construction``).  The result
    holds for any summation order and FMA use inside nn.Linear (see the module docstring), so torch's
    own matmul and the left-to-right reference agree.  See :func:`build_construction` for the
    parameters and errors.
    """
    check_activation(activation)
    if activation != "relu":  # ELU, GELU, SiLU, sigmoid, tanh: saturation regimes (activations.py)
        if np.ndim(xs) == 2:
            raise ValueError(f"vector inputs are built for ReLU only, not for activation {activation!r}")
        from .activations import construct_activation

        return construct_activation(xs, values, grads, phi, activation, dtype)
    if np.ndim(xs) == 2:  # vector inputs x in F^d (issue 27): grads has shape (K, d)
        from .vector import build_vector_construction

        if dtype != "float32":
            _validate(np.zeros(1), np.zeros(1), np.zeros(1), dtype)  # the same dtype error
        return build_vector_construction(xs, values, grads, phi).to_sequential()
    return build_construction(xs, values, grads, phi, dtype).to_sequential()
