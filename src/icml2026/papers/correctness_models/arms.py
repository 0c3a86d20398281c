"""Control arms of the comparative checks, built by construction from a measured arm (issue 58).

A comparative check is a test only when it passes on an effect of the paper's size and fails on a null.
The ``planted`` and ``null`` presets of ``correctness_models.gcm`` replace the method's arm (the GCM, the
leave-one-target-out GCM, the answerful CM) by an arm made from the comparison's other arm on the same
evaluation items, with an effect of a chosen size:

- :func:`with_auroc_gain`: the scores with the oracle's (the label's) on the first k items of a seeded
  order, k the smallest for which the AUROC is at least ``gain`` above the original's (an oracle on a
  fraction f of the items lifts the AUROC to 1 - (1 - f)^2 (1 - AUROC) in expectation);
- :func:`with_auroc_loss`: the scores with seeded uniform noise on the first k items, k the smallest for
  which the AUROC is at least ``loss`` below the original's (a CM that guesses on a share of the items).

The effect is realised on the evaluation items themselves (to within one item), so the check's pass rate
over seeds measures the noise of its statistic (the bootstrap interval), not the luck of the construction.
"""

from __future__ import annotations

import numpy as np

from icml2026.core import stats

__all__ = ["with_auroc_gain", "with_auroc_loss"]


def auroc(scores: np.ndarray, y: np.ndarray) -> float:
    """AUROC of ``scores`` against ``y`` (:func:`icml2026.core.stats.auroc`; one class only is an error, as in
    :func:`.metrics.auroc`)."""
    return stats.auroc(scores, y, one_class="raise")


def _smallest_k(scores: np.ndarray, y: np.ndarray, order: np.ndarray, values: np.ndarray, target: float,
                above: bool) -> np.ndarray:
    """Replace scores[order[:k]] by values[:k] for the smallest k whose AUROC is >= target (``above``) or
    <= target; bisection over k (the AUROC moves almost monotonically with k; the result is checked)."""

    def replaced(k: int) -> np.ndarray:
        out = scores.copy()
        out[order[:k]] = values[:k]
        return out

    def ok(k: int) -> bool:
        a = auroc(replaced(k), y)
        return a >= target if above else a <= target

    if not ok(len(y)):
        return replaced(len(y))  # the whole arm replaced: as far as the construction goes
    lo, hi = 0, len(y)
    while lo < hi:
        mid = (lo + hi) // 2
        if ok(mid):
            hi = mid
        else:
            lo = mid + 1
    return replaced(lo)


def with_auroc_gain(scores: np.ndarray, y: np.ndarray, gain: float, rng: np.random.Generator) -> np.ndarray:
    """``scores`` with the label on a seeded share of items: AUROC raised by ``gain`` (at most to 1)."""
    scores, y = np.asarray(scores, dtype=np.float64), np.asarray(y)
    order = rng.permutation(len(y))
    target = min(1.0, auroc(scores, y) + gain)
    return _smallest_k(scores, y, order, y[order].astype(np.float64), target, above=True)


def with_auroc_loss(scores: np.ndarray, y: np.ndarray, loss: float, rng: np.random.Generator) -> np.ndarray:
    """``scores`` with uniform noise on a seeded share of items: AUROC lowered by ``loss`` (at most to ~0.5)."""
    scores, y = np.asarray(scores, dtype=np.float64), np.asarray(y)
    order = rng.permutation(len(y))
    noise = rng.random(len(y))
    target = auroc(scores, y) - loss
    return _smallest_k(scores, y, order, noise, target, above=False)
