"""Issue 55: preconditions (the sampled instance is in the theorem's regime) and the comparative checks'
controls of inverse_lo, on small cases."""

from __future__ import annotations

import numpy as np
import pytest

from icml2026.core import Check
from icml2026.papers.inverse_lo.data import segment_instances
from icml2026.papers.inverse_lo.experiments import FiniteRegretConfig, finite_regret
from icml2026.papers.inverse_lo.feasible_sets import ExplicitSet, UniformMatroidBases
from icml2026.papers.inverse_lo.regime import exchange_axiom_violations, regime_checks


def _outcome_checks(checks: list[Check]) -> dict[str, Check]:
    return {c.name: c for c in checks}


def test_m_convex_set_has_no_violation_and_a_non_m_convex_one_has() -> None:
    rng = np.random.default_rng(0)
    assert exchange_axiom_violations(UniformMatroidBases(6, range(6), 3), rng) == 0
    # {(1, 0, 0), (0, 0, 1)} is M-convex; {(2, 0), (0, 2)} is not: the exchange step (1, 1) is missing
    bad = ExplicitSet(np.array([[2, 0], [0, 2]]), check_m_convex=False)
    assert exchange_axiom_violations(bad, rng) > 0
    # the notebook's real-valued segments are outside the regime too
    assert exchange_axiom_violations(segment_instances(2, 1, rng)[0], rng) > 0


def test_tied_w_star_or_a_bad_set_makes_the_run_undecided() -> None:
    rng = np.random.default_rng(1)
    good = UniformMatroidBases(4, range(4), 2)
    metrics: dict[str, float] = {}
    ok = regime_checks([np.array([0.4, 0.3, 0.2, 0.1])], [good], rng, metrics)
    assert all(c.passed and c.role == "precondition" for c in ok)
    tied = regime_checks([np.array([0.4, 0.4, 0.2, 0.1])], [good], rng, metrics)
    assert not _outcome_checks(tied)["w_star_min_coordinate_gap"].passed
    bad = ExplicitSet(np.array([[2, 0, 0, 0], [0, 2, 0, 0]]), check_m_convex=False)
    broken = regime_checks([np.array([0.4, 0.3, 0.2, 0.1])], [bad], rng, metrics)
    assert not _outcome_checks(broken)["sampled_exchange_axiom_violations"].passed
    from icml2026.core import Outcome

    assert Outcome(checks=[Check("claim", 1.0, "== 1"), *broken]).verdict == "undecided"


@pytest.mark.slow
def test_planted_control_passes_and_null_fails_on_a_small_case() -> None:
    # d = 6, 300 rounds, 8 seeds: the planted half-feedback comparator errs about twice as often as the
    # centroid learner; the null comparator is the centroid learner on another stream
    base = dict(d=6, n_rounds=300, n_seeds=8, envs=("uniform",), learners=("centroid", "ons", "ogd"))
    planted = finite_regret(FiniteRegretConfig(**base, control="planted"), np.random.default_rng(3))
    null = finite_regret(FiniteRegretConfig(**base, control="null"), np.random.default_rng(3))
    wrong = "uniform_ons_over_centroid_wrong_log_low95"
    assert _outcome_checks(planted.checks)[wrong].passed
    assert not _outcome_checks(null.checks)[wrong].passed
    assert all(c.comparative for c in planted.checks if c.name.endswith("low95"))
