"""Bad input to the DWC's public functions and configs: a ValueError naming the argument (or MissingDependency
naming the system package), never a deep crash or a silently wrong action (issue 14)."""

import dataclasses

import numpy as np
import pytest
import torch

from icml2026.core.errors import MissingDependency
from icml2026.core.registry import get_experiment
from icml2026.papers.dwc import (
    DWCPolicy,
    LUTLayer,
    MLPActor,
    ObsNormalizer,
    SACConfig,
    efd_constants,
    fit_mse,
    head_affine,
    lqr_cartpole_law,
    sample_states,
    thermometer_encode,
    thermometer_thresholds,
)
from icml2026.papers.dwc.baselines import DWCActor
from icml2026.papers.dwc.experiments import verify_circuit

torch.set_num_threads(1)  # shared 2-core machine


@pytest.fixture
def policy():
    return DWCPolicy(4, 1, n_luts=8, n_layers=2, bits=7, lut_inputs=3, generator=torch.Generator().manual_seed(0))


def test_act_rejects_nan_and_empty_observations(policy):
    with pytest.raises(ValueError, match="NaN"):
        policy.act(np.array([0.0, np.nan, 0.0, 0.0]))   # issue 14: an action came back for a NaN observation
    with pytest.raises(ValueError, match="NaN"):
        policy.act(torch.full((2, 4), float("inf")))
    with pytest.raises(ValueError, match="empty"):
        policy.act(np.zeros((0, 4)))                      # issue 14: crashed deep in torch.reshape
    with pytest.raises(ValueError, match="shape"):
        policy.act(np.zeros(5))
    with pytest.raises(ValueError, match="observation"):
        policy.act("abc")
    with pytest.raises(ValueError, match="NaN"):
        policy.to_integer_model().act(np.full((1, 4), np.nan))  # the numpy model compared NaN as all-zero bits


@pytest.mark.parametrize("kwargs", [{"action_scale": float("nan")}, {"action_scale": 0.0},
                                    {"action_bias": float("inf")}, {"action_scale": [1.0, 2.0, 3.0]}])
def test_policy_rejects_bad_action_affine(kwargs):
    name = next(iter(kwargs))
    with pytest.raises(ValueError, match=name):
        DWCPolicy(4, 2, n_luts=8, bits=7, **kwargs)
    with pytest.raises(ValueError, match=name):
        MLPActor(4, 2, 16, **kwargs)


@pytest.mark.parametrize("bad", [0.5, 2.0, float("nan"), -1.0])
def test_lut_layer_rejects_non_binary_inputs(bad):
    layer = LUTLayer(6, 4, 3, generator=torch.Generator().manual_seed(0))
    x = torch.zeros(3, 6)
    x[1, 2] = bad
    with pytest.raises(ValueError, match="bits"):
        layer(x)
    layer(torch.ones(3, 6))  # 0/1 input is fine


def test_lut_layer_rejects_integer_tensors():
    layer = LUTLayer(6, 4, 3, generator=torch.Generator().manual_seed(0))
    with pytest.raises(ValueError, match="floating"):
        layer(torch.ones(2, 6, dtype=torch.long))


def test_integer_popcounts_reject_non_bits(policy):
    bits = np.zeros((2, policy.lut_layers[0].in_bits))
    bits[0, 0] = 2.0
    with pytest.raises(ValueError, match="bits"):
        policy.integer_popcounts(torch.as_tensor(bits))
    with pytest.raises(ValueError, match="bits"):
        policy.to_integer_model().popcounts(bits)


def test_normalizer_update_rejects_nan_shape_and_empty():
    norm = ObsNormalizer(3)
    with pytest.raises(ValueError, match="NaN"):
        norm.update(np.array([0.0, np.nan, 1.0]))
    with pytest.raises(ValueError, match="shape"):
        norm.update(np.zeros(6))   # used to be reshaped silently into two observations
    with pytest.raises(ValueError, match="empty"):
        norm.update(np.zeros((0, 3)))
    assert float(norm.count) == 0.0 and torch.isfinite(norm.mean).all()  # statistics untouched
    with pytest.raises(ValueError, match="obs_dim"):
        ObsNormalizer(0)


