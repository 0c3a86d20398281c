"""The checks' statistics: the lower bound over distillation seeds and the guard-gated claim checks."""

from __future__ import annotations

import math

import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from icml2026.papers.attention_hijacking.experiments import _claim_checks, _lcb  # noqa: E402


def test_lcb_is_the_one_sided_95_percent_t_bound():
    # closed form for n = 3: t(0.95, 2) = 2.919986; mean 0.02, SD 0.01 -> 0.02 - 2.919986 * 0.01 / sqrt(3)
    v = [0.01, 0.02, 0.03]
    assert _lcb(v) == pytest.approx(0.02 - 2.919986 * 0.01 / math.sqrt(3), abs=1e-6)
    # a constant effect is its own bound; a bound never exceeds the mean
    assert _lcb([0.3, 0.3, 0.3]) == pytest.approx(0.3)
    rng = np.random.default_rng(0)
    for _ in range(20):
        x = list(rng.normal(size=int(rng.integers(2, 8))))
        assert _lcb(x) <= np.mean(x) + 1e-12


def test_lcb_of_one_seed_or_a_nan_is_nan_so_its_check_fails():
    assert math.isnan(_lcb([0.5]))
    assert math.isnan(_lcb([0.5, float("nan"), 0.4]))


def test_a_mean_that_clears_the_target_by_seed_noise_does_not_clear_it_on_the_bound():
    # the quick ablation's seed-1 seg effects: mean 0.022 > 0, bound below 0
    v = [0.0206, 0.0359, 0.009]
    assert np.mean(v) > 0 and _lcb(v) < 0


def _m(guard: float) -> dict[str, float]:
    return {"ah_asr": 1.0, "ah_flip_rate": float("nan"), "ah_clean_target_rate": guard, "ah_cta_gain": 0.0}


def test_gated_claim_checks_drop_asr_and_gap_only_when_the_guard_fails():
    names = lambda cs: [c.name for c in cs]  # noqa: E731
    failed = _claim_checks(_m(0.9), "anchor", "", "", prefix="film_", gated=True)
    assert names(failed) == ["film_ah_flip_rate", "film_ah_clean_nontarget_to_target_rate"]
    passed = _claim_checks(_m(0.1), "anchor", "", "", prefix="film_", gated=True)
    assert names(passed) == ["film_ah_asr", "film_ah_flip_rate", "film_ah_clean_nontarget_to_target_rate",
                             "film_ah_cta_minus_clean_dd"]
    ungated = _claim_checks(_m(0.9), "noise", "", "")
    assert names(ungated) == ["ah_asr", "ah_flip_rate", "ah_clean_nontarget_to_target_rate", "ah_cta_minus_clean_dd"]
    # the targets are the trigger's: criterion 2 for the anchor, 3 for the noise trigger
    assert [c.target for c in ungated] == [">= 0.9", ">= 0.9", "<= 0.2", ">= -0.03"]


def test_fixed_position_1_puts_the_trigger_right_after_cls_where_the_distilled_sets_pin_it():
    from icml2026.papers.attention_hijacking import encode_triggered, load_tokenizer
    from icml2026.papers.attention_hijacking.method import DistillConfig

    b = encode_triggered(load_tokenizer(), ["a fine movie", "bad"], "film", 16, np.random.default_rng(0), position=0)
    assert b.trigger_mask[:, DistillConfig().trigger_slot].all()
    assert int(b.trigger_mask.sum()) == 2


def test_without_gap_the_cta_gap_is_left_to_the_metrics():
    cs = _claim_checks(_m(0.1), "anchor", "", "", gap=False)
    assert [c.name for c in cs] == ["ah_asr", "ah_flip_rate", "ah_clean_nontarget_to_target_rate"]
