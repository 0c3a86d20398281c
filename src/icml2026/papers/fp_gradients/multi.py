"""Claim 2: one float32 ReLU network whose AD gradients under several losses equal independent targets.

Given losses phi_1..phi_n, inputs x_k, values g_k and gradient targets h_{i,k}, ``construct_multi``
builds one network f with f(x_k) = g_k and D^AD(phi_i o f)(x_k) = h_{i,k} for every i and k, bit for
bit under torch autograd and under the left-to-right reference.  In exact arithmetic this is impossible
(every loss's gradient would be a multiple of f'(x_k)); in floats the reverse pass is a non-linear
function of the seed rho_i = D^AD phi_i(g_k), because it is a chain of roundings.  Our construction
(not the paper's, which we do not have) uses that non-linearity in a *selector*.

Per point x_k the network holds the Claim-1 localisation (U0, V0 at their kink, value units S, R) and
one gradient *channel* per distinct seed that needs a non-zero target.  Channel j, from the output down:

    E1 = ReLU(v1 F1 + c R), E2 = ReLU(v2 F2 + c R)          tiny values (|w E| << 2^-150: invisible)
    F1 = ReLU(H + c R),     F2 = ReLU(-H + c R)
    H  = ReLU(z G + c R),   G = ReLU(a X_N + c R),   X_i = ReLU(X_{i-1} + c R),   X_0 = Q
    Q  = ReLU(mu (1 + 2^-jq) - mu_v Vp - mu U0),     Vp = ReLU(s_p (x_k - x) + c_p)
    output: y = w S_F + sum_j (w1 E1_j + w2 E2_j)

Reverse pass with seed rho: the delta reaching H is the selector

    Sel_j(rho) = fl( fl(v1 fl(rho w1)) - fl(v2 fl(rho w2)) ),

a two-term sum of exact (times +-1) terms.  (w1, w2, v1, v2) are searched, per point, so that
Sel_j(rho_i) == 0 exactly for every other seed of the point and Sel_j(rho_j) != 0; below H the channel
is Claim 1's chain of single products, D = s_p mu_v fl(a fl(z Sel_j(rho))), with (z, a) from
:func:`solve_scaling`.  For seed rho_i only channel i reaches x with a non-zero term, so every sum that
matters has at most two non-zero, exactly representable terms (or, at the output, one visible term and
terms below 2^-150 in total): the result is the same in every summation order and with or without FMA.
The planner proves this point by point with exact arithmetic (``_simulate_point``).

Necessary conditions (true for *every* float network, since D^AD is a function of the seed and the
reverse pass is odd in the seed): equal seeds need equal targets, seeds rho_i = -rho_j need
h_i = -h_j, and a zero seed needs h = 0.  Conditions of our construction (refused with the reason): a
selector must be found within the search budget (seeds that differ by a power of two are separated only
through subnormal rounding), and the magnitudes must fit float32.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from fractions import Fraction
from functools import cache
from typing import Any

import numpy as np
from torch import nn

from icml2026.core.validate import finite_number, positive_int

from .construction import (
    F32_MAX,
    ConstructionError,
    SparseLayer,
    _PlanFailure,
    _robust_sum,
    _single,
    _sparse,
    _to_sequential,
    _validate,
    _value_scale,
    _vp_shift,
    check_activation,
    point_scales,
)
from .data import F32_LOG10_RANGE, _random_finite_floats, grid_points
from .floats import floor_log2, is_f32_exact, same_value
from .losses import PhiLike, phi_seeds, resolve_phi
from .solver import solve_scaling

__all__ = [
    "ChannelPlan",
    "MultiPointPlan",
    "MultiConstruction",
    "MultiTargets",
    "build_multi_construction",
    "construction_from_plans",
    "construct_multi",
    "plan_multi_points",
    "selector",
    "random_multi_targets",
    "impose_necessary_conditions",
]

_MAX_X = 24  # most X (gain) layers a channel may use
_SELECTOR_BUDGET = 3000  # random selector candidates tried per channel
_ABSORB = Fraction(2) ** -150  # the invisible output terms must sum to less than this


# ------------------------------------------------------------------------------------------ plans
@dataclass(frozen=True)
class ChannelPlan:
    """One gradient channel of a point: selector, scaling, and the exponents of its unit values.

    ``seed`` is the channel's seed |rho_j| (sign folded into w1, w2); ``sel`` = Sel_j(seed) != 0.
    Values: Q = 2^q (q = log2 mu - jq), X_i = 2^xs[i], G = 2^p, H = 2^hh, F1 = 2^f1, F2 = 2^f2,
    E1 = 2^e1, E2 = 2^e2; every constant c = value - product is exact (checked when planned).
    """

    seed: float
    h: float
    w1: float
    w2: float
    v1: float
    v2: float
    sel: float
    vp_shift: int
    mu_log2: int
    jq: int
    xs: tuple[int, ...]
    a: float
    p: int
    z: float
    hh: int
    ys: tuple[int, ...]
    f1: int
    f2: int
    e1: int
    e2: int

    @property
    def n_x(self) -> int:
        return len(self.xs)

    @property
    def n_y(self) -> int:
        return len(self.ys)

    def padded(self, n_x: int, n_y: int) -> ChannelPlan:
        """The plan with identity X / Y layers appended (X_i = ReLU(X_{i-1} + 0), exact)."""
        if n_x < self.n_x or n_y < self.n_y:
            raise ValueError(f"cannot pad ({self.n_x}, {self.n_y}) layers down to ({n_x}, {n_y})")
        last_x = self.xs[-1] if self.xs else self.mu_log2 - self.jq
        last_y = self.ys[-1] if self.ys else self.hh
        return replace(self, xs=self.xs + (last_x,) * (n_x - self.n_x), ys=self.ys + (last_y,) * (n_y - self.n_y))


@dataclass(frozen=True)
class MultiPointPlan:
    """All channels of one point plus its value scale: f(x_k) = fl(w lam) = g_k."""

    x: float
    g: float
    sigma_log2: int
    lam: float
    w: float
    channels: tuple[ChannelPlan, ...]
    seeds: tuple[float, ...]
    grads: tuple[float, ...]
    # X and Y depth of the point's block (every channel padded to it; also without channels)
    depth_x: int = 0
    depth_y: int = 0

    @property
    def n_x(self) -> int:
        return max([c.n_x for c in self.channels] + [self.depth_x])

    @property
    def n_y(self) -> int:
        return max([c.n_y for c in self.channels] + [self.depth_y])

    def padded(self, n_x: int, n_y: int) -> MultiPointPlan:
        chans = tuple(c.padded(n_x, n_y) for c in self.channels)
        return replace(self, channels=chans, depth_x=n_x, depth_y=n_y)


@dataclass
class MultiConstruction:
    """The planned Claim-2 network: per-point plans and the coordinate layers (see module doc)."""

    plans: list[MultiPointPlan]
    n_x: int
    n_y: int
    phis: tuple[str, ...]
    layers: list[SparseLayer] = field(repr=False)

    @property
    def widths(self) -> list[int]:
        return [1] + [layer.n_out for layer in self.layers]

    @property
    def n_params(self) -> int:
        return int(sum(layer.n_out * layer.n_in + layer.n_out for layer in self.layers))

    @property
    def depth(self) -> int:
        return len(self.layers)

    @property
    def n_channels(self) -> int:
        return int(sum(len(p.channels) for p in self.plans))

    def to_sequential(self) -> nn.Sequential:
        return _to_sequential(self.layers)


# -------------------------------------------------------------------------------------- selector
_Num = float | np.floating[Any]


def _f32(x: _Num) -> np.float32:
    return np.float32(x)


def _same(a: _Num, b: _Num) -> bool:
    """Bitwise equality of two float32 values, +0 == -0 (see ``same_value``)."""
    return bool(same_value(np.array([a], dtype=np.float32), np.array([b], dtype=np.float32))[0])


def selector(rho: _Num, w1: _Num, w2: _Num, v1: _Num, v2: _Num) -> float:
    """Sel(rho) = fl(fl(v1 fl(rho w1)) - fl(v2 fl(rho w2))) in float32: the delta reaching H."""
    r = _f32(rho)
    with np.errstate(over="ignore", under="ignore", invalid="ignore"):
        d1 = _f32(_f32(v1) * _f32(r * _f32(w1)))
        d2 = _f32(_f32(v2) * _f32(r * _f32(w2)))
        return float(_f32(d1 - d2))


def _ulp_neighbours(x: np.float32, k: int) -> list[np.float32]:
    bits = int(np.array([x], dtype=np.float32).view(np.int32)[0])
    out = np.array([bits + s for s in range(-k, k + 1)], dtype=np.int64).astype(np.int32).view(np.float32)
    return [np.float32(v) for v in out]


def _find_selector(
    target: float,
    zeros: list[float],
    all_seeds: list[float],
    w_max_log2: int,
    rng: np.random.Generator,
    start: int = 0,
) -> tuple[int, tuple[float, float, float, float, float]]:
    """(w1, w2, v1, v2, Sel(target)) with Sel(z) == 0 for every z in ``zeros`` and Sel(target) != 0.

    Candidates: w1, w2 random float32 with |w| < 2^(w_max_log2 + 1), the same sign; v1 random positive;
    v2 from the +-4 ulp neighbourhood of fl(A_0 / q_0) (the value that makes the first zero seed cancel),
    then checked on every seed.  Three exponent regimes alternate: the largest |w| (normal products),
    random smaller |w|, and |w| that puts target * w in the subnormal range (the only regime where
    seeds differing by a power of two round differently).  Every intermediate delta must be finite for
    every seed of the point.  Returns (attempt index, solution); raises _PlanFailure when the budget
    is spent.
    """
    # Deviation: the selector is found by a seeded random search (our construction; the paper's is not
    # in the text we have), so a point can be refused when the budget runs out.
    t = abs(target)
    et = floor_log2(t)
    big = max(abs(s) for s in all_seeds)
    eb = floor_log2(big)
    for att in range(start, start + _SELECTOR_BUDGET):
        mode = att % 3
        if mode == 0:
            ew = w_max_log2
        elif mode == 1:
            ew = w_max_log2 - int(rng.integers(0, 40))
        else:
            ew = -140 - et + int(rng.integers(-8, 14))
        ew = max(min(ew, w_max_log2), -149)
        ew2 = max(min(ew + int(rng.integers(-1, 2)), w_max_log2), -149)
        # keep fl(v fl(rho w)) finite for the largest seed: |rho w v| < 2^125
        ev_hi = min(23, 124 - eb - ew)
        if ev_hi < -60:
            continue
        ev = int(rng.integers(max(-60, ev_hi - 40), ev_hi + 1))
        w1 = _f32(rng.uniform(1.0, 2.0) * 2.0**ew)
        w2 = _f32(rng.uniform(1.0, 2.0) * 2.0**ew2)
        v1 = _f32(rng.uniform(1.0, 2.0) * 2.0**ev)
        if not (np.isfinite(w1) and np.isfinite(w2) and np.isfinite(v1)) or w1 == 0 or w2 == 0 or v1 == 0:
            continue
        with np.errstate(over="ignore", under="ignore", invalid="ignore", divide="ignore"):
            v2s: list[np.float32] = []
            for zs in zeros:
                a0 = _f32(v1 * _f32(_f32(zs) * w1))
                q0 = _f32(_f32(zs) * w2)
                if a0 == 0 and q0 == 0:
                    continue  # this zero seed underflows on both sides: any v2 cancels it
                if a0 == 0 or q0 == 0:
                    v2s = []
                    break
                v2s = _ulp_neighbours(_f32(a0 / q0), 4)
                break
            else:
                # no zero seed constrains v2: take one that makes Sel(target) large
                v2s = [_f32(v1 * np.float32(0.5))]
            for v2 in v2s:
                if not np.isfinite(v2) or v2 <= 0:
                    continue
                if any(selector(zs, w1, w2, v1, v2) != 0 for zs in zeros):
                    continue
                s = selector(t, w1, w2, v1, v2)
                if s == 0 or not math.isfinite(s):
                    continue
                if not all(_selector_finite(r, w1, w2, v1, v2) for r in all_seeds):
                    continue
                return att, (float(w1), float(w2), float(v1), float(v2), s)
    raise _PlanFailure(
        f"no selector found in {_SELECTOR_BUDGET} candidates that vanishes exactly at the other seeds "
        f"{[float(z) for z in zeros]} and not at {t!r}"
    )


def _selector_finite(r: _Num, w1: _Num, w2: _Num, v1: _Num, v2: _Num) -> bool:
    with np.errstate(over="ignore", under="ignore", invalid="ignore"):
        rr = _f32(abs(float(r)))
        vals = [rr * _f32(w1), rr * _f32(w2)]
        vals += [_f32(v1) * vals[0], _f32(v2) * vals[1]]
    return all(np.isfinite(v) and abs(float(v)) < 2.0**125 for v in vals)


# ------------------------------------------------------------------------------------ channel plan
def _pre_layers(sl: int, h: float, sel_sol: tuple[float, float, float, float, float], q_shift: int) -> int:
    """X layers that let Q's value shrink (or grow) to the floor G's product needs (24 bits per layer)."""
    try:
        c = _plan_channel(sl, h, 1.0, sel_sol, 0, 0, q_shift, probe=True)
    except _PlanFailure:
        return 0
    return c.n_x


def _plan_channel(
    sl: int,
    h: float,
    seed: float,
    sel_sol: tuple[float, float, float, float, float],
    n_x: int,
    n_y: int,
    q_shift: int,
    probe: bool = False,
) -> ChannelPlan:
    """Exponents and weights of one channel with ``n_x`` X and ``n_y`` Y layers (may raise _PlanFailure).

    Reverse pass: D = s_p mu_v * dQ with dQ = fl(a fl(z sel)) (X and Y layers have weight 1), so
    dQ = h 2^-(sigma + mu) must be an exact normal float32.  Values shrink greedily, up to 23-24 bits
    per layer, towards the floors that keep every product exact: before G (X layers) so that a X_N and
    z P stay finite, after H (Y layers) so that E is tiny and F's constants are small.  With ``probe``
    the X depth that reaches G's floor is returned in ``n_x`` (nothing else is meaningful).
    """
    w1, w2, v1, v2, sel = sel_sol
    if (sel > 0) != (h > 0):  # flip the selector's sign: Sel with (-w1, -w2) is -Sel
        w1, w2, sel = -w1, -w2, -sel
    m = _vp_shift(h, sl)
    lh, ls = floor_log2(h), floor_log2(sel)
    # dQ = 2^qd (about): prefer qd near log2|sel| + q_shift, so that a z is about 2^-q_shift
    lo = max(-120, lh - sl - 120, lh - sl + m - 124)
    hi = min(120, lh - sl + 120)
    if lo > hi:
        raise _PlanFailure("the gradient target is out of range for this point's scale")
    qd = min(max(ls + q_shift, lo), hi)
    mu_l = lh - sl - qd
    dq = Fraction(h) / _pow2_fraction(sl + mu_l)
    if not is_f32_exact(dq) or abs(dq) < Fraction(2) ** -126:
        raise _PlanFailure("the delta at Q is not an exact normal float32")
    dl = (ls + floor_log2(dq)) // 2
    try:
        sol = solve_scaling(sel, float(dq), prefer_exponent=dl)
    except ValueError as exc:
        raise _PlanFailure(str(exc)) from None
    z, a = sol.z, sol.a
    if z < 0 and a < 0:
        z, a = -z, -a
    if z <= 0 or a <= 0:
        raise _PlanFailure("scaling solution has mixed signs")
    ea, ez, ev1, ev2 = floor_log2(a), floor_log2(z), floor_log2(v1), floor_log2(v2)
    # floors that keep every product exact (full 24-bit weight times a power of two >= 2^-126)
    lb_f1 = max(-149, -126 - ev1)
    lb_f2 = max(-149, -126 - ev2)
    lb_y = [0] * (n_y + 1)  # lb_y[i] for Y_i, i = 0 is H
    lb_y[n_y] = max(lb_f1 - 24, lb_f2 - 23, -149)
    for i in range(n_y - 1, -1, -1):
        lb_y[i] = max(-149, lb_y[i + 1] - 24)
    lb_p = max(-149, -126 - ez, lb_y[0] - ez)
    lb_top = max(-149, -126 - ea, lb_p - ea)  # floor of X_N (of Q when n_x = 0)
    if probe:
        q0 = mu_l - 23
        need = math.ceil(abs(q0 - lb_top) / 24)
        return replace(_EMPTY_CHANNEL, xs=(0,) * need)
    lb_x = [0] * (n_x + 1)  # lb_x[i] for X_i, i = 0 is Q
    lb_x[n_x] = lb_top
    for i in range(n_x - 1, -1, -1):
        lb_x[i] = max(-149, lb_x[i + 1] - 24)
    jq = min(23, max(0, mu_l - lb_x[0]))
    q = mu_l - jq
    if q < lb_x[0] - 24 * n_x or q > 126 or mu_l > 126 or mu_l + m > 126 or mu_l + m < -126:
        raise _PlanFailure("Q's value or weights out of float32 range")
    xs = _ladder(q, lb_x[1:], 24)
    top = xs[-1] if xs else q
    e_ax = ea + top
    p = max(e_ax - 23, lb_p)
    if p > e_ax or top < lb_top:
        raise _PlanFailure("G's value cannot reach its floor")
    e_zp = ez + p
    hh = max(e_zp - 23, lb_y[0])
    if hh > e_zp:
        raise _PlanFailure("H's value cannot reach its floor")
    ys = _ladder(hh, lb_y[1:], 24)
    last = ys[-1] if ys else hh
    f1 = max(last - 24, lb_f1)
    f2 = max(last - 23, lb_f2)
    if f1 > last + 24 or f2 > last + 23:
        raise _PlanFailure("F's value cannot reach its floor")
    e1, e2 = ev1 + f1 - 23, ev2 + f2 - 23
    if max([q, p, hh, f1, f2, e1, e2, *xs, *ys, e_ax, e_zp, ev1 + f1, ev2 + f2]) > 126:
        raise _PlanFailure("a forward value overflows")
    return ChannelPlan(
        seed=seed, h=h, w1=w1, w2=w2, v1=v1, v2=v2, sel=sel, vp_shift=m, mu_log2=mu_l, jq=jq,
        xs=tuple(xs), a=a, p=p, z=z, hh=hh, ys=tuple(ys), f1=f1, f2=f2, e1=e1, e2=e2,
    )  # fmt: skip


def _ladder(start: int, floors: list[int], step: int) -> list[int]:
    """Greedy exponents: each value shrinks by up to ``step`` bits, never below its floor (grows to it)."""
    out = []
    prev = start
    for lb in floors:
        nxt = max(prev - step, lb)
        if nxt > prev + step:
            raise _PlanFailure("a value cannot reach its floor within the layers")
        out.append(nxt)
        prev = nxt
    return out


_EMPTY_CHANNEL = ChannelPlan(
    seed=1.0, h=1.0, w1=0.0, w2=0.0, v1=1.0, v2=1.0, sel=1.0, vp_shift=0, mu_log2=0, jq=0, xs=(), a=1.0,
    p=0, z=1.0, hh=0, ys=(), f1=0, f2=0, e1=0, e2=0,
)  # fmt: skip


def _absorbed(ch: ChannelPlan) -> Fraction:
    return abs(Fraction(ch.w1)) * _pow2_fraction(ch.e1) + abs(Fraction(ch.w2)) * _pow2_fraction(ch.e2)


# ------------------------------------------------------------------------------------- point graph
@dataclass(frozen=True)
class _Unit:
    inputs: tuple[tuple[int, float], ...]  # (index in the point's previous layer, weight); layer 1: x = 0
    bias: float
    grad: bool  # on a gradient path (delta computed exactly) or a value/kink unit (delta only bounded)


class _Pow2:
    """Fraction(2) ** e, cached (the planner uses a few hundred distinct exponents)."""

    def __pow__(self, e: int) -> Fraction:
        return _pow2_fraction(int(e))


@cache
def _pow2_fraction(e: int) -> Fraction:
    return Fraction(1 << e) if e >= 0 else Fraction(1, 1 << -e)


def _exact(q: Fraction, what: str) -> float:
    if not is_f32_exact(q):
        raise _PlanFailure(f"{what} {float(q):.3g} is not an exact float32")
    return float(q)


def _graph(plan: MultiPointPlan) -> tuple[list[list[_Unit]], list[tuple[int, float]]]:
    """The point's units layer by layer (see module doc) and its output terms."""
    two = _Pow2()
    sig = two**plan.sigma_log2
    sx = _exact(sig * Fraction(plan.x), "sigma x")
    s = float(sig)
    lam = plan.lam
    chans = plan.channels
    n_x, n_y = plan.n_x, plan.n_y
    if any(c.n_x != n_x or c.n_y != n_y for c in chans):
        raise ValueError("channels must be padded to the point's X depth")
    l1 = [_Unit(((0, s),), -sx, False), _Unit(((0, -s),), sx, False)]
    l2 = [_Unit(((0, -lam), (1, -lam)), lam, False), _Unit(((0, -1.0), (1, -1.0)), 1.0, False)]
    for j, c in enumerate(chans):
        sp = two ** (plan.sigma_log2 - c.vp_shift)
        bvp = _exact((sig * Fraction(plan.x) + 1) * two**-c.vp_shift, "Vp's bias")
        l1.append(_Unit(((0, _exact(-sp, "Vp's slope")),), bvp, True))
        mu = two**c.mu_log2
        mu_v = _exact(mu * two**c.vp_shift, "Q's weight on Vp")
        l2.append(_Unit(((0, -float(mu)), (2 + j, -mu_v)), _exact(mu * (1 + two**-c.jq), "Q's bias"), True))
    layers = [l1, l2]
    relay = [_Unit(((0, 1.0),), 0.0, False), _Unit(((1, 1.0),), 0.0, False)]
    for i in range(n_x):
        lay = list(relay)
        for j, c in enumerate(chans):
            prev = c.mu_log2 - c.jq if i == 0 else c.xs[i - 1]
            lay.append(_Unit(((1, _exact(two ** c.xs[i] - two**prev, "an X constant")), (2 + j, 1.0)), 0.0, True))
        layers.append(lay)
    lay = list(relay)
    for j, c in enumerate(chans):
        top = c.xs[-1] if n_x else c.mu_log2 - c.jq
        cg = _exact(two**c.p - Fraction(c.a) * two**top, "G's constant")
        lay.append(_Unit(((1, cg), (2 + j, c.a)), 0.0, True))
    layers.append(lay)
    lay = list(relay)
    for j, c in enumerate(chans):
        cst = _exact(two**c.hh - Fraction(c.z) * two**c.p, "H's constant")
        lay.append(_Unit(((1, cst), (2 + j, c.z)), 0.0, True))
    layers.append(lay)
    for i in range(n_y):
        lay = list(relay)
        for j, c in enumerate(chans):
            prev = c.hh if i == 0 else c.ys[i - 1]
            lay.append(_Unit(((1, _exact(two ** c.ys[i] - two**prev, "a Y constant")), (2 + j, 1.0)), 0.0, True))
        layers.append(lay)
    lay = list(relay)
    for j, c in enumerate(chans):
        last = c.ys[-1] if n_y else c.hh
        lay.append(_Unit(((1, _exact(two**c.f1 - two**last, "F1's constant")), (2 + j, 1.0)), 0.0, True))
        lay.append(_Unit(((1, _exact(two**c.f2 + two**last, "F2's constant")), (2 + j, -1.0)), 0.0, True))
    layers.append(lay)
    lay = [_Unit(((0, 1.0),), 0.0, False)]
    out = [(0, plan.w)]
    for j, c in enumerate(chans):
        ce1 = _exact(two**c.e1 - Fraction(c.v1) * two**c.f1, "E1's constant")
        ce2 = _exact(two**c.e2 - Fraction(c.v2) * two**c.f2, "E2's constant")
        lay.append(_Unit(((1, ce1), (2 + 2 * j, c.v1)), 0.0, True))
        lay.append(_Unit(((1, ce2), (3 + 2 * j, c.v2)), 0.0, True))
        out += [(1 + 2 * j, c.w1), (2 + 2 * j, c.w2)]
    layers.append(lay)
    return layers, out


