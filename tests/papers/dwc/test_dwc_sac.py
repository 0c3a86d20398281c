import numpy as np
import pytest
import torch

from icml2026.core import Check, make_rng
from icml2026.core.registry import get_experiment
from icml2026.papers.dwc import SACConfig, export_verilog, have_iverilog, simulate, train_sac

torch.set_num_threads(1)  # shared 2-core machine

SMALL = SACConfig(total_steps=260, learning_starts=200, n_luts=64, bits=63, eval_episodes=1, checkpoint_every=100,
                  batch_size=64)


def test_sac_smoke_resume_and_circuit(tmp_path):
    """A short SAC run, interrupted and resumed from a weights_only checkpoint; tables stay in [-1, 1] and
    the trained net's circuit matches (criterion 7 at test scale; the full smoke is the quick preset)."""
    ckpt = tmp_path / "ckpt.pt"
    part = train_sac(SMALL, make_rng(0), checkpoint_path=ckpt, stop_at=230)
    assert part.steps_done == 230 and part.eval_returns == [] and ckpt.exists()
    saved = torch.load(ckpt, weights_only=True)
    assert saved["step"] == 230
    res = train_sac(SMALL, make_rng(1), checkpoint_path=ckpt)
    assert res.resumed_from == 230 and res.steps_done == 260 and len(res.eval_returns) == 1
    pol = res.actor.policy
    # The resumed actor started from the checkpoint: its update counter continues (30 updates done before).
    assert int(pol.train_steps) == int(saved["actor"]["policy.train_steps"]) + 30
    assert max(float(layer.tables.detach().abs().max()) for layer in pol.layers) <= 1.0
    assert pol.normalizer.count.item() == 260  # updated on every env step, across the resume
    if have_iverilog():
        bits = pol.encode(torch.as_tensor(res.logged_obs)).numpy().astype(bool)
        out = export_verilog(pol, tmp_path / "p.v")
        np.testing.assert_array_equal(simulate(out.module_path, bits).popcounts,
                                      pol.to_integer_model().popcounts(bits))


@pytest.mark.parametrize("kwargs, msg", [({"actor": "cnn"}, "actor"), ({"learning_starts": 300}, "learning_starts"),
                                         ({"bits": 4}, "odd"), ({"gamma": 1.5}, "gamma")])
def test_bad_sac_config(kwargs, msg):
    with pytest.raises(ValueError, match=msg):
        SACConfig(**{"total_steps": 300, "learning_starts": 100, **kwargs})


def test_pendulum_config_rejects_claim_without_baseline():
    exp = get_experiment("dwc.sac_pendulum")
    with pytest.raises(ValueError, match="baseline"):
        exp.config_type(check_returns=True, run_baseline=False)


@pytest.mark.slow
def test_sanity_fit_quick_preset_passes():
    exp = get_experiment("dwc.sanity_fit")
    out = exp(exp.config("quick"), make_rng(0))
    assert out.passed, [c for c in out.checks if not c.passed]
    assert out.metrics["r2_dwc"] >= 0.85 and out.metrics["n_vectors"] >= 2000


def test_sac_pendulum_quick_preset_ci_smoke_criterion_7():
    # the brief's CI smoke (< 3 min): in the default suite
    exp = get_experiment("dwc.sac_pendulum")
    cfg = exp.config("quick")
    assert cfg.total_steps == 3000 and cfg.n_luts == 64  # the brief's CI smoke: 3k steps, 2x64 LUTs
    out = exp(cfg, make_rng(0))
    assert out.passed, [c for c in out.checks if not c.passed]
    assert out.metrics["mismatches_total"] == 0 and out.metrics["max_abs_table"] <= 1.0


def test_checks_can_fail():
    # The claim's check fails visibly on a bad return ratio (guards against a vacuous target).
    assert not Check("dwc_over_mlp", 0.5, ">= 0.9").passed


@pytest.mark.slow
def test_sac_pendulum_paper_preset_criterion_4():
    """The brief's criterion 4 (30k steps, 3 seeds, DWC >= 900 on 2 of 3 and within 10% of FP32). Hours on
    2 CPU cores; the measured numbers are in the paper card."""
    exp = get_experiment("dwc.sac_pendulum")
    cfg = exp.config("paper")
    assert (cfg.n_seeds, cfg.total_steps, cfg.learning_starts, cfg.n_luts) == (3, 30_000, 5_000, 256)
    out = exp(cfg, make_rng(0))
    assert out.passed, [c for c in out.checks if not c.passed]


@pytest.mark.slow
def test_sac_hopper_paper_preset_long_run():
    """The brief's optional long Hopper-v4 run (150k steps, DWC 2x256 vs FP32): many hours on 2 CPU cores."""
    exp = get_experiment("dwc.sac_hopper")
    out = exp(exp.config("paper"), make_rng(0))
    assert out.passed, [c for c in out.checks if not c.passed]
