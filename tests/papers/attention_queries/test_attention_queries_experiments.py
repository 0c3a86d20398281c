"""Every registered experiment: quick preset passes, determinism, config validation."""

from __future__ import annotations

import dataclasses

import pytest

from icml2026.core import make_rng
from icml2026.core.registry import all_experiments, get_experiment

NAMES = [
    "attention_queries.exact_recovery",
    "attention_queries.low_rank_recovery",
    "attention_queries.noise_tolerance",
    "attention_queries.multihead_nonidentifiable",
    "attention_queries.one_layer_reduction",
    "attention_queries.noisy_bound",
    "attention_queries.precision_recovery",
]
# its quick preset builds a transformers model (~10 s): run by the contract test and the CLI tests of
# test_attention_queries_pretrained.py
TORCH_NAMES = ["attention_queries.pretrained_head"]


def test_all_experiments_registered():
    registered = {n for n in all_experiments() if n.startswith("attention_queries.")}
    assert registered == set(NAMES) | set(TORCH_NAMES)


@pytest.mark.parametrize("name", NAMES)
def test_quick_preset_passes(name):
    exp = get_experiment(name)
    out = exp(exp.config("quick"), make_rng(0))
    failed = [(c.name, c.value, c.target) for c in out.checks if not c.passed]
    assert out.passed, failed


@pytest.mark.parametrize("name", ["attention_queries.exact_recovery", "attention_queries.noise_tolerance"])
def test_same_seed_same_metrics_new_seed_different(name):
    exp = get_experiment(name)
    cfg = exp.config("quick")
    a, b, c = exp(cfg, make_rng(0)), exp(cfg, make_rng(0)), exp(cfg, make_rng(1))
    assert a.metrics == b.metrics
    assert a.metrics != c.metrics


@pytest.mark.parametrize(
    "name, field, value",
    [
        ("attention_queries.exact_recovery", "d_max", 24),
        ("attention_queries.exact_recovery", "d_min", 64),
        ("attention_queries.low_rank_recovery", "r_max", 32),
        ("attention_queries.low_rank_recovery", "cs_rank", 0),
        ("attention_queries.noise_tolerance", "n_tau", 1),
        ("attention_queries.multihead_nonidentifiable", "n_heads", 1),
        ("attention_queries.one_layer_reduction", "d", 0),
    ],
)
def test_bad_config_values_raise(name, field, value):
    cfg = get_experiment(name).config("quick")
    with pytest.raises(ValueError):
        dataclasses.replace(cfg, **{field: value})
