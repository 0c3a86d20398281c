"""Error-correlation statistics (brief Sec. 4): phi, kappa, agreement-when-both-wrong, AUROC, ECE, MI."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from icml2026.core import stats
from icml2026.core.validate import as_array, as_labels, as_probabilities, finite_number, positive_int

__all__ = [
    "BothWrong",
    "SocialVsTruth",
    "agreement_when_both_wrong",
    "auroc",
    "bootstrap_ci",
    "cohen_kappa",
    "error_overlap",
    "expected_calibration_error",
    "mutual_information",
    "permutation_pvalue_mi",
    "phi_matrix",
    "social_vs_truth",
]


def phi_matrix(correct: np.ndarray) -> np.ndarray:
    """Pairwise phi coefficient of correctness (m, m) from correct[m, q] booleans (NaN for constant rows)."""
    x = _binary_matrix(correct, "correct")
    xc = x - x.mean(axis=1, keepdims=True)
    sd = np.sqrt((xc**2).mean(axis=1))
    with np.errstate(invalid="ignore", divide="ignore"):
        return (xc @ xc.T / x.shape[1]) / np.outer(sd, sd)


def cohen_kappa(a: np.ndarray, b: np.ndarray) -> float:
    """Cohen's kappa of two raters' labels: (p_o - p_e) / (1 - p_e), p_e from the two marginals."""
    a, b = _label_vector(a, "a"), _label_vector(b, "b")
    _same_len(a=a, b=b)
    labels = np.union1d(a, b)
    pa = np.array([np.mean(a == v) for v in labels])
    pb = np.array([np.mean(b == v) for v in labels])
    po, pe = float(np.mean(a == b)), float(pa @ pb)
    return 1.0 if pe == 1 else (po - pe) / (1 - pe)


@dataclass
class BothWrong:
    """Agreement of two models on the questions where both are wrong."""

    rate: float  # P(a_m = a_m' | both wrong)
    baseline: float  # the same under independent errors with each model's marginal wrong-answer distribution
    n_both_wrong: int

    @property
    def ratio(self) -> float:
        return self.rate / self.baseline if self.baseline > 0 else float("nan")


def agreement_when_both_wrong(a: np.ndarray, b: np.ndarray, gold: np.ndarray, n_vocab: int) -> BothWrong:
    """P(a = b | a != gold, b != gold) and its independence baseline (brief Sec. 4).

    a, b, gold : (q,) integer codes in [0, V) (answers of -1 count as wrong but never agree).
    The baseline for question q is sum_{w != g_q} p_a(w) p_b(w) / ((1 - p_a(g_q)) (1 - p_b(g_q))), where
    p_m is model m's marginal answer distribution over all questions, averaged over the both-wrong questions;
    for uniform marginals over A options it equals 1 / (A - 1).
    """
    n_vocab = positive_int(n_vocab, "n_vocab")
    a, b, gold = as_labels(a, "a"), as_labels(b, "b"), as_labels(gold, "gold", n_classes=n_vocab)
    _same_len(a=a, b=b, gold=gold)
    for name, x in (("a", a), ("b", b)):
        if x.min() < -1 or x.max() >= n_vocab:
            raise ValueError(f"{name}: codes must lie in [-1, {n_vocab - 1}] (-1 = no answer)")
    both = (a != gold) & (b != gold)
    if not both.any():
        return BothWrong(float("nan"), float("nan"), 0)
    pa = np.bincount(a[a >= 0], minlength=n_vocab) / max(1, int((a >= 0).sum()))
    pb = np.bincount(b[b >= 0], minlength=n_vocab) / max(1, int((b >= 0).sum()))
    g = gold[both]
    with np.errstate(invalid="ignore", divide="ignore"):
        base = (float(pa @ pb) - pa[g] * pb[g]) / ((1 - pa[g]) * (1 - pb[g]))
    rate = float(np.mean((a[both] == b[both]) & (a[both] >= 0)))
    return BothWrong(rate, float(np.nanmean(base)), int(both.sum()))


def error_overlap(correct: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(m, m) P(m' wrong | m wrong) [row m, column m'] and (m,) P(m' wrong), from correct[m, q]."""
    wrong = _binary_matrix(correct, "correct") == 0
    n_wrong = wrong.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        cond = (wrong.astype(float) @ wrong.T.astype(float)) / n_wrong[:, None]
    return cond, wrong.mean(axis=1)


