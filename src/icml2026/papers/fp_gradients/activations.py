"""Claim 1 for the paper's other activations: ELU, GELU, SiLU (Swish), sigmoid and tanh (issue 27).

torch's own modules (``nn.ELU``, ``nn.GELU``, ``nn.SiLU``, ``nn.Sigmoid``, ``nn.Tanh``) are used, so
torch autograd is the AD under test.  ReLU's exact kink is replaced by three float regimes of the
activation, measured in float32 (``ActivationSpec``; the tests check torch and the numpy reference
against them):

    ZERO   p = +-0:         value v0 = sigma(0), AD slope d0 = sigma'(0)  (a power of two, never 0)
    LIN    p >= lin_min:    value p, slope 1                        (ELU, GELU, SiLU only)
    OFF    p <= -off_neg:   value c- (ELU/tanh -1, GELU/SiLU -0, sigmoid 0), slope exactly 0
           p >= sat_pos:    value c+ = 1, slope exactly 0           (sigmoid, tanh only)

Construction (our own).  For each point x_k (s = 2^8 sigma_k, sigma_k = 4 / Delta_k as for ReLU), a
private block of units sits in every layer; at every domain point every unit of the block is in one of
the regimes above or, where its value never reaches the output, merely bounded:

    layer 1:  A = sigma(s_A (x - x_k))  (ZERO at x_k)   P+- = sigma(+-s (x - x_k) -+ M)  (OFF / saturated)
    chain i:  I_i  indicator (x_k: LIN value `ion` or c+; other points: OFF)
              X_i = sigma(beta_i X_{i-1} + gamma_i I_{i-1} + c_i)    ZERO at x_k, OFF at the others
              (X_1 is gated by P+- directly; LIN types carry the value path J, Y in a third unit)
    last:     V  value unit (x_k: 2^lam, 1 or the saturated constant, AD contribution 0; others: exactly 0)
              G  = sigma(a X_n + ...)  ZERO at x_k (value v0, slope d0); others: exactly 0
    output:   y = w V + z G

At x_k every pre-activation on the value and gradient paths is an exact sum (checked in every order,
with and without FMA) that lands in a regime, so f(x_k) = fl(w V + z v0) and
D^AD(phi o f)(x_k) = s_A d0^(n+2) prod(beta) fl(a fl(rho z)) with powers of two everywhere except z, a
(found by :func:`solve_scaling`).  At the other points the block's last-layer units are exactly 0 and
every backward path into x passes through a unit with slope exactly 0; the deltas on the way must be
finite, because torch's backward multiplies by the slope (inf * 0 = NaN; ReLU masks with `where`).  The
planner proves this per point by interval bounds over all other points and refuses with
``ConstructionError`` (naming the point and the condition) where it cannot.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from fractions import Fraction

import numpy as np
import torch
from torch import nn

from icml2026.core.validate import as_array

from .construction import (
    ConstructionError,
    SparseLayer,
    _find_compensation,
    _PlanFailure,
    _sparse,
    _sum_results,
    _validate,
    point_scales,
)
from .floats import (
    F32_MAX,
    count_mismatches,
    dyadic,
    dyadic_mul,
    floor_log2,
    is_f32_exact,
    pow2,
    round_dyadic_f32,
    round_f32,
)
from .losses import PhiLike, phi_seeds, resolve_phi
from .semantics import Verification, _dense_backward, _dense_forward, _slots, _sparse_sum, torch_values_and_grads
from .solver import solve_scaling

__all__ = [
    "ActivationSpec",
    "ACTIVATION_SPECS",
    "SMOOTH_ACTIVATIONS",
    "ActivationPlan",
    "ActivationConstruction",
    "ActLayer",
    "build_activation_construction",
    "construct_activation",
    "reference_activation",
    "reference_activation_backward",
    "layers_from_activation_sequential",
    "reference_values_and_grads_activation",
    "verify_activation",
    "activation_targets",
]

_MARGIN = 256.0  # M: the first-layer offset and the gates' target margin (>= 2x every measured threshold)
_OFF = -512.0  # bias of dead (padding) units: OFF everywhere
_MAX_GAIN = 100  # |log2 beta_i| per chain layer
_LEVEL = 112  # |log2| of every reverse-pass delta on the gradient path at x_k stays below this
_SX_MAX = 2.0**100
#: smallest log2 of the value unit V = 2^lam: GELU / SiLU need V in their LIN regime (>= 16 / 32);
#: ELU's V = q Y + q scales freely (V exactly 0 at the other points for any q)
_LAM_MIN = {
    "elu": -100,
    "gelu": 4,
    "silu": 5,
}  # s * max|x| and s_A * max|x| stay below this (forward values times gates stay finite)


@dataclass(frozen=True)
class ActivationSpec:
    """The float32 regimes of one activation as torch computes it (see the module docstring).

    Thresholds are about twice the measured ones (torch 2.x CPU, float32, scalar and vectorised
    kernels): ELU OFF below -103.9; GELU OFF below -6.2, LIN above 5.9; SiLU OFF below -88.8, LIN above
    16.7; sigmoid 0 below -88.8, 1 above 16.7; tanh -+1 beyond 8.98.
    """

    name: str
    bounded: bool
    v0: float
    d0_log2: int
    c_minus: float
    c_plus: float | None
    off_neg: float
    sat_pos: float | None
    lin_min: float | None
    slope_max: float
    value_min: float
    module: Callable[[], nn.Module] = field(repr=False)

    @property
    def d0(self) -> float:
        return pow2(self.d0_log2)


ACTIVATION_SPECS: dict[str, ActivationSpec] = {
    "elu": ActivationSpec("elu", False, 0.0, 0, -1.0, None, 128.0, None, 2.0**-149, 1.0, -1.0, nn.ELU),
    "gelu": ActivationSpec("gelu", False, 0.0, -1, -0.0, None, 16.0, None, 16.0, 1.13, -0.17, nn.GELU),
    "silu": ActivationSpec("silu", False, 0.0, -1, -0.0, None, 128.0, None, 32.0, 1.1, -0.28, nn.SiLU),
    "sigmoid": ActivationSpec("sigmoid", True, 0.5, -2, 0.0, 1.0, 128.0, 32.0, None, 0.25, 0.0, nn.Sigmoid),
    "tanh": ActivationSpec("tanh", True, 0.0, 0, -1.0, 1.0, 16.0, 16.0, None, 1.0, -1.0, nn.Tanh),
}
SMOOTH_ACTIVATIONS = tuple(ACTIVATION_SPECS)
_MODULE_NAMES = {nn.ELU: "elu", nn.GELU: "gelu", nn.SiLU: "silu", nn.Sigmoid: "sigmoid", nn.Tanh: "tanh"}


def _spec(activation: str) -> ActivationSpec:
    if activation not in ACTIVATION_SPECS:
        raise ValueError(f"unknown activation {activation!r}; the smooth ones built here are {SMOOTH_ACTIVATIONS}")
    return ACTIVATION_SPECS[activation]


# ------------------------------------------------------------------------------ numpy reference
def reference_activation(activation: str, p: np.ndarray) -> np.ndarray:
    """sigma(p) in numpy float32, written as torch's CPU kernels write it.

    Bit-exact with torch on the regimes the construction uses (ZERO, LIN, OFF; tested); elsewhere it may
    differ from torch's vectorised kernels by ulps (GELU's erf comes from scipy), which the
    construction never lets reach the output.
    """
    _spec(activation)
    p = np.asarray(p, dtype=np.float32)
    one, half = np.float32(1), np.float32(0.5)
    with np.errstate(over="ignore", under="ignore", invalid="ignore"):
        if activation == "elu":
            return np.where(p > 0, p, np.expm1(p)).astype(np.float32)
        if activation == "gelu":
            from scipy.special import erf

            e = erf(p * np.float32(math.sqrt(0.5))).astype(np.float32)
            return (p * half * (one + e)).astype(np.float32)
        if activation == "silu":
            return (p / (one + np.exp(-p))).astype(np.float32)
        if activation == "sigmoid":
            return (one / (one + np.exp(-p))).astype(np.float32)
        return np.tanh(p).astype(np.float32)


def reference_activation_backward(activation: str, p: np.ndarray, y: np.ndarray, grad: np.ndarray) -> np.ndarray:
    """grad * sigma'(p) in numpy float32 with torch's backward formulas (products, not masks).

    elu: grad * exp(p) for p <= 0, grad otherwise; gelu: grad * (cdf + p pdf); silu:
    grad * s * (1 + p (1 - s)); sigmoid: grad * (1 - y) * y; tanh: grad * (1 - y * y).  An infinite
    grad times a zero slope gives NaN, as in torch.
    """
    _spec(activation)
    p = np.asarray(p, dtype=np.float32)
    grad = np.asarray(grad, dtype=np.float32)
    one, half = np.float32(1), np.float32(0.5)
    with np.errstate(over="ignore", under="ignore", invalid="ignore"):
        if activation == "elu":
            return np.where(p > 0, grad, grad * np.exp(p)).astype(np.float32)
        if activation == "gelu":
            from scipy.special import erf

            cdf = half * (one + erf(p * np.float32(math.sqrt(0.5))).astype(np.float32))
            k_beta = np.float32(2 / math.sqrt(math.pi) * math.sqrt(0.5) * 0.5)
            pdf = np.exp(np.float32(-0.5) * p * p) * k_beta
            return (grad * (cdf + p * pdf)).astype(np.float32)
        if activation == "silu":
            s = one / (one + np.exp(-p))
            return (grad * s * (one + p * (one - s))).astype(np.float32)
        if activation == "sigmoid":
            return (grad * (one - y) * y).astype(np.float32)
        return (grad * (one - y * y)).astype(np.float32)


def _regime(spec: ActivationSpec, p: float) -> tuple[float, float, str] | None:
    """(value, slope, name) of sigma at an exact pre-activation p, or None outside the modelled regimes."""
    if p == 0:
        return spec.v0, spec.d0, "zero"
    if p <= -spec.off_neg:
        return spec.c_minus, 0.0, "off"
    if spec.sat_pos is not None and p >= spec.sat_pos:
        assert spec.c_plus is not None
        return spec.c_plus, 0.0, "sat"
    if spec.lin_min is not None and p >= spec.lin_min:
        return p, 1.0, "lin"
    return None


# ------------------------------------------------------------------------------ per-point network
Unit = tuple[tuple[tuple[int, float], ...], float]  # ((input index, weight), ...), bias


@dataclass(frozen=True)
class ActivationPlan:
    """One point's block: its units layer by layer (local indices) and its output terms.

    ``layers[0]`` reads the input x (index 0); ``out`` holds (index in the last hidden layer, weight).
    """

    k: int
    x: float
    g: float
    h: float
    rho: float
    n_chain: int
    layers: tuple[tuple[Unit, ...], ...]
    out: tuple[tuple[int, float], ...]
    z: float
    a: float
    w: float
    lam: int


@dataclass(frozen=True)
class ActLayer:
    """A coordinate layer plus the activation that follows it (None: the output layer)."""

    sparse: SparseLayer
    activation: str | None


@dataclass
class ActivationConstruction:
    """The planned network for a smooth activation: plans, coordinate layers and the torch form."""

    activation: str
    plans: list[ActivationPlan]
    n_chain: int
    layers: list[SparseLayer] = field(repr=False)

    @property
    def n_params(self) -> int:
        return int(sum(layer.n_out * layer.n_in + layer.n_out for layer in self.layers))

    @property
    def depth(self) -> int:
        return len(self.layers)

    @property
    def widths(self) -> list[int]:
        return [1] + [layer.n_out for layer in self.layers]

    def to_sequential(self) -> nn.Sequential:
        """Dense nn.Linear layers with torch's activation module between them (float32, CPU)."""
        mods: list[nn.Module] = []
        for i, layer in enumerate(self.layers):
            lin = torch.nn.utils.skip_init(nn.Linear, layer.n_in, layer.n_out, dtype=torch.float32)
            with torch.no_grad():
                lin.weight.copy_(torch.from_numpy(layer.dense()))
                lin.bias.copy_(torch.from_numpy(layer.bias.astype(np.float32)))
            mods.append(lin)
            if i < len(self.layers) - 1:
                mods.append(ACTIVATION_SPECS[self.activation].module())
        return nn.Sequential(*mods)