def _simulate_point(plan: MultiPointPlan) -> tuple[float, list[float]]:
    """f(x_k) and D^AD(phi_i o f)(x_k) for every seed of the point, proved order/FMA-independent.

    Forward: every unit's sum goes through ``_robust_sum`` (all orders, rounded or fused products);
    the output is fl(w lam) plus terms whose magnitudes sum to less than 2^-150, which change no partial
    sum in any order.  Reverse, per seed: gradient units get exact deltas (``_robust_sum`` again),
    value units (S, R, U0, V0) only a finite bound; value units take no gradient-unit input, so their
    deltas never reach x, and U0, V0 sit at their kink (masked).
    """
    layers, out = _graph(plan)
    acts: list[float] = [plan.x]
    pres: list[list[float]] = []
    for li, lay in enumerate(layers):
        pre = []
        for u in lay:
            if not u.grad and li > 0 and any(layers[li - 1][src].grad for src, _ in u.inputs):
                raise AssertionError("a value unit reads a gradient unit")  # layout invariant
            pre.append(_robust_sum([(w, acts[src]) for src, w in u.inputs], u.bias))
        pres.append(pre)
        acts = [max(v, 0.0) for v in pre]
    if any(p > 0 for p, u in zip(pres[0], layers[0], strict=True) if not u.grad):
        raise _PlanFailure("first-layer kinks are not exact at x_k")
    y = _single(out[0][1], acts[out[0][0]])
    rest = sum((abs(Fraction(w)) * Fraction(acts[i]) for i, w in out[1:]), Fraction(0))
    if rest >= _ABSORB:
        raise _PlanFailure("the channels' output terms are not below 2^-150")
    grads = []
    for rho in plan.seeds:
        grads.append(_reverse(layers, out, pres, rho))
    return y, grads


