"""The centroid learner (finite regret, volume cut, robustness) and the baselines (ONS, OGD, CP)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.optimize import minimize

from icml2026.papers.inverse_lo import (
    CentroidLearner,
    CuttingPlaneLearner,
    ExplicitSet,
    OnlineGradientLearner,
    OnlineNewtonStepLearner,
    UniformMatroidBases,
    count_linear_extensions,
    make_instances,
    mistake_bound,
    play,
    sample_w_star,
)
from icml2026.papers.inverse_lo.baselines import project_ball_in_norm


@pytest.mark.parametrize("env", ["uniform", "box_sum", "graphic", "partition"])
def test_every_wrong_round_shrinks_the_extension_count_by_1_minus_1_over_e(env):
    # Acceptance 3: Grunbaum's theorem on the order polytope, checked with exact integer counts.
    rng = np.random.default_rng(7)
    d = 7
    w_star = sample_w_star(d, rng)
    learner = CentroidLearner(d)
    n_wrong = 0
    for fs in make_instances(env, d, 120, rng):  # wrong rounds happen early; 120 rounds reach a total order
        before = count_linear_extensions(d, learner.edge_list())
        x_hat = learner.recommend(fs)
        x_t = fs.maximize(w_star)
        learner.observe(fs, x_t)
        after = count_linear_extensions(d, learner.edge_list())
        assert after <= before  # the knowledge set only shrinks
        if not np.array_equal(x_hat, x_t):
            n_wrong += 1
            assert after <= (1 - 1 / math.e) * before
    assert 1 <= n_wrong <= mistake_bound(d)


@pytest.mark.parametrize("env", ["uniform", "box_sum"])
def test_finite_regret_and_fewer_wrong_rounds_than_ons(env):
    # A reduced version of acceptance 4 (d = 8, T = 600, 3 seeds); the full one is the quick experiment.
    d, n_rounds = 8, 600
    wrong_c, wrong_o = [], []
    for seed in range(3):
        rng = np.random.default_rng(seed)
        w_star = sample_w_star(d, rng)
        inst = make_instances(env, d, n_rounds, rng)
        tr = play(CentroidLearner(d), w_star, inst)
        assert tr.n_wrong <= mistake_bound(d)
        assert tr.cumulative_regret[n_rounds // 2 - 1] == tr.cumulative_regret[-1]  # no regret after T/2
        assert np.all(tr.regret >= -1e-12)  # regret is against the true optimum
        k = max(fs.diameter_bound() for fs in inst)
        wrong_c.append(tr.n_wrong)
        wrong_o.append(play(OnlineNewtonStepLearner(d, action_diameter=k), w_star, inst).n_wrong)
    assert np.mean(wrong_c) < np.mean(wrong_o)


def test_robust_learner_resets_at_most_c_times_and_obeys_the_corrupted_bound():
    d, n_rounds, c_val = 7, 400, 5
    for seed in range(2):
        rng = np.random.default_rng(100 + seed)
        w_star = sample_w_star(d, rng)
        inst = make_instances("uniform", d, n_rounds, rng)
        rounds = rng.choice(n_rounds, size=c_val, replace=False).tolist()
        for corruption in ("worst", "random"):
            tr = play(CentroidLearner(d, robust=True), w_star, inst, rounds, corruption=corruption, rng=rng)
            assert tr.n_resets <= c_val
            assert tr.n_wrong <= mistake_bound(d, c_val)
            assert tr.corrupted.sum() == c_val
        clean = play(CentroidLearner(d, robust=True), w_star, inst)
        assert clean.n_resets == 0  # truthful feedback never closes a cycle (distinct coordinates)


def test_non_robust_learner_contracts_cycles_instead_of_failing():
    d = 4
    fs = UniformMatroidBases(d, [0, 1, 2, 3], 1)
    learner = CentroidLearner(d)
    learner.observe(fs, np.array([1, 0, 0, 0]))  # 0 above 1, 2, 3
    learner.observe(fs, np.array([0, 1, 0, 0]))  # 1 above 0, 2, 3: a 2-cycle between 0 and 1
    w_hat = learner.centroid()
    assert w_hat[0] == w_hat[1] > w_hat[2] == w_hat[3]  # {0, 1} contracted, above the antichain {2, 3}
    assert learner.n_resets == 0
    robust = CentroidLearner(d, robust=True)
    robust.observe(fs, np.array([1, 0, 0, 0]))
    robust.observe(fs, np.array([0, 1, 0, 0]))
    assert robust.n_resets == 1 and not robust.edges_.any()


def test_learner_bad_inputs():
    d = 3
    learner = CentroidLearner(d)
    fs = UniformMatroidBases(d, [0, 1, 2], 1)
    segment = ExplicitSet([[0.6, 0.8, 0.0], [-0.6, -0.8, 0.0]], check_m_convex=False)
    with pytest.raises(ValueError, match="M-convex"):
        learner.recommend(segment)
    with pytest.raises(ValueError, match="not in the feasible set"):
        learner.observe(fs, np.array([1, 1, 0]))
    with pytest.raises(ValueError, match="dimension"):
        learner.recommend(UniformMatroidBases(4, [0, 1], 1))
    with pytest.raises(ValueError, match="w_star"):
        play(learner, np.ones(4), [fs])
    with pytest.raises(ValueError, match="corrupt_rounds"):
        play(learner, np.ones(3), [fs], corrupt_rounds=[1])
    with pytest.raises(ValueError, match="positive integer"):
        CentroidLearner(0)
    with pytest.raises(ValueError, match="not in the feasible set"):
        OnlineNewtonStepLearner(d).observe(fs, np.array([0, 0, 2]))


def test_play_is_deterministic_and_seed_dependent():
    def run(seed: int) -> np.ndarray:
        rng = np.random.default_rng(seed)
        inst = make_instances("box_sum", 6, 200, rng)
        w_star = sample_w_star(6, rng)
        return play(CuttingPlaneLearner(6, n_samples=500, rng=rng), w_star, inst).cumulative_regret

    np.testing.assert_array_equal(run(0), run(0))
    assert not np.array_equal(run(0), run(1))


def test_ons_constants_follow_the_notebook():
    learner = OnlineNewtonStepLearner(3, action_diameter=2.0)
    learner.recommend(UniformMatroidBases(3, [0, 1, 2], 1))
    # Notebook with D = K = 2: H = 4, eta = 1/20, alpha = 2/(1 + 2 eta H)^2 = 2/1.96, gamma = alpha/2,
    # eps = d/(D^2 gamma^2).
    assert learner.eta_ == pytest.approx(0.05)
    assert learner.gamma_ == pytest.approx(1 / 1.96)
    np.testing.assert_allclose(learner.A_, 3 / (4 * (1 / 1.96) ** 2) * np.eye(3))
    ogd = OnlineGradientLearner(3, horizon=400, action_diameter=2.0)
    ogd.recommend(UniformMatroidBases(3, [0, 1, 2], 1))
    assert ogd.eta_ == pytest.approx(2 * 2 / 20)  # D K / sqrt(T)


def test_ons_projection_matches_a_generic_solver():
    rng = np.random.default_rng(4)
    for _ in range(5):
        m = rng.standard_normal((4, 4))
        A = m @ m.T + 0.5 * np.eye(4)
        b = 3 * rng.standard_normal(4)
        theta = project_ball_in_norm(A, b)
        target = np.linalg.solve(A, b)
        ref = minimize(
            lambda th, t=target, a=A: (th - t) @ a @ (th - t),
            np.zeros(4),
            constraints=[{"type": "ineq", "fun": lambda th: 1 - th @ th}],
            method="SLSQP",
            options={"ftol": 1e-12, "maxiter": 500},
        )
        # bisection stops at | ||theta|| - 1 | < 1e-6; SLSQP converges to ~1e-6 as well
        np.testing.assert_allclose(theta, ref.x, atol=1e-4)
        assert np.linalg.norm(theta) <= 1 + 1e-6


def test_cutting_plane_resamples_when_no_sample_survives():
    fs = UniformMatroidBases(2, [0, 1], 1)
    cp = CuttingPlaneLearner(2, n_samples=1, rng=np.random.default_rng(0), n_resample=10)
    x_hat = cp.recommend(fs)
    other = np.array([1, 1]) - x_hat
    # A single sample is its own mean: the cut through it keeps it, so the set never empties; with two
    # opposite samples the strict side may empty. Force it: replace by a point strictly on the wrong side.
    cp.samples_ = cp.theta_[None, :] - 0.1 * (other - x_hat)[None, :]
    cp.observe(fs, other)
    assert cp.n_resets == 1 and cp.samples_.shape == (10, 2)
