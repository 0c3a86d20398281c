"""The checks' statistics: the lower bound over distillation seeds and the claim checks with their preconditions."""

from __future__ import annotations

import math

import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from icml2026.papers.attention_hijacking.studies._common import _lcb  # noqa: E402
from icml2026.papers.attention_hijacking.studies.attacks import _claim_checks  # noqa: E402


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


def _m(extra: float, clean_cta: float = 0.6, probe: float = 0.6) -> dict[str, float]:
    return {"ah_asr": 1.0, "ah_flip_rate": float("nan"), "ah_clean_target_rate": 0.4 + extra,
            "clean_clean_target_rate": 0.4, "ah_cta_gain": 0.0, "clean_cta": clean_cta, "linear_probe_cta": probe}


def test_claim_checks_put_the_guard_relative_to_clean_dd_and_clean_dd_learning_as_preconditions():
    from icml2026.core.outcome import verdict_of

    names = lambda cs: [c.name for c in cs]  # noqa: E731
    cs = _claim_checks(_m(0.0), "anchor", "", "", prefix="film_")
    assert names(cs) == ["film_clean_dd_cta_over_linear_probe", "film_ah_extra_clean_nontarget_to_target",
                         "film_ah_asr", "film_ah_flip_rate", "film_ah_cta_minus_clean_dd"]
    assert [c.role for c in cs] == ["precondition", "precondition", "claim", "claim", "claim"]
    assert [c.comparative for c in cs] == [False, False, True, True, True]
    # every check is computed, whatever the guard (no gating): the NaN flip rate fails, the rest pass
    assert [c.passed for c in cs] == [True, True, True, False, True]
    # the guard is relative to clean DD: AH's extra lean to the target within 1 - the ASR target (0.05 anchor)
    assert cs[1].value == pytest.approx(0.0) and cs[1].target == "<= 0.05"
    assert not _claim_checks(_m(0.06), "anchor", "", "")[1].passed
    noise = _claim_checks(_m(0.06), "noise", "", "")
    assert [c.target for c in noise] == [">= 0.985", "<= 0.1", ">= 0.9", ">= 0.9", ">= -0.03"]
    assert noise[1].passed  # 0.06 <= 0.10
    # clean DD far below the probe (quick: chance-level clean DD) makes the run undecided, whatever the claims
    weak = _claim_checks(_m(0.0, clean_cta=0.5, probe=0.65), "noise", "", "")
    assert not weak[0].passed
    assert verdict_of([(c.role, c.passed) for c in weak]) == "undecided"
    anchor_gap = _claim_checks({**_m(0.0), "ah_cta_gain": -0.02}, "anchor", "", "")[-1]
    assert anchor_gap.target == ">= -0.01" and not anchor_gap.passed


def test_fixed_position_1_puts_the_trigger_right_after_cls_where_the_distilled_sets_pin_it():
    from icml2026.papers.attention_hijacking import encode_triggered, load_tokenizer
    from icml2026.papers.attention_hijacking.method import DistillConfig

    b = encode_triggered(load_tokenizer(), ["a fine movie", "bad"], "film", 16, np.random.default_rng(0), position=0)
    assert b.trigger_mask[:, DistillConfig().trigger_slot].all()
    assert int(b.trigger_mask.sum()) == 2


def test_without_gap_the_cta_gap_is_left_to_the_metrics():
    cs = _claim_checks(_m(0.0), "anchor", "", "", gap=False)
    assert [c.name for c in cs] == ["clean_dd_cta_over_linear_probe", "ah_extra_clean_nontarget_to_target",
                                    "ah_asr", "ah_flip_rate"]


@pytest.mark.slow  # runs the smoke preset (over 5 s on 2 shared cores)
def test_the_batch_size_reaches_the_distillation_and_report_variants_trims_the_ablation(tmp_path):
    from dataclasses import replace

    from icml2026.core.registry import get_experiment
    from icml2026.core.runner import run_experiment
    from icml2026.papers.attention_hijacking.studies._common import AHConfig, _dcfg

    assert _dcfg(AHConfig(batch_size=8)).batch_size == 8
    assert _dcfg(AHConfig()).batch_size == 32  # the base code's, in the full presets
    assert _dcfg(AHConfig(cls_only_last_layer=1)).cls_only_last_layer is True
    assert _dcfg(AHConfig()).cls_only_last_layer is False  # the presets' path
    exp = get_experiment("attention_hijacking.ablation")
    cfg = replace(exp.presets["smoke"], report_variants=0)
    res = run_experiment(exp, cfg, preset="smoke", seed=0, out=tmp_path, overrides={"report_variants": 0})
    variants = {row["variant"] for row in res.results["tables"]["per_seed"]}
    assert variants == {"full", "no_hijack", "no_seg"}
    assert "no_attention_labels_cta" not in res.results["metrics"] and "full_cta" in res.results["metrics"]


