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
    # the quick presets' verdicts are reported (card), not asserted: at quick scale the headline does not
    # reproduce (see README.md); here only that they run to a verdict with every invariant intact
    import_paper("fedtreelora")
    exp = get_experiment(f"fedtreelora.{name}")
    out = exp(exp.config("quick"), make_rng(0))
    assert out.checks
    if name == "headline":
        assert out.metrics["cuts_monotone_fraction"] == 1.0 and out.metrics["partitions_nested_fraction"] == 1.0


def test_task_silhouette_diagnostic_reads_the_tree_distances() -> None:
    # fails if the strategy stopped recording its distances, or the diagnostic read another layer's
    from types import SimpleNamespace

    from icml2026.papers.fedtreelora import FedTreeLoRA
    from icml2026.papers.fedtreelora.experiments import _best_window_silhouettes, _task_silhouettes

    rng = np.random.default_rng(0)
    planted = [np.zeros(8, int), np.repeat([0, 1], 4), np.repeat([0, 1, 2, 3], 2), np.repeat([0, 1, 2, 3], 2)]
    B = [rng.normal(0, 1, (lab.max() + 1, 2, 16, 4))[lab] + rng.normal(0, 0.01, (8, 2, 16, 4)) for lab in planted]
    structure = FedTreeLoRA(K=2, tau=0.25).build(B)
    run = SimpleNamespace(structure=structure)
    pairs = np.repeat([0, 1, 2, 3], 2)  # the planted blocks of layers 3-4
    sil = _task_silhouettes(run, pairs)  # type: ignore[arg-type]
    assert sil is not None and sil[2] > 0.9 and sil[3] > 0.9 and sil[0] < 0.2  # layer 1 has no structure
    shuffled = _task_silhouettes(run, np.array([0, 1, 2, 3, 0, 1, 2, 3]))  # type: ignore[arg-type]
    assert shuffled is not None and max(shuffled) < 0.2
    assert _task_silhouettes(run, np.arange(8)) is None  # one client per label: undefined, not a number
    best = _best_window_silhouettes(run)  # type: ignore[arg-type]
    assert best[3] > 0.9 and len(best) == 4
