"""The comparative checks of order_control and scaling_solver pass on the real baseline and fail on the null."""

import pytest

from icml2026.core import make_rng
from icml2026.core.registry import get_experiment


def _run(name, **kw):
    exp = get_experiment(name)
    return exp(exp.config_type(**kw), make_rng(0))


def _check(out, name):
    (c,) = [c for c in out.checks if c.name == name]
    return c


def test_order_control_null_fails_planted_passes():
    planted = _run("fp_gradients.order_control", k=20, n_random_orders=1, control="planted")
    null = _run("fp_gradients.order_control", k=20, n_random_orders=1, control="null")
    assert _check(planted, "fixed_order_value_first_value_mismatches").passed
    c = _check(null, "fixed_order_value_first_value_mismatches")
    assert c.comparative and not c.passed and c.value == 0   # the order-robust network is exact reversed too
    assert planted.verdict == "reproduced" and null.verdict == "not reproduced"


def test_scaling_solver_null_fails_planted_passes():
    planted = _run("fp_gradients.scaling_solver", n_pairs=200, control="planted")
    null = _run("fp_gradients.scaling_solver", n_pairs=200, control="null")
    assert _check(planted, "single_step_failure_fraction").passed
    assert _check(null, "single_step_failure_fraction").value == 0   # two roundings reach every target
    assert null.verdict == "not reproduced"


@pytest.mark.parametrize("name", ["exact_representation", "size_vs_k", "vector_inputs", "multi_loss",
                                  "activations", "order_control", "scaling_solver"])
def test_every_experiment_says_why_it_has_no_precondition(name):
    assert get_experiment(f"fp_gradients.{name}").no_preconditions.startswith("Analytic")


def test_control_must_be_a_known_value():
    exp = get_experiment("fp_gradients.scaling_solver")
    with pytest.raises(ValueError, match="control"):
        exp.config_type(control="sometimes")