def _sums4(terms: list[tuple[float, float]], bias: float) -> set[float]:
    """Every float32 result of fl(sum u v + bias) over all orders and FMA choices, up to 4 non-zero terms."""
    return _sum_results(terms, bias, max_terms=4)


def _simulate_at_point(spec: ActivationSpec, plan: ActivationPlan) -> tuple[float, float]:
    """f(x_k) and D^AD(phi o f)(x_k) of the block, exactly; raises _PlanFailure if anything is not proved.

    Forward: every pre-activation is the same in every order/FMA choice and lies in a regime.  Reverse:
    deltas on the gradient path are single exact products; other deltas are bounded (finite).
    """
    vals: list[list[float]] = []
    slopes: list[list[float]] = []
    prev = [plan.x]
    for li, layer in enumerate(plan.layers):
        v_l, s_l = [], []
        for ui, (inputs, bias) in enumerate(layer):
            res = _sums4([(w, prev[j]) for j, w in inputs], bias)
            regs = {_regime(spec, p) for p in res}
            if None in regs:
                raise _PlanFailure(
                    f"pre-activation {sorted(res)[0]!r} (layer {li + 1}, unit {ui}) at x_k is outside the exact regimes"
                )
            if len(regs) != 1:
                raise _PlanFailure(f"pre-activation at x_k depends on the summation order (layer {li + 1}, unit {ui})")
            (reg,) = regs
            assert reg is not None
            v_l.append(reg[0])
            s_l.append(reg[1])
        vals.append(v_l)
        slopes.append(s_l)
        prev = v_l
    y_set = _sums4([(w, prev[j]) for j, w in plan.out], 0.0)
    if len(y_set) != 1:
        raise _PlanFailure("the output sum depends on the order")
    (y,) = y_set
    # reverse pass: exact values where a delta has at most one non-zero term, else a bound
    rho = plan.rho
    n_l = len(plan.layers)
    delta: list[float] = [0.0] * len(plan.layers[-1])
    exact: list[bool] = [True] * len(delta)
    for j, w in plan.out:
        delta[j] = _mul(rho, w)
    for li in range(n_l - 1, -1, -1):
        d_pre = [0.0 if slopes[li][u] == 0 else _mul(slopes[li][u], delta[u]) for u in range(len(delta))]
        if not all(abs(d) < F32_MAX / 2 for d in delta):  # float64 bounds: compare with float32 range
            raise _PlanFailure("a reverse-pass delta at x_k overflows (inf * 0 = NaN in the activation's backward)")
        if li == 0:
            break
        n_prev = len(plan.layers[li - 1])
        terms: list[list[tuple[float, float, int]]] = [[] for _ in range(n_prev)]
        for u, (inputs, _) in enumerate(plan.layers[li]):
            if d_pre[u] != 0:
                for j, w in inputs:
                    if w != 0:
                        terms[j].append((w, d_pre[u], u))
        new_delta, new_exact = [], []
        for j in range(n_prev):
            if len(terms[j]) <= 1:
                new_delta.append(_mul(terms[j][0][0], terms[j][0][1]) if terms[j] else 0.0)
                new_exact.append(exact[terms[j][0][2]] if terms[j] else True)
            else:
                new_delta.append(math.fsum(abs(a) * abs(b) for a, b, _ in terms[j]) * (1 + 2.0**-20))
                new_exact.append(False)
        delta, exact = new_delta, new_exact
    d_pre0 = [0.0 if slopes[0][u] == 0 else _mul(slopes[0][u], delta[u]) for u in range(len(delta))]
    contrib = [(inputs[0][1], d_pre0[u]) for u, (inputs, _) in enumerate(plan.layers[0]) if d_pre0[u] != 0]
    if len(contrib) > 1:
        raise _PlanFailure("more than one first-layer unit passes gradient at x_k")
    if contrib and not exact[[u for u in range(len(d_pre0)) if d_pre0[u] != 0][0]]:
        raise _PlanFailure("the gradient path at x_k is not a chain of single products")
    dx = _mul(*contrib[0]) if contrib else 0.0
    if not math.isfinite(dx):
        raise _PlanFailure("the gradient overflows")
    return y, dx


