"""Correctness-model metrics with the official definitions (brief Sec. 4).

The official evaluation scores a binary correctness model by its p(yes) ``probs`` against the graded labels
(1 = the target's answer was correct). Calibration errors use the *top-label* view of the binary prediction:
the predicted class is ``1`` when ``p > 0.5`` (``argmax([1 - p, p])``, ties go to class 0), its confidence is
``max(p, 1 - p)`` and it is correct when it equals the label.

=====================  =============================================================================
``expected_calibration_error``  30 equal-width bins on [0, 1], ``sum_b (n_b / n) |acc_b - conf_b|``;
                                a value equal to a bin's upper edge falls in the next bin (numpy.digitize),
                                so p = 1 has a bin of its own, as in the official code (computed by
                                :func:`icml2026.core.stats.expected_calibration_error`).
``rms_calibration_error``       equal-mass bins of ``points_per_bin`` points (``n // points_per_bin``
                                bins) on the top-label confidence, L2 norm.
``auroc``                       :func:`icml2026.core.stats.auroc` (scikit-learn), one class raises.
``aurc`` / ``risk_coverage``    sort by confidence (descending, stable), risk(k) = error rate among the
                                top k; AURC = mean_k risk(k).
=====================  =============================================================================
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

from icml2026.core import stats
from icml2026.core.validate import as_labels, as_probabilities, positive_int, same_length

__all__ = [
    "RiskCoverage",
    "accuracy_at_coverage",
    "auroc",
    "aurc",
    "brier_score",
    "cm_accuracy",
    "expected_calibration_error",
    "reliability_bins",
    "risk_coverage",
    "rms_calibration_error",
]


def _binary_inputs(probs: object, labels: object, probs_name: str = "probs") -> tuple[np.ndarray, np.ndarray]:
    p = as_probabilities(probs, probs_name, ndim=1)
    y = as_labels(labels, "labels", binary=True)
    same_length(**{probs_name: p, "labels": y})
    return p, y


def _binned_error(conf: np.ndarray, hit: np.ndarray, upper_edges: np.ndarray, n_bins: int) -> np.ndarray:
    """Per-bin ``(n_b / n) * (acc_b - conf_b)`` for bins given by their upper edges (numpy.digitize)."""
    idx = np.digitize(conf, upper_edges)
    size = max(n_bins, int(idx.max()) + 1)
    counts = np.bincount(idx, minlength=size).astype(np.float64)
    sums = np.bincount(idx, weights=conf, minlength=size)
    hits = np.bincount(idx, weights=hit, minlength=size)
    safe = np.maximum(counts, 1.0)
    return (counts / conf.size) * (hits / safe - sums / safe)


def expected_calibration_error(
    probs: object,
    labels: object,
    n_bins: int = 30,
    variant: Literal["top_label", "positive"] = "top_label",
) -> float:
    """ECE with ``n_bins`` equal-width bins (brief Sec. 4; the official ``ece`` with 30 bins).

    Parameters
    ----------
    probs : (n,) p(yes), the CM's probability that the target's answer is correct.
    labels : (n,) 0/1, whether it was correct.
    n_bins : number of equal-width bins on [0, 1].
    variant : ``"top_label"`` (official: confidence max(p, 1-p) against [prediction == label]) or
        ``"positive"`` (p against the label itself).
    """
    p, y = _binary_inputs(probs, labels)
    n_bins = positive_int(n_bins, "n_bins", maximum=10**6)
    if variant == "top_label":
        conf, hit = stats.top_label(p, y)
    elif variant == "positive":
        conf, hit = p, y.astype(np.float64)
    else:
        raise ValueError(f"variant: must be 'top_label' or 'positive', got {variant!r}")
    # floor(conf * n_bins), with conf = 1 in a bin of its own: the bins numpy.digitize gives on the
    # official upper edges linspace(0, 1, n_bins + 1)[1:]
    return stats.expected_calibration_error(conf, hit, n_bins, one_in_last_bin=False)


def rms_calibration_error(
    probs: object,
    labels: object,
    points_per_bin: int = 100,
    formula: Literal["official", "rms"] = "official",
) -> float:
    """RMS calibration error with equal-mass bins of ``points_per_bin`` points (brief Sec. 4).

    ``n // points_per_bin`` bins (at least one) on the top-label confidence, upper edges taken from the
    sorted confidences as in the official ``rmsce``. ``formula="official"`` returns what the official code
    computes, ``sqrt(sqrt(sum_b ((n_b/n) (acc_b - conf_b))^2))`` (an L2 norm of the weighted gaps, with its
    ``l2`` square root applied twice); ``formula="rms"`` is the textbook ``sqrt(sum_b (n_b/n)(acc_b - conf_b)^2)``.
    """
    p, y = _binary_inputs(probs, labels)
    points_per_bin = positive_int(points_per_bin, "points_per_bin", maximum=10**9)
    conf, hit = stats.top_label(p, y)
    n_bins = max(1, conf.size // points_per_bin)
    edge_idx = np.minimum(np.round(np.linspace(0, conf.size, n_bins, endpoint=False)).astype(int), conf.size - 1)
    upper = np.sort(conf)[edge_idx][1:]
    if formula == "official":
        weighted = _binned_error(conf, hit, upper, n_bins)
        return float(np.sqrt(np.sqrt(np.sum(weighted**2))))
    if formula == "rms":
        idx = np.digitize(conf, upper)
        counts = np.bincount(idx).astype(np.float64)
        safe = np.maximum(counts, 1.0)
        gap = np.bincount(idx, weights=hit) / safe - np.bincount(idx, weights=conf) / safe
        return float(np.sqrt(np.sum(counts / conf.size * gap**2)))
    raise ValueError(f"formula: must be 'official' or 'rms', got {formula!r}")


def reliability_bins(probs: object, labels: object, n_bins: int = 10) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Positive-class reliability diagram data: per equal-width bin (mean p, observed rate, count)."""
    p, y = _binary_inputs(probs, labels)
    n_bins = positive_int(n_bins, "n_bins", maximum=10**4)
    idx = np.minimum((p * n_bins).astype(int), n_bins - 1)
    counts = np.bincount(idx, minlength=n_bins).astype(np.float64)
    safe = np.maximum(counts, 1.0)
    mean_p = np.bincount(idx, weights=p, minlength=n_bins) / safe
    return mean_p, np.bincount(idx, weights=y, minlength=n_bins) / safe, counts


