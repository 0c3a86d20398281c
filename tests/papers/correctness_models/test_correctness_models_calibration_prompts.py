"""Post-hoc calibrators, prompt formats and the verbalized-probability parser."""

from __future__ import annotations

import numpy as np
import pytest

from icml2026.papers.correctness_models import (
    CALIBRATORS,
    HistoryExample,
    cm_prompt,
    expected_calibration_error,
    fit_calibrator,
    history_prompt,
    parse_verbalized,
    verbalized_prompt,
)


def _overconfident(n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """True probabilities q ~ U(.05, .95), labels ~ Bernoulli(q), reported p = sigmoid(4 logit q)."""
    q = rng.uniform(0.05, 0.95, n)
    y = (rng.random(n) < q).astype(int)
    p = 1 / (1 + np.exp(-4 * np.log(q / (1 - q))))
    return p, y


@pytest.mark.parametrize("kind", CALIBRATORS)
def test_every_calibrator_removes_most_of_an_overconfident_ece(kind):
    rng = np.random.default_rng(0)
    p_cal, y_cal = _overconfident(1000, rng)
    p_ev, y_ev = _overconfident(20000, rng)
    before = expected_calibration_error(p_ev, y_ev)
    after = expected_calibration_error(fit_calibrator(kind, p_cal, y_cal).predict(p_ev), y_ev)
    assert before > 0.1  # the miscalibration is real
    assert after < 0.5 * before  # brief criterion 2: >= 50% reduction (held-out eval split)


def test_platt_logit_recovers_a_planted_logit_scale():
    rng = np.random.default_rng(1)
    p, y = _overconfident(100_000, rng)
    cal = fit_calibrator("platt_logit", p, y)
    coef = cal.model_.coef_[0, 0]
    assert coef == pytest.approx(0.25, abs=0.01)  # the inverse of the planted scale 4 (n = 1e5: sd ~0.003)


def _official_platt_by_hand(p: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    """(a, b) maximising sum log sigmoid(+-(a p + b)): the official Platt formula (a logistic regression on
    the raw p with C = 1e11, i.e. no penalty worth the name), solved here by Newton's method."""
    a, b = 0.0, 0.0
    x = np.c_[p, np.ones_like(p)]
    for _ in range(100):
        s = 1 / (1 + np.exp(-(a * p + b)))
        grad = x.T @ (y - s)
        hess = (x * (s * (1 - s))[:, None]).T @ x
        a, b = np.array([a, b]) + np.linalg.solve(hess, grad)
    return float(a), float(b)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_platt_is_the_official_formula_on_raw_p(seed):
    # fixture: a deliberately over-confident CM (sigmoid(4 logit q)), where raw-p and logit-p Platt differ
    rng = np.random.default_rng(seed)
    p, y = _overconfident(3000, rng)
    a, b = _official_platt_by_hand(p, y)
    cal = fit_calibrator("platt", p, y)
    grid = np.linspace(0, 1, 101)
    # sklearn's lbfgs stops at its tolerance (1e-4 on the gradient), which moved probabilities by up to 6e-5
    # on these fixtures: 5e-4 allows that and is 100x below the 0.05 that separates the raw and logit forms
    np.testing.assert_allclose(cal.predict(grid), 1 / (1 + np.exp(-(a * grid + b))), atol=5e-4)
    assert cal.model_.C == 1e11  # the official setting
    # and it is not the logit form: on this fixture the two calibrated maps differ visibly
    other = fit_calibrator("platt_logit", p, y).predict(grid)
    assert np.max(np.abs(cal.predict(grid) - other)) > 0.05


def test_platt_hand_fixture():
    # a fixed four-point fixture, symmetric about p = 0.5 (labels 0, 1, 0, 1 on 0.1, 0.4, 0.6, 0.9): the
    # maximum-likelihood line satisfies b = -a / 2, and sklearn's fit equals the Newton solution
    p = np.array([0.1, 0.4, 0.6, 0.9])
    y = np.array([0, 1, 0, 1])
    a, b = _official_platt_by_hand(p, y)
    assert b == pytest.approx(-a / 2, abs=1e-9)  # symmetric about 0.5
    np.testing.assert_allclose(fit_calibrator("platt", p, y).predict(p), 1 / (1 + np.exp(-(a * p + b))), atol=5e-4)


def test_isotonic_clips_outside_the_fitted_range_and_is_monotone():
    cal = fit_calibrator("isotonic", [0.2, 0.4, 0.6, 0.8], [0, 0, 1, 1])
    out = cal.predict(np.array([0.0, 0.3, 0.7, 1.0]))
    assert np.all(np.diff(out) >= 0) and out[0] == 0.0 and out[-1] == 1.0


def test_spline_calibrator_is_deterministic():
    rng = np.random.default_rng(2)
    p, y = _overconfident(400, rng)
    a = fit_calibrator("spline", p, y).predict(p)
    b = fit_calibrator("spline", p, y).predict(p)
    np.testing.assert_array_equal(a, b)


def test_calibrator_bad_inputs():
    with pytest.raises((ValueError, TypeError), match="kind"):
        fit_calibrator("temperature", [0.1, 0.9], [0, 1])
    with pytest.raises((ValueError, TypeError), match="both classes"):
        fit_calibrator("isotonic", [0.1, 0.9], [1, 1])
    with pytest.raises((ValueError, TypeError), match="probs"):
        fit_calibrator("platt", [0.1, 1.9], [0, 1])
    with pytest.raises((ValueError, TypeError), match="same length"):
        fit_calibrator("beta", [0.1, 0.9, 0.5], [0, 1])
    cal = fit_calibrator("isotonic", [0.1, 0.9], [0, 1])
    with pytest.raises((ValueError, TypeError), match="NaN"):
        cal.predict([0.5, np.nan])


# -------------------------------------------------------------------------------------- prompts
def test_prompt_variants_carry_exactly_their_information():
    q, r = "What is 47 + 38?", "I think 85."
    af = cm_prompt(q, r, variant="answerful")
    al = cm_prompt(q, r, variant="answerless")
    ag = cm_prompt(q, r, variant="agnostic")
    nm = cm_prompt(q, r, variant="with_model_name", model_name="gru")
    for text in (af, al, ag, nm):
        assert q in text and text.endswith(": ")
    assert r in af and r in ag and r in nm and r not in al
    assert "Model Alpha" in af and "Model Alpha" not in ag and "Model Alpha" not in nm and "gru" in nm
    assert "several LLMs" in ag


def test_prompt_bad_inputs():
    with pytest.raises((ValueError, TypeError), match="variant"):
        cm_prompt("q?", "a", variant="verbose")
    with pytest.raises((ValueError, TypeError), match="model_name"):
        cm_prompt("q?", "a", variant="with_model_name")
    with pytest.raises((ValueError, TypeError), match="model_name"):
        cm_prompt("q?", "a", variant="answerful", model_name="gru")
    with pytest.raises((ValueError, TypeError), match="question"):
        cm_prompt("", "a", variant="answerful")


def test_history_and_verbalized_prompts():
    ex = [HistoryExample("What is 1 + 1?", "2", True, 0.1234), HistoryExample("What is 9 + 9?", "17", False, 0.5)]
    h = history_prompt("What is 2 + 2?", "4", ex)
    assert h.index("What is 1 + 1?") < h.index("What is 2 + 2?")  # history first, current pair last
    assert "distance 0.1234" in h and "\nyes\n" in h and "\nno\n" in h and h.endswith(": ")
    v = verbalized_prompt("What is 2 + 2?", "4", ex)
    assert "ANSWER_CORRECT_PROBABILITY: xx.xx%" in v


@pytest.mark.parametrize(
    "text, expected",
    [
        ("ANSWER_CORRECT_PROBABILITY: 73.50%", 0.735),
        ("analysis ... ANSWER_CORRECT_PROBABILITY: 5%", 0.05),
        ("ANSWER_CORRECT_PROBABILITY: 100.00%", 1.0),
        ("ANSWER_CORRECT_PROBABILITY:0.5 %", 0.005),
        ("format ANSWER_CORRECT_PROBABILITY: xx.xx% ... ANSWER_CORRECT_PROBABILITY: 20.00%", 0.2),
    ],
)
def test_parse_verbalized_extracts(text, expected):
    assert parse_verbalized(text) == pytest.approx(expected, abs=1e-12)


@pytest.mark.parametrize(
    "text",
    ["ANSWER_CORRECT_PROBABILITY: 173.50%", "ANSWER_CORRECT_PROBABILITY: -3%", "ANSWER_CORRECT_PROBABILITY: 73.5",
     "ANSWER_CORRECT_PROBABILITY: abc%", "probability 73%", "", None, 0.73, "ANSWER_CORRECT_PROBABILITY: nan%"],
)
def test_parse_verbalized_rejects_malformed(text):
    assert parse_verbalized(text) is None
