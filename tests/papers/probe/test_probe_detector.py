"""Detector, balanced accuracy and the Frechet distance against independent routes (realism: test_probe_realism)."""

from __future__ import annotations

import numpy as np
import pytest

from icml2026.core import make_rng
from icml2026.papers.probe import Detector, balanced_accuracy, frechet_distance


def test_balanced_accuracy_matches_sklearn() -> None:
    from sklearn.metrics import balanced_accuracy_score

    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, 300)
    p = rng.random(300)
    assert balanced_accuracy(y, p) == pytest.approx(balanced_accuracy_score(y, p > 0.5), abs=1e-12)
    with pytest.raises(ValueError, match="p_fake"):
        balanced_accuracy(y, p + 1)
    with pytest.raises(ValueError, match="y_true"):
        balanced_accuracy(np.zeros(3), [0.1, 0.2, 0.3])
    with pytest.raises(ValueError, match="same length"):
        balanced_accuracy([0, 1], [0.1, 0.2, 0.3])


def test_frechet_distance_closed_form_for_diagonal_gaussians() -> None:
    # independent coordinates: FD = |mu1 - mu2|^2 + sum (s1 - s2)^2 (the covariances commute)
    rng = np.random.default_rng(1)
    a = rng.normal([0, 0], [1, 2], size=(20000, 2))
    b = rng.normal([1, 0], [2, 2], size=(20000, 2))
    assert frechet_distance(a, b) == pytest.approx(1 + 1 + 0, abs=0.1)
    assert frechet_distance(a, a) == pytest.approx(0, abs=1e-6)
    with pytest.raises(ValueError, match="dimensions"):
        frechet_distance(a, b[:, :1])


def test_detector_learns_a_planted_cue_and_refuses_bad_input() -> None:
    rng = np.random.default_rng(3)
    real = np.clip(rng.normal(0, 0.2, (128, 3, 8, 8)), -1, 1).astype(np.float32)
    fake = real.copy()
    fake[:, :, ::2, ::2] += 0.4  # a checkerboard artefact: a CNN must find it
    fake = np.clip(fake, -1, 1)
    det = Detector(width=8, epochs=4, lr=5e-3).fit(real, fake, make_rng(0))
    y = np.r_[np.zeros(128), np.ones(128)]
    assert balanced_accuracy(y, det.predict_proba(np.concatenate([real, fake]))) > 0.9
    with pytest.raises(ValueError, match="real"):
        det.fit(real[:, :, :, :4], fake, make_rng(0))
    with pytest.raises(ValueError, match="not fitted"):
        Detector().predict_proba(real)