def _mul(u: float, v: float) -> float:
    if not (math.isfinite(u) and math.isfinite(v)):
        return math.inf
    return round_dyadic_f32(dyadic_mul(dyadic(u), dyadic(v)))


def _check_other_points(spec: ActivationSpec, plan: ActivationPlan, xs_other: np.ndarray, seed_max: float) -> None:
    """At every other domain point: the block's output units are exactly 0, no gradient reaches x, and
    every reverse-pass delta is finite (bounded with seeds up to ``seed_max``).  Interval arithmetic in
    float64 with a rounding slack that covers every summation order and FMA use.
    """
    if xs_other.size == 0:
        return
    x = xs_other.astype(np.float64)
    lo_prev, hi_prev = x[None, :], x[None, :]  # (units, points)
    exact_prev = [False]
    exact_val: list[float] = [0.0]
    slope_hi: list[np.ndarray] = []
    zero_slope: list[list[bool]] = []
    for li, layer in enumerate(plan.layers):
        lo_l, hi_l, ex_l, exv_l, sh_l, zs_l = [], [], [], [], [], []
        for inputs, bias in layer:
            if inputs and all(exact_prev[j] for j, _ in inputs) or not inputs:
                res = _sums4([(w, exact_val[j]) for j, w in inputs], bias)
                regs = {_regime(spec, p) for p in res}
                if None not in regs and len(regs) == 1:
                    (reg,) = regs
                    assert reg is not None
                    v, s_, _ = reg
                    n = x.size
                    lo_l.append(np.full(n, v))
                    hi_l.append(np.full(n, v))
                    ex_l.append(True)
                    exv_l.append(v)
                    sh_l.append(np.full(n, s_))
                    zs_l.append(s_ == 0)
                    continue
            lo = np.full(x.size, float(bias))
            hi = np.full(x.size, float(bias))
            mag = np.full(x.size, abs(float(bias)))
            for j, w in inputs:
                a, b = w * lo_prev[j], w * hi_prev[j]
                lo += np.minimum(a, b)
                hi += np.maximum(a, b)
                mag += abs(w) * np.maximum(np.abs(lo_prev[j]), np.abs(hi_prev[j]))
            slack = (len(inputs) + 2) * 2.0**-23 * mag
            lo, hi = lo - slack, hi + slack
            if not (np.all(np.isfinite(lo)) and np.all(np.isfinite(hi)) and np.all(mag < F32_MAX / 4)):
                raise _PlanFailure(f"a forward value at another point may overflow (layer {li + 1})")
            v_lo, v_hi, s_hi, zero = _interval_activation(spec, lo, hi)
            const = zero and bool(np.all(v_lo == v_lo[0]))  # saturated at every other point: exact constant
            lo_l.append(v_lo)
            hi_l.append(v_hi)
            ex_l.append(const)
            exv_l.append(float(v_lo[0]) if const else 0.0)
            sh_l.append(s_hi)
            zs_l.append(zero)
        lo_prev, hi_prev = np.array(lo_l), np.array(hi_l)
        exact_prev, exact_val = ex_l, exv_l
        slope_hi.append(np.array(sh_l))
        zero_slope.append(zs_l)
    for j, w in plan.out:
        if w != 0 and not (exact_prev[j] and exact_val[j] == 0):
            raise _PlanFailure("an output unit of the block is not exactly 0 at another point")
    # reverse pass bound (per other point), and the exact-zero flags
    n_pts = x.size
    last = len(plan.layers[-1])
    dmax = np.zeros((last, n_pts))
    live = [False] * last
    for j, w in plan.out:
        dmax[j] += abs(w) * seed_max
        live[j] = live[j] or w != 0
    for li in range(len(plan.layers) - 1, -1, -1):
        if not np.all(dmax < F32_MAX / 2):
            raise _PlanFailure(
                "a reverse-pass delta at another point may overflow (inf * 0 = NaN in the activation's backward): "
                "seeds times the output weights are too large"
            )
        d_pre = dmax * slope_hi[li]
        live_pre = [live[u] and not bool(np.all(zero_slope[li][u])) for u in range(len(live))]
        if li == 0:
            if any(live_pre):
                raise _PlanFailure("gradient may reach x at another point (a first-layer unit is not OFF there)")
            return
        n_prev = len(plan.layers[li - 1])
        dmax = np.zeros((n_prev, n_pts))
        live = [False] * n_prev
        for u, (inputs, _) in enumerate(plan.layers[li]):
            if live_pre[u]:
                for j, w in inputs:
                    dmax[j] += abs(w) * d_pre[u] * (1 + 2.0**-20)
                    live[j] = live[j] or w != 0


