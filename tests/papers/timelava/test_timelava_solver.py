"""Solver claims: POT cross-check, exact sensitivity, truncated solver == dense solver."""

import numpy as np
import ot
import pytest
from scipy.spatial.distance import cdist

from icml2026.papers.timelava import (
    calibrated_values,
    sinkhorn_log_unbalanced,
    solve_uot_truncated,
    transport_plan,
    uot_objective,
)


def _cost(n: int, m: int, seed: int, scale: float = 1.0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return scale * cdist(rng.normal(size=(n, 4)), rng.normal(0.3, 1.0, size=(m, 4)), "cityblock") / 4


@pytest.mark.parametrize("seed,kappa,eps", [(0, 2.0, 0.05), (1, 1.0, 0.01), (2, 10.0, 0.1)])
def test_plan_and_potential_match_pot(seed, kappa, eps):
    d = _cost(12, 9, seed)
    n, m = d.shape
    ours = sinkhorn_log_unbalanced(d, kappa, eps, tol=1e-14)
    plan = transport_plan(d, ours.f, ours.g, eps)
    pot_plan, log = ot.unbalanced.sinkhorn_unbalanced(
        np.full(n, 1 / n),
        np.full(m, 1 / m),
        d,
        eps,
        kappa,
        method="sinkhorn",
        reg_type="kl",
        log=True,
        numItermax=1_000_000,
        stopThr=1e-15,
    )
    # Brief criterion 1: plan to relative 1e-6 and f == eps * logu (POT's u = exp(f/eps)).
    assert np.abs(plan - pot_plan).max() / np.abs(pot_plan).max() < 1e-6
    np.testing.assert_allclose(ours.f, eps * log["logu"], rtol=0, atol=1e-6 * (1 + np.abs(ours.f).max()))


def test_sensitivity_is_scaled_psi_kappa_by_finite_differences():
    kappa, eps = 2.0, 0.05
    d = _cost(8, 6, 3)
    n, m = d.shape
    a, b = np.full(n, 1 / n), np.full(m, 1 / m)
    res = sinkhorn_log_unbalanced(d, kappa, eps, tol=1e-15)
    _, phi = calibrated_values(res.f, kappa)
    for i in (0, 3, 7):  # three coordinates keep the test to a few seconds
        h = 1e-5 * a[i]
        w = []
        for sgn in (1, -1):
            ap = a.copy()
            ap[i] += sgn * h
            r = sinkhorn_log_unbalanced(d, kappa, eps, a=ap, tol=1e-15)
            w.append(uot_objective(transport_plan(d, r.f, r.g, eps, a=ap), d, ap, b, kappa, eps))
        fd = (w[0] - w[1]) / (2 * h)
        # Brief criterion 2: dW/da_i = (kappa+eps)/kappa * phi_i to 1e-4 relative (central FD error ~h^2).
        assert fd == pytest.approx((kappa + eps) / kappa * phi[i], rel=1e-4)


def test_primal_objective_equals_dual_value_at_optimum():
    kappa, eps = 2.0, 0.05
    d = _cost(10, 7, 4)
    n, m = d.shape
    a, b = np.full(n, 1 / n), np.full(m, 1 / m)
    r = sinkhorn_log_unbalanced(d, kappa, eps, tol=1e-15)
    plan = transport_plan(d, r.f, r.g, eps)
    dual = (
        -kappa * np.sum(a * np.expm1(-r.f / kappa))
        - kappa * np.sum(b * np.expm1(-r.g / kappa))
        - eps * np.sum(plan - np.outer(a, b))
    )
    # Strong duality of Eq. (5); both sides are O(1), agreement limited by the 1e-15 stopping rule.
    assert uot_objective(plan, d, a, b, kappa, eps) == pytest.approx(dual, abs=1e-10)


@pytest.mark.parametrize("seed,eps", [(5, 0.01), (6, 0.1)])
def test_truncated_solver_equals_dense(seed, eps):
    # Costs of tens (as wavelet L1 costs) with eps = 0.01: the plain-domain iteration would underflow.
    d = _cost(60, 25, seed, scale=20.0)
    dense = sinkhorn_log_unbalanced(d, 2.0, eps, tol=1e-13)
    sparse = solve_uot_truncated(lambda s, e: d[s:e], *d.shape, kappa=2.0, eps=eps, n_neighbors=2)
    assert sparse.converged and sparse.n_entries < d.size  # a genuinely sparse certified support
    # The dense run stops at a relative step of 1e-13 with contraction ~rho^2 ~ 0.99 per sweep, so it is
    # within ~1e-11 * (1 + max|f|) of the fixed point that Newton reaches; 1e-8 leaves ample margin.
    np.testing.assert_allclose(sparse.f, dense.f, atol=1e-8)
    np.testing.assert_allclose(sparse.g, dense.g, atol=1e-8)


def test_solver_rejects_bad_arguments():
    d = _cost(4, 3, 0)
    with pytest.raises(ValueError, match="kappa"):
        sinkhorn_log_unbalanced(d, kappa=0.0)
    with pytest.raises(ValueError, match="eps"):
        sinkhorn_log_unbalanced(d, eps=-1.0)
    with pytest.raises(ValueError, match="NaN or inf"):
        sinkhorn_log_unbalanced(np.array([[0.0, np.nan]]))
    with pytest.warns(RuntimeWarning, match="max_iter"):
        sinkhorn_log_unbalanced(d, max_iter=2)


@pytest.mark.parametrize("seed,kappa,eps", [(0, 2.0, 0.01), (3, 1.0, 0.05)])
def test_sensitivity_is_kappa_times_missing_row_mass(seed, kappa, eps):
    # Why the KL relaxation bounds the values (issue 32): at the fixed point of Eq. (5) the first-order
    # condition gives f_i = -kappa log((T 1)_i / a_i), so phi_i = psi_kappa(f_i) = kappa (1 - (T 1)_i / a_i):
    # phi_i <= kappa whatever the reference, whereas for balanced OT (kappa -> inf) phi_i = f_i is unbounded.
    d = _cost(15, 11, seed, scale=3.0)
    n = d.shape[0]
    a = np.full(n, 1 / n)
    res = sinkhorn_log_unbalanced(d, kappa, eps, tol=1e-14)
    row_mass = transport_plan(d, res.f, res.g, eps).sum(axis=1)
    _, phi = calibrated_values(res.f, kappa)
    np.testing.assert_allclose(phi, kappa * (1 - row_mass / a), rtol=0, atol=1e-9 * kappa)
    assert np.all(phi <= kappa)
    # fails away from the fixed point: a solve stopped after 3 sweeps violates the identity
    rough = sinkhorn_log_unbalanced(d, kappa, eps, tol=1e-14, max_iter=3)
    rough_mass = transport_plan(d, rough.f, rough.g, eps).sum(axis=1)
    assert np.max(np.abs(calibrated_values(rough.f, kappa)[1] - kappa * (1 - rough_mass / a))) > 1e-4
