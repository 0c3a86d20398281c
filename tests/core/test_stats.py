"""The shared statistics: closed forms, cross-checks against scipy / scikit-learn, bad inputs, and that no paper
keeps a copy of its own."""

from __future__ import annotations

import ast
from pathlib import Path

import numpy as np
import pytest
from scipy import stats as sps

from icml2026.core import stats

PAPERS = Path(__file__).resolve().parents[2] / "src" / "icml2026" / "papers"


def test_ece_closed_form() -> None:
    # two bins of 10: [0.9, 0.9] with 1 hit -> |0.5 - 0.9| = 0.4 on half the mass; [0.25, 0.25] with 1 hit ->
    # |0.5 - 0.25| = 0.25 on half the mass. ECE = 0.325; equal weighting gives the same (equal masses).
    conf, hit = np.array([0.9, 0.9, 0.25, 0.25]), np.array([1, 0, 1, 0])
    assert stats.expected_calibration_error(conf, hit, n_bins=10) == pytest.approx(0.325, abs=1e-12)
    # three items in one bin, one in another: mass weighting 3/4 * 0.4 + 1/4 * 0.75, uniform (0.4 + 0.75) / 2
    conf, hit = np.array([0.9, 0.9, 0.9, 0.25]), np.array([1, 1, 0, 1])
    gap_hi = abs(2 / 3 - 0.9)
    assert stats.expected_calibration_error(conf, hit) == pytest.approx(0.75 * gap_hi + 0.25 * 0.75, abs=1e-12)
    assert stats.expected_calibration_error(conf, hit, weighting="uniform") == pytest.approx((gap_hi + 0.75) / 2)


def test_ece_confidence_one_bin_choice() -> None:
    conf, hit = np.array([1.0, 0.95]), np.array([1, 0])
    # in the last bin together: |0.5 - 0.975| = 0.475; in a bin of its own: 0.5 * 0 + 0.5 * 0.95
    assert stats.expected_calibration_error(conf, hit, n_bins=10) == pytest.approx(0.475)
    assert stats.expected_calibration_error(conf, hit, n_bins=10, one_in_last_bin=False) == pytest.approx(0.475)
    conf, hit = np.array([1.0, 0.95]), np.array([0, 1])
    assert stats.expected_calibration_error(conf, hit, n_bins=10) == pytest.approx(abs(0.5 - 0.975))
    assert stats.expected_calibration_error(conf, hit, n_bins=10, one_in_last_bin=False) == pytest.approx(
        0.5 * 1.0 + 0.5 * 0.05)


def test_ece_is_zero_when_perfectly_calibrated_and_matches_a_loop() -> None:
    rng = np.random.default_rng(0)
    conf = rng.uniform(size=5000)
    hit = (rng.uniform(size=5000) < conf).astype(int)
    fast = stats.expected_calibration_error(conf, hit, n_bins=15)
    bins = np.minimum((conf * 15).astype(int), 14)
    slow = sum((bins == b).mean() * abs(hit[bins == b].mean() - conf[bins == b].mean())
               for b in range(15) if (bins == b).any())
    assert fast == pytest.approx(slow, abs=1e-12)
    assert fast < 0.03  # calibrated by construction; the sampling error of 15 bins of ~330 items is ~0.02


def test_top_label() -> None:
    conf, hit = stats.top_label([0.9, 0.2, 0.5], [1, 1, 0])
    np.testing.assert_allclose(conf, [0.9, 0.8, 0.5])
    np.testing.assert_array_equal(hit, [1.0, 0.0, 1.0])  # p = 0.5 predicts class 0 (ties go to 0)


