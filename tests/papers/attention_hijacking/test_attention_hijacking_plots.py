"""The bar plot's error bars survive a mean that float rounding puts above its draws' max."""

import numpy as np

from icml2026.papers.attention_hijacking.studies.attacks import _bars


def test_bars_accept_a_mean_an_ulp_above_the_max() -> None:
    draws = [0.1] * 20
    mean = float(np.mean(draws))
    m = {"clean_cta": mean, "clean_cta_min": 0.1, "clean_cta_max": float(np.nextafter(mean, 0.0)),
         "clean_asr": 0.0, "clean_asr_min": 0.0, "clean_asr_max": 0.0}
    _bars(m, "t")  # max an ulp below the mean (anchor, seed 1): raised a negative-yerr ValueError before


def test_range_yerr_clips_only_the_ulp_not_real_spread() -> None:
    from icml2026.core.plotting import range_yerr

    mean = float(np.mean([0.1] * 20))
    err = range_yerr([mean, 0.5], [0.1, 0.2], [float(np.nextafter(mean, 0.0)), 0.9])
    assert err.shape == (2, 2) and (err >= 0).all()
    assert np.allclose(err[:, 1], [0.3, 0.4])  # a genuine spread is passed through unchanged