def _reverse(layers: list[list[_Unit]], out: list[tuple[int, float]], pres: list[list[float]], rho: float) -> float:
    top = layers[-1]
    delta: list[float] = [0.0] * len(top)
    for i, w in out:
        delta[i] = _single(rho, w) if top[i].grad else abs(rho) * abs(w) * (1 + 2.0**-20)
    for li in range(len(layers) - 1, -1, -1):
        lay = layers[li]
        d_pre = [d if pres[li][u] > 0 else 0.0 for u, d in enumerate(delta)]
        n_below = 1 if li == 0 else len(layers[li - 1])
        below_grad = [True] if li == 0 else [u.grad for u in layers[li - 1]]
        terms: list[list[tuple[float, float]]] = [[] for _ in range(n_below)]
        bounds = [0.0] * n_below
        for u, unit in enumerate(lay):
            for src, w in unit.inputs:
                if below_grad[src]:
                    if not unit.grad and d_pre[u] != 0:
                        raise _PlanFailure("a value unit's delta would reach the gradient path")
                    if unit.grad:
                        terms[src].append((w, d_pre[u]))
                else:
                    bounds[src] += abs(w) * abs(d_pre[u]) * (1 + 2.0**-20)
        new = []
        for j in range(n_below):
            if below_grad[j]:
                new.append(_robust_sum(terms[j]))
            else:
                # a unit at its kink (U0, V0) is masked by ReLU's backward (`where`), so an infinite
                # delta there contributes 0; an active value unit passes its delta on and must stay finite
                if li > 0 and pres[li - 1][j] > 0 and not bounds[j] < F32_MAX / 2:
                    raise _PlanFailure("a value unit's delta would overflow")
                new.append(bounds[j] if li > 0 and pres[li - 1][j] > 0 else 0.0)
        delta = new
    dx = delta[0]
    if not math.isfinite(dx):
        raise _PlanFailure("the gradient overflows")
    return dx


