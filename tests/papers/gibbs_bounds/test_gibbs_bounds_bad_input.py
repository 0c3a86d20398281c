"""Bad input gives a ValueError naming the argument (issue 14), never NaN, a silent answer or a deep crash."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
import torch

from icml2026.core import make_rng
from icml2026.papers import gibbs_bounds as G
from icml2026.papers.gibbs_bounds.experiments import FiniteClassConfig, LangevinBoundsConfig, langevin_bounds

NAN, INF = float("nan"), float("inf")
B = np.array([0.0, 1.0, 2.0])
L = np.array([0.5, 0.4, 0.3])
T01 = np.array([0.5, 0.4, 0.3])


def _emp() -> np.ndarray:
    prob = G.make_finite_linear_problem(5, 4, 3, 0.1)
    return G.sample_empirical_risks(prob, 10, np.random.default_rng(0))


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda e: G.log_partition(np.array([NAN, 0.1]), 1.0), "emp_risk"),
        (lambda e: G.log_partition(e, NAN), "beta"),
        (lambda e: G.log_partition(e, -1.0), "beta"),
        (lambda e: G.log_partition(np.array([]), 1.0), "emp_risk"),
        (lambda e: G.gibbs_posterior(np.zeros((2, 2)), 1.0), "emp_risk"),
        (lambda e: G.gibbs_posterior(e, INF), "beta"),
        (lambda e: G.gibbs_expected(np.ones(3), e, 1.0), "same length"),
        (lambda e: G.gibbs_expected(np.full(e.size, NAN), e, 1.0), "values"),
        (lambda e: G.gibbs_expected_curve(np.ones(3), e, B), "same length"),
        (lambda e: G.gibbs_expected_curve(e, e, np.array([NAN])), "betas"),
        (lambda e: G.gibbs_expected_curve(np.full(e.size, NAN), e, B), "values"),
        (lambda e: G.exact_gibbs_kl(np.array([NAN, 0.1]), 1.0), "emp_risk"),
        (lambda e: G.exact_gibbs_kl(e, -1.0), "beta"),
        (lambda e: G.exact_gibbs_kl(e, 1.0, np.full(e.size, NAN)), "log_prior"),
        (lambda e: G.sample_empirical_risks(G.make_finite_linear_problem(5, 4, 3), 1.5, make_rng(0)), "n"),
        (lambda e: G.make_finite_linear_problem(1.5, 4, 3), "n_angles"),
        (lambda e: G.make_finite_linear_problem(5, 4, 3, NAN), "eta"),
        (lambda e: G.make_finite_linear_problem(5, 4, 3, 0.1, target_angle=NAN), "target_angle"),
    ],
)
def test_finite_class_functions_refuse_bad_input(call, match) -> None:
    # Before issue 14 these returned NaN, -inf or a KL for a negative beta, or crashed with TypeError.
    with pytest.raises(ValueError, match=match):
        call(_emp())


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: G.gibbs_kl(B, L, loss_bound=INF), "loss_bound"),
        (lambda: G.gibbs_kl(B, L, lam=NAN), "lam"),
        (lambda: G.bound_curve(B, L, T01[:2], 10, 0.05), "train01"),
        (lambda: G.bound_curve(B, L, T01, 10, 0.05, chance=2.0), "chance"),
        (lambda: G.bound_curve(B, L, T01, 10, 0.05, chance=NAN), "chance"),
        (lambda: G.calibrate_lambda(B, L, T01, 10, 0.05, target=NAN), "target"),
        (lambda: G.calibrate_lambda(B, L, T01, 10, 0.05, target=2.0), "target"),
        (lambda: G.calibrate_lambda(B, L, T01, 10, 0.05, lam_range=(0.1, INF)), "lam_range"),
        (lambda: G.calibrate_lambda(B, L, T01, 10, 0.05, tol=NAN), "tol"),
        (lambda: G.pac_bayes_complexity(0.1, 10, NAN), "delta"),
        (lambda: G.kl_inverse_upper(NAN, 0.1), "empirical risk|^q: "),
    ],
)
def test_bound_functions_refuse_bad_input(call, match) -> None:
    with pytest.raises(ValueError, match=match):
        call()


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: G.bounded_bce(torch.zeros(3), torch.full((3,), 2.0), 4.0), "labels"),
        (lambda: G.bounded_bce(torch.zeros(3), torch.zeros(4), 4.0), "shape"),
        (lambda: G.bounded_bce(torch.full((3,), NAN), torch.zeros(3), 4.0), "logits"),
        (lambda: G.bounded_bce(torch.zeros(3), torch.zeros(3), NAN), "l_max"),
        (lambda: G.bounded_bce(torch.zeros(3), torch.zeros(3), 0.5), "l_max"),  # psi decreasing below ln 2
        (lambda: G.make_mlp(4, 0, 2, torch.Generator()), "width"),
        (lambda: G.make_mlp(0, 4, 2, torch.Generator()), "in_dim"),
        (lambda: G.make_mlp(4, 4, -1, torch.Generator()), "n_hidden"),
        (lambda: G.make_mnist1d(1.5, make_rng(0)), "n_samples"),
        (lambda: G.sgld_update(torch.zeros(2), torch.zeros(2), torch.zeros(2), lr=NAN, beta=1.0, prior_std=1.0),
         "lr"),
        (lambda: G.sgld_update(torch.zeros(2), torch.zeros(2), torch.zeros(2), lr=0.1, beta=INF, prior_std=1.0),
         "beta"),
        (lambda: G.sgld_update(torch.zeros(2), torch.zeros(2), torch.zeros(2), lr=0.1, beta=1.0, prior_std=0.0),
         "prior_std"),
        (lambda: G.sgld_update(torch.zeros(2), torch.zeros(3), torch.zeros(2), lr=0.1, beta=1.0, prior_std=1.0),
         "shape"),
    ],
)
def test_sampler_functions_refuse_bad_input(call, match) -> None:
    with pytest.raises(ValueError, match=match):
        call()


def test_bounded_bce_accepts_infinite_logits() -> None:
    # +-inf logits are the limit of a confident network: loss l_max when wrong, -ln(1 - e^-l_max) when right.
    out = G.bounded_bce(torch.tensor([-INF, INF]), torch.tensor([1.0, 1.0]), 4.0)
    assert float(out[0]) == pytest.approx(4.0, abs=1e-5)
    assert float(out[1]) == pytest.approx(-math.log(1 - math.exp(-4.0)), abs=1e-6)


@pytest.mark.parametrize("value", [0, -1, 10**9, NAN, INF, "x"])
@pytest.mark.parametrize("field", ["n_angles", "n_quad", "n_repeats", "delta", "eta"])
def test_finite_class_config_refuses_nonsense(field: str, value: object) -> None:
    if field == "eta" and value == 0:
        pytest.skip("eta = 0 (no label noise) is valid")
    with pytest.raises(ValueError, match=f"^{field}"):
        dataclasses.replace(FiniteClassConfig(), **{field: value})


@pytest.mark.parametrize("value", [0, -1, 10**9, NAN, INF, "x"])
@pytest.mark.parametrize("field", ["n_train", "width", "lr", "prior_std", "max_burn_in", "l_max", "lam_tol"])
def test_langevin_config_refuses_nonsense(field: str, value: object) -> None:
    with pytest.raises(ValueError, match=r"^(min_burn_in|" + field + ")"):
        dataclasses.replace(LangevinBoundsConfig(), **{field: value})


def test_langevin_config_cross_field_rules() -> None:
    with pytest.raises(ValueError, match="^n_train"):
        LangevinBoundsConfig(n_train=1796)  # digits: 1797 images, 2 kept for the test set
    with pytest.raises(ValueError, match="^n_train"):
        LangevinBoundsConfig(dataset="mnist1d", n_train=101)
    with pytest.raises(ValueError, match="^lam_range"):
        LangevinBoundsConfig(lam_range=(10.0, 1.0))


def test_diverged_chain_is_a_failed_check_not_a_crash() -> None:
    # prior_std = 1e-3 with lr = 1: the prior term's step lr / (2 s^2 beta) >> 2, so the chain blows up.
    # Before issue 14 this raised deep inside torch; now it is a run with one failed check.
    cfg = LangevinBoundsConfig(n_train=100, width=8, betas=(0.0, 50.0, 200.0), min_burn_in=20, max_burn_in=20,
                               eval_every=5, n_prior_draws=5, prior_std=1e-3)
    out = langevin_bounds(cfg, make_rng(0))
    assert not out.passed
    assert [c.name for c in out.checks] == ["chains_diverged"]
    assert out.verdict == "undecided"  # issue 55: a diverged chain is a failed precondition, not a failed claim
