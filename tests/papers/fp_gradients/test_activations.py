"""Issue 27: Claim 1 for ELU, GELU, SiLU, sigmoid and tanh (torch's modules), and the regimes it relies on."""

import math

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from icml2026.papers.fp_gradients import ConstructionError, construct
from icml2026.papers.fp_gradients.activations import (
    ACTIVATION_SPECS,
    SMOOTH_ACTIVATIONS,
    activation_targets,
    build_activation_construction,
    reference_activation,
    reference_activation_backward,
    reference_values_and_grads_activation,
    verify_activation,
)

torch.set_num_threads(1)
torch.set_flush_denormal(False)
F32 = np.float32
PHIS = ("identity", "half_square", "softplus")


def _regime_points(spec):
    """Pre-activations in each regime the construction uses, with the value and slope expected there."""
    big = F32(2.0**120)
    rows = [(0.0, spec.v0, spec.d0), (-0.0, spec.v0, spec.d0)]
    for p in np.geomspace(spec.off_neg, float(big), 40).astype(F32):
        rows.append((-float(p), spec.c_minus, 0.0))
    if spec.sat_pos is not None:
        for p in np.geomspace(spec.sat_pos, float(big), 40).astype(F32):
            rows.append((float(p), 1.0, 0.0))
    if spec.lin_min is not None:
        lo = max(spec.lin_min, 2.0**-120)
        for p in np.geomspace(lo, float(big), 40).astype(F32):
            rows.append((float(p), float(p), 1.0))
    return rows


@pytest.mark.parametrize("activation", SMOOTH_ACTIVATIONS)
def test_reference_equals_torch_on_every_regime(activation):
    # the construction keeps every value-carrying pre-activation in these regimes; here torch (scalar and
    # vectorised kernels: sizes 1, 7, 64 and more) and the numpy reference must both give the regime's
    # exact value and slope, bit for bit
    spec = ACTIVATION_SPECS[activation]
    rows = _regime_points(spec)
    p = np.array([r[0] for r in rows], F32)
    want_y = np.array([r[1] for r in rows], F32)
    want_s = np.array([r[2] for r in rows], F32)
    grad = np.float32(1.5)
    for size in (1, 7, 64, p.size):
        for start in range(0, p.size, size):
            pp = p[start : start + size]
            t = torch.tensor(pp, requires_grad=True)
            y = spec.module()(t)
            (g,) = torch.autograd.grad(y, t, torch.full_like(y, float(grad)))
            yt, gt = y.detach().numpy(), g.numpy()
            sl = slice(start, start + size)
            assert np.array_equal(yt, want_y[sl]) or np.all(yt == want_y[sl]), (activation, pp, yt)
            assert np.all(gt == grad * want_s[sl]), (activation, pp, gt)
    yr = reference_activation(activation, p)
    gr = reference_activation_backward(activation, p, yr, np.full_like(p, grad))
    assert np.all(yr == want_y) and np.all(gr == grad * want_s)


@pytest.mark.parametrize("activation", SMOOTH_ACTIVATIONS)
def test_reference_backward_turns_inf_times_zero_slope_into_nan_like_torch(activation):
    # why the planner bounds every reverse-pass delta: torch multiplies by the slope (ReLU masks)
    spec = ACTIVATION_SPECS[activation]
    p = np.array([-1e6], F32)
    t = torch.tensor(p, requires_grad=True)
    y = spec.module()(t)
    (g,) = torch.autograd.grad(y, t, torch.full_like(y, math.inf))
    ref = reference_activation_backward(activation, p, reference_activation(activation, p), np.array([np.inf], F32))
    assert np.isnan(g.numpy()[0]) and np.isnan(ref[0])


@pytest.mark.parametrize("activation", SMOOTH_ACTIVATIONS)
@pytest.mark.parametrize("phi", PHIS)
def test_exact_on_whole_range_targets(activation, phi):
    tg, _ = activation_targets(10, np.random.default_rng(7), phi, activation)
    net = construct(tg.xs, tg.values, tg.grads, phi, activation=activation)
    assert any(isinstance(m, type(ACTIVATION_SPECS[activation].module())) for m in net)
    ver = verify_activation(net, tg.xs, tg.values, tg.grads, phi)
    assert ver.ok, (ver.value_mismatches_torch, ver.grad_mismatches_torch, ver.value_mismatches_reference,
                    ver.grad_mismatches_reference)  # fmt: skip


