import numpy as np
import pytest
import torch

from icml2026.core import make_rng
from icml2026.core.registry import get_experiment
from icml2026.papers.dwc import SACConfig, evaluate, train_sac

torch.set_num_threads(1)

# FP32 actor on InvertedPendulum: the cheapest run that exercises the curve + checkpoint path.
CURVE = SACConfig(actor="mlp", total_steps=240, learning_starts=200, batch_size=32, critic_hidden=32, mlp_hidden=32,
                  eval_episodes=1, checkpoint_every=40, eval_every=80, curve_episodes=1)


def test_learning_curve_survives_a_resume(tmp_path):
    ckpt = tmp_path / "c.pt"
    part = train_sac(CURVE, make_rng(0), checkpoint_path=ckpt, stop_at=200)
    assert [t for t, _ in part.extra["eval_curve"]] == [80, 160]
    saved = torch.load(ckpt, weights_only=True)
    assert saved["step"] == 200 and len(saved["curve"]) == 2 and "eval_rng_state" in saved
    res = train_sac(CURVE, make_rng(1), checkpoint_path=ckpt)  # a different rng: state comes from the file
    assert res.resumed_from == 200 and [t for t, _ in res.extra["eval_curve"]] == [80, 160, 240]
    assert res.extra["eval_curve"][:2] == part.extra["eval_curve"]
    assert all(np.isfinite(v) and v > 0 for _, v in res.extra["eval_curve"])


def test_periodic_evaluation_does_not_change_training_without_it():
    # eval_every = 0 draws nothing extra: the old random streams (and results) are kept.
    base = SACConfig(actor="mlp", total_steps=60, learning_starts=59, batch_size=8, critic_hidden=8, mlp_hidden=8,
                     eval_episodes=1)
    a, b = train_sac(base, make_rng(3)), train_sac(base, make_rng(3))
    assert a.episode_returns == b.episode_returns and a.extra["eval_curve"] == []


def test_discrete_action_space_is_refused():
    class _Dummy:
        def deterministic(self, obs):  # pragma: no cover - never reached
            return np.zeros(1)

    with pytest.raises(ValueError, match="env_id.*continuous"):
        evaluate(_Dummy(), "CartPole-v1", 1, np.random.default_rng(0))  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="^env_id"):
        SACConfig(env_id="CartPole-v1")  # type: ignore[arg-type]


def test_locomotion_presets_equal_budgets_and_issue_scale():
    exp = get_experiment("dwc.sac_locomotion")
    full = exp.config("full")
    assert (full.env_id, full.total_steps, full.n_luts, full.eval_every, full.curve_episodes) == (
        "Hopper-v4", 100_000, 256, 10_000, 10)
    assert full.run_baseline and full.run_quantized and full.check_returns
    sacs = [full.sac(a) for a in full.actors()]
    assert len({(c.total_steps, c.learning_starts, c.batch_size, c.policy_lr, c.q_lr) for c in sacs}) == 1
    with pytest.raises(ValueError, match="^env_id"):
        type(full)(env_id="Walker2d-v4")  # the experiment covers Hopper and HalfCheetah only