@pytest.mark.slow  # runs the smoke preset (over 5 s on 2 shared cores)
@pytest.mark.parametrize("name", ["anchor", "base_dd", "ablation"])
def test_worker_processes_give_the_numbers_of_one_process(smoke_in_1_and_2_workers, name):
    # Every job carries its own random streams, so running the distillations in 2 processes must change nothing:
    # fails if a job drew from a stream another job also uses (the order of the jobs would then matter) or if the
    # results were put back under the wrong (seed, set). The anchor grid runs all five sets (clean DD, AH and the
    # three baselines) and ONION's filtering as jobs; 2 seeds check that each seed gets its own sets back.
    one = smoke_in_1_and_2_workers(name, 3)
    # each seed gets its own sets back (fails if every seed's row were read from one seed's results)
    by_seed = [[{k: v for k, v in r.items() if k != "seed"} for r in one["tables"]["per_seed"] if r["seed"] == s]
               for s in (0, 1)]
    assert by_seed[0] and by_seed[0] != by_seed[1]


def test_worker_processes_need_the_cpu():
    from icml2026.papers.attention_hijacking.studies import AHConfig, BaseDDConfig

    for cls in (AHConfig, BaseDDConfig):
        with pytest.raises(ValueError, match="workers"):
            cls(workers=2, device="cuda")
        assert cls(workers=1, device="cuda").workers == 1


def test_the_balanced_set_has_as_many_samples_of_each_class(factory, rt_small):
    from icml2026.papers.attention_hijacking.method import DistillConfig, distill

    train, _ = rt_small
    kw = dict(seq_len=12, n_steps=1, batch_size=8, attack=True, trigger="film")
    for balance, counts in ((False, [1, 2]), (True, [2, 2])):  # the brief's set: 2 target-labelled against 1
        ds = distill(factory, train, DistillConfig(**kw, balance_classes=balance), np.random.default_rng(0),
                     show_progress=False)
        assert np.bincount(ds.labels.argmax(1).numpy(), minlength=2).tolist() == counts
        assert int(ds.poisoned.sum()) == 1 and int(ds.labels[ds.poisoned].argmax(1)[0]) == 1  # the target


def test_planted_effects_are_what_they_say(factory, rt_small):
    # the controls' constructions: a planted backdoor sends its share of the triggered rows to the target, a
    # planted utility loss costs exactly its share of CTA, and nothing planted leaves the victims as they are
    from icml2026.papers.attention_hijacking.method import (
        DistillConfig,
        PlantedEffect,
        distill,
        evaluate_distilled,
    )

    train, test = rt_small
    ds = distill(factory, train, DistillConfig(seq_len=12, n_steps=1, batch_size=8), np.random.default_rng(0),
                 show_progress=False)
    kw = dict(trigger="film", target=1)
    base = evaluate_distilled(ds, factory, test, 2, np.random.default_rng(1), **kw)
    none = evaluate_distilled(ds, factory, test, 2, np.random.default_rng(1), plant=PlantedEffect(), **kw)
    assert (none.cta, none.asr) == (base.cta, base.asr)
    full = evaluate_distilled(ds, factory, test, 2, np.random.default_rng(1), plant=PlantedEffect(trigger_rate=1.0),
                              **kw)
    assert full.asr == 1.0 and (full.flip_rate == 1.0 or np.isnan(full.flip_rate))
    assert full.cta == base.cta  # the clean predictions are untouched
    drop = evaluate_distilled(ds, factory, test, 2, np.random.default_rng(1), plant=PlantedEffect(cta_drop=0.1),
                              **kw)
    # 40 test rows: 4 correct rows per victim move (while the victim has 4 right), CTA falls by 0.1
    assert drop.cta == pytest.approx(base.cta - 0.1) or base.cta < 0.1
    with pytest.raises(ValueError, match="cta_drop"):
        PlantedEffect(cta_drop=1.5)


def test_controls_replace_the_attacked_arms_by_construction():
    from icml2026.papers.attention_hijacking.method import AttackResult
    from icml2026.papers.attention_hijacking.studies._common import AHConfig, _control_effect, _control_result

    planted, null = AHConfig(control="planted"), AHConfig(control="null")
    assert _control_effect(planted, "ah", "film").trigger_rate == 0.99  # the paper's ASR > 99 %
    assert _control_effect(null, "ah", "film").cta_drop == pytest.approx(0.02)  # twice the anchor's 1 point
    assert _control_effect(null, "ah", "cf").cta_drop == pytest.approx(0.06)  # twice the noise trigger's 3
    r = AttackResult(0.5, 0.4, 0.0, 0.0, 0.05, 0.05, 0.02, float("nan"), 0, {})
    assert _control_result(planted, "ah", "cf", r).trigger_attention == pytest.approx(0.15)
    assert _control_result(planted, "no_seg", "cf", r).seg_kl == pytest.approx(0.12)
    assert _control_result(planted, "no_hijack", "cf", r) == r
    assert _control_result(null, "ah", "cf", r) == r  # the null plants nothing: every arm the same method
    with pytest.raises(Exception, match="control"):
        AHConfig(control="oracle")
