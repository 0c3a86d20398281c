"""Data: the procedural MNIST-1D-style generator, digits, binary split and random labels."""

from __future__ import annotations

import numpy as np
import pytest

from icml2026.papers.gibbs_bounds import (
    digits_binary_task,
    make_mnist1d,
    mnist1d_binary_task,
    randomize_labels,
)


def test_mnist1d_generator_is_procedural_and_seeded() -> None:
    x1, y1 = make_mnist1d(300, np.random.default_rng(5))
    x2, y2 = make_mnist1d(300, np.random.default_rng(5))
    x3, _ = make_mnist1d(300, np.random.default_rng(6))
    assert x1.shape == (300, 40) and x1.dtype == np.float32  # MNIST-1D: 40-point sequences
    np.testing.assert_array_equal(x1, x2)
    np.testing.assert_array_equal(y1, y2)
    assert not np.array_equal(x1, x3)
    assert set(np.unique(y1)) == set(range(10))
    # standardised overall
    assert abs(float(x1.mean())) < 1e-5 and abs(float(x1.std()) - 1) < 1e-4
    # the classes carry signal: nearest class mean of the translation-invariant |FFT| features beats
    # chance (0.1) clearly on held-out data (measured 0.32-0.36 over three seeds)
    xt, yt = make_mnist1d(2000, np.random.default_rng(7))

    def feats(x: np.ndarray) -> np.ndarray:
        return np.abs(np.fft.rfft(x, axis=1))

    means = np.stack([feats(x1)[y1 == c].mean(0) for c in range(10)])
    pred = np.argmin(((feats(xt)[:, None, :] - means[None]) ** 2).sum(-1), axis=1)
    assert np.mean(pred == yt) > 0.2


def test_mnist1d_binary_task_balanced() -> None:
    task = mnist1d_binary_task(400, 200, np.random.default_rng(0))
    assert task.x_train.shape == (400, 40) and task.x_test.shape == (200, 40)
    assert task.y_train.sum() == 200 and task.y_test.sum() == 100  # half per group {0-4} / {5-9}
    with pytest.raises(ValueError, match="even"):
        mnist1d_binary_task(401, 200, np.random.default_rng(0))


def test_digits_task_and_random_labels() -> None:
    task = digits_binary_task(1200, np.random.default_rng(0))
    assert task.x_train.shape == (1200, 64) and task.x_test.shape == (1797 - 1200, 64)
    assert set(np.unique(task.y_train)) == {0, 1}
    rnd = randomize_labels(task, np.random.default_rng(1))
    np.testing.assert_array_equal(rnd.x_train, task.x_train)
    # brief pitfall: test labels are randomised too (so the true test error is exactly 1/2)
    assert not np.array_equal(rnd.y_test, task.y_test)
    agree = np.mean(rnd.y_test == task.y_test)
    assert 0.4 < agree < 0.6  # independent fair coins agree ~50% (sd ~0.02 for 597 labels)
    with pytest.raises(ValueError, match="n_train"):
        digits_binary_task(1796, np.random.default_rng(0))


def test_real_mnist1d_contains_global_seed() -> None:
    pytest.importorskip("mnist1d")
    import random

    from icml2026.papers.gibbs_bounds.data import real_mnist1d_binary_task

    np.random.seed(123)
    random.seed(7)
    before_np, before_py = np.random.get_state()[1].copy(), random.getstate()
    a = real_mnist1d_binary_task(40, 40, np.random.default_rng(0))
    assert np.array_equal(np.random.get_state()[1], before_np) and random.getstate() == before_py
    b = real_mnist1d_binary_task(40, 40, np.random.default_rng(0))
    assert np.array_equal(a.x_train, b.x_train) and a.x_train.shape == (40, 40)
    assert a.y_train.sum() == 20 and a.y_test.sum() == 20
    c = real_mnist1d_binary_task(40, 40, np.random.default_rng(1))
    assert not np.array_equal(a.x_train, c.x_train)