@pytest.mark.parametrize("kwargs, field", [({"lut_inputs": 0}, "lut_inputs"), ({"lut_inputs": 11}, "lut_inputs"),
                                           ({"mapping": "hash"}, "mapping"), ({"policy_lr": 0.0}, "policy_lr"),
                                           ({"policy_lr": float("nan")}, "policy_lr"), ({"q_lr": -1e-3}, "q_lr"),
                                           ({"env_id": "Hopper-v4", "n_luts": 2}, "n_luts"),
                                           ({"env_id": "CartPole-v1"}, "env_id"),
                                           ({"buffer_size": 10**9}, "buffer_size"),
                                           ({"n_luts": 4096, "bits": 255}, "n_luts")])
def test_sac_config_validates_at_construction(kwargs, field):
    with pytest.raises(ValueError, match=f"^{field}"):
        SACConfig(**{"total_steps": 300, "learning_starts": 100, **kwargs})


def test_every_preset_rejects_the_contract_values():
    for name in ("sanity_fit", "sac_pendulum", "sac_hopper"):
        exp = get_experiment(f"dwc.{name}")
        for preset in ("quick", "smoke"):
            base = exp.presets[preset]
            for f in dataclasses.fields(base):
                if isinstance(getattr(base, f.name), (bool, str)):
                    continue
                for bad in (-1, 10**9, float("nan"), float("inf"), "x"):
                    with pytest.raises(ValueError, match=f"^{f.name}"):
                        dataclasses.replace(base, **{f.name: bad})


def test_circuit_check_names_the_missing_tool(policy, monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))  # no iverilog on this PATH
    with pytest.raises(MissingDependency, match="apt-get install iverilog"):
        verify_circuit(policy, np.zeros((3, 4)), 10, np.random.default_rng(0))


def test_verify_circuit_validates_observations(policy):
    import shutil

    if shutil.which("iverilog") is None or shutil.which("vvp") is None:
        pytest.skip("iverilog/vvp not on PATH (apt-get install iverilog)")
    with pytest.raises(ValueError, match="observations"):
        verify_circuit(policy, np.zeros((3, 5)), 10, np.random.default_rng(0))
    with pytest.raises(ValueError, match="n_random"):
        verify_circuit(policy, np.zeros((3, 4)), -1, np.random.default_rng(0))


def test_helpers_validate_arguments(policy):
    g = torch.Generator().manual_seed(0)
    actor = DWCActor(policy, generator=g)
    x = np.zeros((10, 4))
    with pytest.raises(ValueError, match="same length"):
        fit_mse(actor, x, np.zeros((9, 1)), 2, 1e-2, 4, g)
    with pytest.raises(ValueError, match="lr"):
        fit_mse(actor, x, np.zeros((10, 1)), 2, float("nan"), 4, g)
    with pytest.raises(ValueError, match="states"):
        fit_mse(actor, np.full((10, 4), np.nan), np.zeros((10, 1)), 2, 1e-2, 4, g)
    with pytest.raises(ValueError, match="n"):
        sample_states(lqr_cartpole_law(), 0, np.random.default_rng(0))
    with pytest.raises(ValueError, match="scale"):
        lqr_cartpole_law(scale=float("nan"))
    with pytest.raises(ValueError, match="x"):
        lqr_cartpole_law()(np.zeros((3, 5)))
    with pytest.raises(ValueError, match="group_size"):
        head_affine(np.zeros((1, 1)), 0, np.zeros(1), np.zeros(1), np.ones(1), np.zeros(1))
    with pytest.raises(ValueError, match="x_hat"):
        thermometer_encode(torch.full((1, 2), float("nan")), torch.as_tensor(thermometer_thresholds(7)))
    with pytest.raises(ValueError, match="lut_inputs"):
        efd_constants(0)
    with pytest.raises(ValueError, match="empty"):
        MLPActor(4, 1, 8).deterministic(np.zeros((0, 4)))


def test_experiments_check_for_the_simulator_before_training(monkeypatch, tmp_path):
    from icml2026.core import make_rng

    monkeypatch.setenv("PATH", str(tmp_path))
    for name in ("sanity_fit", "sac_pendulum"):
        exp = get_experiment(f"dwc.{name}")
        with pytest.raises(MissingDependency, match="apt-get install iverilog"):
            exp(exp.presets["smoke"], make_rng(0))