def auroc(probs: object, labels: object) -> float:
    """Area under the ROC curve of p(yes) against the labels (:func:`icml2026.core.stats.auroc`).

    Raises ValueError when the labels hold one class only (AUROC is undefined there; the official code
    catches sklearn's error and reports no value).
    """
    p, y = _binary_inputs(probs, labels)
    return stats.auroc(p, y, one_class="raise")


def brier_score(probs: object, labels: object) -> float:
    """Mean squared error of p(yes) against the 0/1 labels."""
    p, y = _binary_inputs(probs, labels)
    return float(np.mean((p - y) ** 2))


def cm_accuracy(probs: object, labels: object) -> float:
    """Accuracy of the CM's greedy yes/no (yes when p(yes) > 0.5)."""
    p, y = _binary_inputs(probs, labels)
    return float(np.mean((p > 0.5).astype(np.int64) == y))


@dataclass
class RiskCoverage:
    """Selective prediction curve: ``coverage[k-1] = k / n`` and ``risk[k-1]`` = error rate of the top k."""

    coverage: np.ndarray  # (n,)
    risk: np.ndarray  # (n,)
    threshold: np.ndarray  # (n,) the confidence of the k-th kept example


def risk_coverage(confidence: object, correct: object) -> RiskCoverage:
    """Risk-coverage curve: keep the k most confident predictions, k = 1..n (stable descending sort)."""
    c = as_probabilities(confidence, "confidence", ndim=1)
    y = as_labels(correct, "correct", binary=True)
    n = same_length(confidence=c, correct=y)
    order = np.argsort(-c, kind="stable")
    errors = np.cumsum(1 - y[order])
    k = np.arange(1, n + 1)
    return RiskCoverage(coverage=k / n, risk=errors / k, threshold=c[order])


def aurc(confidence: object, correct: object) -> float:
    """Area under the risk-coverage curve, ``mean_k risk(k)`` (brief Sec. 4)."""
    return float(np.mean(risk_coverage(confidence, correct).risk))


def accuracy_at_coverage(confidence: object, correct: object, coverage: float) -> float:
    """Accuracy of the target on the ``ceil(coverage * n)`` most confident questions."""
    if isinstance(coverage, bool) or not isinstance(coverage, (int, float)) or not 0 < coverage <= 1:
        raise ValueError(f"coverage: must be in (0, 1], got {coverage!r}")
    rc = risk_coverage(confidence, correct)
    k = max(1, int(np.ceil(coverage * rc.risk.size)))
    return float(1.0 - rc.risk[k - 1])
