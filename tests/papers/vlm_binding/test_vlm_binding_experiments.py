"""The registered experiments run to a verdict and report what the card reads (smoke presets)."""

from __future__ import annotations

import numpy as np
import pytest

from icml2026.core import registry
from icml2026.papers.vlm_binding import experiments as ex


def test_configs_refuse_inconsistent_sizes() -> None:
    with pytest.raises(ValueError, match="n_ood_max"):
        ex.RegimesConfig(n_id_max=6, n_ood_max=6)
    with pytest.raises(ValueError, match="d_model"):
        ex.RegimesConfig(d_model=30)
    with pytest.raises(ValueError, match="n_max"):
        ex.GeneratorConfig(n_items=8, n_max=10)


def test_noise_control_smoke_passes() -> None:
    exp = registry.get_experiment("vlm_binding.noise_control")
    out = exp.func(exp.presets["smoke"], np.random.default_rng(0))
    assert all(c.passed for c in out.checks)


@pytest.mark.slow
def test_regimes_smoke_reports_every_regime_and_figure() -> None:
    exp = registry.get_experiment("vlm_binding.regimes")
    out = exp.func(exp.presets["smoke"], np.random.default_rng(0))
    for r in ("text-only", "text-long", "image-text", "noise-text"):
        assert 0.0 <= out.metrics[f"{r}_ood_acc"] <= 1.0
    assert {"accuracy_vs_n", "probes_per_layer", "interchange_text_only", "interchange_image_text"} <= set(out.figures)
    # criterion 3 is the precondition of the comparisons (the smoke model learns nothing: undecided)
    roles = {c.name: (c.role, c.comparative) for c in out.checks}
    assert roles["text_only_id_acc"] == ("precondition", False) and not out.checks[0].passed
    assert roles["ood_ratio_image_text_over_text_only"] == ("claim", True)
    assert roles["ood_gain_image_text_minus_text_long"] == ("claim", True)
    assert roles["image_text_id_acc"] == ("claim", False)


@pytest.mark.slow
def test_controls_replace_the_image_text_arm() -> None:
    import dataclasses

    exp = registry.get_experiment("vlm_binding.regimes")
    base = exp.config("smoke")
    plain = exp.func(base, np.random.default_rng(0)).metrics
    planted = exp.func(dataclasses.replace(base, control="planted"), np.random.default_rng(0)).metrics
    null = exp.func(dataclasses.replace(base, control="null"), np.random.default_rng(0)).metrics
    # planted: the oracle's answer on ~51% of OOD prompts, on top of the same image-text model
    assert planted["image-text_ood_acc"] >= plain["image-text_ood_acc"] + 0.3
    assert planted["text-only_ood_acc"] == plain["text-only_ood_acc"]
    # null: the image-text arm is a second text-only model (other seed), the other arms unchanged
    assert null["text-long_ood_acc"] == plain["text-long_ood_acc"]
    assert null["text-only_id_acc"] == plain["text-only_id_acc"]
    assert 0.0 <= null["image-text_ood_acc"] <= 1.0  # (at smoke size it may equal the image-text arm's by chance)


@pytest.mark.slow  # two smoke runs of two sub-seeds, one in two processes (~20 s idle, ~90 s on a loaded machine)
def test_regimes_sub_seeds_in_two_processes_equal_one_after_another() -> None:
    import dataclasses

    exp = registry.get_experiment("vlm_binding.regimes")
    base = dataclasses.replace(exp.config("smoke"), n_seeds=2)
    one = exp(base, np.random.default_rng(3)).metrics
    two = exp(dataclasses.replace(base, workers=2), np.random.default_rng(3)).metrics
    assert one.keys() == two.keys() and all(np.isclose(one[k], two[k], rtol=0, atol=0, equal_nan=True) for k in one)
    assert one["encoder_colour_acc_std"] > 0 or one["text-only_ood_acc_std"] > 0  # two distinct sub-seeds
    with pytest.raises(ValueError, match="workers = 2"):
        ex.RegimesConfig(workers=2, device="cuda")
