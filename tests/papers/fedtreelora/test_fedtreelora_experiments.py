"""Registered experiments: config validation and determinism of a smoke preset (quick presets: slow)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from icml2026.core import make_rng
from icml2026.core.registry import get_experiment, import_paper
from icml2026.papers.fedtreelora.experiments import FedConfig


def test_config_rejects_bad_values() -> None:
    with pytest.raises(ValueError, match="warmup"):
        FedConfig(rounds=3, warmup=3)
    with pytest.raises(ValueError, match="tau"):
        FedConfig(tau=1.0)
    with pytest.raises(ValueError, match="n_heads"):
        FedConfig(d_model=30, n_heads=4)
    with pytest.raises(ValueError, match="K"):
        FedConfig(K=0)


def test_headline_smoke_is_deterministic() -> None:
    import_paper("fedtreelora")
    exp = get_experiment("fedtreelora.headline")
    cfg = exp.config("smoke")
    a, b = exp(cfg, make_rng(0)), exp(cfg, make_rng(0))
    assert a.metrics == b.metrics
    c = exp(dataclasses.replace(cfg, n_train=20), make_rng(1))
    assert c.metrics != a.metrics
    # invariants hold in the run itself (criterion 3, 5)
    assert a.metrics["cuts_monotone_fraction"] == 1.0
    assert a.metrics["upload_per_round_max_rel_diff_vs_fedit"] == 0.0


@pytest.mark.slow
@pytest.mark.parametrize("name", ["headline", "ablation", "coupling"])
def test_quick_presets_run(name: str) -> None:
    # the quick presets' claims are reported (card), not asserted; their preconditions hold (issue 62) and
    # every invariant is intact
    import_paper("fedtreelora")
    exp = get_experiment(f"fedtreelora.{name}")
    out = exp(exp.config("quick"), make_rng(0))
    assert all(c.passed for c in out.checks if c.role == "precondition")
    if name == "headline":
        assert out.metrics["cuts_monotone_fraction"] == 1.0 and out.metrics["partitions_nested_fraction"] == 1.0


def test_best_window_silhouette_reads_the_tree_scores() -> None:
    # fails if the strategy stopped recording its cut scores, or the diagnostic read another layer's
    from types import SimpleNamespace

    from icml2026.papers.fedtreelora import FedTreeLoRA
    from icml2026.papers.fedtreelora.experiments import _best_window_silhouettes

    rng = np.random.default_rng(0)
    planted = [np.zeros(8, int), np.repeat([0, 1], 4), np.repeat([0, 1, 2, 3], 2), np.repeat([0, 1, 2, 3], 2)]
    B = [rng.normal(0, 1, (lab.max() + 1, 2, 16, 4))[lab] + rng.normal(0, 0.01, (8, 2, 16, 4)) for lab in planted]
    run = SimpleNamespace(structure=FedTreeLoRA(K=2, tau=0.25).build(B))
    best = _best_window_silhouettes(run)  # type: ignore[arg-type]
    assert best[3] > 0.9 and best[0] < 0.5 and len(best) == 4


def test_control_clients_are_built_as_described() -> None:
    # planted: the clients of a task are copies (same data and batch stream); null: one task for everyone
    from icml2026.papers.fedtreelora.experiments import _make_clients

    tasks = ["polarity", "polarity", "topic", "topic"]
    base = dataclasses.replace(FedConfig(), n_train=12, n_test=8)
    planted, streams = _make_clients(dataclasses.replace(base, control="planted"), tasks, np.random.default_rng(0))
    assert streams == [0, 0, 2, 2]
    assert np.array_equal(planted[0].x_train, planted[1].x_train) and not np.array_equal(
        planted[0].x_train, planted[2].x_train
    )
    null, streams = _make_clients(dataclasses.replace(base, control="null"), tasks, np.random.default_rng(0))
    assert streams is None and {c.task for c in null} == {"polarity"}
    plain, _ = _make_clients(base, tasks, np.random.default_rng(0))
    assert not np.array_equal(plain[0].x_train, plain[1].x_train)


def test_probe_precondition_fails_on_a_collapsed_backbone() -> None:
    # the frozen-feature precondition reads the tasks from our backbone, and fails when the features carry
    # nothing (every weight zero: one feature vector for every input)
    import torch

    from icml2026.papers.fedtreelora import Backbone, BackboneConfig
    from icml2026.papers.fedtreelora.experiments import PROBE_BAR, _frozen_probe

    cfg = FedConfig(**{**dict(n_layers=2, d_model=16, n_heads=2)})
    bb = Backbone.from_config(BackboneConfig(n_layers=2, d_model=16, n_heads=2, seq_len=cfg.seq_len), seed=0)
    ok = _frozen_probe(cfg, bb, np.random.default_rng(0), n=100)
    assert min(ok.values()) >= PROBE_BAR
    with torch.no_grad():
        for p in bb.model.parameters():
            p.zero_()
    dead = _frozen_probe(cfg, bb, np.random.default_rng(0), n=100)
    assert max(dead.values()) < 0.6


def test_paired_bounds_come_from_a_client_bootstrap() -> None:
    # the comparisons read per-client paired differences: mean over every client, one-sided 95% bounds from a
    # client bootstrap stratified by sub-seed (deterministic); constant differences have no spread
    from icml2026.papers.fedtreelora.experiments import _paired

    m: dict[str, float] = {}
    _paired(m, "d", [np.full(12, 1.5)])
    assert m["d"] == m["d_lcb"] == m["d_ucb"] == 1.5
    rng = np.random.default_rng(0)
    diffs = [rng.normal(1.0, 3.0, 12), rng.normal(1.0, 3.0, 12)]
    a: dict[str, float] = {}
    b: dict[str, float] = {}
    _paired(a, "d", diffs)
    _paired(b, "d", diffs)
    assert a == b
    assert a["d"] == pytest.approx(np.concatenate(diffs).mean())
    half = 1.645 * np.concatenate(diffs).std() / np.sqrt(24)  # the normal approximation of the bound
    assert a["d_lcb"] < a["d"] < a["d_ucb"]
    assert a["d"] - a["d_lcb"] == pytest.approx(half, rel=0.2)


def test_control_arms_are_the_reference_repeat_shifted_per_client() -> None:
    # planted / null arms: each client's accuracy in the independent repeat of the reference plus the gain
    from types import SimpleNamespace

    from icml2026.papers.fedtreelora.experiments import _diff

    acc = {"FedIT": np.array([0.8, 0.9]), "FedIT'": np.array([0.7, 0.95]), "FedTreeLoRA": np.array([0.5, 0.5])}
    runs = {k: SimpleNamespace(final_acc=v) for k, v in acc.items()}
    none = dataclasses.replace(FedConfig(), control="none")
    planted = dataclasses.replace(FedConfig(), control="planted")
    np.testing.assert_allclose(_diff(none, runs, "FedTreeLoRA", "FedIT"), [-30.0, -40.0])  # type: ignore[arg-type]
    np.testing.assert_allclose(_diff(planted, runs, "FedTreeLoRA", "FedIT", 5.0), [-5.0, 10.0])  # type: ignore[arg-type]
