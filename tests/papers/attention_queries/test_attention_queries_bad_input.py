"""Bad input gives a clear error naming the argument (issue 14); configs refuse nonsense or run to a verdict."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from icml2026.core import make_rng
from icml2026.papers import attention_queries as A
from icml2026.papers.attention_queries.studies.exact_recovery import ExactConfig
from icml2026.papers.attention_queries.studies.low_rank_recovery import LowRankConfig
from icml2026.papers.attention_queries.studies.multihead_nonidentifiable import MultiHeadConfig
from icml2026.papers.attention_queries.studies.noise_tolerance import NoiseConfig, noise_tolerance
from icml2026.papers.attention_queries.studies.one_layer_reduction import OneLayerConfig

NAN, INF = float("nan"), float("inf")


@pytest.mark.parametrize(
    "call, match",
    [
        # Before issue 14: shapes broadcast, an empty pair gave 0.0, rank 0 / max_iter 0 / tol NaN were run.
        (lambda: A.relative_error(np.zeros(3), np.zeros(4)), "shape"),
        (lambda: A.relative_error(np.zeros(3), np.zeros(1)), "shape"),
        (lambda: A.relative_error(np.array([]), np.array([])), "truth"),
        (lambda: A.relative_error(np.ones(2), np.array([NAN, 1.0])), "truth"),
        (lambda: A.factored_als(np.ones((5, 3)), np.ones((5, 3)), np.ones(5), 0), "rank"),
        (lambda: A.factored_als(np.ones((5, 3)), np.ones((5, 3)), np.ones(5), 4), "rank"),
        (lambda: A.factored_als(np.ones((5, 3)), np.ones((5, 3)), np.ones(5), 1, max_iter=0), "max_iter"),
        (lambda: A.factored_als(np.ones((5, 3)), np.ones((5, 3)), np.ones(5), 1, tol=NAN), "tol"),
        (lambda: A.factored_als(np.ones((5, 3)), np.ones((4, 3)), np.ones(5), 1), "shape"),
        (lambda: A.factored_als(np.ones((5, 3)), np.ones((5, 3)), np.full(5, NAN), 1), "y"),
        (lambda: A.factored_als(np.ones((5, 3)), np.ones((5, 3)), np.ones(4), 1), "same length"),
    ],
)
def test_functions_refuse_bad_input(call, match) -> None:
    with pytest.raises(ValueError, match=match):
        call()


def test_relative_error_of_a_failed_estimate_is_not_finite() -> None:
    # A NaN estimate must never look like a small error: it propagates, and every "< tol" check fails.
    assert np.isnan(A.relative_error(np.array([NAN, 1.0]), np.array([1.0, 1.0])))


CONFIGS = [
    (ExactConfig, ("d_min", "d_max", "scale")),
    (
        LowRankConfig,
        ("d_min", "d_max", "r_max", "cs_d", "cs_rank", "cs_n_seeds", "cs_kappa_min", "cs_kappa_max", "cs_kappa_step"),
    ),
    (NoiseConfig, ("d", "log10_tau_min", "log10_tau_max", "n_tau", "norm_bound", "n_repeats")),
    (MultiHeadConfig, ("d", "n_heads", "n_sequences", "max_len")),
    (OneLayerConfig, ("d", "n_models")),
]


@pytest.mark.parametrize("value", [-1, 10**9, NAN, INF, "x"])
@pytest.mark.parametrize("cls, fields", CONFIGS, ids=lambda c: getattr(c, "__name__", ""))
def test_configs_refuse_nonsense(cls, fields, value) -> None:
    for field in fields:
        if field.startswith("log10_tau") and value == -1:
            continue  # -1 is the largest tolerance allowed (tau = 0.1); it runs, see below
        with pytest.raises(ValueError) as info:
            dataclasses.replace(cls(), **{field: value})
        # the message starts with the field set or with the field of the violated rule between fields
        assert str(info.value).split(" ")[0].split("[")[0].rstrip(":") in {f.name for f in dataclasses.fields(cls)}


def test_largest_tolerance_runs_to_a_verdict() -> None:
    # Issue 14: log10_tau_max = -1 passed validation and then raised RuntimeError (saturated queries)
    # inside the experiment. Now a failed recovery at that tau is counted and fails a check.
    out = noise_tolerance(dataclasses.replace(NoiseConfig(), log10_tau_max=-1.0), make_rng(0))
    assert out.checks
    assert out.metrics["n_failed_recoveries"] >= 1
    assert not out.passed


def test_cross_field_rules_name_a_field() -> None:
    with pytest.raises(ValueError, match="^d_min"):
        ExactConfig(d_min=64, d_max=32)
    with pytest.raises(ValueError, match="^d_max"):
        ExactConfig(d_max=24)  # not a power of two
    with pytest.raises(ValueError, match="^cs_rank"):
        LowRankConfig(cs_d=4, cs_rank=3)
    with pytest.raises(ValueError, match="^cs_kappa_step"):
        LowRankConfig(cs_kappa_min=0.1, cs_kappa_max=20.0, cs_kappa_step=0.01)
    with pytest.raises(ValueError, match="^log10_tau_min"):
        NoiseConfig(log10_tau_min=-3.0, log10_tau_max=-4.0)
