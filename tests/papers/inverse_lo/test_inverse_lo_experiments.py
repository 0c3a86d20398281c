"""Registered experiments: quick presets pass, tiny configs are deterministic, bad configs are refused."""

from __future__ import annotations

import dataclasses

import pytest

from icml2026.core import make_rng
from icml2026.core.registry import get_experiment

NAMES = ["finite_regret", "wrong_vs_d", "corruption", "gap_sweep", "notebook_segment", "lower_bound"]

TINY = {
    "finite_regret": dict(
        d=6,
        n_rounds=100,
        n_seeds=2,
        envs=("uniform",),
        learners=("centroid", "ons", "cp"),
        cp_samples_per_dim=100,
    ),
    "wrong_vs_d": dict(dims=(4, 6), n_rounds=150, n_seeds=2),
    "corruption": dict(d=6, n_rounds=100, n_seeds=1, corruptions=(0, 2), with_ons=False),
    "gap_sweep": dict(d=6, n_rounds=100, n_seeds=1, deltas=(1.0, 1e-3)),
    "notebook_segment": dict(n_rounds=300, n_trials=2, cp_samples_per_dim=200),
    "lower_bound": dict(dims=(4, 6), n_tail=30, n_seeds=2, cp_samples_per_dim=100),
}


@pytest.mark.parametrize("name", NAMES)
def test_tiny_config_is_deterministic_and_seed_dependent(name):
    exp = get_experiment(f"inverse_lo.{name}")
    cfg = dataclasses.replace(exp.config("quick"), **TINY[name])
    a, b, c = exp(cfg, make_rng(0)), exp(cfg, make_rng(0)), exp(cfg, make_rng(1))
    assert a.metrics == b.metrics
    assert a.metrics != c.metrics
    assert a.checks and a.figures


@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
def test_quick_preset_passes(name):
    exp = get_experiment(f"inverse_lo.{name}")
    out = exp(exp.config("quick"), make_rng(0))
    assert out.passed, [c for c in out.checks if not c.passed]


@pytest.mark.parametrize(
    ("name", "bad"),
    [
        ("finite_regret", dict(d=1)),
        ("finite_regret", dict(envs=("cube",))),
        ("finite_regret", dict(learners=("ons",))),
        ("wrong_vs_d", dict(dims=(4, 19))),
        ("corruption", dict(corruptions=(-1,))),
        ("corruption", dict(corruption="noise")),
        ("gap_sweep", dict(deltas=(0.0,))),
        ("notebook_segment", dict(n_rounds=10)),
        ("lower_bound", dict(learners=("ons",))),
        ("lower_bound", dict(dims=(1, 4))),
        ("lower_bound", dict(n_tail=-1)),
    ],
)
def test_bad_config_raises_value_error(name, bad):
    exp = get_experiment(f"inverse_lo.{name}")
    with pytest.raises(ValueError):
        dataclasses.replace(exp.config("quick"), **bad)