def _interval_activation(spec: ActivationSpec, lo: np.ndarray, hi: np.ndarray):  # type: ignore[no-untyped-def]
    """Bounds on sigma over [lo, hi]: (value lo, value hi, slope bound, slope exactly 0 everywhere)."""
    off = hi <= -spec.off_neg
    sat = np.zeros_like(off) if spec.sat_pos is None else lo >= spec.sat_pos
    lin = np.zeros_like(off) if spec.lin_min is None else lo >= spec.lin_min
    if spec.bounded:
        v_lo, v_hi = np.full(lo.shape, spec.value_min), np.ones(lo.shape)
    else:
        v_lo = np.where(lo > 0, lo, spec.value_min)
        v_hi = np.maximum(hi, 0.0)
    v_lo = np.where(off, spec.c_minus, np.where(sat, 1.0, np.where(lin, lo, v_lo)))
    v_hi = np.where(off, spec.c_minus, np.where(sat, 1.0, np.where(lin, hi, v_hi)))
    s_hi = np.where(off | sat, 0.0, np.where(lin, 1.0, spec.slope_max))
    return v_lo, v_hi, s_hi, bool(np.all(off | sat))


# ------------------------------------------------------------------------------ planning
def _ceil_log2(v: float) -> int:
    return math.ceil(math.log2(v))