def auroc(scores: np.ndarray, labels: np.ndarray) -> float:
    """Area under the ROC curve of ``scores`` for 0/1 ``labels``; NaN if one class is empty.

    A thin wrapper of :func:`icml2026.core.stats.auroc` (scikit-learn; ties count one half, as the
    Mann-Whitney statistic with mid-ranks that this function computed before).
    """
    s = as_array(scores, "scores", ndim=1)
    y = as_labels(labels, "labels", binary=True)
    _same_len(scores=s, labels=y)
    return stats.auroc(s, y)


def expected_calibration_error(conf: np.ndarray, correct: np.ndarray, n_bins: int = 10) -> float:
    """ECE with equal-width bins on [0, 1]: sum_b (n_b / n) |acc_b - conf_b|, a confidence of 1 in the last bin.

    A thin wrapper of :func:`icml2026.core.stats.expected_calibration_error` (mass weighting).
    conf : confidences in [0, 1], any shape; correct : 0/1 (or bool) of the same shape."""
    return stats.expected_calibration_error(conf, correct, n_bins, weighting="mass", one_in_last_bin=True)


def mutual_information(x: np.ndarray, y: np.ndarray) -> float:
    """Plug-in mutual information (nats) of two discrete label vectors."""
    x, y = _label_vector(x, "x"), _label_vector(y, "y")
    _same_len(x=x, y=y)
    _, xi = np.unique(x, return_inverse=True)
    _, yi = np.unique(y, return_inverse=True)
    joint = np.zeros((xi.max() + 1, yi.max() + 1))
    np.add.at(joint, (xi, yi), 1.0)
    joint /= joint.sum()
    px, py = joint.sum(1, keepdims=True), joint.sum(0, keepdims=True)
    nz = joint > 0
    return float(np.sum(joint[nz] * np.log(joint[nz] / (px @ py)[nz])))


def permutation_pvalue_mi(x: np.ndarray, y: np.ndarray, rng: np.random.Generator, n_perm: int = 200) -> float:
    """P-value of MI(x, y) against shuffling y across prompts (keeps both marginals), (1 + #>=) / (1 + n)."""
    n_perm = positive_int(n_perm, "n_perm")
    obs = mutual_information(x, y)
    y = np.asarray(y)
    hits = sum(mutual_information(x, rng.permutation(y)) >= obs - 1e-12 for _ in range(n_perm))
    return (1 + hits) / (1 + n_perm)


def bootstrap_ci(
    values: np.ndarray,
    rng: np.random.Generator,
    n_boot: int = 1000,
    level: float = 0.95,
    stat: Callable[..., np.ndarray] = np.mean,
) -> tuple[float, float, float]:
    """(estimate, low, high): percentile bootstrap over the first axis; NaNs for no values.

    A thin wrapper of :func:`icml2026.core.stats.bootstrap_ci` (``scipy.stats.bootstrap``); ``stat`` must
    reduce along an ``axis`` keyword, as numpy's reductions do.
    """
    n_boot = positive_int(n_boot, "n_boot")
    finite_number(level, "level", lo=0, hi=1, lo_open=True, hi_open=True)
    v = np.asarray(values)
    if v.dtype.kind in "fc" and not np.all(np.isfinite(v)):
        raise ValueError("values: contains NaN or inf")
    ci = stats.bootstrap_ci(v, rng, statistic=stat, n_resamples=n_boot, level=float(level), method="percentile")
    return ci.estimate, ci.low, ci.high


@dataclass
class SocialVsTruth:
    """Accuracy of models at predicting the others' plurality vs the truth, on uncertain questions (C2)."""

    social: tuple[float, float, float]  # (estimate, low, high)
    truth: tuple[float, float, float]
    n_items: int  # (model, question) pairs above the entropy threshold


