"""Bad input to TimeLAVA's public functions and configs: a ValueError naming the argument, never a deep crash
or a silently wrong number (issue 14)."""

import dataclasses

import numpy as np
import pytest

from icml2026.core.registry import get_experiment
from icml2026.papers.timelava import (
    calibrated_values,
    lava_sample_values,
    make_spike_series,
    pointwise_values,
    pyod_segment_scores,
    rank_segments,
    segment_labels,
    segment_series,
    segment_starts,
    sinkhorn_log_unbalanced,
    solve_uot_truncated,
    synthetic_base,
    timeinf_scores,
    transport_plan,
    uot_objective,
    value_samples,
    wavelet_features,
)
from icml2026.papers.timelava.experiments import PruningConfig, flip_labels


def test_segment_series_rejects_zero_stride():
    # issue 14: stride=0 raised ZeroDivisionError deep in np.arange
    with pytest.raises(ValueError, match="stride"):
        segment_series(np.ones((100, 1)), 10, 0)
    with pytest.raises(ValueError, match="window"):
        segment_starts(100, 0, 4)
    with pytest.raises(ValueError, match="series"):
        segment_series(np.ones((100, 1, 1)), 10, 2)
    with pytest.raises(ValueError, match="series"):
        segment_series(np.r_[np.ones(99), np.nan][:, None], 10, 2)


@pytest.mark.parametrize("field, value", [("ridge", -1.0), ("ridge", 0.0), ("ridge", float("nan")),
                                          ("random_draws", 0), ("block", 10**9), ("corrupt_frac", 1.0),
                                          ("prune_fracs", (0.1, 0.9)), ("train_length", 8000)])
def test_pruning_config_rejects_nonsense(field, value):
    # issue 14: ridge=-1 passed and gave a silently wrong verdict
    with pytest.raises(ValueError, match=f"^{field}"):
        PruningConfig(**{field: value})


def test_every_quick_config_rejects_the_contract_values():
    for name in ("solver_checks", "anomaly_real", "anomaly_synthetic", "label_noise", "pruning"):
        base = get_experiment(f"timelava.{name}").presets["quick"]
        for f in dataclasses.fields(base):
            if isinstance(getattr(base, f.name), bool):
                continue
            for bad in (-1, 10**9, float("nan"), float("inf")):
                val = (bad,) if isinstance(getattr(base, f.name), tuple) else bad
                with pytest.raises(ValueError, match=f"^{f.name}"):
                    dataclasses.replace(base, **{f.name: val})


def test_value_functions_reject_nan_and_mismatched_shapes():
    rng = np.random.default_rng(0)
    segs = rng.normal(size=(10, 16))
    bad = segs.copy()
    bad[3, 4] = np.nan
    with pytest.raises(ValueError, match="samples"):
        value_samples(bad, segs)
    with pytest.raises(ValueError, match="segments"):
        wavelet_features(bad)
    with pytest.raises(ValueError, match="samples"):
        lava_sample_values(bad, segs)
    with pytest.raises(ValueError, match="label_weight"):
        lava_sample_values(segs, segs[:5], label_weight=float("nan"))
    with pytest.raises(ValueError, match="values"):
        rank_segments([1.0, np.nan])
    with pytest.raises(ValueError, match="f"):
        calibrated_values(np.array([0.1, np.inf]), 2.0)
    with pytest.raises(ValueError, match="kappa"):
        calibrated_values(np.array([0.1, 0.2]), -2.0)


def test_pointwise_values_checks_lengths_and_ranges():
    with pytest.raises(ValueError, match="same length"):
        pointwise_values(np.ones(3), np.array([0, 4]), 8, 20)
    with pytest.raises(ValueError, match="starts"):
        pointwise_values(np.ones(2), np.array([0, 15]), 8, 20)  # a segment would end past the series
    with pytest.raises(ValueError, match="window"):
        pointwise_values(np.ones(2), np.array([0, 4]), 0, 20)
    with pytest.raises(ValueError, match="labels"):
        segment_labels(np.array([]), np.array([0]), 4)


def test_solver_functions_validate_arguments():
    d = np.random.default_rng(1).uniform(size=(5, 4))
    with pytest.raises(ValueError, match="tol"):
        sinkhorn_log_unbalanced(d, tol=float("nan"))
    with pytest.raises(ValueError, match="max_iter"):
        sinkhorn_log_unbalanced(d, max_iter=0)
    with pytest.raises(ValueError, match="init"):
        sinkhorn_log_unbalanced(d, init=(np.zeros(3), np.zeros(4)))
    with pytest.raises(ValueError, match="f and g"):
        transport_plan(d, np.zeros(4), np.zeros(4), 0.1)
    with pytest.raises(ValueError, match="eps"):
        transport_plan(d, np.zeros(5), np.zeros(4), float("nan"))
    with pytest.raises(ValueError, match="plan"):
        uot_objective(-np.ones((5, 4)), d, np.full(5, 0.2), np.full(4, 0.25), 2.0, 0.1)
    with pytest.raises(ValueError, match="n_neighbors"):
        solve_uot_truncated(lambda s, e: d[s:e], 5, 4, n_neighbors=0)
    with pytest.raises(ValueError, match="returned shape"):
        solve_uot_truncated(lambda s, e: d[s:e, :3], 5, 4)


def test_baselines_and_generators_validate_arguments():
    rng = np.random.default_rng(2)
    x = synthetic_base(300, rng)
    with pytest.raises(ValueError, match="ridge"):
        timeinf_scores(x, 16, ridge=float("inf"))
    with pytest.raises(ValueError, match="stride"):
        pyod_segment_scores(x, x[::-1].copy(), "iforest", rng, 16, 0)
    with pytest.raises(ValueError, match="rng"):
        pyod_segment_scores(x, x[::-1].copy(), "iforest", 0, 16, 4)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="noise"):
        synthetic_base(10, rng, noise=float("nan"))
    with pytest.raises(ValueError, match="magnitude"):
        make_spike_series(100, 0.1, (1.0, float("nan")), rng)
    with pytest.raises(ValueError, match="length"):
        make_spike_series(0, 0.1, (1.0, 2.0), rng)
    with pytest.raises(ValueError, match="y"):
        flip_labels(np.zeros(10, dtype=int), 0.2, rng)  # one class: nothing to flip to
    with pytest.raises(ValueError, match="frac"):
        flip_labels(np.arange(10) % 2, float("nan"), rng)