# ------------------------------------------------------------------------------------------ point
def _group_seeds(
    k: int, x: float, g: float, seeds: list[float], hs: list[float], names: Sequence[str]
) -> list[tuple[float, float]]:
    """(|rho|, target for +|rho|) of the distinct non-zero seeds; ConstructionError on a violated condition.

    The conditions are necessary for every float network: D^AD is a function of the seed, and the
    reverse pass is odd in it (round-to-nearest-even is symmetric), with D(0) = 0.
    """
    groups: dict[float, tuple[float, int]] = {}
    for i, (r, h) in enumerate(zip(seeds, hs, strict=True)):
        where = f"point {k} (x={x!r}, g={g!r}), loss {names[i]!r}"
        if not math.isfinite(r):
            raise ConstructionError(f"{where}: seed D^AD phi(g) = {r!r} is not finite (NaN in the reverse pass)")
        if r == 0:
            if h != 0:
                raise ConstructionError(
                    f"{where}: seed D^AD phi(g) = 0 but h = {h!r} != 0 (a zero seed gives gradient 0 in "
                    "every float network)"
                )
            continue
        key, target = abs(r), (h if r > 0 else -h)
        if key in groups:
            other, j = groups[key]
            if not _same(other, target):
                rel = "the same seed" if seeds[j] == r else "opposite seeds"
                raise ConstructionError(
                    f"{where} and loss {names[j]!r} have {rel} ({seeds[j]!r}, {r!r}) but targets "
                    f"{hs[j]!r}, {h!r}: equal seeds need equal targets, opposite seeds opposite targets "
                    "(necessary in every float network)"
                )
        else:
            groups[key] = (target, i)
    return [(key, target) for key, (target, _) in groups.items()]


