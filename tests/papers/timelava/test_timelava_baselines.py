"""Baselines and loaders: LAVA dual gradient, TimeInf closed form, pyod detectors, shipped data."""

import numpy as np
import ot
import pytest

from icml2026.core.stats import auroc
from icml2026.papers.timelava import (
    lava_sample_values,
    load_anomaly_series,
    load_ucr_classification,
    make_spike_series,
    pyod_segment_scores,
    synthetic_base,
    timeinf_scores,
)


def test_lava_values_are_calibrated_emd_duals():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(9, 16))
    r = rng.normal(size=(7, 16))
    v, u = lava_sample_values(x, r)
    n = len(u)
    assert abs(v.sum()) < 1e-10
    np.testing.assert_allclose(v, -(u - (u.sum() - u) / (n - 1)), atol=1e-10)
    # u is a dual of exact OT: u_i + v_j <= C_ij with equality on the plan's support.
    cost = np.linalg.norm(x[:, None] - r[None], axis=2)
    plan, log = ot.emd(np.full(n, 1 / n), np.full(7, 1 / 7), cost, log=True)
    np.testing.assert_allclose(log["u"], u)


def test_timeinf_influence_matches_explicit_formula():
    rng = np.random.default_rng(1)
    x = rng.normal(size=80)
    window, lam = 5, 1e-2
    s = timeinf_scores(x, window, lam)
    xs = (x - x.mean()) / x.std()
    p = window - 1
    rows = [np.r_[xs[t - p : t], 1.0] for t in range(p, len(x))]
    z = np.array(rows)
    y = xs[p:]
    h = z.T @ z / len(z) + lam * np.eye(p + 1)
    w = np.linalg.solve(h, z.T @ y / len(z))
    infl = np.array(
        [((y[k] - z[k] @ w) * z[k]) @ np.linalg.solve(h, (y[k] - z[k] @ w) * z[k]) for k in range(len(z))]
    )
    # point t = 10 is covered by blocks whose span [k, k+p] contains it: k = 6..10
    assert s[10] == pytest.approx(infl[6:11].mean())


@pytest.mark.slow
def test_baseline_detectors_find_large_spikes():
    rng = np.random.default_rng(2)
    x, y = make_spike_series(600, 0.015, (8.0, 10.0), rng)
    ref = synthetic_base(600, rng)
    for det in ("lof", "knn_ref"):
        s = pyod_segment_scores(x, ref, det, np.random.default_rng(0), 32, 4)
        assert s.shape == x.shape
        assert auroc(s, y) > 0.6  # clearly better than chance on magnitude-8+ spikes
    # IsolationForest on z-normalised segments is weak here (AUC ~0.2, reported as measured in the card);
    # check only that it is seeded by the generator.
    s1 = pyod_segment_scores(x, ref, "iforest", np.random.default_rng(0), 32, 4)
    s2 = pyod_segment_scores(x, ref, "iforest", np.random.default_rng(0), 32, 4)
    s3 = pyod_segment_scores(x, ref, "iforest", np.random.default_rng(1), 32, 4)
    np.testing.assert_array_equal(s1, s2)
    assert not np.array_equal(s1, s3)
    assert auroc(timeinf_scores(x, 32), y) > 0.6
    with pytest.raises(ValueError, match="unknown detector"):
        pyod_segment_scores(x, ref, "svm", rng)


@pytest.mark.parametrize(
    "name,length,n_anom",
    [
        ("InternalBleeding16", 7501, 12),
        ("ecg-diff-count-3", 10000, 300),
        ("mitdb", 7500, 352),
        ("yahoo", 1000, 7),
    ],
)
def test_shipped_anomaly_series(name, length, n_anom):
    ds = load_anomaly_series(name)
    # sizes and label counts documented in the brief (verified inside the aeon 1.6 / sktime 1.2 wheels)
    assert ds.series.shape == (length,) and int(ds.labels.sum()) == n_anom
    assert np.all(np.isfinite(ds.reference)) and not np.array_equal(ds.reference, ds.series)


def test_shipped_classification_sets():
    gp = load_ucr_classification("GunPoint")
    assert gp.x_train.shape == (50, 150) and gp.x_test.shape == (150, 150)
    assert set(gp.y_train) == {0, 1}
    with pytest.raises(FileNotFoundError, match="not shipped"):
        load_ucr_classification("NoSuchSet")
    with pytest.raises(ValueError, match="unknown anomaly series"):
        load_anomaly_series("nab")
