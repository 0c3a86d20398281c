"""ULA vs the exact Gibbs posterior of the 2-D linear class; the non-equilibrium (KL decrease) detector."""

from __future__ import annotations

import numpy as np
import pytest

from icml2026.papers.gibbs_bounds.bounds import gibbs_kl
from icml2026.papers.gibbs_bounds.experiments import _equilibrium_mask, nonequilibrium_betas
from icml2026.papers.gibbs_bounds.stability import (
    exact_gibbs_linear,
    make_linear_sigmoid_problem,
    ula_linear_chains,
)


@pytest.fixture(scope="module")
def prob():  # type: ignore[no-untyped-def]
    return make_linear_sigmoid_problem(40, np.random.default_rng(0))


def test_exact_enumeration_matches_identity(prob) -> None:  # type: ignore[no-untyped-def]
    betas = np.linspace(0.0, 32.0, 33)
    ex = exact_gibbs_linear(prob, betas, n_grid=61)
    assert ex["kl"][0] == pytest.approx(0.0, abs=1e-12)
    # the KL by enumeration equals the integral identity (fine trapezoid): independent computations
    kl_id = gibbs_kl(betas, ex["train_loss"], rule="trapezoid")
    assert np.max(np.abs(kl_id - ex["kl"])) < 5e-3
    assert np.all(np.diff(ex["train_loss"]) <= 1e-12)  # E_Q L_S non-increasing in beta
    # grid convergence
    ex2 = exact_gibbs_linear(prob, betas, n_grid=41)
    assert np.max(np.abs(ex2["kl"] - ex["kl"])) < 1e-4


def test_ula_close_to_exact(prob) -> None:  # type: ignore[no-untyped-def]
    betas = np.array([0.0, 20.0])
    ex = exact_gibbs_linear(prob, betas, n_grid=61)
    res = ula_linear_chains(prob, betas, eta=0.3, n_steps=300, n_chains=100, rng=np.random.default_rng(1))
    lbar = res["train_loss"][res["steps"] > 150].mean(axis=0)
    assert np.max(np.abs(lbar - ex["train_loss"])) < 0.01
    with pytest.raises(ValueError, match="eta"):
        ula_linear_chains(prob, betas, eta=2.5, n_steps=10, n_chains=2, rng=np.random.default_rng(0))


def test_nonequilibrium_flags_a_training_loss_increase() -> None:
    betas = np.array([0.0, 1.0, 2.0, 4.0])
    assert not nonequilibrium_betas(betas, np.array([0.5, 0.4, 0.3, 0.2])).any()
    losses = np.array([0.5, 0.4, 0.3, 0.35])  # the chain at the last beta has not converged
    assert nonequilibrium_betas(1000 * betas, losses).tolist() == [False, False, False, True]
    # the same shape at tiny KLs (0.2 nats) is below the 1-nat tolerance: noise, not flagged
    assert not nonequilibrium_betas(betas, losses).any()
    # a negative first estimate (loss above the prior's, noise near beta = 0) is not flagged
    assert not nonequilibrium_betas(1000 * betas, np.array([0.5, 0.51, 0.3, 0.2])).any()


def test_true_label_bound_is_read_only_at_equilibrium_betas() -> None:
    # the committed full run: the last chain's KL estimate dropped (10530 -> 5926 nats), so its "bound" 0.397
    # was below every equilibrium beta's (0.519-0.540); the minimum must skip it and the prior at beta = 0
    bounds = np.array([0.5, 0.517, 0.529, 0.519, 0.540, 0.397])
    flagged = np.array([False, False, False, False, False, True])
    assert float(np.min(bounds[_equilibrium_mask(flagged)])) == 0.517
    assert _equilibrium_mask(np.zeros(3, dtype=bool)).tolist() == [False, True, True]
    assert not _equilibrium_mask(np.array([False, True, True])).any()


def test_langevin_bounds_reads_the_true_label_bound_only_at_unflagged_betas(monkeypatch) -> None:
    # wiring: with every true-label beta but the first flagged, the checked minimum is that beta's bound (the
    # all-beta minimum is reported beside it); fails if the experiment reads the bound at flagged betas
    from icml2026.core.registry import get_experiment
    from icml2026.papers.gibbs_bounds import experiments as ex

    calls: list[int] = []

    def flags(betas, losses, tol=1.0):  # type: ignore[no-untyped-def]
        calls.append(1)
        out = np.zeros(len(betas), dtype=bool)
        if len(calls) == 2:  # the true-label chain (the random-label one is flagged first)
            out[2:] = True
        return out

    monkeypatch.setattr(ex, "nonequilibrium_betas", flags)
    exp = get_experiment("gibbs_bounds.langevin_bounds")
    out = exp(exp.config("smoke"), np.random.default_rng(0))
    rows = out.tables["per_beta"]
    assert rows[2]["true_bound_cal"] < rows[1]["true_bound_cal"]  # the flagged beta would win the minimum
    assert out.metrics["true_min_calibrated_bound"] == rows[1]["true_bound_cal"]
    assert out.metrics["true_min_cal_bound_all_betas"] == min(r["true_bound_cal"] for r in rows[1:])
    assert out.metrics["true_min_cal_bound_minus_test01"] == rows[1]["true_bound_cal"] - rows[1]["true_test01"]