def _plan_point_multi(
    k: int, x: float, g: float, sl: int, seeds: list[float], hs: list[float], names: Sequence[str]
) -> MultiPointPlan:
    """Plan one point (raises ConstructionError with the reason when it cannot).

    The first pass proves only the finished point; if that proof fails, a second pass also proves
    each channel on its own while choosing it (slower, but it can reject a selector and try the next).
    """
    try:
        return _plan_point_pass(k, x, g, sl, seeds, hs, names, careful=False)
    except ConstructionError:
        return _plan_point_pass(k, x, g, sl, seeds, hs, names, careful=True)


def _plan_point_pass(
    k: int, x: float, g: float, sl: int, seeds: list[float], hs: list[float], names: Sequence[str], careful: bool
) -> MultiPointPlan:
    groups = _group_seeds(k, x, g, seeds, hs, names)
    where = f"point {k} (x={x!r}, g={g!r}, seeds {seeds}, losses {list(names)})"
    big = max([abs(r) for r in seeds if math.isfinite(r)] + [0.0])
    lam = _value_scale(big, g)
    w = Fraction(g) / Fraction(lam)
    if not is_f32_exact(w):
        raise ConstructionError(f"{where}: g / lam is not exact in float32 (lam = {lam!r})")
    active = [(r, t) for r, t in groups if t != 0]
    n_ch = len(active)
    w_max_log2 = -4 - max(1, math.ceil(math.log2(2 * max(n_ch, 1))))
    # deterministic search: the generator depends only on the point's own numbers
    rng = np.random.default_rng([int(np.float32(x).view(np.uint32)), int(np.float32(g).view(np.uint32)), len(seeds)])
    channels: list[ChannelPlan] = []
    for r, t in active:
        zeros = [z for z, _ in groups if z != r]
        reason = ""
        plan_c = None
        start = 0
        for _attempt in range(6):  # a few selectors, each with the channel planner's options
            try:
                start, sol = _find_selector(r, zeros, [rr for rr, _ in groups], w_max_log2, rng, start)
            except _PlanFailure as exc:
                raise ConstructionError(f"{where}: {exc} (condition: a selector within the search budget)") from None
            start += 1
            for q_shift in (0, -20, 20, -60, 60):
                n_x = _pre_layers(sl, t, sol, q_shift)
                for n_y in range(0, _MAX_X + 1):
                    try:
                        cand = _plan_channel(sl, t, r, sol, n_x, n_y, q_shift)
                    except _PlanFailure as exc:
                        reason = str(exc)
                        continue
                    if _absorbed(cand) * n_ch < _ABSORB:
                        plan_c = cand
                        break
                    reason = "the channel's output terms are not tiny enough"
                if plan_c is not None:
                    break
            if plan_c is None:
                continue
            if not careful:
                break
            # prove the channel alone with the point's other seeds (they must give exactly 0)
            single = MultiPointPlan(x, g, sl, lam, float(w), (plan_c,), (r, *zeros), (t,) + (0.0,) * len(zeros))
            try:
                y, dx = _simulate_point(single)
            except _PlanFailure as exc:
                reason, plan_c = str(exc), None
                continue
            if y == g and dx[0] == t and all(d == 0 for d in dx[1:]):
                break
            reason, plan_c = f"simulation gave f={y!r}, D={dx}", None
        if plan_c is None:
            raise ConstructionError(f"{where}: no exact channel for seed {r!r}, target {t!r}: {reason}")
        channels.append(plan_c)
    n_x = max([c.n_x for c in channels] + [0])
    n_y = max([c.n_y for c in channels] + [0])
    plan = MultiPointPlan(
        x=x, g=g, sigma_log2=sl, lam=lam, w=float(w), channels=tuple(c.padded(n_x, n_y) for c in channels),
        seeds=tuple(seeds), grads=tuple(hs),
    )  # fmt: skip
    _prove(plan, where)
    return plan