def _block(
    spec: ActivationSpec,
    x: float,
    s_log2: int,
    sa_log2: int,
    betas: list[float],
    a: float,
    lam: int,
    n: int,
    xmax: float = 0.0,
) -> tuple[tuple[tuple[Unit, ...], ...], tuple[float, float]]:
    """The point's units for chain length n (see the module docstring); returns (layers, (V value, G value))."""
    s, s_a, m = pow2(s_log2), pow2(sa_log2), _MARGIN
    fx = Fraction(x)
    sx = float(Fraction(s) * fx)
    sax = Fraction(s_a) * fx
    if not is_f32_exact(sax) or (x != 0 and sax == 0):
        raise _PlanFailure("s_A x_k is not an exact float32")
    name = spec.name
    bias_a = -float(sax)
    layers: list[tuple[Unit, ...]] = []
    dead: Unit = ((), _OFF)
    if not spec.bounded:
        c = -1.0 if name == "elu" else 0.0
        alpha = 512.0
        ion = alpha - 1 if name == "elu" else alpha
        # P+- use s_p = 2^m_p s and offset 2^m_p M (still exact: 2^(m_p + 8) (sigma_k x_k -+ 1)), as steep as
        # the headroom s_p max|x| <= 2^90 allows, so that X_1's gate gamma_1 >= 8 beta_1 s_A / s_p stays small
        # (its delta gamma_1 * delta(X_1) at x_k must stay finite although P+- are OFF there)
        m_p = max(0, 90 - math.ceil(math.log2(s * max(xmax, 2.0**-149))))
        s_p, off_p = s * pow2(m_p), 256 * pow2(m_p)
        sxp = Fraction(s_p) * fx
        layers.append(
            (
                (((0, s_a),), bias_a),
                (((0, s_p),), round_f32(-sxp - Fraction(off_p))),
                (((0, -s_p),), round_f32(sxp - Fraction(off_p))),
            )
        )
        s = s_p
        gam1 = pow2(max(2, _ceil_log2(max(2 * abs(betas[0]) * s_a / s * 4, (2 * m + abs(betas[0])) / (2 * m)))))
        i1: Unit = (((1, -alpha), (2, -alpha)), (-alpha - 1) if name == "elu" else alpha)
        x1: Unit = (((0, betas[0]), (1, -gam1), (2, -gam1)), 2 * gam1 * c)
        # the value path: mu = clamp(lam, 10, 124) sizes J and Y; V = 2^lam (ELU: V = q Y + q, q = 2^(lam - mu))
        mu = min(max(lam, 10), 124)
        kappa = pow2(mu + 2 - 9)
        # J's bias keeps x_k's pre-activation exactly -2 kappa or -1024 (both exact, both OFF)
        j_bias = kappa * (ion - 2) if kappa >= 512 else kappa * ion - 1024
        j_unit: Unit = (((0, -kappa),), j_bias)
        b_y = pow2(mu) - 2 if mu <= 24 else pow2(mu)
        j_layer = n - 1 if name == "elu" else n  # chain layer holding J (ELU: Y follows at layer n)
        for i in range(1, n + 1):
            if i == 1:
                i_u, x_u = i1, x1
            else:
                i_u = (((0, 2.0),), -ion)
                beta = betas[i - 1]
                if name == "elu" and i == n:
                    gam = -beta / alpha  # beta_n = -gamma_n alpha: X_n is exactly 0 at the other points
                    x_u = (((1, beta), (0, gam)), gam * (1 - alpha))
                else:
                    gam = pow2(_ceil_log2((2 * m + abs(beta)) / ion) + 1)
                    x_u = (((1, beta), (0, gam)), -gam * ion)
            if i == j_layer:
                w_u = j_unit
            elif name == "elu" and i == n:
                w_u = (((2, -1.0),), b_y)
            else:
                w_u = dead
            layers.append((i_u, x_u, w_u))
        if name == "elu":
            q = pow2(lam - mu)
            v_u: Unit = (((2, q),), q)
            g_u: Unit = (((1, a),), 0.0)
        else:
            v_u = (((2, -1.0),), pow2(lam))
            g_u = (((1, a), (0, 1.0)), -ion)
        layers.append((v_u, g_u))
        return tuple(layers), (pow2(lam), 0.0)
    # bounded: sigmoid, tanh
    c = spec.c_minus
    dc = 1 - c
    alpha = 1024.0
    v0 = spec.v0
    layers.append(
        (
            (((0, s_a),), bias_a),
            (((0, s),), round_f32(Fraction(-sx) + 256)),
            (((0, -s),), round_f32(Fraction(sx) + 256)),
        )
    )
    for i in range(1, n + 1):
        beta = betas[i - 1]
        if i == 1:
            gam = pow2(_ceil_log2(2 * (2 * m + abs(beta)) / dc))
            i_u = (((1, alpha), (2, alpha)), -alpha * (3 + c) / 2)
            cb = Fraction(beta) * Fraction(v0) + 2 * Fraction(gam)
            if not is_f32_exact(cb):
                raise _PlanFailure("X_1's bias is not an exact float32")
            x_u = (((0, beta), (1, gam), (2, gam)), -float(cb))
        else:
            i_u = (((0, alpha),), -alpha * (1 + c) / 2)
            if name == "tanh" and i == n:
                gam = -beta / 2  # beta_n = -2 gamma_n: X_n is exactly 0 at the other points
                x_u = (((1, beta), (0, gam)), -gam)
            else:
                gam = pow2(_ceil_log2(2 * (2 * m + abs(beta)) / dc))
                cb = Fraction(beta) * Fraction(v0) + Fraction(gam)
                if not is_f32_exact(cb):
                    raise _PlanFailure("a gate's bias is not an exact float32")
                x_u = (((1, beta), (0, gam)), -float(cb))
        layers.append((i_u, x_u))
    if name == "sigmoid":
        v_u = (((0, alpha),), -alpha / 2)
        g_u = (((1, a),), -a / 2)
    else:
        v_u = (((0, 8.0),), 8.0)
        g_u = (((1, a),), 0.0)
    layers.append((v_u, g_u))
    return tuple(layers), (1.0, v0)


def _n_min(spec: ActivationSpec) -> int:
    return 3 if spec.name == "elu" else 2


def _free_layers(spec: ActivationSpec, n: int) -> list[int]:
    """Chain layers (1-based) whose gain beta_i is free; the others have |beta_i| = 1."""
    if spec.name == "elu":
        return list(range(2, n))
    if spec.name == "tanh":
        return list(range(1, n))
    if spec.name in ("gelu", "silu"):
        return list(range(2, n + 1))
    return list(range(1, n + 1))


def _fixed_beta(spec: ActivationSpec, i: int, n: int) -> float:
    return -1.0 if (spec.name in ("elu", "tanh") and i == n) else 1.0


