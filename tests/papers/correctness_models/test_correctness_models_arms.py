"""The control arms of the comparative checks realise the planted effect size on the evaluation items."""

from __future__ import annotations

import numpy as np
import pytest

from icml2026.papers.correctness_models import auroc
from icml2026.papers.correctness_models.arms import with_auroc_gain, with_auroc_loss


def _scores(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    return 1 / (1 + np.exp(-(1.5 * (2 * y - 1) + rng.normal(0, 1.5, n)))), y


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("size", [0.01, 0.02, 0.1])
def test_gain_and_loss_are_realised_to_within_one_item(seed, size):
    p, y = _scores(500, seed)
    base = auroc(p, y)
    n_pos, n_neg = int(y.sum()), int(y.size - y.sum())
    one_item = max(n_pos, n_neg) / (n_pos * n_neg)  # one item moves the AUROC by at most this much
    up = auroc(with_auroc_gain(p, y, size, np.random.default_rng(seed)), y)
    down = auroc(with_auroc_loss(p, y, size, np.random.default_rng(seed)), y)
    goal = min(1.0, base + size)  # the gain stops at a perfect ranking
    assert goal <= up <= goal + one_item + 1e-12
    assert base - size - one_item - 1e-12 <= down <= base - size


def test_arms_are_seeded_and_leave_the_input_alone():
    p, y = _scores(300, 3)
    before = p.copy()
    a = with_auroc_gain(p, y, 0.02, np.random.default_rng(5))
    b = with_auroc_gain(p, y, 0.02, np.random.default_rng(5))
    np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(p, before)
    assert not np.array_equal(a, with_auroc_gain(p, y, 0.02, np.random.default_rng(6)))