def test_auroc_equals_mann_whitney_with_ties() -> None:
    rng = np.random.default_rng(1)
    s = rng.integers(0, 5, size=300).astype(float)  # many ties
    y = rng.integers(0, 2, size=300)
    u = sps.mannwhitneyu(s[y == 1], s[y == 0]).statistic
    assert stats.auroc(s, y) == pytest.approx(u / ((y == 1).sum() * (y == 0).sum()), abs=1e-12)
    assert np.isnan(stats.auroc([0.1, 0.2], [1, 1]))
    with pytest.raises(ValueError, match="labels"):
        stats.auroc([0.1, 0.2], [1, 1], one_class="raise")


def test_auprc_perfect_and_random() -> None:
    assert stats.auprc([0.1, 0.2, 0.8, 0.9], [0, 0, 1, 1]) == 1.0
    assert np.isnan(stats.auprc([0.1, 0.2], [0, 0]))
    rng = np.random.default_rng(2)
    y = rng.integers(0, 2, size=4000)
    assert abs(stats.auprc(rng.uniform(size=4000), y) - y.mean()) < 0.03  # AP of a random score ~ prevalence


def test_bootstrap_ci_matches_scipy_and_is_deterministic() -> None:
    x = np.random.default_rng(3).normal(size=50)
    ci = stats.bootstrap_ci(x, np.random.default_rng(7), n_resamples=999)
    ref = sps.bootstrap((x,), np.mean, n_resamples=999, method="percentile", rng=np.random.default_rng(7))
    assert (ci.low, ci.high) == (ref.confidence_interval.low, ref.confidence_interval.high)
    assert ci.estimate == pytest.approx(x.mean()) and ci.low < ci.estimate < ci.high
    assert stats.bootstrap_ci(x, np.random.default_rng(7), n_resamples=999) == ci
    assert stats.bootstrap_ci([2.0], np.random.default_rng(0)) == stats.BootstrapInterval(2.0, 2.0, 2.0, 0.0)
    assert stats.bootstrap_ci([2.0, 2.0, 2.0], np.random.default_rng(0)).low == 2.0
    assert np.isnan(stats.bootstrap_ci(np.zeros(0), np.random.default_rng(0)).low)


def test_bootstrap_ci_covers_the_mean() -> None:
    # 95% intervals from 30 normal draws cover the true mean ~95% of the time (percentile bootstrap a bit
    # less at n = 30); 200 repetitions: the binomial spread is ~1.6 points, so >= 0.88 fails only a broken method.
    rng = np.random.default_rng(4)
    hits = 0
    for _ in range(200):
        ci = stats.bootstrap_ci(rng.normal(size=30), rng, n_resamples=500)
        hits += ci.low <= 0.0 <= ci.high
    assert hits / 200 >= 0.88


def test_paired_difference_equals_scipy_t_interval() -> None:
    a, b = np.array([0.71, 0.74, 0.69, 0.75]), np.array([0.60, 0.66, 0.65, 0.61])
    d = stats.paired_difference(a, b)
    ref = sps.ttest_rel(a, b).confidence_interval(0.95)
    assert (d.low, d.high) == pytest.approx((ref.low, ref.high), abs=1e-12)
    assert d.mean == pytest.approx(np.mean(a - b)) and d.n == 4 and d.min == pytest.approx(0.04)
    one = stats.paired_difference([1.0], [0.5])
    assert (one.mean, one.low, one.high, one.sd) == (0.5, 0.5, 0.5, 0.0)


@pytest.mark.parametrize(("call", "arg"), [
    (lambda: stats.expected_calibration_error([0.5, 1.5], [0, 1]), "conf"),
    (lambda: stats.expected_calibration_error([0.5, 0.5], [0, 2]), "correct"),
    (lambda: stats.expected_calibration_error([0.5, 0.5], [0, 1, 1]), "correct"),
    (lambda: stats.expected_calibration_error([0.5], [1], n_bins=0), "n_bins"),
    (lambda: stats.expected_calibration_error([0.5], [1], weighting="median"), "weighting"),  # type: ignore[arg-type]
    (lambda: stats.auroc([0.1, np.nan], [0, 1]), "scores"),
    (lambda: stats.auroc([0.1, 0.2], [0, 1, 1]), "labels"),
    (lambda: stats.bootstrap_ci([1.0, 2.0], np.random.default_rng(0), level=1.5), "level"),
    (lambda: stats.bootstrap_ci(3.0, np.random.default_rng(0)), "values"),
    (lambda: stats.paired_difference([1.0, 2.0], [1.0]), "b"),
    (lambda: stats.paired_difference([], []), "a"),
])
def test_bad_inputs_name_the_argument(call: object, arg: str) -> None:
    with pytest.raises(ValueError, match=arg):
        call()  # type: ignore[operator]


