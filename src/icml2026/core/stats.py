"""The statistics the papers share, in one implementation each.

==============================  ======================================================================
:func:`expected_calibration_error`  equal-width bins on [0, 1]; bin count, bin weighting and where a
                                    confidence of exactly 1 falls are parameters
:func:`top_label`                   top-label confidence and correctness of a binary p(yes)
:func:`auroc`, :func:`auprc`        through scikit-learn (``roc_auc_score``, ``average_precision_score``)
:func:`bootstrap_ci`                through ``scipy.stats.bootstrap`` (percentile, BCa or basic)
:func:`paired_difference`           mean difference of paired values (e.g. two methods on the same seeds),
                                    with a Student-t interval
==============================  ======================================================================

Every function validates its inputs and raises ``ValueError`` naming the argument.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

import numpy as np

from .validate import as_array, as_labels, as_probabilities, positive_int

__all__ = [
    "expected_calibration_error",
    "top_label",
    "auroc",
    "auprc",
    "bootstrap_ci",
    "BootstrapInterval",
    "paired_difference",
    "PairedDifference",
]


def _same_shape(a: np.ndarray, b: np.ndarray, a_name: str, b_name: str) -> None:
    if a.shape != b.shape:
        raise ValueError(f"{b_name}: shape {b.shape} differs from {a_name}'s shape {a.shape}")


def top_label(probs: object, labels: object) -> tuple[np.ndarray, np.ndarray]:
    """Top-label confidence and correctness of a binary prediction from p(yes).

    The predicted class is 1 when ``p > 0.5`` (``argmax([1 - p, p])``, ties go to 0); its confidence is
    ``max(p, 1 - p)`` and it is correct when it equals the label.

    Returns
    -------
    conf : (n,) confidences in [0.5, 1]; hit : (n,) 0/1 floats.
    """
    p = as_probabilities(probs, "probs", ndim=1)
    y = as_labels(labels, "labels", binary=True)
    _same_shape(p, y, "probs", "labels")
    pred = (p > 0.5).astype(np.int64)
    return np.where(pred == 1, p, 1.0 - p), (pred == y).astype(np.float64)


def expected_calibration_error(
    conf: object,
    correct: object,
    n_bins: int = 10,
    *,
    weighting: Literal["mass", "uniform"] = "mass",
    one_in_last_bin: bool = True,
) -> float:
    """Expected calibration error with ``n_bins`` equal-width bins on [0, 1].

    ``sum_b w_b |acc_b - conf_b|`` over non-empty bins, with ``w_b = n_b / n`` (``weighting="mass"``, the
    usual ECE) or ``1 / #non-empty bins`` (``"uniform"``). A confidence on a bin's upper edge falls in the
    next bin; a confidence of exactly 1 falls in the last bin (``one_in_last_bin=True``) or in a bin of its
    own (``False``, as numpy.digitize on the upper edges does).

    Parameters
    ----------
    conf : confidences in [0, 1], any shape.
    correct : 0/1 (or bool) of the same shape: whether each prediction was right.
    """
    n_bins = positive_int(n_bins, "n_bins", maximum=10**6)
    if weighting not in ("mass", "uniform"):
        raise ValueError(f"weighting: must be 'mass' or 'uniform', got {weighting!r}")
    c = as_probabilities(conf, "conf")
    y_arr = np.asarray(correct)
    _same_shape(c, y_arr, "conf", "correct")
    if c.size == 0:
        raise ValueError("conf: empty")
    y = as_labels(y_arr.ravel(), "correct", binary=True).astype(np.float64)
    c = c.ravel()
    idx = np.floor(c * n_bins).astype(np.int64)
    size = n_bins + 1
    if one_in_last_bin:
        idx = np.minimum(idx, n_bins - 1)
        size = n_bins
    counts = np.bincount(idx, minlength=size).astype(np.float64)
    safe = np.maximum(counts, 1.0)
    acc = np.bincount(idx, weights=y, minlength=size) / safe
    gap = np.abs(acc - np.bincount(idx, weights=c, minlength=size) / safe)
    if weighting == "mass":
        return float(np.sum(counts / c.size * gap))
    return float(np.mean(gap[counts > 0]))


def _scores_labels(scores: object, labels: object) -> tuple[np.ndarray, np.ndarray]:
    s = as_array(scores, "scores", ndim=1)
    y = as_labels(labels, "labels", binary=True)
    _same_shape(s, y, "scores", "labels")
    return s, y


def auroc(scores: object, labels: object, *, one_class: Literal["nan", "raise"] = "nan") -> float:
    """Area under the ROC curve of ``scores`` against 0/1 ``labels`` (``sklearn.metrics.roc_auc_score``).

    With one class only the AUROC is undefined: NaN (``one_class="nan"``) or ``ValueError`` (``"raise"``).
    """
    from sklearn.metrics import roc_auc_score

    s, y = _scores_labels(scores, labels)
    if y.size == 0 or y.min() == y.max():
        if one_class == "raise":
            raise ValueError("labels: AUROC is undefined with one class only"
                             + (f" (every label is {int(y[0])})" if y.size else " (no labels)"))
        return float("nan")
    return float(roc_auc_score(y, s))


def auprc(scores: object, labels: object) -> float:
    """Area under the precision-recall curve (``sklearn.metrics.average_precision_score``); NaN without positives."""
    from sklearn.metrics import average_precision_score

    s, y = _scores_labels(scores, labels)
    if y.size == 0 or y.max() == 0:
        return float("nan")
    return float(average_precision_score(y, s))


@dataclass(frozen=True)
class BootstrapInterval:
    """A bootstrap interval: the statistic on the data, the interval's ends, and the resamples' spread."""

    estimate: float
    low: float
    high: float
    standard_error: float


def bootstrap_ci(
    values: object,
    rng: np.random.Generator,
    *,
    statistic: Callable[..., np.ndarray] = np.mean,
    n_resamples: int = 1000,
    level: float = 0.95,
    method: Literal["percentile", "basic", "BCa"] = "percentile",
) -> BootstrapInterval:
    """Bootstrap interval of ``statistic`` over the first axis of ``values`` (``scipy.stats.bootstrap``).

    ``statistic(x, axis=...)`` must reduce along ``axis`` (numpy reductions do). With one value the
    interval is that value; with none, NaNs.
    """
    from scipy.stats import bootstrap

    n_resamples = positive_int(n_resamples, "n_resamples", maximum=10**7)
    if not isinstance(level, (int, float)) or not 0 < float(level) < 1:
        raise ValueError(f"level: must be in (0, 1), got {level!r}")
    if method not in ("percentile", "basic", "BCa"):
        raise ValueError(f"method: must be 'percentile', 'basic' or 'BCa', got {method!r}")
    raw = np.asarray(values)
    if raw.ndim == 0:
        raise ValueError("values: expected an array with a first axis, got a scalar")
    if raw.shape[0] == 0:
        nan = float("nan")
        return BootstrapInterval(nan, nan, nan, nan)
    v = as_array(values, "values")
    est = float(statistic(v, axis=0))
    if v.shape[0] == 1:
        return BootstrapInterval(est, est, est, 0.0)
    if np.all(v == v[0]):  # scipy warns on degenerate resamples; every resample equals the data
        return BootstrapInterval(est, est, est, 0.0)
    res = bootstrap((v,), statistic, n_resamples=n_resamples, confidence_level=float(level), method=method,
                    axis=0, vectorized=True, rng=rng)
    return BootstrapInterval(est, float(res.confidence_interval.low), float(res.confidence_interval.high),
                             float(res.standard_error))


@dataclass(frozen=True)
class PairedDifference:
    """``mean(a - b)`` over paired values, its sample standard deviation and a Student-t interval."""

    mean: float
    sd: float
    low: float
    high: float
    n: int
    min: float
    max: float


def paired_difference(a: object, b: object, *, level: float = 0.95) -> PairedDifference:
    """Mean of ``a - b`` over pairs (two methods on the same seeds or items) with a t interval.

    With one pair the interval is the difference itself (no spread can be estimated).
    """
    from scipy import stats

    x = as_array(a, "a", ndim=1)
    y = as_array(b, "b", ndim=1)
    _same_shape(x, y, "a", "b")
    if x.size == 0:
        raise ValueError("a: no pairs")
    if not isinstance(level, (int, float)) or not 0 < float(level) < 1:
        raise ValueError(f"level: must be in (0, 1), got {level!r}")
    d = x - y
    m = float(d.mean())
    if d.size == 1:
        return PairedDifference(m, 0.0, m, m, 1, m, m)
    sd = float(d.std(ddof=1))
    half = float(stats.t.ppf((1 + float(level)) / 2, d.size - 1)) * sd / np.sqrt(d.size)
    return PairedDifference(m, sd, m - half, m + half, int(d.size), float(d.min()), float(d.max()))
