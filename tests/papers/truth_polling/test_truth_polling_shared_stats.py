"""truth_polling's AUROC, ECE and bootstrap are thin wrappers of icml2026.core.stats (issue 55).

The paper's own implementations before that change are kept here as references: the wrappers must give
the same numbers, ties included.
"""

from __future__ import annotations

import numpy as np
import pytest

from icml2026.core import make_rng, stats
from icml2026.papers.truth_polling import auroc, bootstrap_ci, expected_calibration_error


def _old_auroc(s: np.ndarray, y: np.ndarray) -> float:
    """truth_polling's AUROC before issue 55: Mann-Whitney U with mid-ranks for ties (a Python loop)."""
    y = y.astype(bool)
    n_pos, n_neg = int(y.sum()), int((~y).sum())
    order = np.argsort(s, kind="mergesort")
    ranks = np.empty(len(s))
    sorted_s = s[order]
    i = 0
    while i < len(s):
        j = i
        while j + 1 < len(s) and sorted_s[j + 1] == sorted_s[i]:
            j += 1
        ranks[order[i : j + 1]] = (i + j) / 2 + 1
        i = j + 1
    return float((ranks[y].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg))


def _old_ece(c: np.ndarray, y: np.ndarray, n_bins: int = 10) -> float:
    """truth_polling's ECE before issue 55: mass-weighted, equal-width bins, 1.0 in the last bin."""
    c, y = c.ravel(), y.ravel().astype(float)
    bins = np.minimum((c * n_bins).astype(int), n_bins - 1)
    return float(sum((bins == b).mean() * abs(y[bins == b].mean() - c[bins == b].mean())
                     for b in range(n_bins) if (bins == b).any()))


@pytest.mark.parametrize("decimals", [0, 1, 2])  # 0: two distinct scores only, every score tied
def test_old_and_new_auroc_agree_on_ties(decimals: int) -> None:
    rng = make_rng(11)
    scores = np.round(rng.random(400), decimals)
    labels = (rng.random(400) < 0.3 + 0.4 * scores).astype(int)
    assert len(np.unique(scores)) < 400  # ties are present
    new = auroc(scores, labels)
    assert new == pytest.approx(_old_auroc(scores, labels), abs=1e-12)  # same statistic, float round-off only
    assert new == stats.auroc(scores, labels)


def test_auroc_all_tied_is_one_half_and_one_class_is_nan() -> None:
    assert auroc(np.full(6, 0.7), np.array([0, 1, 0, 1, 1, 0])) == pytest.approx(0.5)
    assert np.isnan(auroc(np.array([0.1, 0.2]), np.array([1, 1])))


def test_old_and_new_ece_agree_including_confidence_one() -> None:
    rng = make_rng(12)
    conf = np.round(rng.random((5, 7, 30)), 2)  # to the percent, as the facts experiment's confidences
    conf[0, 0, :5] = 1.0  # a confidence of exactly 1 falls in the last bin
    correct = rng.random(conf.shape) < conf
    for n_bins in (10, 15):
        assert expected_calibration_error(conf, correct, n_bins) == pytest.approx(_old_ece(conf, correct, n_bins),
                                                                                  abs=1e-12)


def test_bootstrap_wrapper_is_the_shared_percentile_interval() -> None:
    values = make_rng(13).random(300) < 0.4
    est, lo, hi = bootstrap_ci(values, make_rng(14), n_boot=500)
    ci = stats.bootstrap_ci(values, make_rng(14), n_resamples=500, method="percentile")
    assert (est, lo, hi) == (ci.estimate, ci.low, ci.high)
    assert lo < est < hi
    assert all(np.isnan(x) for x in bootstrap_ci(np.array([]), make_rng(0)))