def _prove(plan: MultiPointPlan, where: str) -> None:
    try:
        y, dx = _simulate_point(plan)
    except _PlanFailure as exc:
        raise ConstructionError(f"{where}: {exc}") from None
    ok = y == plan.g and all(_same(d, h) for d, h in zip(dx, plan.grads, strict=True))
    if not ok:
        raise ConstructionError(f"{where}: the exact simulation gave f={y!r}, D={dx} instead of {list(plan.grads)}")


# ------------------------------------------------------------------------------------------ public
def _validate_multi(xs, values, grads, phis):  # type: ignore[no-untyped-def]
    if isinstance(phis, str) or not isinstance(phis, Sequence):
        raise ValueError("phis must be a sequence of losses (names or callables), e.g. ['identity', 'softplus']")
    if len(phis) == 0:
        raise ValueError("phis needs at least one loss (n = 0 given)")
    names = []
    for phi in phis:
        name, _ = resolve_phi(phi)
        names.append(name)
    h = np.asarray(grads)
    n = len(phis)
    xs_arr = np.asarray(xs)
    if xs_arr.ndim != 1:
        raise ValueError(f"xs must be one-dimensional (scalar inputs), got shape {xs_arr.shape}")
    if h.ndim != 2 or h.shape != (n, xs_arr.shape[0]):
        raise ValueError(f"grads must have shape (n_phi, K) = ({n}, {xs_arr.shape[0]}), got {h.shape}")
    rows = []
    xs32 = g32 = None
    for i in range(n):
        try:
            xs32, g32, hi = _validate(xs_arr, values, h[i], "float32")
        except ValueError as exc:
            raise ValueError(str(exc).replace("grads", f"grads[{i}]")) from None
        rows.append(hi)
    return xs32, g32, np.stack(rows), names


