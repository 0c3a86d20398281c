"""Metric definitions: hand-computed fixtures, closed forms, brute force, netcal and sklearn cross-checks."""

from __future__ import annotations

import numpy as np
import pytest

from icml2026.papers.correctness_models import (
    accuracy_at_coverage,
    aurc,
    auroc,
    brier_score,
    cm_accuracy,
    expected_calibration_error,
    risk_coverage,
    rms_calibration_error,
)

# Values chosen away from bin edges (k/30) so the hand computation does not hinge on float rounding.
P = np.array([0.91, 0.82, 0.33, 0.64])
Y = np.array([1, 0, 0, 1])


def test_ece_top_label_hand_fixture():
    # top-label confidences .91 (hit), .82 (miss), .67 (p=.33 -> predicts 0, label 0: hit), .64 (hit);
    # each lands in its own of the 30 bins, so ECE = mean |hit - conf| = (.09 + .82 + .33 + .36) / 4 = 0.4
    assert expected_calibration_error(P, Y) == pytest.approx(0.4, abs=1e-12)


def test_ece_positive_hand_fixture_with_four_bins():
    # positive class, 4 bins [0,.25), [.25,.5), [.5,.75), [.75,1]: {.33}: |0 - .33|, {.64}: |1 - .64|,
    # {.91, .82}: |.5 - .865|; weighted: .25*.33 + .25*.36 + .5*.365 = 0.355
    assert expected_calibration_error(P, Y, n_bins=4, variant="positive") == pytest.approx(0.355, abs=1e-12)


def test_ece_of_constant_one_on_70_percent_labels_is_0_3():
    y = np.r_[np.ones(700), np.zeros(300)].astype(int)
    assert expected_calibration_error(np.ones(1000), y) == pytest.approx(0.3, abs=1e-12)  # brief criterion 1


def test_ece_of_calibrated_scores_is_small_and_of_miscalibrated_is_not():
    rng = np.random.default_rng(0)
    p = rng.random(200_000)
    y = (rng.random(p.size) < p).astype(int)
    assert expected_calibration_error(p, y) < 0.005  # brief criterion 1 (n = 200k)
    y_bad = (rng.random(p.size) < p**3).astype(int)  # the same scores against labels ~ Bernoulli(p^3)
    assert expected_calibration_error(p, y_bad) > 0.02  # ~0.031 at n = 200k (sampling sd ~0.002)


def test_ece_matches_netcal_on_random_arrays():
    netcal = pytest.importorskip("netcal.metrics")
    rng = np.random.default_rng(1)
    p = rng.random(5000)
    y = (rng.random(p.size) < p**2).astype(int)
    pred = (p > 0.5).astype(int)
    ref_top = netcal.ECE(bins=30).measure(np.where(pred == 1, p, 1 - p), (pred == y).astype(int))
    assert expected_calibration_error(p, y) == pytest.approx(ref_top, abs=1e-12)
    ref_pos = netcal.ECE(bins=30).measure(p, y)  # netcal's binary ECE is the positive-class variant
    assert expected_calibration_error(p, y, variant="positive") == pytest.approx(ref_pos, abs=1e-12)


def test_rmsce_hand_fixture_both_formulas():
    # 2 equal-mass bins: {.64, .67} (both hits) and {.82 miss, .91 hit}; gaps .345 and -.365, weights .5
    rms = np.sqrt(0.5 * 0.345**2 + 0.5 * 0.365**2)
    official = np.sqrt(np.sqrt((0.5 * 0.345) ** 2 + (0.5 * 0.365) ** 2))
    assert rms_calibration_error(P, Y, points_per_bin=2, formula="rms") == pytest.approx(rms, abs=1e-12)
    assert rms_calibration_error(P, Y, points_per_bin=2) == pytest.approx(official, abs=1e-12)


def test_aurc_hand_fixture_and_oracle_closed_form():
    # risks of the top 1..4: 0, 1/2, 1/3, 2/4
    assert aurc([0.9, 0.8, 0.7, 0.6], [1, 0, 1, 0]) == pytest.approx((0 + 0.5 + 1 / 3 + 0.5) / 4, abs=1e-12)
    n, e = 10_000, 0.3
    correct = np.r_[np.ones(int(n * (1 - e))), np.zeros(int(n * e))].astype(int)
    val = aurc(np.linspace(1, 0, n), correct)
    assert abs(val - (e + (1 - e) * np.log(1 - e))) < 1e-3  # brief criterion 1: 0.0503 for e = 0.3
    assert abs(val - 0.0503) < 1e-3
    # the reversed (anti-oracle) ranking is far worse, so the check can fail
    assert aurc(np.linspace(0, 1, n), correct) > 0.3


def test_aurc_matches_a_slow_loop():
    rng = np.random.default_rng(2)
    c = rng.random(300)
    y = (rng.random(300) < c).astype(int)
    order = sorted(range(300), key=lambda i: -c[i])
    slow = np.mean([1 - np.mean(y[order[:k]]) for k in range(1, 301)])
    assert aurc(c, y) == pytest.approx(slow, abs=1e-12)
    rc = risk_coverage(c, y)
    assert rc.coverage[-1] == 1.0 and rc.risk[-1] == pytest.approx(1 - y.mean())
    assert accuracy_at_coverage(c, y, 0.5) == pytest.approx(np.mean(y[order[:150]]))


def test_auroc_matches_sklearn_and_pairwise_count():
    from sklearn.metrics import roc_auc_score

    rng = np.random.default_rng(3)
    p = np.round(rng.random(400), 2)  # ties included
    y = (rng.random(400) < p).astype(int)
    pos, neg = p[y == 1], p[y == 0]
    wins = np.sum(pos[:, None] > neg[None, :]) + 0.5 * np.sum(pos[:, None] == neg[None, :])
    pairwise = wins / (pos.size * neg.size)
    assert auroc(p, y) == pytest.approx(roc_auc_score(y, p), abs=1e-12)
    assert auroc(p, y) == pytest.approx(pairwise, abs=1e-12)


def test_brier_and_cm_accuracy():
    assert brier_score(P, Y) == pytest.approx(np.mean((P - Y) ** 2))
    assert cm_accuracy(P, Y) == pytest.approx(0.75)  # greedy yes/no: 1, 1, 0, 1 vs 1, 0, 0, 1


@pytest.mark.parametrize("fn", [expected_calibration_error, rms_calibration_error, auroc, brier_score, aurc])
@pytest.mark.parametrize(
    "probs, labels, word",
    [
        ([0.2, 1.2], [0, 1], "<= 1"),  # outside [0, 1]
        ([0.2, -0.1], [0, 1], ">= 0"),
        ([0.2, np.nan], [0, 1], "NaN"),
        ([], [], "at least"),
        ([0.2, 0.3], [0, 1, 1], "same length"),
        ([0.2, 0.3], [0, 2], "0 or 1"),
    ],
)
def test_bad_inputs_raise_clear_errors(fn, probs, labels, word):
    with pytest.raises((ValueError, TypeError), match=word):
        fn(probs, labels)


def test_auroc_with_one_class_says_so():
    with pytest.raises((ValueError, TypeError), match="one class"):
        auroc([0.2, 0.7, 0.9], [1, 1, 1])


def test_bad_options():
    with pytest.raises((ValueError, TypeError), match="variant"):
        expected_calibration_error(P, Y, variant="classwise")
    with pytest.raises((ValueError, TypeError), match="n_bins"):
        expected_calibration_error(P, Y, n_bins=0)
    with pytest.raises((ValueError, TypeError), match="coverage"):
        accuracy_at_coverage(P, Y, 1.5)
