"""Registered experiments: configs refuse bad values, smoke presets are deterministic, quick presets (slow)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from icml2026.core import make_rng
from icml2026.core.registry import get_experiment
from icml2026.papers.cogeoad import AUX_CATEGORIES, TEST_CATEGORIES, assert_disjoint, make_dataset, make_object
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
def test_renderer_quick_passes_but_the_iou_bound() -> None:
    exp = get_experiment("cogeoad.renderer")
    out = exp(exp.config("quick"), make_rng(0))
    # the mask back-projection IoU misses its 0.9 at 128 px (thin defects lose a pixel rim; the card: 0.81-0.85,
    # full at 256 px 0.933); every other check, the preconditions included, passes
    rest = [c for c in out.checks if c.name != "mask_backprojection_iou"]
    assert all(c.passed for c in rest), [(c.name, c.value, c.target) for c in rest if not c.passed]


def _metrics(guard: float, geo_on_geo: float, col_on_col: float) -> dict[str, float]:
    """zero_shot's metrics with chance-level blindness (0.50), as measured at CPU scale (issue 61)."""
    return {
        "alpha_sum_error_max": 1e-7, "alpha_mean_max": 0.05, "shared_categories": 0.0,
        "cogeoad_i_auroc_colour": 0.9, "cogeoad_i_auroc_geometry": 0.9, "cogeoad_i_auroc_all": guard,
        "geometry_only_i_auroc_geometry": geo_on_geo, "colour_only_i_auroc_colour": col_on_col,
        "geometry_only_i_auroc_colour": 0.50, "colour_only_i_auroc_geometry": 0.50,
        "fusion_margin_all": 0.06, "msgcf_aupro_gain": 0.01,
    }


@pytest.mark.parametrize(
    ("guard", "geo", "col", "gated"),
    [(0.57, 0.53, 0.69, True), (0.90, 0.53, 0.90, True), (0.90, 0.90, 0.50, True), (0.90, 0.90, 0.90, False)],
)
def test_blindness_and_fusion_checks_sit_behind_detectors_that_detect(guard: float, geo: float, col: float,
                                                                      gated: bool) -> None:
    # issue 61: "blind" at 0.50 means nothing for a stream that also scores ~0.5 on what it should see, so the
    # blindness checks and the fusion comparison count only once every precondition passes: else undecided
    from icml2026.core.outcome import REPRODUCED, UNDECIDED, verdict_of
    from icml2026.papers.cogeoad.experiments import zero_shot_checks

    checks = zero_shot_checks(_metrics(guard, geo, col))
    names = {c.name for c in checks}
    compared = {"geometry_only_on_colour_defects_i_auroc", "colour_only_on_geometry_defects_i_auroc",
                "fusion_minus_best_single_i_auroc_all"}
    assert compared <= names and "msgcf_minus_last_layer_aupro" not in names  # MS-CGF gain: a metric only
    assert [c.name for c in checks if c.comparative] == ["fusion_minus_best_single_i_auroc_all"]
    pre = {c.name for c in checks if c.role == "precondition"}
    assert pre == {"guard_cogeoad_i_auroc_all", "geometry_only_on_geometry_defects_i_auroc",
                   "colour_only_on_colour_defects_i_auroc"}
    verdict = verdict_of([(c.role, c.passed) for c in checks])
    assert verdict == (UNDECIDED if gated else REPRODUCED)


def test_control_arms_plant_complementarity_and_the_null_removes_it() -> None:
    # planted: each stream gets the oracle on its own family; the fused arm (max) sees both. null: the geometry
    # stream gets none, so the fused arm sees only what the colour stream sees.

    from types import SimpleNamespace
    from typing import Any

    from icml2026.papers.cogeoad.experiments import ORACLE_SHARE, _control_arms, _scores_metrics

    rng = np.random.default_rng(0)
    kinds = [None] * 20 + ["stain", "dent", "spot", "bump", "discolour", "hole", "crack", "mixed"] * 5
    objs = [make_object("cone", np.random.default_rng(100 + i), k, n_points=400) for i, k in enumerate(kinds)]
    test: Any = [SimpleNamespace(cloud=o) for o in objs]  # only .cloud is read
    base = {n: [rng.uniform(0, 0.5, o.n_points) for o in objs] for n in ("colour_only", "geometry_only")}
    res = {}
    for control in ("planted", "null"):
        arms = _control_arms(base, test, control, np.random.default_rng(1), 0.02)
        res[control] = {n: _scores_metrics(test, *arms[n]) for n in arms}
    p, n = res["planted"], res["null"]
    assert 0.5 + ORACLE_SHARE / 2 - 0.2 < p["geometry_only"]["i_auroc_geometry"]
    assert p["cogeoad"]["i_auroc_all"] - max(p["colour_only"]["i_auroc_all"], p["geometry_only"]["i_auroc_all"]) > 0.1
    assert n["colour_only"]["i_auroc_all"] == p["colour_only"]["i_auroc_all"]  # the same colour oracle
    assert n["cogeoad"]["i_auroc_all"] - max(n["colour_only"]["i_auroc_all"], n["geometry_only"]["i_auroc_all"]) < 0.05
