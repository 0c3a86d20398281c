"""Claim 2 (issue 27): one network, several losses, every gradient target exact (or a clear refusal)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from icml2026.core import make_rng
from icml2026.core.registry import get_experiment
from icml2026.papers.fp_gradients import (
    ConstructionError,
    build_multi_construction,
    construct_multi,
    impose_necessary_conditions,
    random_multi_targets,
    selector,
    verify,
)
from icml2026.papers.fp_gradients.losses import phi_seeds

PHIS = ("identity", "half_square", "softplus")


def _mismatches(net, xs, g, h, phis) -> int:  # type: ignore[no-untyped-def]
    return sum(verify(net, xs, g, h[i], phi).total for i, phi in enumerate(phis))


def test_three_losses_exact_on_whole_range_targets() -> None:
    tg = random_multi_targets(10, np.random.default_rng(0), PHIS)
    con = build_multi_construction(tg.xs, tg.values, tg.grads, PHIS)
    assert _mismatches(con.to_sequential(), tg.xs, tg.values, tg.grads, PHIS) == 0
    # the case is not degenerate: some point needs two or more separate channels
    assert max(len(p.channels) for p in con.plans) >= 2


def test_power_of_two_seeds_are_separated() -> None:
    # identity seeds 1.0, softplus at g = 0 seeds 0.5: float products are scale-invariant, so only the
    # subnormal-range selectors can tell them apart
    xs = np.array([0.0, 1.0], dtype=np.float32)
    g = np.array([0.0, 0.0], dtype=np.float32)
    h = np.array([[3.0, -1e-30], [-7.25, 2e30]], dtype=np.float32)
    phis = ("identity", "softplus")
    assert list(phi_seeds("softplus", g)) == [0.5, 0.5]
    net = construct_multi(xs, g, h, phis)
    assert _mismatches(net, xs, g, h, phis) == 0


def test_selector_vanishes_exactly_at_the_other_seeds() -> None:
    tg = random_multi_targets(8, np.random.default_rng(3), PHIS)
    con = build_multi_construction(tg.xs, tg.values, tg.grads, PHIS)
    checked = 0
    for plan in con.plans:
        for ch in plan.channels:
            others = {abs(r) for r in plan.seeds if r != 0 and abs(r) != ch.seed}
            assert selector(ch.seed, ch.w1, ch.w2, ch.v1, ch.v2) == ch.sel != 0
            for r in others:
                assert selector(r, ch.w1, ch.w2, ch.v1, ch.v2) == 0
                checked += 1
    assert checked > 0


def test_deterministic() -> None:
    tg = random_multi_targets(6, np.random.default_rng(1), PHIS)
    a = build_multi_construction(tg.xs, tg.values, tg.grads, PHIS)
    b = build_multi_construction(tg.xs, tg.values, tg.grads, PHIS)
    assert len(a.layers) == len(b.layers)
    for la, lb in zip(a.layers, b.layers, strict=True):
        assert np.array_equal(la.rows, lb.rows) and np.array_equal(la.cols, lb.cols)
        assert np.array_equal(la.vals.view(np.uint32), lb.vals.view(np.uint32))
        assert np.array_equal(la.bias.view(np.uint32), lb.bias.view(np.uint32))


def test_equal_seeds_need_equal_targets() -> None:
    # identity and 0.5 y^2 both seed 1.0 at g = 1: no float network can give them different gradients
    xs = np.array([0.0, 1.0], dtype=np.float32)
    g = np.array([1.0, 2.0], dtype=np.float32)
    h = np.array([[1.0, 1.0], [2.0, 1.0]], dtype=np.float32)
    with pytest.raises(ConstructionError, match=r"point 0 .*'identity'.*equal seeds need equal targets"):
        construct_multi(xs, g, h, ("identity", "half_square"))
    h[1, 0] = 1.0  # equal targets: fine
    net = construct_multi(xs, g, h, ("identity", "half_square"))
    assert _mismatches(net, xs, g, h, ("identity", "half_square")) == 0


def test_opposite_seeds_need_opposite_targets() -> None:
    xs = np.array([0.0], dtype=np.float32)
    g = np.array([-1.0], dtype=np.float32)  # identity seeds 1, 0.5 y^2 seeds -1
    with pytest.raises(ConstructionError, match="opposite seeds"):
        construct_multi(xs, g, np.array([[2.0], [2.0]], dtype=np.float32), ("identity", "half_square"))
    h = np.array([[2.0], [-2.0]], dtype=np.float32)
    net = construct_multi(xs, g, h, ("identity", "half_square"))
    assert _mismatches(net, xs, g, h, ("identity", "half_square")) == 0


def test_zero_seed_needs_zero_target() -> None:
    xs = np.array([0.0, 1.0], dtype=np.float32)
    g = np.array([-200.0, 1.0], dtype=np.float32)  # softplus seed underflows to 0 at g = -200
    h = np.array([[1.0, 1.0], [1e-3, 0.0]], dtype=np.float32)
    with pytest.raises(ConstructionError, match=r"point 0 .*'softplus'.*seed D\^AD phi\(g\) = 0"):
        construct_multi(xs, g, h, ("identity", "softplus"))


@pytest.mark.parametrize(
    ("grads", "phis", "match"),
    [
        (np.zeros(2), PHIS, r"grads must have shape \(n_phi, K\)"),
        (np.zeros((2, 2)), PHIS, r"grads must have shape \(n_phi, K\) = \(3, 2\)"),
        (np.zeros((0, 2)), (), "at least one loss"),
        (np.array([[0.0, np.nan]]), ("identity",), r"grads\[0\]\[1\]=.*nan.* is not finite"),
        (np.zeros((1, 2)), ("hinge",), "unknown phi 'hinge'"),
    ],
)
def test_bad_input_is_refused(grads, phis, match) -> None:  # type: ignore[no-untyped-def]
    xs = np.array([0.0, 1.0], dtype=np.float32)
    g = np.array([1.0, 2.0], dtype=np.float32)
    with pytest.raises(ValueError, match=match):
        construct_multi(xs, g, grads, phis)


def test_bad_phis_and_activation() -> None:
    xs = np.array([0.0], dtype=np.float32)
    g = np.array([1.0], dtype=np.float32)
    with pytest.raises(ValueError, match="phis must be a sequence|^phis: "):
        construct_multi(xs, g, np.zeros((1, 1)), "identity")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="ReLU networks only|not implemented"):
        construct_multi(xs, g, np.zeros((1, 1)), ("identity",), activation="tanh")
    with pytest.raises(ValueError, match="not a float32 value"):
        construct_multi(xs, g, np.array([[0.1]]), ("identity",))  # 0.1 as float64 is not a float32


def test_multi_loss_smoke_preset() -> None:
    exp = get_experiment("fp_gradients.multi_loss")
    out = exp(exp.config("smoke"), make_rng(0))
    assert out.passed, [(c.name, c.value, c.target) for c in out.checks]
    assert out.metrics["total_points"] == 6


@pytest.mark.slow
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_multi_loss_quick_preset(seed: int) -> None:
    exp = get_experiment("fp_gradients.multi_loss")
    out = exp(exp.config("quick"), make_rng(seed))
    assert out.passed, [(c.name, c.value, c.target) for c in out.checks]
    assert out.metrics["total_points"] == 40 and out.metrics["total_refused"] == 0


_F32 = st.floats(width=32, allow_nan=False, allow_infinity=False)


@settings(max_examples=12, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(g=st.lists(_F32, min_size=2, max_size=2), h=st.lists(_F32, min_size=6, max_size=6))
def test_whole_range_targets_are_exact_or_refused_with_a_reason(g: list[float], h: list[float]) -> None:
    """Property (issue 27): any float32 targets, 3 losses: exact everywhere, or ConstructionError."""
    xs = np.array([-1.0, 2.0], dtype=np.float32)
    g32 = np.array(g, dtype=np.float32)
    h32 = np.array(h, dtype=np.float32).reshape(3, 2)
    try:
        net = construct_multi(xs, g32, h32, PHIS)
    except ConstructionError as exc:
        msg = str(exc)
        assert "point" in msg and ("loss" in msg or "losses" in msg or "grid" in msg), msg
        return
    assert _mismatches(net, xs, g32, h32, PHIS) == 0


@settings(max_examples=12, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(g=st.lists(_F32, min_size=2, max_size=2), h=st.lists(_F32, min_size=6, max_size=6))
def test_whole_range_targets_meeting_the_necessary_conditions(g: list[float], h: list[float]) -> None:
    """The same, with the conditions every float network obeys imposed: refusals name our own condition."""
    xs = np.array([-1.0, 2.0], dtype=np.float32)
    g32 = np.array(g, dtype=np.float32)
    h32, _, _ = impose_necessary_conditions(g32, np.array(h, dtype=np.float32).reshape(3, 2), PHIS)
    try:
        net = construct_multi(xs, g32, h32, PHIS)
    except ConstructionError as exc:
        msg = str(exc)
        assert "point" in msg and "losses" in msg, msg
        assert "need equal targets" not in msg and "every float network" not in msg, msg
        return
    assert _mismatches(net, xs, g32, h32, PHIS) == 0


def test_point_without_channels_is_padded_to_the_network_depth() -> None:
    # point 0 has only zero targets (no channel), point 1 needs deep channels: one depth for both
    xs = np.array([0.0, 1.0], dtype=np.float32)
    g = np.array([2.5, 0.75], dtype=np.float32)
    h = np.array([[0.0, 3e38], [0.0, -1e-44]], dtype=np.float32)
    phis = ("identity", "softplus")
    con = build_multi_construction(xs, g, h, phis)
    assert con.n_x + con.n_y > 0 and not con.plans[0].channels
    assert _mismatches(con.to_sequential(), xs, g, h, phis) == 0
