"""Quick presets, the negative controls and the baselines."""

import numpy as np
import pytest
import torch

from icml2026.core import make_rng
from icml2026.core.registry import get_experiment
from icml2026.papers.fp_gradients import (
    construct_fixed_order,
    mild_targets,
    output_value_first_orders,
    random_targets,
    reference_values_and_grads,
    sobolev_fit,
    torch_values_and_grads,
)
from icml2026.papers.fp_gradients.experiments import (
    ExactConfig,
    OrderConfig,
    SizeConfig,
    SolverConfig,
    brief_ranges,
)
from icml2026.papers.fp_gradients.floats import count_mismatches

torch.set_num_threads(1)
torch.set_flush_denormal(False)


def test_fixed_order_construction_needs_its_order():
    # Brief Acceptance 3: exact left to right; value terms first breaks values on many points.
    tg = random_targets(60, np.random.default_rng(11), "identity", **brief_ranges("identity"))
    layers = construct_fixed_order(tg.xs, tg.values, tg.grads, "identity", 2.0**-6)
    y, d = reference_values_and_grads(layers, tg.xs, "identity", mode="dense")
    assert count_mismatches(y, tg.values) == 0 and count_mismatches(d, tg.grads) == 0
    y, _ = reference_values_and_grads(layers, tg.xs, "identity", mode="dense", orders=output_value_first_orders(layers))
    assert count_mismatches(y, tg.values) >= 6  # measured 13/40 and ~43% at K=400; 10% is a loose floor


def test_sobolev_baseline_is_not_exact():
    tg = mild_targets(10, np.random.default_rng(12))
    fit = sobolev_fit(tg.xs, tg.values, tg.grads, "identity", torch.Generator().manual_seed(0), steps=60)
    y, d = torch_values_and_grads(fit.net, tg.xs, "identity")
    assert count_mismatches(y, tg.values) + count_mismatches(d, tg.grads) > 0
    assert np.isfinite(fit.final_loss)


@pytest.mark.parametrize("name", ["order_control", "size_vs_k", "scaling_solver"])
def test_quick_presets_pass(name):
    exp = get_experiment(f"fp_gradients.{name}")
    out = exp(exp.config("quick"), make_rng(0))
    assert out.passed, [(c.name, c.value, c.target) for c in out.checks]


@pytest.mark.slow
def test_quick_preset_exact_representation():
    exp = get_experiment("fp_gradients.exact_representation")
    out = exp(exp.config("quick"), make_rng(0))
    assert out.passed and out.metrics["total_points"] == 3 * (5 * 40 + 2 * 400)


def test_experiment_determinism_and_seed_dependence():
    exp = get_experiment("fp_gradients.size_vs_k")
    cfg = SizeConfig(ks=(6, 12))
    a, b, c = exp(cfg, make_rng(1)), exp(cfg, make_rng(1)), exp(cfg, make_rng(2))
    assert a.metrics == b.metrics and a.tables == b.tables
    assert a.tables != c.tables


def test_configs_validate():
    with pytest.raises(ValueError, match="same"):
        ExactConfig(ks=(40,), seeds_per_k=(1, 2))
    with pytest.raises(ValueError, match="phis"):
        ExactConfig(phis=("hinge",))
    with pytest.raises(ValueError, match="k must be"):
        OrderConfig(k=2)
    with pytest.raises(ValueError, match="ks needs"):
        SizeConfig(ks=(10,))
    with pytest.raises(ValueError, match="n_pairs"):
        SolverConfig(n_pairs=0)