def social_vs_truth(
    probs: np.ndarray,
    samples: np.ndarray,
    gold: np.ndarray,
    rng: np.random.Generator,
    entropy_threshold: float = 0.5,
    n_boot: int = 1000,
) -> SocialVsTruth:
    """C2 harness (brief Sec. 4).

    probs : (m, q, V) each model's answer distribution; its prediction (of the truth and of the crowd) is
        the modal answer.
    samples : (m, s, q) sampled answer codes; the *others' plurality* for model m pools the samples of every
        other model (ties broken with ``rng``).
    entropy_threshold : keep (m, q) whose own answer distribution has entropy > threshold * ln V.
    Bootstrap CIs resample (model, question) pairs.
    """
    from .aggregate import vote_counts

    probs = as_probabilities(probs, "probs", ndim=3, rows_sum_to_one=True)
    n_m, n_q, n_v = probs.shape
    samples = np.asarray(samples)
    if samples.ndim != 3 or samples.shape[0] != n_m or samples.shape[2] != n_q or samples.shape[1] < 1:
        raise ValueError(f"samples: expected shape ({n_m}, s, {n_q}) to match probs, got {samples.shape}")
    if not np.issubdtype(samples.dtype, np.integer) or samples.min() < -1 or samples.max() >= n_v:
        raise ValueError(f"samples: must be integer codes in [-1, {n_v - 1}]")
    if n_m < 2:
        raise ValueError("probs: needs at least two models (each predicts the others' plurality)")
    gold = as_labels(gold, "gold", n_classes=n_v)
    if len(gold) != n_q:
        raise ValueError(f"gold: has {len(gold)} entries for {n_q} questions")
    finite_number(entropy_threshold, "entropy_threshold", lo=0, hi=1)
    pred = probs.argmax(axis=2)
    with np.errstate(divide="ignore", invalid="ignore"):
        ent = -np.nansum(np.where(probs > 0, probs * np.log(probs), 0.0), axis=2)
    social_hits, truth_hits = [], []
    for m in range(n_m):
        others = np.delete(samples, m, axis=0)
        counts = vote_counts(others, n_v)
        keys = np.where(counts == counts.max(axis=1, keepdims=True), rng.random(counts.shape), -1.0)
        plural = keys.argmax(axis=1)
        keep = ent[m] > entropy_threshold * np.log(n_v)
        social_hits.append(pred[m][keep] == plural[keep])
        truth_hits.append(pred[m][keep] == gold[keep])
    s, t = np.concatenate(social_hits).astype(float), np.concatenate(truth_hits).astype(float)
    return SocialVsTruth(bootstrap_ci(s, rng, n_boot), bootstrap_ci(t, rng, n_boot), len(s))


def _label_vector(x: object, name: str) -> np.ndarray:
    """A non-empty 1-D vector of discrete labels (numbers or strings), no NaN."""
    arr = np.asarray(x)
    if arr.ndim != 1 or arr.size == 0:
        raise ValueError(f"{name}: expected a non-empty 1-D vector of labels, got shape {arr.shape}")
    if arr.dtype.kind == "f" and not np.all(np.isfinite(arr)):
        raise ValueError(f"{name}: contains NaN or inf")
    if arr.dtype.kind == "O":
        raise ValueError(f"{name}: labels must be numbers or strings, not objects")
    return arr


def _binary_matrix(x: object, name: str) -> np.ndarray:
    """correct[m, q] as a float 0/1 matrix with at least one model and one question."""
    arr = np.asarray(x)
    if arr.ndim != 2 or arr.size == 0:
        raise ValueError(f"{name}: expected a non-empty (models, questions) matrix, got shape {arr.shape}")
    f = as_array(arr, name)
    if not np.all((f == 0) | (f == 1)):
        raise ValueError(f"{name}: entries must be 0/1 or booleans")
    return f


def _same_len(**arrays: np.ndarray) -> None:
    lengths = {k: len(v) for k, v in arrays.items()}
    if len(set(lengths.values())) > 1:
        raise ValueError("arguments must have the same length: " + ", ".join(f"{k}={n}" for k, n in lengths.items()))
