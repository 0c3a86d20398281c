"""The brief's full grid in one run (``attention_hijacking.grid``): its jobs, its aggregation and its config."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from icml2026.papers.attention_hijacking.method import AttackResult  # noqa: E402
from icml2026.papers.attention_hijacking.studies._common import _lcb  # noqa: E402
from icml2026.papers.attention_hijacking.studies.grid import (  # noqa: E402
    _GRID_SETS,
    GridConfig,
    _grid_metrics,
    _grid_rank,
)


def _r(cta: float, attention: float = 0.5, seg_kl: float = 0.02) -> AttackResult:
    return AttackResult(cta, 1.0, 0.0, 0.0, attention, 0.1, seg_kl, 0.0, 0, {}, 0.1, 1.0, cta)


def test_grid_metrics_pair_each_seed_with_its_own_clean_dd_and_ablations():
    # Fails if a seed's AH were compared with another seed's clean DD or ablation (the bounds use the spread of
    # the paired differences, which is 0 here only when the pairing is right).
    found = {"clean": [_r(0.50), _r(0.60), _r(0.70)],
             "ah": [_r(0.52, 0.9, 0.01), _r(0.62, 0.8, 0.02), _r(0.72, 0.7, 0.03)],
             "no_hijack": [_r(0.5, 0.4), _r(0.5, 0.3), _r(0.5, 0.2)],
             "no_seg": [_r(0.5, seg_kl=0.05), _r(0.5, seg_kl=0.06), _r(0.5, seg_kl=0.07)]}
    m, per = _grid_metrics(found)
    np.testing.assert_allclose(per["ah_cta_gain"], [0.02, 0.02, 0.02], atol=1e-12)
    np.testing.assert_allclose(per["hijack_effect"], [0.5, 0.5, 0.5], atol=1e-12)
    np.testing.assert_allclose(per["seg_effect"], [0.04, 0.04, 0.04], atol=1e-12)
    assert m["ah_cta_gain"] == pytest.approx(0.02)
    assert m["hijack_effect_lcb"] == pytest.approx(0.5) and m["seg_effect_lcb"] == pytest.approx(0.04)
    assert m["clean_cta_min"] == pytest.approx(0.5) and m["clean_cta_max"] == pytest.approx(0.7)
    # reversed seeds of the ablation: the effect varies, so the bound drops below the mean
    m2, per2 = _grid_metrics({**found, "no_hijack": found["no_hijack"][::-1]})
    np.testing.assert_allclose(per2["hijack_effect"], [0.7, 0.5, 0.3], atol=1e-12)
    assert m2["hijack_effect_lcb"] == pytest.approx(_lcb(per2["hijack_effect"]))
    assert m2["hijack_effect_lcb"] < m2["hijack_effect"] - 0.1


def test_grid_metrics_without_the_ablations_have_no_ablation_bounds():
    m, _ = _grid_metrics({"clean": [_r(0.5)], "ah": [_r(0.6)]})
    assert "hijack_effect_lcb" not in m and m["ah_cta_gain"] == pytest.approx(0.1)
    assert math.isclose(m["ah_cta"], 0.6)


def test_longest_jobs_enter_the_pool_first():
    keys = [("tiny", 0, "clean"), ("tiny", 0, "cf", "naive"), ("minilm", 0, "clean"), ("tiny", 1, "film", "ah"),
            ("tiny", 0, "cf", "tbadd"), ("minilm", 0, "cf", "ah"), ("tiny", 0, "also", "no_seg"),
            ("tiny", 2, "cf", "no_hijack")]
    order = [k for k, *_ in sorted(((k, None, ()) for k in keys), key=_grid_rank)]
    assert order == [("minilm", 0, "cf", "ah"), ("minilm", 0, "clean"), ("tiny", 1, "film", "ah"),
                     ("tiny", 2, "cf", "no_hijack"), ("tiny", 0, "also", "no_seg"), ("tiny", 0, "cf", "tbadd"),
                     ("tiny", 0, "cf", "naive"), ("tiny", 0, "clean")]
    assert set(_GRID_SETS) == {"ah", "no_hijack", "no_seg", "naive", "tbadd"}


def test_grid_config_rejects_bad_values():
    with pytest.raises(ValueError, match="minilm_steps"):
        GridConfig(minilm_steps=-1)
    with pytest.raises(ValueError, match="workers"):
        GridConfig(workers=2, device="cuda")
    assert GridConfig().minilm_steps == 300  # the brief's 300-600 MiniLM steps, at its low end


@pytest.mark.slow  # runs the smoke preset (over 5 s on 2 shared cores)
def test_grid_runs_every_set_and_gives_the_same_numbers_in_two_processes(smoke_in_1_and_2_workers):
    # Fails if a job drew from another job's stream (the pool's order would then matter), if a result were put
    # back under the wrong (learner, seed, trigger, set), or if the shared clean DD were missing for a trigger.
    one = smoke_in_1_and_2_workers("grid", 5, minilm_steps=1)
    rows = one["tables"]["per_set"]
    tiny = {(r["trigger"], r["seed"], r["set"]) for r in rows if r["arch"] == "bert-tiny"}
    assert tiny == {(t, s, n) for t in ("film", "also", "cf") for s in (0, 1)
                    for n in ("clean", "ah", "no_hijack", "no_seg", "naive", "tbadd")}
    mini = {(r["trigger"], r["seed"], r["set"]) for r in rows if r["arch"] == "minilm-l6"}
    assert mini == {(t, 0, n) for t in ("film", "cf") for n in ("clean", "ah")}
    # per trigger: criteria 2-4 and both ablation checks; MiniLM is reported, not checked
    names = [c["name"] for c in one["checks"]]
    assert not [n for n in names if n.startswith("minilm")]
    assert {n.split("_", 1)[0] for n in names} == {"film", "also", "cf"}
    assert "cf_seg_term_lowers_other_heads_kl_lcb" in names and "minilm_cf_ah_asr" in one["metrics"]
    # each seed gets its own sets back
    by_seed = [[{k: v for k, v in r.items() if k != "seed"} for r in rows if r["seed"] == s and r["arch"] ==
                "bert-tiny"] for s in (0, 1)]
    assert by_seed[0] != by_seed[1]


@pytest.mark.slow  # runs the smoke preset (over 5 s on 2 shared cores)
def test_grid_without_baselines_or_minilm_leaves_them_out(tmp_path):
    from icml2026.core.registry import get_experiment
    from icml2026.core.runner import run_experiment

    exp = get_experiment("attention_hijacking.grid")
    cfg = replace(exp.presets["smoke"], baselines=0, minilm_steps=0)
    res = run_experiment(exp, cfg, preset="smoke", seed=0, out=tmp_path, overrides={"baselines": 0,
                                                                                     "minilm_steps": 0})
    rows = res.results["tables"]["per_set"]
    assert {r["set"] for r in rows} == {"clean", "ah", "no_hijack", "no_seg"}
    assert {r["arch"] for r in rows} == {"bert-tiny"}
    assert not [k for k in res.results["metrics"] if k.startswith("minilm_")]
