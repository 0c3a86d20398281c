"""kl inversion, the KL integral formula, the PAC-Bayes-kl bound and the calibration (brief criteria 2, bad input)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from icml2026.papers.gibbs_bounds import (
    KL_INVERSE_CAP,
    bound_curve,
    calibrate_lambda,
    gibbs_kl,
    kl_bernoulli,
    kl_inverse_upper,
    pac_bayes_kl_bound,
    relaxed_kl_bound,
)


@pytest.mark.parametrize("p", [0.0, 1e-4, 0.01, 0.1, 0.3, 0.5, 0.9, 0.999])
@pytest.mark.parametrize("b", [1e-6, 1e-3, 0.01, 0.1, 0.5, 2.0])
def test_kl_inverse_solves_kl_equation(p: float, b: float) -> None:
    r = kl_inverse_upper(p, b)
    assert p <= r <= KL_INVERSE_CAP
    if r < KL_INVERSE_CAP:
        # brief criterion 2: kl(p || kl^{-1}(p, B)) = B within 1e-5
        assert abs(kl_bernoulli(p, r) - b) < 1e-5
    else:
        assert kl_bernoulli(p, KL_INVERSE_CAP) <= b


def test_kl_inverse_closed_form_at_zero_risk() -> None:
    # kl(0 || r) = -ln(1 - r), so kl^{-1}(0, B) = 1 - exp(-B) exactly
    for b in (1e-3, 0.1, 1.0, 5.0):
        assert kl_inverse_upper(0.0, b) == pytest.approx(1 - math.exp(-b), abs=1e-12)


def test_kl_inverse_matches_reference_bisection() -> None:
    def ref(p: float, b: float) -> float:  # plain bisection, independent of scipy
        lo, hi = p, 1.0 - 1e-12
        for _ in range(200):
            mid = 0.5 * (lo + hi)
            lo, hi = (mid, hi) if kl_bernoulli(p, mid) <= b else (lo, mid)
        return lo

    rng = np.random.default_rng(0)
    for p, b in zip(rng.uniform(0, 0.9, 30), rng.uniform(0, 1, 30), strict=True):
        assert kl_inverse_upper(float(p), float(b)) == pytest.approx(ref(float(p), float(b)), abs=1e-10)


def test_kl_inverse_monotone_in_bound_and_capped() -> None:
    bs = np.linspace(0, 3, 200)
    for p in (0.0, 0.05, 0.4):
        vals = [kl_inverse_upper(p, float(b)) for b in bs]
        assert np.all(np.diff(vals) >= 0)  # brief criterion 2: monotone in B
        assert vals[0] == pytest.approx(p)  # B = 0 gives back p
    # brief criterion 2: capped at 1 - 1e-12 for a huge B
    assert kl_inverse_upper(0.2, 1e6) == 1 - 1e-12
    assert kl_inverse_upper(1.0, 0.0) == 1 - 1e-12


def test_relaxed_bound_dominates_kl_inverse() -> None:
    # L <= L_S + sqrt(2 L_S B) + 2B is a relaxation of the kl inversion (Maurer 2004), hence never smaller
    for p in (0.0, 0.01, 0.1, 0.3):
        for kl in (0.0, 10.0, 200.0):
            assert relaxed_kl_bound(p, kl, 1000, 0.01) >= pac_bayes_kl_bound(p, kl, 1000, 0.01) - 1e-12


def test_gibbs_kl_left_riemann_by_hand() -> None:
    betas = np.array([0.0, 1.0, 3.0])
    lbar = np.array([0.5, 0.3, 0.2])
    # Gamma_1 = 1*0.5 - 1*0.3 = 0.2 ; Gamma_2 = (0.5 + 2*0.3) - 3*0.2 = 0.5
    np.testing.assert_allclose(gibbs_kl(betas, lbar), [0.0, 0.2, 0.5], atol=1e-15)
    np.testing.assert_allclose(gibbs_kl(betas, lbar, lam=3.0), [0.0, 0.6, 1.5], atol=1e-15)
    # trapezoid: I_1 = 0.4, I_2 = 0.4 + 0.5 = 0.9
    np.testing.assert_allclose(gibbs_kl(betas, lbar, rule="trapezoid"), [0.0, 0.1, 0.3], atol=1e-15)
    # loss range [0, 4]: the formula itself is scale-free in the loss
    np.testing.assert_allclose(gibbs_kl(betas, 4 * lbar, loss_bound=4.0), [0.0, 0.8, 2.0], atol=1e-14)


def test_pac_bayes_kl_bound_matches_formula() -> None:
    n, delta, kl, p = 4000, 0.01, 123.0, 0.07
    b = (kl + math.log(2 * math.sqrt(n) / delta)) / n
    assert pac_bayes_kl_bound(p, kl, n, delta) == pytest.approx(kl_inverse_upper(p, b), abs=0)
    # more KL, larger bound; more data, smaller bound
    assert pac_bayes_kl_bound(p, 2 * kl, n, delta) > pac_bayes_kl_bound(p, kl, n, delta)
    assert pac_bayes_kl_bound(p, kl, 4 * n, delta) < pac_bayes_kl_bound(p, kl, n, delta)


def test_calibration_returns_smallest_sufficient_lambda() -> None:
    betas = np.array([0.0, 100.0, 200.0, 400.0, 800.0])
    lbar = np.array([0.5, 0.3, 0.2, 0.1, 0.05])
    t01 = np.array([0.5, 0.3, 0.15, 0.05, 0.01])
    n, delta = 500, 0.01
    lam = calibrate_lambda(betas, lbar, t01, n, delta, tol=0.01)
    assert 0.1 < lam < 100
    assert bound_curve(betas, lbar, t01, n, delta, lam=lam).bound01[1:].min() >= 0.5
    # tolerance 0.01 of the bisection: a lambda 0.01 smaller is not enough
    assert bound_curve(betas, lbar, t01, n, delta, lam=lam - 0.011).bound01[1:].min() < 0.5


@pytest.mark.parametrize(
    "betas, losses, match",
    [
        ([0.0, 2.0, 1.0], [0.5, 0.4, 0.3], "strictly increasing"),
        ([0.0, 1.0, 1.0], [0.5, 0.4, 0.3], "strictly increasing"),
        ([1.0, 2.0, 3.0], [0.5, 0.4, 0.3], "start at 0"),
        ([0.0, 1.0, 2.0], [0.5, 1.2, 0.3], "loss_bound"),
        ([0.0, 1.0, 2.0], [0.5, -0.1, 0.3], "loss_bound"),
        ([0.0, 1.0, 2.0], [0.5, 0.4], "shape"),
    ],
)
def test_gibbs_kl_bad_input(betas: list[float], losses: list[float], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        gibbs_kl(np.array(betas), np.array(losses))


@pytest.mark.parametrize("delta", [0.0, 1.0, -0.1, 1.5])
def test_delta_outside_unit_interval_rejected(delta: float) -> None:
    with pytest.raises(ValueError, match="delta"):
        pac_bayes_kl_bound(0.1, 10.0, 100, delta)
    with pytest.raises(ValueError, match="delta"):
        bound_curve(np.array([0.0, 1.0]), np.array([0.5, 0.4]), np.array([0.5, 0.4]), 100, delta)


def test_other_bad_input() -> None:
    with pytest.raises(ValueError, match="empirical risk"):
        kl_inverse_upper(1.5, 0.1)
    with pytest.raises(ValueError, match="bound"):
        kl_inverse_upper(0.1, -0.1)
    with pytest.raises(ValueError, match="lam"):
        gibbs_kl(np.array([0.0, 1.0]), np.array([0.5, 0.4]), lam=0.0)
    with pytest.raises(ValueError, match="n must"):
        pac_bayes_kl_bound(0.1, 1.0, 0, 0.05)
    with pytest.raises(ValueError, match="kl must"):
        pac_bayes_kl_bound(0.1, -1.0, 10, 0.05)
