"""The quick presets' budget (issue 56): smaller than the issue-65 sizes, while the control presets, on which the
stored power and false-positive rates were measured, keep those sizes; ONION can be left out (n_onion = 0)."""

from __future__ import annotations

import pytest

pytest.importorskip("torch")

_NAMES = ("anchor", "noise", "functional", "base_dd", "ablation", "scale", "tweets", "grid")


def _presets(name: str) -> dict:
    from icml2026.core.registry import get_experiment
    from icml2026.papers.attention_hijacking import experiments  # noqa: F401  (registers them)

    return get_experiment(f"attention_hijacking.{name}").presets


@pytest.mark.parametrize("name", _NAMES)
def test_quick_runs_in_one_process_without_onion(name: str) -> None:
    quick = _presets(name)["quick"]
    assert quick.workers == 1  # worker processes each load torch and the encoder again
    assert getattr(quick, "n_onion", 0) == 0  # ONION's causal LM would dominate a quick run
    assert quick.mlm_steps == 1000  # the full presets' encoder (a weaker one gave no hijack, card)
    assert quick.n_seeds >= 2 or name == "scale"  # a bound over seeds (scale: 1 seed, as its full preset)


def test_the_ablation_keeps_three_seeds_and_sixty_steps() -> None:
    quick = _presets("ablation")["quick"]
    assert (quick.n_seeds, quick.n_steps) == (3, 60)  # 2 seeds: t factor 6.3; 40 steps: no hijack (card)


@pytest.mark.parametrize("name", _NAMES)
def test_the_control_presets_keep_the_sizes_their_controls_were_measured_at(name: str) -> None:
    from icml2026.papers.attention_hijacking.studies._common import _QUICK_ISSUE65

    presets = _presets(name)
    for control in ("planted", "null"):
        cfg = presets[control]
        assert cfg.control == control
        assert cfg.mlm_steps == _QUICK_ISSUE65["mlm_steps"] and cfg.lr == _QUICK_ISSUE65["lr"]
        assert cfg.workers == 1 and cfg.n_learners == 3 and cfg.n_seeds == 2  # the controls' _SMALL


def test_n_onion_zero_is_accepted_and_negative_refused() -> None:
    from icml2026.core.errors import BadInput
    from icml2026.papers.attention_hijacking.studies._common import AHConfig

    assert AHConfig(n_onion=0).n_onion == 0
    with pytest.raises((BadInput, ValueError)):
        AHConfig(n_onion=-1)


@pytest.mark.slow  # runs the smoke preset (over 5 s on 2 shared cores)
def test_an_attack_run_without_onion_keeps_strip_and_drops_only_onion(tmp_path) -> None:
    from dataclasses import replace

    from icml2026.core.registry import get_experiment
    from icml2026.core.runner import run_experiment

    exp = get_experiment("attention_hijacking.anchor")
    cfg = replace(exp.presets["smoke"], n_onion=0)
    m = run_experiment(exp, cfg, preset="smoke", seed=0, out=tmp_path, overrides={"n_onion": 0}).results["metrics"]
    assert "ah_strip_detection" in m and "ah_pos1_asr" in m
    assert not any("onion" in k for k in m)
