"""The QAT (brevitas) baseline actor, the worker pool of the SAC experiment, and checkpoint reuse."""

import numpy as np
import pytest
import torch

from icml2026.core import make_rng
from icml2026.core.registry import get_experiment
from icml2026.papers.dwc import QuantMLPActor, SACConfig, train_sac

torch.set_num_threads(1)  # shared 2-core machine


def _actor(**kw):
    return QuantMLPActor(4, 1, hidden=32, action_scale=3.0, generator=torch.Generator().manual_seed(0), **kw)


@pytest.mark.parametrize("bits", [2, 3, 8])
def test_quant_actor_weights_and_mean_are_quantised(bits):
    act = _actor(weight_bits=bits, act_bits=bits)
    # brevitas' integer weights: at most 2^bits levels per layer
    for layer in (act.fc1, act.fc2, act.fc_mean):
        q = layer.quant_weight()
        assert torch.unique(q.value.detach()).numel() <= 2**bits
    obs = torch.as_tensor(np.random.default_rng(0).normal(size=(512, 4)))
    mean, log_std = act.dist_params(obs)
    assert mean.shape == (512, 1) and log_std.shape == (512, 1)
    assert torch.unique(mean.detach()).numel() <= 2**8  # 8-bit output
    h = act.relu1(act.fc1(act.q_in(act.normalizer.normalize(obs).float())))
    assert torch.unique(h.detach()).numel() <= 2**bits  # hidden activations on a 2^bits grid
    a = act.deterministic(obs.numpy())
    assert a.shape == (512, 1) and np.all(np.abs(a) <= 3.0)


def test_quant_actor_differs_from_float_actor_only_by_quantisation():
    # 16-bit everything: the QAT actor's mean is close to the same weights run in float
    act = _actor(weight_bits=16, act_bits=16, input_bits=16, output_bits=16)
    obs = torch.as_tensor(np.random.default_rng(1).normal(size=(64, 4)))
    x = act.normalizer.normalize(obs).float()
    ref = act.fc_mean.weight @ torch.relu(act.fc2.weight @ torch.relu(act.fc1.weight @ x.T + act.fc1.bias[:, None])
                                          + act.fc2.bias[:, None]) + act.fc_mean.bias[:, None]
    got = act.dist_params(obs)[0].T
    assert torch.allclose(got, ref, atol=0.05 * float(ref.detach().abs().max()))
    coarse = _actor(weight_bits=2, act_bits=2)
    coarse.load_state_dict(act.state_dict())
    assert not torch.allclose(coarse.dist_params(obs)[0].T, ref, atol=0.05 * float(ref.detach().abs().max()))


@pytest.mark.parametrize("kw", [{"weight_bits": 1}, {"act_bits": 17}, {"input_bits": 2.5}, {"output_bits": True}])
def test_quant_actor_rejects_bad_bits(kw):
    with pytest.raises(ValueError, match="bits"):
        _actor(**kw)


def test_quant_actor_bad_observation():
    with pytest.raises(ValueError, match="NaN"):
        _actor().deterministic(np.array([0.0, np.nan, 0.0, 0.0]))
    with pytest.raises(ValueError, match="shape"):
        _actor().deterministic(np.zeros(5))


def test_qat_sac_trains_and_checkpoints(tmp_path):
    cfg = SACConfig(actor="qmlp", total_steps=240, learning_starts=200, eval_episodes=1, batch_size=32,
                    checkpoint_every=100, mlp_hidden=32)
    res = train_sac(cfg, make_rng(0), checkpoint_path=tmp_path / "q.pt")
    assert isinstance(res.actor, QuantMLPActor) and len(res.eval_returns) == 1
    state = torch.load(tmp_path / "q.pt", weights_only=True)
    assert state["step"] == 240
    # reloading the finished run reproduces its evaluation exactly (no extra draws before evaluating)
    again = train_sac(cfg, make_rng(0), checkpoint_path=tmp_path / "q.pt")
    assert again.resumed_from == 240 and again.eval_returns == res.eval_returns


def test_worker_pool_and_checkpoint_dir_give_identical_results(tmp_path, capfd):
    exp = get_experiment("dwc.sac_pendulum")
    base = dict(n_seeds=2, total_steps=260, learning_starts=220, n_luts=8, eval_episodes=1, run_baseline=True,
                run_quantized=False, n_random_vectors=2000)
    serial = exp(exp.config_type(**base), make_rng(3))
    capfd.readouterr()
    pooled = exp(exp.config_type(workers=2, checkpoint_dir=str(tmp_path), **base), make_rng(3))
    assert serial.metrics == pooled.metrics
    # every worker reports its own SAC steps (plain lines on the inherited stderr), not only the job count
    err = capfd.readouterr().err
    for actor in ("dwc", "mlp"):
        for seed in (0, 1):
            assert f"[SAC {actor} InvertedPendulum-v4 seed {seed}] done 260 steps" in err
    assert "[SAC runs on 2 workers]" in err
    assert len(list(tmp_path.glob("*.pt"))) == 4  # 2 seeds x (DWC, FP32)
    resumed = exp(exp.config_type(checkpoint_dir=str(tmp_path), **base), make_rng(3))  # reuses finished runs
    assert resumed.metrics == serial.metrics
    other = exp(exp.config_type(checkpoint_dir=str(tmp_path), **{**base, "n_luts": 16}), make_rng(3))
    assert len(list(tmp_path.glob("*.pt"))) == 8  # another config never resumes these runs
    assert other.metrics != serial.metrics


def test_pendulum_config_rejects_bad_workers():
    exp = get_experiment("dwc.sac_pendulum")
    with pytest.raises(ValueError, match="workers"):
        exp.config_type(workers=0)


def test_hopper_experiment_checks_parity_not_an_absolute_return():
    exp = get_experiment("dwc.sac_hopper")
    cfg = exp.config_type(total_steps=260, learning_starts=220, n_luts=8, eval_episodes=1, check_returns=True,
                          n_random_vectors=2000)
    out = exp(cfg, make_rng(0))
    names = {c.name for c in out.checks}
    assert "dwc_over_mlp" in names and not any(n.startswith("n_seeds_dwc_ge") for n in names)
    assert out.metrics["mismatches_total"] == 0 and out.metrics["first_layer_input_bits"] == 11 * 63
    pend = get_experiment("dwc.sac_pendulum").config("paper")
    assert pend.solved_return == 900 and pend.n_seeds == 3 and pend.total_steps == 30_000
