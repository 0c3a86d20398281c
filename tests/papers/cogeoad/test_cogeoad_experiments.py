"""Registered experiments: configs refuse bad values, smoke presets are deterministic, quick presets (slow)."""

from __future__ import annotations

import dataclasses

import pytest

from icml2026.core import make_rng
from icml2026.core.registry import get_experiment
from icml2026.papers.cogeoad import AUX_CATEGORIES, TEST_CATEGORIES, assert_disjoint, make_dataset
from icml2026.papers.cogeoad.experiments import RendererConfig, ZeroShotConfig


def test_configs_reject_bad_values() -> None:
    with pytest.raises(ValueError, match="n_seeds"):
        ZeroShotConfig(n_seeds=0)
    with pytest.raises(ValueError, match="image_size"):
        ZeroShotConfig(image_size=36, patch=8)
    with pytest.raises(ValueError, match="n_test_defective"):
        ZeroShotConfig(n_test_defective=3)  # fewer than one of each of the 8 defect types
    with pytest.raises(ValueError, match="image_size"):
        RendererConfig(image_size=float("nan"))  # type: ignore[arg-type]


def test_zero_shot_split_is_disjoint() -> None:
    # criterion 5: the split itself, and the guard that refuses an overlapping one
    assert not set(AUX_CATEGORIES) & set(TEST_CATEGORIES) and len(AUX_CATEGORIES) + len(TEST_CATEGORIES) == 8
    import numpy as np

    a = make_dataset(("sphere",), 1, 0, np.random.default_rng(0), n_points=300)
    b = make_dataset(("sphere",), 1, 0, np.random.default_rng(1), n_points=300)
    with pytest.raises(ValueError, match="zero-shot"):
        assert_disjoint(a, b)


@pytest.mark.parametrize(
    "name",
    [
        "renderer",
        pytest.param("zero_shot", marks=pytest.mark.slow),
        pytest.param("view_attention", marks=pytest.mark.slow),
    ],
)
def test_smoke_presets_are_deterministic(name: str) -> None:
    exp = get_experiment(f"cogeoad.{name}")
    cfg = exp.config("smoke")
    a, b = exp(cfg, make_rng(0)), exp(cfg, make_rng(0))
    assert a.metrics == b.metrics and len(a.checks) >= 2
    c = exp(dataclasses.replace(cfg), make_rng(1))
    assert c.metrics != a.metrics


@pytest.mark.slow
def test_renderer_quick_passes() -> None:
    exp = get_experiment("cogeoad.renderer")
    out = exp(exp.config("quick"), make_rng(0))
    assert all(c.passed for c in out.checks), [(c.name, c.value, c.target) for c in out.checks if not c.passed]