# ------------------------------------------------------------------------------------------- one copy only
#: Library calls that compute these statistics; in the papers they must go through core.stats.
_FORBIDDEN_IMPORTS = {("sklearn.metrics", "roc_auc_score"), ("sklearn.metrics", "average_precision_score"),
                      ("scipy.stats", "bootstrap")}
#: Direct uses with a reason: correctness_models resamples several strata at once (one index array per target)
#: for a statistic that is undefined on some resamples, which ``stats.bootstrap_ci`` (one sample) does not
#: express; it calls ``scipy.stats.bootstrap`` itself, the routine the shared interval wraps.
_ALLOWED_DIRECT = {("correctness_models/experiments.py", "scipy.stats", "bootstrap")}
#: Function names that say they compute one of the shared statistics.
_STAT_WORDS = ("auroc", "auprc", "calibration_error", "bootstrap_ci", "roc_auc")


def _paper_files() -> list[Path]:
    return sorted(PAPERS.rglob("*.py"))


def test_no_paper_imports_the_statistics_directly() -> None:
    offenders = []
    for f in _paper_files():
        for node in ast.walk(ast.parse(f.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module:
                for alias in node.names:
                    allowed = (str(f.relative_to(PAPERS)), node.module, alias.name) in _ALLOWED_DIRECT
                    if (node.module, alias.name) in _FORBIDDEN_IMPORTS and not allowed:
                        where = f"{f.relative_to(PAPERS)}:{node.lineno}"
                        offenders.append(f"{where}: from {node.module} import {alias.name}")
    assert not offenders, "use icml2026.core.stats instead:\n" + "\n".join(offenders)


def _core_stats_names(tree: ast.Module) -> set[str]:
    """Names bound in a module to icml2026.core.stats or to a function of it."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            if node.module.endswith("core.stats"):
                names |= {a.asname or a.name for a in node.names}
            elif node.module.endswith("core"):
                names |= {a.asname or a.name for a in node.names if a.name == "stats"}
        elif isinstance(node, ast.Import):
            names |= {a.asname or a.name for a in node.names if a.name.endswith("core.stats")}
    return names


def test_paper_statistics_functions_delegate_to_core() -> None:
    """A paper function named after a shared statistic must call icml2026.core.stats (a thin wrapper)."""
    offenders = []
    for f in _paper_files():
        tree = ast.parse(f.read_text(encoding="utf-8"))
        module_names = _core_stats_names(tree)
        funcs = [n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
        nested = [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
        used = {id(n): {m.id for m in ast.walk(n) if isinstance(m, ast.Name)} for n in nested}
        # a function delegates when it uses core.stats, or calls a function of its module that does
        good = {n.name for n in nested
                if used[id(n)] & (module_names | _core_stats_names(ast.Module(body=n.body, type_ignores=[])))}
        changed = True
        while changed:
            grown = good | {n.name for n in funcs if used[id(n)] & good}
            changed, good = grown != good, grown
        for node in nested:
            if any(w in node.name.lower() for w in _STAT_WORDS) and node.name not in good:
                offenders.append(f"{f.relative_to(PAPERS)}:{node.lineno}: {node.name}")
    assert not offenders, "these compute a shared statistic without icml2026.core.stats:\n" + "\n".join(offenders)