def _plan_point(
    spec: ActivationSpec,
    k: int,
    x: float,
    g: float,
    h: float,
    rho: float,
    s_log2: int,
    n: int,
    t_a: int,
    t_t: int,
    xs_other: np.ndarray,
    seed_max: float,
) -> ActivationPlan:
    """One candidate plan for one point (raises _PlanFailure)."""
    ld0 = spec.d0_log2
    lam = 0
    if not spec.bounded:
        if g == 0:
            lam = 10
        else:
            e_low = dyadic(g)[1] + (dyadic(g)[0] & -dyadic(g)[0]).bit_length() - 1
            lam_min = _LAM_MIN[spec.name]
            lam = min(max(floor_log2(g), lam_min), 124, e_low + 149)
            if lam < lam_min:
                raise _PlanFailure(
                    f"g's lowest set bit 2^{e_low} is below 2^{lam_min - 149}: the value unit V = 2^lam needs "
                    f"lam >= {lam_min} (its LIN regime), so fl(w V) cannot be g"
                )
    if h == 0:
        sa_log2, betas, a, z = 0, [_fixed_beta(spec, i, n) for i in range(1, n + 1)], 1024.0, 0.0
    else:
        hl = floor_log2(h)
        sa_log2 = hl - t_a
        big_e = hl - t_t  # T = h 2^-E in [2^t_t, 2^(t_t + 1))
        tt = Fraction(h) / Fraction(2) ** big_e
        if not is_f32_exact(tt) or abs(tt) < Fraction(2) ** -126:
            raise _PlanFailure("the scaled target T is not an exact normal float32")
        fixed = [i for i in range(1, n + 1) if i not in _free_layers(spec, n)]
        free = _free_layers(spec, n)
        total = big_e - sa_log2 - (n + 2) * ld0
        if not free:
            raise _PlanFailure("no free gain layer")
        share = [total // len(free) + (1 if q < total % len(free) else 0) for q in range(len(free))]
        if any(abs(b) > _MAX_GAIN for b in share):
            raise _PlanFailure("needs more chain layers")
        betas = [0.0] * n
        for i in fixed:
            betas[i - 1] = _fixed_beta(spec, i, n)
        for i, b in zip(free, share, strict=True):
            betas[i - 1] = pow2(b)
        # the reverse-pass levels at x_k (delta after each layer) stay in range
        level = t_t + ld0
        for i in range(n, 0, -1):
            level += ld0 + round(math.log2(abs(betas[i - 1])))
            if abs(level) > _LEVEL:
                raise _PlanFailure("a reverse-pass level at x_k leaves the float32 range")
        try:
            sol = solve_scaling(rho, float(tt), prefer_exponent=t_t - 12)
        except ValueError as exc:
            raise _PlanFailure(str(exc)) from exc
        z, a = sol.z, sol.a
        if a < 0:
            z, a = -z, -a
        if spec.name == "sigmoid" and a < 1024:
            raise _PlanFailure("sigmoid's G needs a >= 2^10 (its OFF margin at the other points)")
        # sign: D = s_A d0^(n+2) prod(beta) fl(a fl(rho z)) must have the sign of h
        sign = math.prod(1 if b > 0 else -1 for b in betas)
        if sign < 0:
            z = -z
            if float(np.float32(np.float32(rho) * np.float32(z)) * np.float32(a)) != -float(tt):
                raise _PlanFailure("sign flip changed the scaling solve")
    xmax = max(abs(x), float(np.max(np.abs(xs_other))) if xs_other.size else 0.0)
    layers, (v_val, g_val) = _block(spec, x, s_log2, sa_log2, betas, a, lam, n, xmax)
    zg = Fraction(z) * Fraction(g_val)
    if zg == 0:
        w_exact = Fraction(g) / Fraction(v_val)
        if not is_f32_exact(w_exact):
            raise _PlanFailure("the output weight g / V is not an exact float32")
        w = float(w_exact)
    else:
        w = _find_compensation(zg, g, term="z G")
    out = ((0, w), (1, z))
    plan = ActivationPlan(k=k, x=x, g=g, h=h, rho=rho, n_chain=n, layers=layers, out=out, z=z, a=a, w=w, lam=lam)
    y, dx = _simulate_at_point(spec, plan)
    if not (y == g and dx == h):
        raise _PlanFailure(f"simulation at x_k gave f={y!r}, D={dx!r}")
    _check_other_points(spec, plan, xs_other, seed_max)
    return plan


def _candidates(spec: ActivationSpec, h: float, rho: float, seed_max: float) -> list[tuple[int, int]]:
    """(t_A, t_T) exponent choices, best first: t_A = log2 of the delta at A, t_T = log2 of T."""
    if h == 0:
        return [(0, 0)]
    hl = floor_log2(h)
    rl = math.floor(math.log2(abs(rho)))
    sl = math.floor(math.log2(seed_max)) if seed_max > 0 else 0
    t_as = [min(max(hl, -100), 100)]
    t_as += [t for t in (t_as[0] - 20, t_as[0] + 20, t_as[0] - 40) if -110 <= t <= 110]
    base = max(-100, rl - 106)
    base = min(base, 100, rl - sl + 100)  # the leak rho_j z_k at other points stays finite
    t_ts = [base] + [t for t in (base + 20, base - 10, base + 40) if -116 <= t <= 110]
    if spec.name == "sigmoid":  # z v0 = z / 2 reaches the output: the smallest z first (d = 2^-124)
        low = max(-112, rl - 110)
        t_ts = [low] + [t for t in t_ts if t != low]
    return [(ta, tt) for tt in t_ts for ta in t_as]


def build_activation_construction(
    xs: np.ndarray,
    values: np.ndarray,
    grads: np.ndarray,
    phi: PhiLike,
    activation: str,
    dtype: str = "float32",
) -> ActivationConstruction:
    """Plan Claim 1's network for a smooth activation (ELU, GELU, SiLU, sigmoid, tanh).

    Parameters
    ----------
    xs, values, grads : (K,) float32 points, values g_k and AD gradients h_k.
    phi : the loss (built-in name or torch-differentiable callable).
    activation : one of ``SMOOTH_ACTIVATIONS``.
    dtype : only "float32".

    Raises
    ------
    ConstructionError
        When a condition fails, naming the points and the reason: seed zero or not finite where needed;
        a grid condition on xs (as for ReLU, plus s max|x| <= 2^100 with s = 2^8 sigma_k); a reverse-pass
        delta that could overflow at some point (bounded activations: |rho_j w_k| with w_k ~ g_k, so for
        0.5 y^2 about |g| <= 1e18; tanh also |rho_j g_k| <= F32_MAX / 8); no exact plan.
    """
    spec = _spec(activation)
    xs32, g32, h32 = _validate(xs, values, grads, dtype)
    resolve_phi(phi)
    rho = phi_seeds(phi, g32)
    problems = []
    for k in range(xs32.size):
        if not math.isfinite(float(rho[k])):
            problems.append(f"point {k} (x={float(xs32[k])!r}): seed D^AD phi(g_k={float(g32[k])!r}) is not finite")
        elif rho[k] == 0 and h32[k] != 0:
            problems.append(
                f"point {k} (x={float(xs32[k])!r}): seed D^AD phi(g_k={float(g32[k])!r}) = 0 but h_k="
                f"{float(h32[k])!r} is non-zero (unreachable)"
            )
    if problems:
        more = f" (and {len(problems) - 5} more)" if len(problems) > 5 else ""
        raise ConstructionError("; ".join(problems[:5]) + more)
    sls = point_scales(xs32) + 8  # s = 2^8 sigma_k: neighbours sit >= 4M away from every first-layer kink
    xmax = float(np.max(np.abs(xs32)))
    bad = [k for k in range(xs32.size) if xmax * pow2(int(sls[k])) > _SX_MAX]
    if bad:
        k = bad[0]
        raise ConstructionError(
            f"grid condition fails at x[{k}]={float(xs32[k])!r}: s_k max|x| = 2^{int(sls[k])} * {xmax:.3g} exceeds "
            f"2^100 (s_k = 2^8 * 4 / Delta_k; the saturating first layer needs this headroom)"
            + (f" (and {len(bad) - 1} more)" if len(bad) > 1 else "")
        )
    seed_max = float(np.max(np.abs(rho)))
    # each point with the fewest chain layers that work for it; then all points at the largest such n
    first: list[ActivationPlan | None] = []
    failures = []
    for k in range(xs32.size):
        plan, reason = _plan_point_any(spec, k, xs32, g32, h32, rho, sls, range(_n_min(spec), _N_MAX + 1), seed_max)
        first.append(plan)
        if plan is None:
            failures.append(
                f"point {k} (x={float(xs32[k])!r}, g={float(g32[k])!r}, h={float(h32[k])!r}, "
                f"seed={float(rho[k])!r}): {reason}"
            )
    if failures:
        more = f" (and {len(failures) - 5} more)" if len(failures) > 5 else ""
        raise ConstructionError(f"no exact {activation} plan found for " + "; ".join(failures[:5]) + more)
    n = max(p.n_chain for p in first if p is not None)
    plans: list[ActivationPlan] = []
    for k, p in enumerate(first):
        assert p is not None
        if p.n_chain != n:
            p, reason = _plan_point_any(spec, k, xs32, g32, h32, rho, sls, range(n, n + 1), seed_max)
            if p is None:
                raise ConstructionError(f"point {k}: no exact plan with the network's {n} chain layers: {reason}")
        plans.append(p)
    return ActivationConstruction(activation=activation, plans=plans, n_chain=n, layers=_assemble(plans))


_N_MAX = 8  # chain layers tried per point (2-4 suffice for the whole float32 range)


def _plan_point_any(spec, k, xs32, g32, h32, rho, sls, n_range, seed_max):  # type: ignore[no-untyped-def]
    """The first plan that works for point k over n in n_range and the exponent candidates."""
    x, g, h, r = float(xs32[k]), float(g32[k]), float(h32[k]), float(rho[k])
    others = np.delete(xs32, k)
    reason = ""
    for n in n_range:
        for t_a, t_t in _candidates(spec, h, r, seed_max):
            try:
                return _plan_point(spec, k, x, g, h, r, int(sls[k]), n, t_a, t_t, others, seed_max), ""
            except _PlanFailure as exc:
                reason = str(exc)
        if h == 0:
            break
    return None, reason


def _assemble(plans: list[ActivationPlan]) -> list[SparseLayer]:
    """Block-diagonal coordinate layers: point k's local unit u of layer l is global k * width_l + u."""
    k_pts = len(plans)
    n_layers = len(plans[0].layers)
    widths = [len(layer) for layer in plans[0].layers]
    if any([len(layer) for layer in p.layers] != widths for p in plans):
        raise AssertionError("blocks of different shapes")
    out: list[SparseLayer] = []
    for li in range(n_layers):
        rows, cols, vals, bias = [], [], [], np.zeros(k_pts * widths[li])
        w_in = 1 if li == 0 else widths[li - 1]
        for k, p in enumerate(plans):
            for u, (inputs, b) in enumerate(p.layers[li]):
                r = k * widths[li] + u
                bias[r] = b
                for j, w in inputs:
                    rows.append(r)
                    cols.append(j if li == 0 else k * w_in + j)
                    vals.append(w)
        n_in = 1 if li == 0 else k_pts * w_in
        out.append(
            _sparse(np.array(rows, dtype=np.int64), np.array(cols, dtype=np.int64), np.array(vals), bias, n_in, True)
        )
    rows, cols, vals = [], [], []
    for k, p in enumerate(plans):
        for j, w in p.out:
            rows.append(0)
            cols.append(k * widths[-1] + j)
            vals.append(w)
    out.append(
        _sparse(
            np.array(rows, dtype=np.int64),
            np.array(cols, dtype=np.int64),
            np.array(vals),
            np.zeros(1),
            k_pts * widths[-1],
            False,
        )
    )
    return out


def construct_activation(
    xs: np.ndarray, values: np.ndarray, grads: np.ndarray, phi: PhiLike, activation: str, dtype: str = "float32"
) -> nn.Sequential:
    """The ``nn.Sequential`` of Claim 1 for a smooth activation (see :func:`build_activation_construction`)."""
    return build_activation_construction(xs, values, grads, phi, activation, dtype).to_sequential()


# ------------------------------------------------------------------------------ reference evaluator
def layers_from_activation_sequential(net: nn.Sequential) -> tuple[list[tuple[np.ndarray, np.ndarray]], str]:
    """Weights of a Linear / activation / ... / Linear network with one smooth activation throughout.

    Raises
    ------
    TypeError
        If the network mixes activations, holds other modules, or is not float32.
    """
    if not isinstance(net, nn.Sequential):
        raise TypeError(f"expected an nn.Sequential, got {type(net).__name__}")
    layers: list[tuple[np.ndarray, np.ndarray]] = []
    names: set[str] = set()
    expect_linear = True
    for mod in net:
        if isinstance(mod, nn.Linear):
            if not expect_linear:
                raise TypeError("two nn.Linear layers in a row")
            if mod.weight.dtype != torch.float32:
                raise TypeError(f"only float32 networks are supported, got {mod.weight.dtype}")
            b = mod.bias.detach().numpy().copy() if mod.bias is not None else np.zeros(mod.out_features, np.float32)
            layers.append((mod.weight.detach().numpy().copy(), b))
            expect_linear = False
        elif type(mod) in _MODULE_NAMES:
            if expect_linear:
                raise TypeError("an activation must follow an nn.Linear")
            if isinstance(mod, nn.GELU) and mod.approximate != "none":
                raise TypeError("only nn.GELU(approximate='none') is modelled")
            if isinstance(mod, nn.ELU) and mod.alpha != 1.0:
                raise TypeError("only nn.ELU(alpha=1.0) is modelled")
            names.add(_MODULE_NAMES[type(mod)])
            expect_linear = True
        else:
            raise TypeError(f"unsupported module {type(mod).__name__}")
    if len(names) != 1 or expect_linear or not layers:
        raise TypeError("the network must be Linear, (activation, Linear)*, with one smooth activation")
    return layers, names.pop()


def reference_values_and_grads_activation(
    layers: list, xs: np.ndarray, phi: PhiLike, activation: str, *, mode: str = "dense", chunk: int = 1024
) -> tuple[np.ndarray, np.ndarray]:
    """f(x) and D^AD(phi o f)(x) under the fixed-order float32 semantics with a smooth activation.

    ``layers``: (weight, bias) pairs (from :func:`layers_from_activation_sequential`) or the coordinate
    layers of an :class:`ActivationConstruction`; the activation follows every layer but the last.
    mode "dense" adds every term left to right; "sparse" skips zero weights (same values up to the sign
    of zeros while activations and deltas are finite, which it checks).
    """
    _spec(activation)
    if mode not in ("dense", "sparse"):
        raise ValueError(f"mode must be 'dense' or 'sparse', got {mode!r}")
    mats = []
    for layer in layers:
        if isinstance(layer, SparseLayer):
            w = layer.dense() if mode == "dense" else None
            coords = (layer.rows, layer.cols, layer.vals.astype(np.float32))
            mats.append((w, coords, layer.bias.astype(np.float32), layer.n_out, layer.n_in))
        else:
            w, b = layer
            w = np.asarray(w, dtype=np.float32)
            r, c = np.nonzero(w)
            mats.append((w, (r, c, w[r, c]), np.asarray(b, dtype=np.float32), w.shape[0], w.shape[1]))
    if mats[0][4] != 1 or mats[-1][3] != 1:
        raise ValueError("the network must map one input to one output")
    plans = []
    for w, (r, c, v), b, n_out, n_in in mats:
        fwd = bwd = None
        if mode == "sparse":
            fwd = _slots(r, c, v, n_out, np.arange(n_in))
            bwd = _slots(c, r, v, n_in, np.arange(n_out))
        plans.append((w, b, fwd, bwd))
    x_all = as_array(xs, "xs", ndim=1, dtype=np.float32).reshape(-1, 1)
    values = np.empty(x_all.shape[0], dtype=np.float32)
    grads = np.empty(x_all.shape[0], dtype=np.float32)
    for start in range(0, x_all.shape[0], chunk):
        sl = slice(start, start + chunk)
        values[sl], grads[sl] = _reference_chunk(plans, x_all[sl], phi, activation, mode)
    return values, grads


def _reference_chunk(plans, x, phi, activation, mode):  # type: ignore[no-untyped-def]
    a = x
    cache = []
    with np.errstate(over="ignore", invalid="ignore", under="ignore"):
        for li, (w, b, fwd, _) in enumerate(plans):
            if mode == "dense":
                pre = _dense_forward(w, b, a, np.arange(w.shape[1]))
            else:
                if not np.all(np.isfinite(a)):
                    raise ValueError("sparse mode needs finite activations; use dense")
                pre = _sparse_sum(a, *fwd) + b[None, :]
            if li < len(plans) - 1:
                a = reference_activation(activation, pre)
                cache.append((pre, a))
            else:
                a = pre
        values = a[:, 0].copy()
        delta = phi_seeds(phi, values).reshape(-1, 1).astype(np.float32)
        for li in range(len(plans) - 1, -1, -1):
            w, _, _, bwd = plans[li]
            if li < len(plans) - 1:
                pre, y = cache[li]
                delta = reference_activation_backward(activation, pre, y, delta)
            if mode == "dense":
                delta = _dense_backward(w, delta)
            else:
                if not np.all(np.isfinite(delta)):
                    raise ValueError("sparse mode needs finite deltas; use dense")
                delta = _sparse_sum(delta, *bwd)
    return values, delta[:, 0].copy()


def verify_activation(
    net: nn.Sequential, xs: np.ndarray, values: np.ndarray, grads: np.ndarray, phi: PhiLike, *, reference: str = "auto"
) -> Verification:
    """Bitwise mismatch counts (+0 == -0) of a smooth-activation network, under torch and the reference."""
    xs32 = as_array(xs, "xs", ndim=1, dtype=np.float32)
    g32 = as_array(values, "values", ndim=1, dtype=np.float32)
    h32 = as_array(grads, "grads", ndim=1, dtype=np.float32)
    if not (xs32.size == g32.size == h32.size):
        raise ValueError(f"xs, values and grads need equal lengths, got {xs32.size}, {g32.size}, {h32.size}")
    layers, activation = layers_from_activation_sequential(net)
    if reference == "auto":
        cost = xs32.size * sum(w.size for w, _ in layers)
        reference = "dense" if cost <= 3e8 else "sparse"
    yt, dt = torch_values_and_grads(net, xs32, phi)
    yr, dr = reference_values_and_grads_activation(layers, xs32, phi, activation, mode=reference)
    return Verification(
        n_points=int(xs32.size),
        value_mismatches_torch=count_mismatches(yt, g32),
        grad_mismatches_torch=count_mismatches(dt, h32),
        value_mismatches_reference=count_mismatches(yr, g32),
        grad_mismatches_reference=count_mismatches(dr, h32),
        reference_mode=reference,
        values_torch=yt,
        grads_torch=dt,
        values_reference=yr,
        grads_reference=dr,
    )


# ------------------------------------------------------------------------------ targets
#: |g| bounds of the bounded activations (V <= 1 means |w| >= |g|, and rho_j w_k must stay finite at every
#: other point; tanh's V leaks one layer back through its weight 8): 0.5 y^2 seeds rho = g
_BOUNDED_VALUE_MAX = {("sigmoid", True): 1e17, ("tanh", True): 1e17, ("sigmoid", False): 1e38, ("tanh", False): 1e37}
#: sigmoid: z G = z / 2 reaches the output and |z| >= 2^-124 / |rho|, so it must be compensable by w
_SIGMOID_RHO_G_MIN = 2.0**-110


def activation_targets(k: int, rng: np.random.Generator, phi: PhiLike, activation: str, **kwargs) -> tuple:  # type: ignore[no-untyped-def]
    """Whole-range random targets (:func:`random_targets`) adjusted to an activation's stated conditions.

    GELU / SiLU: g rounded to a multiple of 2^(lam_min - 149) (only values below ~2^-121 change);
    sigmoid: h set to 0 where |rho g| < 2^-110 (z G could not be compensated); sigmoid / tanh: |g| bounded
    (``_BOUNDED_VALUE_MAX``).  Returns (targets, number of points whose target was adjusted).
    """
    from .data import Targets, random_targets

    spec = _spec(activation)
    if spec.bounded and "value_max" not in kwargs:
        kwargs["value_max"] = _BOUNDED_VALUE_MAX[(spec.name, phi == "half_square")]
    t = random_targets(k, rng, phi, **kwargs)
    g, h = t.values.astype(np.float32).copy(), t.grads.astype(np.float32).copy()
    changed = np.zeros(g.size, dtype=bool)
    if spec.name in _LAM_MIN and _LAM_MIN[spec.name] > -149:
        q = pow2(_LAM_MIN[spec.name] - 149)
        snapped = (np.round(g.astype(np.float64) / q) * q).astype(np.float32)
        changed |= snapped != g
        g = snapped
    rho = phi_seeds(phi, g)
    if spec.name == "sigmoid":
        bad = (h != 0) & (g != 0) & (np.abs(rho.astype(np.float64) * g.astype(np.float64)) < _SIGMOID_RHO_G_MIN)
        changed |= bad
        h[bad] = 0
    h[rho == 0] = 0
    return Targets(xs=t.xs, values=g, grads=h), int(np.count_nonzero(changed))
