import math

import pytest

from icml2026.core.outcome import Check, Outcome, evaluate_target


@pytest.mark.parametrize(
    ("value", "target", "expected"),
    [
        (1e-12, "< 1e-10", True),
        (1e-10, "< 1e-10", False),
        (1e-10, "<= 1e-10", True),
        (272, "== 272", True),
        (273, "== 272", False),
        (0.9, ">= 0.9", True),
        (0.89, "> 0.9", False),
        (1.0, "in [0.8, 1.2]", True),
        (0.8, "in (0.8, 1.2]", False),
        (1.2, "in [0.8, 1.2)", False),
        (1.3, "in [0.8, 1.2]", False),
        (-5, "!= 0", True),
        (math.inf, "< inf", False),
        (3, "> -inf", True),
    ],
)
def test_targets_are_evaluated(value: float, target: str, expected: bool) -> None:
    assert evaluate_target(value, target) is expected


@pytest.mark.parametrize("target", ["< 1e-10", "in [0, 1]", "== 0", ">= -inf"])
def test_nan_never_passes(target: str) -> None:
    assert evaluate_target(math.nan, target) is False


@pytest.mark.parametrize("target", ["small", "<", "about 3", "in [1 2]", "< 1e-10 and > 0"])
def test_unreadable_targets_are_refused(target: str) -> None:
    with pytest.raises(ValueError, match="machine-checkable"):
        Check("x", 1.0, target)


def test_check_computes_passed_and_cannot_be_told() -> None:
    c = Check("err", 1e-3, "< 1e-6", paper="exact")
    assert c.passed is False
    with pytest.raises(TypeError):
        Check("err", 1e-3, "< 1e-6", passed=True)  # type: ignore[call-arg]
    assert c.to_dict() == {"name": "err", "value": 1e-3, "target": "< 1e-6", "paper": "exact", "role": "claim",
                           "comparative": False, "power": None, "false_positive_rate": None, "passed": False}


def test_check_value_must_be_numeric() -> None:
    with pytest.raises(ValueError, match="not a number"):
        Check("err", "small", "< 1")  # type: ignore[arg-type]


def test_outcome_passes_only_when_all_checks_pass() -> None:
    good, bad = Check("a", 1, "== 1"), Check("b", 2, "== 1")
    assert Outcome(checks=[good]).passed
    assert not Outcome(checks=[good, bad]).passed
    assert not Outcome(checks=[]).passed  # nothing measured is not a pass


def test_outcome_validates_metrics_and_figure_names() -> None:
    with pytest.raises(ValueError, match="not a number"):
        Outcome(metrics={"x": "abc"})  # type: ignore[dict-item]
    with pytest.raises(ValueError, match="file stem"):
        Outcome(figures={"a/b": None})  # type: ignore[dict-item]
    with pytest.raises(TypeError, match="Check"):
        Outcome(checks=[("a", 1)])  # type: ignore[list-item]
