"""Method 3 (noisy oracle): brief acceptance criterion 4 and the behaviour of repeated queries."""

from __future__ import annotations

import numpy as np
import pytest

from icml2026.papers.attention_queries import (
    CountingOracle,
    NoisyOracle,
    random_single_head,
    recover_noisy,
    relative_error,
)
from icml2026.papers.attention_queries._threads import single_blas_thread


@pytest.fixture(autouse=True)
def _one_blas_thread():
    # Small dense solves: a multi-threaded BLAS on a shared machine is ~15x slower (see _threads.py).
    with single_blas_thread():
        yield


TAUS = 10.0 ** np.arange(-10, -3)  # brief acceptance 4: tau in {1e-10, ..., 1e-4}


def _slope(kind: str, d: int = 8, seed: int = 0) -> tuple[float, list[float]]:
    head = random_single_head(d, d, np.random.default_rng(seed))
    errs = []
    for i, tau in enumerate(TAUS):
        oracle = NoisyOracle(head, float(tau), np.random.default_rng(1000 + i), kind)
        errs.append(relative_error(recover_noisy(oracle, d, float(tau)).A, head.A))
    return float(np.polyfit(np.log10(TAUS), np.log10(errs), 1)[0]), errs


@pytest.mark.parametrize("kind", ["uniform", "adversarial"])
def test_acceptance_4_error_linear_in_tau(kind):
    # Brief acceptance 4: the error grows ~linearly in tau (log-log slope in [0.8, 1.2]).
    slope, errs = _slope(kind)
    assert 0.8 <= slope <= 1.2
    assert errs[-1] < 0.1  # still a useful estimate at tau = 1e-4 (first-order regime)


def test_noise_free_tolerance_is_exact_and_budget_is_d2_plus_d():
    head = random_single_head(6, 6, np.random.default_rng(1))
    oracle = CountingOracle(NoisyOracle(head, 0.0, np.random.default_rng(2)))
    est = recover_noisy(oracle, 6, 0.0)
    assert oracle.n_queries == est.n_queries == 42 + est.n_rescale_queries
    assert relative_error(est.A, head.A) < 1e-10


def test_median_of_repeats_helps_against_random_not_adversarial_noise():
    # Median of 9 U[-tau, tau] draws has about a third of the spread of one draw; averaged over 5 heads the
    # error must drop clearly. The adversarial noise (always +tau sign f) is not reduced at all.
    tau, d = 1e-5, 6
    single, median = [], []
    for seed in range(5):
        head = random_single_head(d, d, np.random.default_rng(seed))
        one = recover_noisy(NoisyOracle(head, tau, np.random.default_rng(seed)), d, tau)
        single.append(relative_error(one.A, head.A))
        est = recover_noisy(NoisyOracle(head, tau, np.random.default_rng(seed)), d, tau, n_repeats=9)
        assert est.n_queries == 9 * (d * d + d) + est.n_rescale_queries
        median.append(relative_error(est.A, head.A))
    assert np.mean(median) < 0.7 * np.mean(single)
    head = random_single_head(d, d, np.random.default_rng(0))
    adv1 = recover_noisy(NoisyOracle(head, tau, kind="adversarial"), d, tau)
    adv9 = recover_noisy(NoisyOracle(head, tau, kind="adversarial"), d, tau, n_repeats=9)
    np.testing.assert_allclose(adv1.A, adv9.A, rtol=1e-12)


def test_larger_norm_budget_reduces_error():
    # Error ~ tau / (s^3 |v^T c|): a larger token norm budget B_x gives a smaller error.
    head = random_single_head(6, 6, np.random.default_rng(3))
    errs = []
    for bound in (0.25, 1.0):
        est = recover_noisy(NoisyOracle(head, 1e-6, kind="adversarial"), 6, 1e-6, norm_bound=bound)
        errs.append(relative_error(est.A, head.A))
    assert errs[1] < errs[0]


def test_bad_inputs_and_unidentifiable_noise_level():
    head = random_single_head(4, 4, np.random.default_rng(0))
    with pytest.raises(ValueError, match="tau"):
        recover_noisy(head, 4, -1.0)
    with pytest.raises(ValueError, match="norm_bound"):
        recover_noisy(head, 4, 1e-3, norm_bound=0.0)
    with pytest.raises(ValueError, match="window"):
        recover_noisy(head, 4, 1e-3, window=0.7)
    with pytest.raises(ValueError, match="n_repeats"):
        recover_noisy(head, 4, 1e-3, n_repeats=0)
    # A tolerance larger than every |v_i| B_x: v cannot be told apart from 0.
    with pytest.raises(ValueError, match="not identifiable"):
        recover_noisy(NoisyOracle(head, 100.0, kind="adversarial"), 4, 100.0)
