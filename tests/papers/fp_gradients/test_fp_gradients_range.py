"""Issue 27: the whole float32 range -- tiny and subnormal gradients, huge values, extreme inputs.

Each test reproduces one measurement of the issue on the code before the fix (numbers in the comments)
and now requires: exact (0 mismatches, torch and reference) or a ConstructionError with the reason; never
an AssertionError, an OverflowError or an infinite weight.
"""

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from icml2026.papers.fp_gradients import (
    ConstructionError,
    build_construction,
    phi_seeds,
    random_targets,
    verify,
)

torch.set_num_threads(1)
torch.set_flush_denormal(False)

F32 = np.float32


def _exact(xs, g, h, phi):
    con = build_construction(xs, g, h, phi)
    for layer in con.layers:
        assert np.all(np.isfinite(layer.vals)) and np.all(np.isfinite(layer.bias))
    ver = verify(con.to_sequential(), xs, g, h, phi)
    assert ver.ok, (
        ver.value_mismatches_torch,
        ver.grad_mismatches_torch,
        ver.value_mismatches_reference,
        ver.grad_mismatches_reference,
    )
    return con


def _log_uniform(rng, lo, hi, n):
    # float32 magnitudes 2^e, e uniform in [lo, hi], random mantissa bits and sign (subnormals included)
    e = rng.uniform(lo, hi, size=n)
    return (rng.choice([-1.0, 1.0], size=n) * np.exp2(e)).astype(F32)


@pytest.mark.parametrize(
    "lo, hi, phi",
    [
        (-149, -126, "identity"),  # before: 28/40 ConstructionError (subnormal h)
        (-126, -120, "identity"),  # before: 8/40
        (np.log2(1e-45), np.log2(1e-38), "softplus"),  # before: 54/60
    ],
)
def test_tiny_and_subnormal_gradient_targets(lo, hi, phi):
    # 24 points on a grid of spacing 1 (sigma = 4: the last backward product used to scale a subnormal
    # delta *up* by 4, losing its 2 low bits); one construction covers them all.
    rng = np.random.default_rng(27)
    xs = np.arange(24, dtype=F32)
    g = np.linspace(-3, 3, 24).astype(F32)
    h = _log_uniform(rng, lo, hi, 24)
    assert np.all(h != 0) and (lo >= -126 or np.any(np.abs(h) < 2.0**-126))
    _exact(xs, g, h, phi)


def test_gradient_2e_38_identity():
    # before: ConstructionError ("simulation gave D=1.99999987e-38")
    _exact(np.array([0.0, 1.0], F32), np.ones(2, F32), np.array([2e-38, 1.0], F32), "identity")


def test_half_square_huge_values():
    # before: 31/60 "not exact in float32" for |g| in 1e18..3e38, h ~ 1 (here the part up to 1e37)
    rng = np.random.default_rng(28)
    k = 30
    g = (rng.choice([-1.0, 1.0], k) * 10 ** rng.uniform(18, 37, k)).astype(F32)
    h = (rng.choice([-1.0, 1.0], k) * rng.uniform(0.5, 2, k)).astype(F32)
    con = _exact(np.arange(k, dtype=F32), g, h, "half_square")
    assert con.split_value  # rho g beyond 2^100: the second value chain carries the constants


@pytest.mark.parametrize("xs", [[0.0, 1e-40], [1e-38, 2e-38]])
def test_subnormal_inputs_are_refused_with_the_reason(xs):
    # before: AssertionError "a planned weight is not a float32 value"
    with pytest.raises(ConstructionError, match="sigma_k"):
        build_construction(np.array(xs, F32), np.ones(2, F32), np.ones(2, F32), "identity")


def test_huge_inputs_exact_with_finite_weights():
    # before: OverflowError / an infinite weight cast with a RuntimeWarning
    xs = np.array([3e38, -3e38], F32)
    _exact(xs, np.array([1.0, -2.0], F32), np.array([3.0, 1e-30], F32), "identity")


def test_random_targets_span_the_whole_range():
    tg = random_targets(400, np.random.default_rng(0), "softplus", zero_unreachable=False)
    a = np.abs(tg.grads[tg.grads != 0])
    assert a.min() < 2.0**-126 and a.max() > 1e30  # subnormal and huge gradient targets
    assert np.max(np.abs(tg.values)) > 1e38 and np.any((tg.values != 0) & (np.abs(tg.values) < 2.0**-126))
    rho = phi_seeds("softplus", tg.values)
    assert np.any((rho == 0) & (tg.grads != 0))  # zero seeds with h != 0 are kept when asked ...
    with pytest.raises(ConstructionError, match="seed"):  # ... and refused by the constructor
        build_construction(tg.xs, tg.values, tg.grads, "softplus")


def _f32(bits: int) -> float:
    return float(np.array([bits], dtype=np.uint32).view(F32)[0])


finite_f32 = st.integers(0, 2**32 - 1).map(_f32).filter(np.isfinite)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    g=st.lists(finite_f32, min_size=3, max_size=3),
    h=st.lists(finite_f32, min_size=3, max_size=3),
    phi=st.sampled_from(["identity", "half_square", "softplus"]),
)
def test_property_whole_range_exact_or_construction_error(g, h, phi):
    # Any finite float32 targets (random bit patterns: subnormals, zero, up to 3.4e38): exact, or a
    # ConstructionError that names the point and the condition; no other exception.
    xs = np.array([-1.0, 0.0, 0.5], F32)
    g32, h32 = np.array(g, F32), np.array(h, F32)
    try:
        con = build_construction(xs, g32, h32, phi)
    except ConstructionError as exc:
        assert "point" in str(exc) or "x[" in str(exc)
        return
    ver = verify(con.to_sequential(), xs, g32, h32, phi)
    assert ver.ok


def test_no_check_puts_a_brief_or_prototype_figure_in_the_paper_column():
    # before: the card's paper column held "0 of 20,000 (brief's prototype)"; checks held brief wording
    import ast
    import pathlib

    import icml2026.papers.fp_gradients as pkg

    root = pathlib.Path(pkg.__file__).parent
    papers = []
    for path in root.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.keyword) and node.arg == "paper" and isinstance(node.value, ast.Constant):
                papers.append(str(node.value.value))
    assert papers
    for text in papers:
        low = text.lower()
        assert not any(word in low for word in ("brief", "prototype", "ours", "our ")), text
    card = (root / "README.md").read_text().lower()
    assert "prototype)" not in card and "brief's prototype" not in card


@pytest.mark.parametrize("activation", ["elu", "gelu", "silu", "sigmoid", "tanh"])
def test_other_activations_are_built_by_construct(activation):
    # issue 27: construct(..., activation=...) builds the five smooth activations (activations.py)
    from icml2026.papers.fp_gradients import construct
    from icml2026.papers.fp_gradients.activations import ACTIVATION_SPECS, verify_activation

    xs = np.array([0.0, 1.0], F32)
    net = construct(xs, xs, xs, "identity", activation=activation)
    assert any(isinstance(m, type(ACTIVATION_SPECS[activation].module())) for m in net)
    assert verify_activation(net, xs, xs, xs, "identity").ok
    with pytest.raises(ValueError, match="unknown activation"):
        construct(xs, xs, xs, "identity", activation="swish2")
    assert isinstance(construct(xs, xs, xs, "identity", activation="relu"), torch.nn.Sequential)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_half_formats_are_refused_with_the_reason(dtype):
    xs = np.array([0.0, 1.0], F32)
    with pytest.raises(ValueError, match="format-generic planner"):
        build_construction(xs, xs, xs, "identity", dtype=dtype)
