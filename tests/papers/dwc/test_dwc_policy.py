import numpy as np
import pytest
import torch

from icml2026.papers.dwc import (
    DWCPolicy,
    PolicyError,
    export_verilog,
    first_layer_report,
    have_iverilog,
    simulate,
    thermometer_thresholds,
)

torch.set_num_threads(1)  # shared 2-core machine

needs_iverilog = pytest.mark.skipif(not have_iverilog(), reason="iverilog/vvp not on PATH (apt-get install iverilog)")


def _policy(obs_dim=4, act_dim=3, n_luts=(40, 35), bits=15, seed=0, mapping="learnable"):
    pol = DWCPolicy(obs_dim, act_dim, n_luts=n_luts, bits=bits, mapping=mapping, action_scale=2.0,
                    action_bias=0.5, generator=torch.Generator().manual_seed(seed))
    rng = np.random.default_rng(seed)
    pol.normalizer.update(rng.normal(1.0, 2.0, size=(300, obs_dim)))
    return pol, rng


def test_group_padding_and_three_paths_agree():
    pol, rng = _policy()   # 35 LUTs over 3 actions: widened to 36 trainable LUTs (official code), groups of 12
    assert pol.group_size == 12 and pol.lut_layers[-1].n_luts == 36
    obs = rng.normal(1.0, 2.0, size=(500, 4))
    bits = pol.encode(torch.as_tensor(obs))
    with torch.no_grad():
        train_pop = pol.popcounts_from_bits(bits).long().numpy()
    int_pop = pol.integer_popcounts(bits.bool()).numpy()
    np_pop = pol.to_integer_model().popcounts(bits.numpy().astype(bool))
    np.testing.assert_array_equal(train_pop, np_pop)
    np.testing.assert_array_equal(int_pop, np_pop)
    assert np_pop.max() <= 12
    # act (integer path) == differentiable forward up to float32 tanh rounding (~1e-7 x scale 2).
    with torch.no_grad():
        np.testing.assert_allclose(pol.act(obs), pol(torch.as_tensor(obs)).double().numpy(), atol=1e-5)
    np.testing.assert_array_equal(pol.act(obs), pol.to_integer_model().act(obs))
    assert pol.act(obs[0]).shape == (3,)


def test_head_matches_formula():
    pol, rng = _policy(act_dim=1, n_luts=(16, 10))
    obs = rng.normal(size=(50, 4))
    pop = pol.integer_popcounts(pol.encode(torch.as_tensor(obs)).bool()).numpy()
    frac = np.clip(pop / 10, 1e-6, 1 - 1e-6)
    expected = np.tanh(np.exp(-0.6931) * (frac - 0.5) + 0.0) * 2.0 + 0.5  # init log_alpha, beta (brief)
    np.testing.assert_allclose(pol.act(obs), expected, atol=1e-6)  # float32 log_alpha parameter


@pytest.mark.parametrize("obs, msg", [(np.zeros(5), "shape"), (np.zeros((2, 3)), "shape"),
                                      (np.array([0.0, np.nan, 0.0, 0.0]), "NaN"),
                                      (np.zeros((2, 2, 4)), "shape")])
def test_act_rejects_bad_observations(obs, msg):
    pol, _ = _policy()
    with pytest.raises(ValueError, match=msg):
        pol.act(obs)


def test_bad_policy_arguments():
    with pytest.raises(ValueError, match="act_dim"):
        DWCPolicy(4, 8, n_luts=4)
    with pytest.raises(ValueError, match="obs_dim"):
        DWCPolicy(0, 1)
    with pytest.raises(ValueError, match="odd"):
        DWCPolicy(4, 1, bits=8)


def test_export_refuses_untrained_and_inconsistent_policies(tmp_path):
    pol, _ = _policy()
    with pytest.raises(PolicyError, match="untrained"):
        export_verilog(pol, tmp_path / "a.v")
    pol.mark_trained()
    pol.group_size = 11  # 11 * 3 < 35 LUTs: unequal groups
    with pytest.raises(PolicyError, match="group"):
        export_verilog(pol, tmp_path / "b.v")
    pol.group_size = 12
    with torch.no_grad():
        pol.layers[0].tables[0, 0] = 3.0   # unclamped table
    with pytest.raises(PolicyError, match=r"\[-1, 1\]"):
        export_verilog(pol, tmp_path / "c.v")
    assert list(tmp_path.iterdir()) == []  # nothing written before raising


@needs_iverilog
def test_verilog_matches_integer_model_criterion_3(tmp_path):
    pol, rng = _policy(obs_dim=5, act_dim=2, n_luts=(48, 33), bits=15, seed=4)
    pol.mark_trained()
    obs = rng.normal(1.0, 2.0, size=(1000, 5))
    bits = np.concatenate([pol.encode(torch.as_tensor(obs)).numpy().astype(bool),
                           rng.integers(0, 2, size=(1000, 75)).astype(bool)])   # 2000 vectors
    res = export_verilog(pol, tmp_path / "core.v")
    assert res.testbench_path.exists() and res.module_path.read_text().count("module dwc_core") == 1
    sim = simulate(res.module_path, bits)
    ref = pol.to_integer_model().popcounts(bits)
    assert (sim.popcounts != ref).sum() == 0
    assert sim.latency_cycles == 3  # one register per LUT layer + the popcount register
    assert len(np.unique(ref[:, 0])) > 3  # the check is not vacuous: popcounts vary


@needs_iverilog
def test_verilog_random_mapping_and_small_luts(tmp_path):
    pol, rng = _policy(obs_dim=3, act_dim=1, n_luts=(20, 7, 5), bits=5, seed=9, mapping="random")
    pol.mark_trained()
    bits = rng.integers(0, 2, size=(300, 15)).astype(bool)
    res = export_verilog(pol, tmp_path / "c3.v")
    sim = simulate(res.module_path, bits)
    np.testing.assert_array_equal(sim.popcounts, pol.to_integer_model().popcounts(bits))
    assert sim.latency_cycles == 4
    with pytest.raises(ValueError, match="shape"):
        simulate(res.module_path, bits[:, :10])


def test_interpretability_report_criterion_6():
    pol, _ = _policy(obs_dim=4, act_dim=1, n_luts=(8, 8), bits=63)  # 48 reads of 252 bits
    rep = first_layer_report(pol)
    idx = pol.layers[0].indices().reshape(-1).numpy()
    np.testing.assert_array_equal(rep.reads_per_dim, np.bincount(idx // 63, minlength=4))
    assert rep.reads_per_dim.sum() == 8 * 6
    assert rep.n_distinct_bits == len(set(idx.tolist())) < 4 * 63
    row = rep.rows()[0]
    assert row["lut_inputs_reading"] == rep.reads_per_dim[0]
    assert row["min_threshold"] in thermometer_thresholds(63)
