"""Issue 14/16: every public metric and estimator refuses bad input with a ValueError naming the argument;
aggregation with no parsed answers, the answer parser's near misses, and the configs' declared ranges."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from icml2026.core import make_rng
from icml2026.core.registry import get_experiment
from icml2026.papers.truth_polling import (
    SimulatorParams,
    aggregate,
    agreement_when_both_wrong,
    answer_distributions,
    auroc,
    bootstrap_ci,
    cohen_kappa,
    dawid_skene,
    error_overlap,
    expected_calibration_error,
    make_arithmetic,
    make_fact_corpus,
    make_random_digit_task,
    mutual_information,
    parse_answer,
    parse_confidence,
    permutation_pvalue_mi,
    phi_matrix,
    plurality_accuracy_exact,
    plurality_accuracy_limit,
    sample_answers,
    simulate_polling,
    social_vs_truth,
    vote_counts,
)
from icml2026.papers.truth_polling.experiments import (
    ArithmeticConfig,
    FactsConfig,
    RandomStringsConfig,
    SimulatorConfig,
)
from icml2026.papers.truth_polling.models import FamilyConfig

NAN, INF = float("nan"), float("inf")
RNG = make_rng(0)


@pytest.mark.parametrize(
    ("call", "match"),
    [
        # the examples: 9.45 from rows that do not sum to 1; confidence 1.5; a NaN score
        (lambda: plurality_accuracy_exact([[0.9, 0.9]], [0], 5), "probs: each row must sum to 1"),
        (lambda: plurality_accuracy_exact([[0.6, 0.4]], [0], 0), "k"),
        (lambda: plurality_accuracy_exact([[0.6, 0.4]], [2], 5), "gold"),
        (lambda: plurality_accuracy_exact([[0.6, 0.4]], [0, 1], 5), "gold"),
        (lambda: plurality_accuracy_exact([[NAN, 1.0]], [0], 5), "probs"),
        (lambda: plurality_accuracy_exact(np.full((1, 10), 0.1), [0], 50), "max_states"),
        (lambda: plurality_accuracy_limit([[0.5, 0.6]], [0]), "probs"),
        (lambda: plurality_accuracy_limit([[1.0]], [0]), "at least 2"),
        (lambda: expected_calibration_error([0.5, 1.5], [1, 0]), "conf"),
        (lambda: expected_calibration_error([0.5, 0.2], [1, 2]), "correct"),
        (lambda: expected_calibration_error([0.5, 0.2], [1]), "correct"),
        (lambda: expected_calibration_error([0.5], [1], n_bins=0), "n_bins"),
        (lambda: auroc([0.1, NAN, 0.3], [0, 1, 1]), "scores"),
        (lambda: auroc([0.1, 0.2], [0, 1, 1]), "same length"),
        (lambda: auroc([0.1, 0.2], [0, 2]), "labels"),
        (lambda: auroc([], []), "scores"),
        (lambda: cohen_kappa([1, 2], [1]), "same length"),
        (lambda: cohen_kappa([], []), "^a:"),
        (lambda: phi_matrix([[0, 1, 2]]), "correct"),
        (lambda: phi_matrix([0, 1]), "correct"),
        (lambda: error_overlap(np.zeros((0, 3))), "correct"),
        (lambda: agreement_when_both_wrong([0, 1], [0], [1, 1], 3), "same length"),
        (lambda: agreement_when_both_wrong([0, 5], [0, 1], [1, 1], 3), "^a:"),
        (lambda: agreement_when_both_wrong([0, 1], [0, 1], [1, 1], 0), "n_vocab"),
        (lambda: mutual_information([1, 2, 3], [1, 2]), "same length"),
        (lambda: mutual_information([1.0, NAN], [1, 2]), "^x:"),
        (lambda: permutation_pvalue_mi([1, 2], [1, 2], RNG, n_perm=0), "n_perm"),
        (lambda: bootstrap_ci([1.0, NAN], RNG), "values"),
        (lambda: bootstrap_ci([1.0, 2.0], RNG, level=1.5), "level"),
        (lambda: bootstrap_ci([1.0, 2.0], RNG, n_boot=0), "n_boot"),
        (lambda: social_vs_truth(np.full((2, 3, 2), 0.7), np.zeros((2, 1, 3), int), [0, 0, 0], RNG), "probs"),
        (lambda: social_vs_truth(np.full((2, 3, 2), 0.5), np.zeros((2, 1, 4), int), [0, 0, 0], RNG), "samples"),
        (lambda: social_vs_truth(np.full((2, 3, 2), 0.5), np.zeros((2, 1, 3), int), [0, 0, 5], RNG), "gold"),
        (lambda: answer_distributions(np.full((1, 2), 1.2), [0, 1], [1, 0], 2, 0.5), "p_correct"),
        (lambda: answer_distributions(np.full((1, 2), 0.5), [0, 1], [0, 0], 2, 0.5), "attractor"),
        (lambda: answer_distributions(np.full((1, 2), 0.5), [0, 1], [1, 0], 2, NAN), "rho"),
        (lambda: simulate_polling("fast", RNG), "^params:"),  # type: ignore[arg-type]
        (lambda: SimulatorParams(rho=1.5), "rho"),
        (lambda: SimulatorParams(n_questions=0), "n_questions"),
        (lambda: SimulatorParams(n_models=1000, n_samples=1000, n_questions=10**6), "n_questions"),
        (lambda: sample_answers(np.full((1, 2, 3), 0.5), 3, RNG), "probs"),
        (lambda: sample_answers(np.full((1, 2, 2), 0.5), 0, RNG), "n_samples"),
        (lambda: vote_counts(np.array([[0, 3]]), 3), "codes"),
        (lambda: vote_counts(np.array([[0.5]]), 3), "codes"),
        (lambda: vote_counts(np.array([[0, 1]]), 3, weights=np.array([[1.0, NAN]])), "weights"),
        (lambda: dawid_skene(np.zeros((1, 1, 2), int), 2, smoothing=0.0), "smoothing"),
        (lambda: dawid_skene(np.full((1, 1, 2), 4), 2), "codes"),
        (lambda: make_fact_corpus(2, RNG), "n_entities"),
        (lambda: make_fact_corpus(10, RNG, frac_myth=NAN), "frac_myth"),
        (lambda: make_arithmetic(5, RNG, low=20, high=10), "high"),
        (lambda: make_random_digit_task(2, 10, 10, RNG, shared=True, exponent=-1.0), "exponent"),
        (lambda: make_random_digit_task(2, 10, 10, RNG, shared=True, string_length=0), "string_length"),
        (lambda: aggregate([[["a"]]], "majority_cross", confidences=None), None),  # fine: a sanity call
        (
            lambda: aggregate([[["a", "b"]]], "confidence_weighted", confidences=[[[0.5, INF]]]),
            "confidences",
        ),
        (lambda: aggregate([[["a"]]], 3), "^rule:"),  # type: ignore[arg-type]
        (lambda: parse_answer(3), "^text:"),  # type: ignore[arg-type]
        (lambda: parse_confidence(["a"]), "^text:"),  # type: ignore[arg-type]
    ],
)
def test_bad_input_is_refused_naming_the_argument(call, match) -> None:  # type: ignore[no-untyped-def]
    if match is None:
        call()
        return
    with pytest.raises(ValueError, match=match):
        call()


def test_aggregate_with_no_parsed_answer_gives_none_per_question() -> None:
    answers = np.full((2, 3, 4), None, dtype=object)
    for rule in ("single", "majority_cross", "dawid_skene"):
        res = aggregate(answers, rule, rng=make_rng(0))
        assert list(res.answers) == [None] * 4 and list(res.codes) == [-1] * 4 and res.tie_rate == 0.0
    res = aggregate(answers, "confidence_weighted", np.full((2, 3, 4), np.nan))
    assert list(res.answers) == [None] * 4
    # with options the vocabulary is not empty, but still no question has a vote
    sp = aggregate(answers, "surprisingly_popular", None, np.full((2, 4, 2), 0.5), options=["x", "y"])
    assert list(sp.answers) == [None] * 4 and sp.cost == 3 * 2 + 2
    answers[0, 0, 1] = "Paris"
    assert list(aggregate(answers, "majority_cross").answers) == [None, "paris", None, None]


@pytest.mark.parametrize(
    ("text", "answer", "confidence"),
    [
        ("Answer: Paris. Confidence: 90%", "Paris", 0.9),  # the example: one vote for "paris"
        ("Answer: Paris (confidence 80%)", "Paris", 0.8),
        ("Answer: red, confidence: 0.7", "red", 0.7),
        ("Answer: Paris | Probability: 0.9", "Paris", None),
        ("**Answer:** Paris", "Paris", None),
        ("Answer: St. Louis", "St. Louis", None),  # a full stop inside the answer is kept
        ("Answer: 3.14", "3.14", None),
        ("Answer: new york city.", "new york city", None),
        ("Answer: red\nConfidence: 85%", "red", 0.85),
        ("Answers vary by source", None, None),  # near misses: no "answer:" field
        ("Unanswerable: yes", None, None),
        ("Answer:   \n", None, None),
        ("confidence: 250%", None, None),
    ],
)
def test_answer_parser_near_misses(text: str, answer: str | None, confidence: float | None) -> None:
    assert parse_answer(text) == answer
    got = parse_confidence(text)
    assert got == (None if confidence is None else pytest.approx(confidence))


def test_parsed_answer_and_confidence_vote_for_one_answer() -> None:
    texts = ["Answer: Paris. Confidence: 90%", "Answer: paris", "Answer: Lyon. Confidence: 20%"]
    answers = np.array([[[parse_answer(t)] for t in texts]], dtype=object).reshape(1, 3, 1)
    res = aggregate(answers, "majority_self")
    assert res.vocab == ["lyon", "paris"] and res.answers[0] == "paris"


CONFIGS = [SimulatorConfig, FactsConfig, ArithmeticConfig, RandomStringsConfig, FamilyConfig]


@pytest.mark.parametrize("cls", CONFIGS)
def test_every_numeric_field_declares_a_range(cls: type) -> None:
    from icml2026.core.config import is_validated_config, unbounded_numeric_fields

    assert is_validated_config(cls) and unbounded_numeric_fields(cls) == []


@pytest.mark.parametrize(
    ("cls", "kwargs", "field"),
    [
        (SimulatorConfig, {"n_samples": 2}, "n_samples"),
        (SimulatorConfig, {"n_models": 9, "n_samples": 8}, "n_models"),
        (SimulatorConfig, {"n_samples": 50, "n_options": 10}, "n_samples"),  # 1.2e10 vote states
        (SimulatorConfig, {"correlated": (0.0, -1.0, 0.3, 0.8)}, "correlated"),
        (SimulatorConfig, {"independent": (0.0, 0.0, 0.3, 1.5)}, "independent"),
        (FactsConfig, {"families": ("transformer", "lstm")}, "families"),
        (FactsConfig, {"families": ("transformer",)}, "families"),
        (FactsConfig, {"d_model": 30}, "d_model"),
        (ArithmeticConfig, {"low": 50, "high": 55}, "high"),
        (ArithmeticConfig, {"n_test": 500, "low": 10, "high": 29}, "n_test"),
        (RandomStringsConfig, {"n_lines": 1}, "n_lines"),
        (RandomStringsConfig, {"lr": 0.0}, "lr"),
    ],
)
def test_configs_name_the_bad_field(cls: type, kwargs: dict, field: str | None) -> None:  # type: ignore[type-arg]
    if field is None:
        cls(**kwargs)
        return
    with pytest.raises(ValueError, match=f"^{field}"):
        cls(**kwargs)


@pytest.mark.parametrize("name", ["simulator", "facts", "arithmetic", "random_strings"])
def test_nonsense_values_are_refused_or_run_to_a_verdict(name: str) -> None:
    """The contract of issue 14 on the smoke preset: 0, -1, 1e9, NaN, inf, a string for every field."""
    exp = get_experiment(f"truth_polling.{name}")
    cfg = exp.config("smoke")
    accepted = []
    for f in dataclasses.fields(cfg):
        for value in (0, -1, 10**9, 1e9, NAN, INF, "x"):
            try:
                accepted.append(dataclasses.replace(cfg, **{f.name: value}))
            except ValueError as exc:
                assert str(exc).startswith(f.name), exc
    # the few accepted values (facts: entropy_threshold 0; arithmetic: low 0; random strings: exponent 0)
    assert len(accepted) <= 1
    for c in accepted:
        out = exp(c, make_rng(0))
        assert out.checks and all(np.isfinite(float(ch.value)) or np.isnan(float(ch.value)) for ch in out.checks)
