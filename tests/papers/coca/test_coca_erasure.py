"""Part A claims: LEACE on linear/XOR worlds, the package cross-check, the signal test, bad inputs."""

import warnings

import numpy as np
import pytest

from icml2026.core import make_rng
from icml2026.core.registry import get_experiment
from icml2026.papers.coca import (
    ConceptSignalWarning,
    LeaceConceptEraser,
    QuadraticConceptEraser,
    concept_signal_test,
    fit_probe,
    leace_reference,
    linear_world,
    xor_of_quadrant,
    xor_world,
)
from icml2026.papers.coca.probes import ProbeConfig


def test_leace_package_matches_closed_form_reference():
    # criterion 4: our closed form equals concept_erasure's LeaceEraser (no shrinkage) to 1e-5
    rng = np.random.default_rng(3)
    X = rng.standard_normal((500, 7)) @ rng.standard_normal((7, 7))
    z = (X[:, 0] + rng.standard_normal(500) > 0).astype(int)
    p, b = leace_reference(X, z)
    pkg = LeaceConceptEraser(shrinkage=False, constrain_cov_trace=False).fit(X, z)
    assert np.max(np.abs(X @ p.T + b - pkg.transform(X))) < 1e-5


def test_leace_equalises_class_means_and_kills_linear_probe():
    w = linear_world(8, 2000, 0)
    Xe = LeaceConceptEraser().fit(w.X, w.concept).transform(w.X)
    gap = Xe[w.concept == 1].mean(0) - Xe[w.concept == 0].mean(0)
    # LEACE's defining property: equal class-conditional means (up to the shrinkage estimate, ~1e-6 here)
    assert np.max(np.abs(gap)) < 1e-3
    before = w.X[w.concept == 1].mean(0) - w.X[w.concept == 0].mean(0)
    assert np.max(np.abs(before)) > 0.5  # negative control: the concept shifts the means by 2 * 2 * A e_1


def test_linear_world_benign_survives_erasure():
    # T1 at small scale: benign linear accuracy unchanged within 0.02 (criterion 1 is the slow test)
    w = linear_world(8, 2000, 1)
    rng = np.random.default_rng(0)
    tr, te = slice(0, 1500), slice(1500, None)
    Xe = LeaceConceptEraser().fit(w.X[tr], w.concept[tr]).transform(w.X)
    b0 = fit_probe(w.X[tr], w.benign[tr], "linear", rng=rng).accuracy(w.X[te], w.benign[te])
    b1 = fit_probe(Xe[tr], w.benign[tr], "linear", rng=rng).accuracy(Xe[te], w.benign[te])
    c1 = fit_probe(Xe[tr], w.concept[tr], "linear", rng=rng).accuracy(Xe[te], w.concept[te])
    assert abs(b0 - b1) <= 0.02  # 500 test points: ~0.01 standard error at 0.98 accuracy
    assert c1 <= 0.56  # chance 0.5 + ~2.5 standard errors of 500 coin flips


def test_xor_concept_is_function_of_benign_and_has_no_linear_signal():
    w = xor_world(4, 4000, 1)
    assert np.array_equal(w.concept, xor_of_quadrant(w.benign))  # C = g(Y) exactly
    t = concept_signal_test(w.X, w.concept)
    assert t.p_value > 0.001  # no linear signal by construction (equal class means)
    assert concept_signal_test(*(lambda v: (v.X, v.concept))(linear_world(4, 500, 0))).p_value < 1e-10


def test_leace_warns_or_skips_without_signal():
    w = xor_world(4, 3000, 2)
    with pytest.warns(ConceptSignalWarning):
        LeaceConceptEraser().fit(w.X, w.concept)
    with pytest.warns(ConceptSignalWarning):
        e = LeaceConceptEraser(on_insignificant="identity").fit(w.X, w.concept)
    assert np.array_equal(e.transform(w.X), w.X)
    with pytest.raises(ValueError, match="no significant"):
        LeaceConceptEraser(on_insignificant="raise").fit(w.X, w.concept)
    lw = linear_world(4, 500, 0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a real concept gives no warning
        LeaceConceptEraser().fit(lw.X, lw.concept)


def test_qleace_matches_class_means_and_covariances():
    w = xor_world(3, 4000, 0)
    Xq = QuadraticConceptEraser(shrinkage=False).fit(w.X, w.concept).transform(w.X, w.concept)
    c0, c1 = Xq[w.concept == 0], Xq[w.concept == 1]
    assert np.max(np.abs(c0.mean(0) - c1.mean(0))) < 1e-8  # exact: OT maps each class mean to one point
    assert np.max(np.abs(np.cov(c0.T) - np.cov(c1.T))) < 1e-6  # exact Gaussian OT to the barycenter


@pytest.mark.parametrize(
    "X, z, msg",
    [
        (np.zeros((10, 3)), np.zeros(9, int), "length"),
        (np.random.default_rng(0).standard_normal((10, 3)), np.zeros(10, int), "distinct"),
        (np.full((10, 3), np.nan), np.arange(10) % 2, "NaN"),
        (np.zeros(10), np.arange(10) % 2, "shape"),
        (np.zeros((10, 3)), np.linspace(0, 1, 10), "integer"),
    ],
)
def test_bad_inputs_raise_clear_errors(X, z, msg):
    for fit in (
        lambda: LeaceConceptEraser().fit(X, z),
        lambda: QuadraticConceptEraser().fit(X, z),
        lambda: concept_signal_test(X, z),
        lambda: fit_probe(X, z, "linear", rng=np.random.default_rng(0)),
    ):
        with pytest.raises(ValueError, match=msg):
            fit()


def test_world_generators_validate_and_are_deterministic():
    assert np.array_equal(linear_world(5, 50, 7).X, linear_world(5, 50, 7).X)
    assert not np.array_equal(linear_world(5, 50, 7).X, linear_world(5, 50, 8).X)
    with pytest.raises(ValueError):
        linear_world(2, 50, 0)
    with pytest.raises(ValueError):
        xor_world(4, 3, 0)
    with pytest.raises(ValueError):
        ProbeConfig(val_fraction=1.5)


@pytest.mark.slow
def test_criterion_1_linear_world_full():
    exp = get_experiment("coca.linear_erasure")
    out = exp(exp.config("full"), make_rng(0))
    assert out.passed, out.checks


@pytest.mark.slow
def test_criteria_2_3_xor_frontier_quick():
    exp = get_experiment("coca.xor_frontier")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConceptSignalWarning)
        out = exp(exp.config("quick"), make_rng(0))
    assert out.passed, out.checks
