"""Part A claims: LEACE on linear/XOR worlds, the package cross-check, the signal test, bad inputs."""

import warnings

import numpy as np
import pytest

from icml2026.core import make_rng
from icml2026.core.registry import get_experiment
from icml2026.papers.coca import (
    AdversarialEraser,
    AdversarialEraserConfig,
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
    t = concept_signal_test(w.X, w.concept, rng=np.random.default_rng(0))
    assert t.p_value > 0.01  # no linear signal by construction (equal class means)
    lw = linear_world(4, 500, 0)
    # a real concept: no permutation of 999 reaches the observed statistic, p = 1 / 1000 (its minimum)
    assert concept_signal_test(lw.X, lw.concept, rng=np.random.default_rng(0)).p_value == 1 / 1000


def _six_sd_concept(n, d, seed):
    """n samples of N(0, I_d) whose first coordinate is shifted by 6 standard deviations when C = 1."""
    rng = np.random.default_rng(seed)
    z = rng.integers(0, 2, n)
    X = rng.standard_normal((n, d))
    X[:, 0] += 6.0 * z
    return X, z


def test_permutation_signal_test_is_valid_when_d_exceeds_n():
    # The case: n = 300, d = 400 (LLM activations live in d >= n). The chi-square gate on n R^2
    # gave p = 0.47 here (R^2 = 1 for any labels when d >= n) and left the concept unerased.
    X, z = _six_sd_concept(300, 400, 0)
    t = concept_signal_test(X, z, n_permutations=999, rng=np.random.default_rng(1))
    assert t.p_value == 1 / 1000  # ||Sigma_xz|| = 1.57 against a null around 0.6: never reached
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConceptSignalWarning)  # a real concept: no warning, erased
        e = LeaceConceptEraser(on_insignificant="identity").fit(X, z)
    assert e.erased_ and e.significant_
    Xe = e.transform(X)
    assert abs(Xe[z == 1, 0].mean() - Xe[z == 0, 0].mean()) < 0.1  # the 6-sd gap is gone (was ~6)
    # negative control: the same shapes without the shift are not significant, and identity mode keeps X
    rng = np.random.default_rng(2)
    X0 = rng.standard_normal((300, 400))
    with pytest.warns(ConceptSignalWarning):
        e0 = LeaceConceptEraser(on_insignificant="identity").fit(X0, z)
    assert not e0.erased_ and np.array_equal(e0.transform(X0), X0)


def test_permutation_signal_test_is_calibrated_under_the_null():
    # p-values of an exact permutation test are uniform under H0: about 5% fall below 0.05
    ps = []
    for s in range(200):
        r = np.random.default_rng(100 + s)
        ps.append(concept_signal_test(r.standard_normal((60, 5)), r.integers(0, 3, 60),
                                      n_permutations=99, rng=r).p_value)
    frac = np.mean(np.array(ps) < 0.05)
    assert 0.01 <= frac <= 0.10  # binomial(200, 0.05): mean 10/200, 3 sd = 0.046 either side


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
        lambda: concept_signal_test(X, z, rng=np.random.default_rng(0)),
        lambda: fit_probe(X, z, "linear", rng=np.random.default_rng(0)),
    ):
        with pytest.raises(ValueError, match=msg):
            fit()


def test_signal_test_and_erasers_reject_bad_arguments():
    X, z = _six_sd_concept(50, 3, 0)
    for kwargs, msg in (({"n_permutations": 0}, "n_permutations"), ({"n_permutations": 1.5}, "n_permutations"),
                        ({"rng": 0}, "rng")):
        args = {"n_permutations": 9, "rng": np.random.default_rng(0), **kwargs}
        with pytest.raises(ValueError, match=msg):
            concept_signal_test(X, z, **args)
    for alpha in (0, 1, float("nan"), 2):
        with pytest.raises(ValueError, match="alpha"):
            LeaceConceptEraser(alpha=alpha).fit(X, z)
    with pytest.raises(ValueError, match="on_insignificant"):
        LeaceConceptEraser(on_insignificant="ignore").fit(X, z)
    with pytest.raises(ValueError, match="not fitted"):
        LeaceConceptEraser().transform(X)
    e = LeaceConceptEraser().fit(X, z)
    with pytest.raises(ValueError, match="features"):
        e.transform(X[:, :2])
    with pytest.raises(ValueError, match="svd_tol"):
        leace_reference(X, z, svd_tol=float("nan"))
    with pytest.raises(ValueError, match="rng"):
        AdversarialEraser().fit(X, z, rng=0)
    with pytest.raises(ValueError, match="not fitted"):
        AdversarialEraser().transform(X)
    for bad in ({"strength": -1.0}, {"lr": 0.0}, {"hidden": 0}, {"n_epochs": 10**9}, {"strength": float("inf")}):
        with pytest.raises(ValueError, match=next(iter(bad))):
            AdversarialEraserConfig(**bad)
    with pytest.raises(ValueError, match="benign"):
        xor_of_quadrant(np.array([0, 4]))
    with pytest.raises(ValueError, match="margin"):
        xor_world(4, 100, 0, margin=float("inf"))
    with pytest.raises(ValueError, match="concept_shift"):
        linear_world(4, 100, 0, concept_shift=float("nan"))
    with pytest.raises(ValueError, match="memory"):
        linear_world(4096, 10**6, 0)


def test_probe_rejects_bad_arguments():
    X, z = _six_sd_concept(50, 3, 0)
    with pytest.raises(ValueError, match="kind"):
        fit_probe(X, z, "quadratic", rng=np.random.default_rng(0))
    with pytest.raises(ValueError, match="rng"):
        fit_probe(X, z, "linear", rng=0)
    with pytest.raises(ValueError, match="config"):
        fit_probe(X, z, "linear", rng=np.random.default_rng(0), config={"lr": 1})
    with pytest.raises(ValueError, match="at least 4"):
        fit_probe(X[:3], np.array([0, 1, 0]), "mlp", rng=np.random.default_rng(0))
    probe = fit_probe(X, z, "linear", rng=np.random.default_rng(0))
    with pytest.raises(ValueError, match="features"):
        probe.predict(X[:, :2])
    with pytest.raises(ValueError, match="length"):
        probe.accuracy(X, z[:-1])
    for bad in ({"lr": 0.0}, {"val_fraction": 1.0}, {"hidden": ()}, {"hidden": (0,)}, {"max_epochs": -1},
                {"l2": float("nan")}):
        with pytest.raises(ValueError, match=next(iter(bad))):
            ProbeConfig(**bad)


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
    verdicts = {c.name: c.passed for c in out.checks}
    for name in ("concept_linear_before", "concept_mlp_before", "concept_mlp_after_leace", "leace_warned"):
        assert verdicts[name], out.checks
    # T2's bound at the erased end of the frontier is not tested at quick scale: no eraser of the sweep
    # drives the MLP concept probe to <= 0.60 (QLEACE stops near 0.69), so both checks fail, by design
    assert not verdicts["n_erased_points"] and not verdicts["max_benign_when_erased"]
    assert out.metrics["bound_gap_via_g"] <= 0  # exact: the concept recovered as g(Y_hat) bounds benign
    assert out.metrics["bound_gap_probe"] <= 0.05  # benign <= MLP concept probe + probe noise (criterion 3)