def plan_multi_points(
    xs: np.ndarray, values: np.ndarray, grads: np.ndarray, phis: Sequence[PhiLike]
) -> tuple[list[MultiPointPlan | None], list[str | None]]:
    """Plan every point on its own: (plans, reasons); a refused point has plan None and its reason.

    Inputs are validated as in :func:`build_multi_construction` (bad input raises ValueError).  Used to
    count refusals; :func:`build_multi_construction` raises on the first refused points instead.
    """
    xs32, g32, h32, names = _validate_multi(xs, values, grads, phis)
    seeds = np.stack([phi_seeds(phi, g32) for phi in phis])
    sls = point_scales(xs32)
    plans: list[MultiPointPlan | None] = []
    reasons: list[str | None] = []
    for k in range(xs32.size):
        try:
            plans.append(
                _plan_point_multi(
                    k,
                    float(xs32[k]),
                    float(g32[k]),
                    int(sls[k]),
                    [float(v) for v in seeds[:, k]],
                    [float(v) for v in h32[:, k]],
                    names,
                )  # fmt: skip
            )
            reasons.append(None)
        except ConstructionError as exc:
            plans.append(None)
            reasons.append(str(exc))
    return plans, reasons


def build_multi_construction(
    xs: np.ndarray,
    values: np.ndarray,
    grads: np.ndarray,
    phis: Sequence[PhiLike],
    activation: str = "relu",
) -> MultiConstruction:
    """Plan the Claim-2 network: f(x_k) = g_k and D^AD(phi_i o f)(x_k) = grads[i, k] for every i, k.

    Parameters
    ----------
    xs : (K,) distinct float32 inputs.
    values : (K,) float32 values g_k.
    grads : (n, K) float32 gradient targets, one row per loss.
    phis : sequence of n losses ("identity", "half_square", "softplus" or torch-differentiable callables).
    activation : only "relu" (as for Claim 1).

    Raises
    ------
    ValueError
        Bad input: shapes, NaN / inf, non-float32 values, n = 0, an unknown loss.
    ConstructionError
        A point where a condition fails, naming the point, the losses and the condition: equal (or
        opposite) seeds with different (or non-opposite) targets, a zero or non-finite seed with h != 0
        (these three are necessary for every float network), no selector found within the search
        budget, magnitudes outside float32, the grid condition on xs.
    """
    check_activation(activation)
    if activation != "relu":
        raise ValueError(
            f"construct_multi builds ReLU networks only, not activation {activation!r}: the selectors and "
            "channels rely on units that are exactly 0 and masked away from their point (see the card)"
        )
    plans, reasons = plan_multi_points(xs, values, grads, phis)
    bad = [r for r in reasons if r is not None]
    if bad:
        more = f" (and {len(bad) - 3} more)" if len(bad) > 3 else ""
        raise ConstructionError("; ".join(bad[:3]) + more)
    return construction_from_plans([p for p in plans if p is not None], phis)


def construction_from_plans(plans: list[MultiPointPlan], phis: Sequence[PhiLike]) -> MultiConstruction:
    """The network of already planned points (from :func:`plan_multi_points`), padded to one depth."""
    if not plans:
        raise ValueError("at least one planned point is needed")
    full = plans
    n_x = max([p.n_x for p in full] + [0])
    n_y = max([p.n_y for p in full] + [0])
    padded = [p.padded(n_x, n_y) for p in full]
    for k, p in enumerate(padded):
        if (p.n_x, p.n_y) != (full[k].n_x, full[k].n_y):
            _prove(p, f"point {k} (padded)")  # identity layers cannot change anything; checked anyway
    names = tuple(resolve_phi(phi)[0] for phi in phis)
    return MultiConstruction(plans=padded, n_x=n_x, n_y=n_y, phis=names, layers=_assemble(padded))