def test_sparse_reference_equals_dense_and_a_changed_weight_is_caught():
    tg, _ = activation_targets(6, np.random.default_rng(3), "identity", "gelu")
    con = build_activation_construction(tg.xs, tg.values, tg.grads, "identity", "gelu")
    yd, dd = reference_values_and_grads_activation(con.layers, tg.xs, "identity", "gelu", mode="dense")
    ys, ds = reference_values_and_grads_activation(con.layers, tg.xs, "identity", "gelu", mode="sparse")
    assert np.array_equal(yd, ys) and np.all((dd == ds) | ((dd == 0) & (ds == 0)))
    net = con.to_sequential()
    with torch.no_grad():  # the check can fail: one output weight one ulp off
        w = net[-1].weight
        i = int(torch.nonzero(w[0])[0, 0])
        w[0, i] = float(np.nextafter(F32(w[0, i].item()), F32(np.inf)))
    assert verify_activation(net, tg.xs, tg.values, tg.grads, "identity").total > 0


_FINITE = st.integers(0, 2**32 - 1).map(lambda b: float(np.array([b], np.uint32).view(F32)[0])).filter(math.isfinite)


@pytest.mark.parametrize("activation", SMOOTH_ACTIVATIONS)
@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(g=st.lists(_FINITE, min_size=3, max_size=3), h=st.lists(_FINITE, min_size=3, max_size=3))
def test_property_whole_float32_range_exact_or_refused(activation, g, h):
    # targets from all float32 bit patterns (subnormals, zero, up to 3.4e38): exact, or ConstructionError
    xs = np.array([-1.0, 0.25, 3.0], F32)
    g32, h32 = np.array(g, F32), np.array(h, F32)
    for phi in ("identity", "half_square"):
        try:
            con = build_activation_construction(xs, g32, h32, phi, activation)
        except ConstructionError as exc:
            assert str(exc)
            continue
        assert verify_activation(con.to_sequential(), xs, g32, h32, phi).ok


def test_stated_conditions_are_refused_with_the_reason():
    xs = np.array([0.0, 1.0], F32)
    tiny = float(F32(1e-45))  # lowest bit 2^-149: GELU/SiLU's value unit V >= 16 cannot give it
    with pytest.raises(ConstructionError, match="lowest set bit"):
        build_activation_construction(xs, np.array([tiny, 0], F32), np.array([1.0, 0], F32), "identity", "gelu")
    # ELU scales its value unit freely: the same target is exact
    con = build_activation_construction(xs, np.array([tiny, 0], F32), np.array([1.0, 0], F32), "identity", "elu")
    assert verify_activation(con.to_sequential(), xs, np.array([tiny, 0], F32), np.array([1.0, 0], F32), "identity").ok
    # sigmoid / tanh: V <= 1, so rho_j * g_k must stay finite (0.5 y^2 with |g| = 1e30)
    with pytest.raises(ConstructionError, match="overflow"):
        build_activation_construction(xs, np.array([1e30, 1e30], F32), np.array([1.0, 1.0], F32), "half_square", "tanh")
    # sigmoid: z G = z / 2 reaches the output; with g tiny next to it no w compensates
    with pytest.raises(ConstructionError, match="fl\\(z G \\+ w\\)"):
        build_activation_construction(xs, np.array([1e-40, 1.0], F32), np.array([1.0, 1.0], F32), "identity", "sigmoid")
    with pytest.raises(ConstructionError, match="seed"):
        build_activation_construction(xs, np.array([-200.0, 1.0], F32), np.array([1.0, 1.0], F32), "softplus", "tanh")


def test_bad_inputs():
    xs = np.array([0.0, 1.0], F32)
    with pytest.raises(ValueError, match="unknown activation"):
        build_activation_construction(xs, xs, xs, "identity", "swish2")
    with pytest.raises(ValueError, match="float16"):
        construct(xs, xs, xs, "identity", dtype="float16", activation="tanh")
    with pytest.raises(ValueError, match="vector inputs"):
        construct(np.zeros((2, 2), F32), xs, np.zeros((2, 2), F32), "identity", activation="elu")
    with pytest.raises(ValueError, match="not finite"):
        construct(xs, np.array([np.nan, 0], F32), xs, "identity", activation="silu")
    with pytest.raises(ValueError, match="build_activation_construction"):
        from icml2026.papers.fp_gradients import build_construction

        build_construction(xs, xs, xs, "identity", activation="elu")
    mixed = torch.nn.Sequential(torch.nn.Linear(1, 2), torch.nn.Tanh(), torch.nn.Linear(2, 2), torch.nn.ELU(),
                                torch.nn.Linear(2, 1))  # fmt: skip
    with pytest.raises(TypeError, match="one smooth activation"):
        verify_activation(mixed, xs, xs, xs, "identity")
    with pytest.raises(ValueError, match="mode"):
        reference_values_and_grads_activation([], xs, "identity", "tanh", mode="fast")
