"""Planted and null controls of the comparative claims: arms built from a trained model's own predictions.

Each comparative check compares two arms on the same test items (one model at two rates, or two models at
the training rate). Its controls replace one arm by predictions made *by construction* from the other arm's:

- :func:`degrade` turns each correct prediction into a (uniformly drawn) wrong class with probability
  ``drop / accuracy``, so the arm's expected accuracy falls by exactly ``drop`` (a known fraction of items);
- :func:`reshuffle` moves a fraction of correct items to wrong and the matching expected number of wrong items
  to correct, so the expected accuracy is unchanged while the per-item errors differ, as between two trainings
  of one method.

The run's ``control`` field picks the construction (``"none"``: the real arms, the default).
"""

from __future__ import annotations

import numpy as np

__all__ = ["CONTROLS", "degrade", "reshuffle", "wrong_class"]

#: The values of a config's ``control`` field: the real run, the planted effect, the null.
CONTROLS = ("none", "planted", "null")


def wrong_class(labels: np.ndarray, n_classes: int, rng: np.random.Generator) -> np.ndarray:
    """A uniformly drawn class different from each label, shape (n,)."""
    shift = rng.integers(1, n_classes, size=labels.shape)
    return (labels + shift) % n_classes


def degrade(pred: np.ndarray, labels: np.ndarray, drop: float, n_classes: int,
            rng: np.random.Generator) -> np.ndarray:
    """``pred`` with each correct item made wrong with probability ``drop / accuracy`` (capped at 1).

    The expected accuracy of the result is ``accuracy(pred) - drop`` (0 when ``drop`` exceeds the accuracy).
    """
    if not 0.0 <= drop <= 1.0:
        raise ValueError(f"drop: must be in [0, 1], got {drop!r}")
    correct = pred == labels
    acc = float(correct.mean())
    p = min(1.0, drop / acc) if acc > 0 else 0.0
    flip = correct & (rng.random(pred.shape) < p)
    return np.where(flip, wrong_class(labels, n_classes, rng), pred)


def reshuffle(pred: np.ndarray, labels: np.ndarray, fraction: float, n_classes: int,
              rng: np.random.Generator) -> np.ndarray:
    """``pred`` with a ``fraction`` of its correct items made wrong and as many wrong ones (in expectation) made
    correct: the expected accuracy is unchanged, the per-item errors are not (another training of one method).
    """
    if not 0.0 <= fraction <= 1.0:
        raise ValueError(f"fraction: must be in [0, 1], got {fraction!r}")
    correct = pred == labels
    acc = float(correct.mean())
    # expected losses fraction * acc * n must equal expected gains q * (1 - acc) * n
    q = min(1.0, fraction * acc / (1.0 - acc)) if acc < 1 else 0.0
    u = rng.random(pred.shape)
    lose = correct & (u < fraction)
    gain = ~correct & (u < q)
    out = np.where(lose, wrong_class(labels, n_classes, rng), pred)
    return np.where(gain, labels, out)