def _assemble(plans: list[MultiPointPlan]) -> list[SparseLayer]:
    """Coordinate layers: every point's units side by side, layer by layer."""
    graphs = [_graph(p) for p in plans]
    n_layers = len(graphs[0][0])
    layers: list[SparseLayer] = []
    prev_off = [0] * len(plans)  # layer 0: the single input x is shared (index 0 for everybody)
    prev_width = 1
    for li in range(n_layers):
        rows: list[int] = []
        cols: list[int] = []
        vals: list[float] = []
        bias: list[float] = []
        offs = []
        off = 0
        for pi, (lays, _) in enumerate(graphs):
            offs.append(off)
            for u in lays[li]:
                for src, w in u.inputs:
                    if w != 0:
                        rows.append(off)
                        cols.append(src if li == 0 else prev_off[pi] + src)
                        vals.append(w)
                bias.append(u.bias)
                off += 1
        layers.append(_sparse(np.array(rows), np.array(cols), np.array(vals), np.array(bias), prev_width, True))
        prev_off, prev_width = offs, off
    rows, cols, vals = [], [], []
    for pi, (_, out) in enumerate(graphs):
        for src, w in out:
            if w != 0:
                rows.append(0)
                cols.append(prev_off[pi] + src)
                vals.append(w)
    layers.append(
        _sparse(
            np.array(rows, dtype=np.int64),
            np.array(cols, dtype=np.int64),
            np.array(vals),
            np.zeros(1),
            prev_width,
            False,
        )
    )
    return layers


def construct_multi(
    xs: np.ndarray,
    values: np.ndarray,
    grads: np.ndarray,
    phis: Sequence[PhiLike],
    activation: str = "relu",
) -> nn.Sequential:
    """Claim 2: one float32 ReLU ``nn.Sequential`` with f(x_k) = g_k and D^AD(phi_i o f)(x_k) = grads[i, k].

    ``grads`` has shape (n, K) for the n losses ``phis``.  See :func:`build_multi_construction` for the
    conditions and errors.  Exact for any summation order and FMA use inside nn.Linear (module doc).
    """
    return build_multi_construction(xs, values, grads, phis, activation).to_sequential()


# ------------------------------------------------------------------------------------------ targets
@dataclass(frozen=True)
class MultiTargets:
    """xs (K,), values (K,), grads (n, K), and how many targets the necessary conditions fixed."""

    xs: np.ndarray
    values: np.ndarray
    grads: np.ndarray
    forced_zero: int  # targets set to 0 because the seed is 0
    forced_equal: int  # targets set equal (or opposite) to another loss's because the seeds are


def random_multi_targets(
    k: int,
    rng: np.random.Generator,
    phis: Sequence[PhiLike],
    *,
    delta_log2: int = -6,
    zero_grad_fraction: float = 0.1,
    value_max: float = 1e30,
) -> MultiTargets:
    """Whole-range random targets for Claim 2, made to meet the necessary conditions.

    xs on the brief's grid; g random float32 bit patterns with |g| <= ``value_max`` (subnormals and 0
    included); h_{i,k} independent, log10-uniform over the whole float32 range (1e-45..3e38, random
    signs), a fraction exactly 0.  Then, per point, the conditions that hold in every float network are
    imposed and counted: a zero seed gets h = 0; a seed equal (or opposite) to an earlier loss's gets
    that loss's target (or its negative).
    """
    k = positive_int(k, "k")
    zero_grad_fraction = finite_number(zero_grad_fraction, "zero_grad_fraction", lo=0.0, hi=1.0)
    value_max = finite_number(value_max, "value_max", lo=0.0, hi=3.4e38)
    n = len(phis)
    if n == 0:
        raise ValueError("phis needs at least one loss")
    xs = grid_points(k, rng, delta_log2)
    g = _random_finite_floats(k, rng, value_max)
    lo, hi = F32_LOG10_RANGE
    with np.errstate(over="ignore", under="ignore"):
        mag = np.minimum(10.0 ** rng.uniform(lo, hi, size=(n, k)), float(np.finfo(np.float32).max))
        h = (rng.choice([-1.0, 1.0], size=(n, k)) * mag).astype(np.float32)
    h[rng.random((n, k)) < zero_grad_fraction] = 0
    # Deviation: targets are made to meet the conditions that every float network obeys (counted).
    h, forced_zero, forced_equal = impose_necessary_conditions(g, h, phis)
    return MultiTargets(xs=xs, values=g.astype(np.float32), grads=h, forced_zero=forced_zero, forced_equal=forced_equal)


def impose_necessary_conditions(
    values: np.ndarray, grads: np.ndarray, phis: Sequence[PhiLike]
) -> tuple[np.ndarray, int, int]:
    """Targets changed to meet what every float network obeys: (grads', #set to 0, #set equal/opposite).

    Per point: a zero seed gets h = 0; a seed equal (opposite) to an earlier loss's seed gets that
    loss's target (its negative).
    """
    g = np.asarray(values, dtype=np.float32).reshape(-1)
    h = np.array(grads, dtype=np.float32, copy=True)
    n, k = len(phis), g.size
    if h.shape != (n, k):
        raise ValueError(f"grads must have shape (n_phi, K) = ({n}, {k}), got {h.shape}")
    seeds = np.stack([phi_seeds(phi, g) for phi in phis])
    forced_zero = forced_equal = 0
    for j in range(k):
        for i in range(n):
            r = seeds[i, j]
            if r == 0:
                forced_zero += int(h[i, j] != 0)
                h[i, j] = 0
                continue
            for i0 in range(i):
                if abs(seeds[i0, j]) == abs(r):
                    val = h[i0, j] if seeds[i0, j] == r else -h[i0, j]
                    forced_equal += int(not _same(val, h[i, j]))
                    h[i, j] = val
                    break
    return h, forced_zero, forced_equal
