"""Experiment configs refuse nonsense with the field's name; the metrics experiment meets criterion 1."""

from __future__ import annotations

import ast
from pathlib import Path

import numpy as np
import pytest

from icml2026.papers.correctness_models.experiments import GCMConfig, MetricsConfig, SelfCrossConfig, metrics

SRC = Path(__file__).resolve().parents[3] / "src/icml2026/papers/correctness_models/experiments.py"


@pytest.mark.parametrize("cls", [GCMConfig, SelfCrossConfig, MetricsConfig])
@pytest.mark.parametrize("bad", [0, -1, 10**9, float("nan"), float("inf"), "x"])
def test_numeric_fields_refuse_nonsense(cls, bad):
    import dataclasses

    for f in dataclasses.fields(cls):
        if f.name == "regularity" and bad == 0:
            continue  # 0 is meaningful: every fact arbitrary (the world before issue 58)
        if f.type in ("int", "float", int, float):
            with pytest.raises(ValueError, match=f"^{f.name}"):
                cls(**{f.name: bad})


def test_cross_field_rule_names_the_field():
    with pytest.raises(ValueError, match="^n_entities"):
        GCMConfig(n_questions=20_000, n_entities=100)
    with pytest.raises(ValueError, match="encoder"):
        GCMConfig(encoder="tfidf")


def test_experiments_are_statically_readable():
    tree = ast.parse(SRC.read_text())
    names = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "experiment":
            assert isinstance(node.args[0], ast.Constant)
            kw = {k.arg: k.value for k in node.keywords}
            assert isinstance(kw["claim"], ast.Constant)
            assert isinstance(kw["presets"], ast.Dict)
            assert {"quick", "full"} <= {k.value for k in kw["presets"].keys}
            names.append(node.args[0].value)
    assert names == ["correctness_models.metrics", "correctness_models.gcm", "correctness_models.self_vs_cross"]


def test_metrics_experiment_meets_criterion_1_and_is_deterministic():
    pytest.importorskip("netcal")
    cfg = MetricsConfig()
    a = metrics(cfg, np.random.default_rng(0))
    b = metrics(cfg, np.random.default_rng(0))
    assert a.metrics == b.metrics
    assert all(c.passed for c in a.checks), [c for c in a.checks if not c.passed]
    assert a.metrics["aurc_closed_form"] == pytest.approx(0.0503, abs=1e-4)  # brief: e = 0.3 -> 0.0503


@pytest.mark.slow
def test_control_runs_sharing_one_seeds_parts_equal_fresh_runs(tmp_path, monkeypatch):
    """The planted and null runs of one seed (and, when switched on, the ordinary run) share the targets, the
    embeddings and the feature-CM fits in one process; each run's metrics equal a run that computes everything."""
    import dataclasses
    import math

    from icml2026.core import registry
    from icml2026.core.runner import run_experiment
    from icml2026.papers.correctness_models import experiments as E

    registry.discover(["correctness_models"])
    exp = registry.get_experiment("correctness_models.gcm")
    base = exp.presets["smoke"]
    monkeypatch.setattr(E, "_CONTROL_MEMO", {})

    def metrics_of(cfg, tag):
        return run_experiment(exp, cfg, preset=tag, seed=3, out=tmp_path / tag).results["metrics"]

    def same(a, b):
        return a.keys() == b.keys() and all(a[k] == b[k] or (math.isnan(a[k]) and math.isnan(b[k])) for k in a)

    planted, null = (dataclasses.replace(base, control=c) for c in ("planted", "null"))
    shared = {"planted": metrics_of(planted, "p1"), "null": metrics_of(null, "n1")}
    monkeypatch.setattr(E, "SHARE_WITH_ORDINARY_RUNS", True)
    shared["none"] = metrics_of(base, "o1")
    assert len(E._CONTROL_MEMO) >= 3  # the histories, the embedder and at least one fit were kept
    monkeypatch.setattr(E, "SHARE_WITH_ORDINARY_RUNS", False)
    for cfg, key in ((null, "null"), (base, "none")):
        E._CONTROL_MEMO.clear()
        assert same(metrics_of(cfg, f"fresh_{key}"), shared[key]), key

