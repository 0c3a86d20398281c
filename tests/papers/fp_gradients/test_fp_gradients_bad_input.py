"""Bad input gives a ValueError naming the argument (issue 14), never a silent answer or a deep crash."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch

from icml2026.core import make_rng
from icml2026.papers import fp_gradients as F
from icml2026.papers.fp_gradients.experiments import ExactConfig, OrderConfig, SizeConfig, SolverConfig

NAN, INF = float("nan"), float("inf")
F32 = np.float32


@pytest.fixture(scope="module")
def small():
    tg = F.mild_targets(6, make_rng(0))
    return tg, F.build_construction(tg.xs, tg.values, tg.grads, "identity").to_sequential()


@pytest.mark.parametrize(
    "call, match",
    [
        # Before issue 14: broadcasting hid a (1,) target, a float K or NaN exponent crashed inside numpy,
        # a zero-gradient fraction of 2 or NaN was accepted.
        (lambda: F.count_mismatches(np.zeros(3), np.zeros(1)), "same shape"),
        (lambda: F.same_value(np.zeros(2), np.zeros(3)), "same shape"),
        (lambda: F.grid_points(1.5, make_rng(0)), "k"),
        (lambda: F.grid_points(5, make_rng(0), delta_log2=NAN), "delta_log2"),
        (lambda: F.grid_points(5, make_rng(0), delta_log2=1.5), "delta_log2"),
        (lambda: F.random_targets(1.5, make_rng(0), "identity"), "k"),
        (lambda: F.random_targets(5, make_rng(0), "identity", zero_grad_fraction=2.0), "zero_grad_fraction"),
        (lambda: F.random_targets(5, make_rng(0), "identity", zero_grad_fraction=NAN), "zero_grad_fraction"),
        (lambda: F.random_targets(5, make_rng(0), "identity", grad_log10_range=(NAN, 1.0)), "grad_log10_range"),
        (lambda: F.random_targets(5, make_rng(0), "identity", grad_log10_range=(5.0, 1.0)), "grad_log10_range"),
        (lambda: F.mild_targets(1.5, make_rng(0)), "k"),
        (lambda: F.point_scales(np.array([], dtype=F32)), "xs"),
        (lambda: F.point_scales(np.zeros((2, 2), dtype=F32)), "xs"),
        (lambda: F.point_scales(np.array([NAN, 1.0], dtype=F32)), "xs"),
        (
            lambda: F.construct_fixed_order(
                np.array([NAN, 1.0], F32), np.zeros(2, F32), np.zeros(2, F32), "identity", 1.0
            ),
            "xs",
        ),
        (
            lambda: F.construct_fixed_order(np.zeros(2, F32), np.zeros(1, F32), np.zeros(2, F32), "identity", 1.0),
            "same length",
        ),
        (
            lambda: F.construct_fixed_order(np.zeros(2, F32), np.zeros(2, F32), np.zeros(2, F32), "identity", NAN),
            "delta",
        ),
        (
            lambda: F.sobolev_fit(
                np.array([NAN, 1.0], F32), np.zeros(2, F32), np.zeros(2, F32), "identity", torch.Generator()
            ),
            "xs",
        ),
        (
            lambda: F.sobolev_fit(
                np.zeros(2, F32), np.zeros(2, F32), np.zeros(2, F32), "identity", torch.Generator(), steps=0
            ),
            "steps",
        ),
    ],
)
def test_functions_refuse_bad_input(call, match) -> None:
    with pytest.raises(ValueError, match=match):
        call()


def test_verification_refuses_nan_and_empty_points(small) -> None:
    tg, net = small
    # Before issue 14 NaN points were "verified" (6 mismatches reported) and an empty set passed with 0.
    with pytest.raises(ValueError, match="xs"):
        F.verify(net, np.full(6, NAN, dtype=F32), tg.values, tg.grads, "identity")
    with pytest.raises(ValueError, match="xs"):
        F.verify(net, np.zeros(0, F32), np.zeros(0, F32), np.zeros(0, F32), "identity")
    with pytest.raises(ValueError, match="xs"):
        F.torch_values_and_grads(net, np.array([NAN], dtype=F32), "identity")
    with pytest.raises(ValueError, match="xs"):
        F.reference_values_and_grads(F.layers_from_sequential(net), np.array([NAN], dtype=F32), "identity")


@pytest.mark.parametrize("value", [0, -1, 10**9, NAN, INF, "x"])
@pytest.mark.parametrize(
    "cfg, field",
    [
        (OrderConfig(), "k"),
        (OrderConfig(), "n_random_orders"),
        (ExactConfig(), "delta_log2"),
        (ExactConfig(), "figure_points"),
        (SolverConfig(), "n_pairs"),
    ],
)
def test_configs_refuse_nonsense(cfg, field, value) -> None:
    if field == "n_random_orders" and value == 0:
        pytest.skip("0 random orders is valid (only the fixed orders are tried)")
    if field == "delta_log2" and value in (0, -1):
        pytest.skip("Delta = 1 and 1/2 are valid grids")
    with pytest.raises(ValueError, match=f"^{field}"):
        dataclasses.replace(cfg, **{field: value})


def test_tuple_fields_are_checked_element_wise() -> None:
    with pytest.raises(ValueError, match=r"^ks\[1\]"):
        SizeConfig(ks=(10, 10**9))
    with pytest.raises(ValueError, match=r"^phis\[0\]"):
        ExactConfig(phis=("hinge",))
    with pytest.raises(ValueError, match="^seeds_per_k"):
        ExactConfig(ks=(40,), seeds_per_k=(1, 2))
