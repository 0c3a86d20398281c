"""Any gymnasium environment (issue 68): ids outside the paper's eight -v4 tasks, 'module:factory' strings and
Python factories, vector environments collecting SAC's data, and the CLI's ``--set env=ID``."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch

from icml2026.core import make_rng
from icml2026.papers.dwc import SACConfig, train_sac
from icml2026.papers.dwc.envs import env_dims, env_factory, make_vector_env
from icml2026.papers.dwc.sac import ENVS

gym = pytest.importorskip("gymnasium")

torch.set_num_threads(1)  # shared 2-core machine

# tiny DWC: 120 global steps, 20 updates, one deterministic episode
TINY = dict(total_steps=120, learning_starts=100, batch_size=16, critic_hidden=16, n_luts=8, bits=15,
            eval_episodes=1, checkpoint_every=1000, log_last_obs=50)


def test_an_env_outside_the_paper_list_trains_by_id():
    assert "Pendulum-v1" not in ENVS
    cfg = SACConfig(env_id="Pendulum-v1", **TINY)
    res = train_sac(cfg, make_rng(0))
    pol = res.actor.policy
    assert (pol.obs_dim, pol.act_dim) == (3, 1) and res.steps_done == 120
    assert len(res.eval_returns) == 1 and np.isfinite(res.eval_returns[0])
    assert int(pol.normalizer.count.item()) == 120
    assert max(float(layer.tables.detach().abs().max()) for layer in pol.layers) <= 1.0


def test_vector_envs_collect_num_envs_transitions_per_step(tmp_path):
    assert "MountainCarContinuous-v0" not in ENVS
    cfg = SACConfig(env_id="MountainCarContinuous-v0", num_envs=3, **TINY)
    ckpt = tmp_path / "mc.pt"
    part = train_sac(cfg, make_rng(1), checkpoint_path=ckpt, stop_at=110)
    res = train_sac(cfg, make_rng(2), checkpoint_path=ckpt)  # resumed from the file
    assert part.steps_done == 110 and res.resumed_from == 110 and res.steps_done == 120
    pol = res.actor.policy
    assert (pol.obs_dim, pol.act_dim) == (2, 1)
    assert int(pol.normalizer.count.item()) == 3 * 120  # every env's observation, every step
    state = torch.load(ckpt, weights_only=True)
    assert state["buffer"]["obs"].shape[0] == 3 * 120  # the buffer holds steps x num_envs transitions
    assert float(state["buffer"]["obs"].abs().sum(1).gt(0).float().mean()) == 1.0
    assert res.logged_obs.shape == (50, 2) and len(res.eval_returns) == 1


def test_pendulum_episode_ends_store_the_real_last_observation():
    """Same-step autoreset: the returned observation after an episode's last step is the next episode's first;
    the transition must hold the true final one (CleanRL's real_next_obs). Pendulum truncates at 200 steps."""
    envs = make_vector_env("Pendulum-v1", 2)
    obs, _ = envs.reset(seed=0)
    for _ in range(200):
        nxt, _, term, trunc, infos = envs.step(np.zeros((2, 1), np.float32))
    assert trunc.all() and not term.any()
    assert not np.allclose(infos["final_obs"][0], nxt[0])
    envs.close()


def test_factories_python_and_module_strings(tmp_path, monkeypatch):
    (tmp_path / "my_envs.py").write_text(
        "import gymnasium as gym\n\ndef pendulum():\n    return gym.make('Pendulum-v1', g=5.0)\n\n"
        "def cartpole():\n    return gym.make('CartPole-v1')\n\nnot_callable = 3\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert env_dims("my_envs:pendulum") == (3, 1)
    cfg = SACConfig(env_id="my_envs:pendulum", **TINY)
    a = train_sac(cfg, make_rng(0))
    b = train_sac(SACConfig(**TINY), make_rng(0), env=lambda: gym.make("Pendulum-v1", g=5.0))  # a Python factory
    assert a.episode_returns == b.episode_returns and a.eval_returns == b.eval_returns
    for bad, msg in (("my_envs:cartpole", "continuous"), ("my_envs:not_callable", "no callable"),
                     ("no_such_module_xyz:f", "cannot import"), ("NoSuchEnv-v0", "not a registered")):
        with pytest.raises(ValueError, match=f"^env_id = .*{msg}"):
            SACConfig(env_id=bad, **TINY)
    with pytest.raises(ValueError, match="^env = .*continuous"):
        train_sac(SACConfig(**TINY), make_rng(0), env=lambda: gym.make("CartPole-v1"))
    assert callable(env_factory("Pendulum-v1"))


def _cli(tmp_path: Path, *sets: str) -> tuple[int, Path]:
    from icml2026.cli import main

    out = tmp_path / "runs"
    code = main(["run", "dwc.sac_pendulum", "--preset", "smoke", "--seed", "0", "--threads", "1", "--out", str(out),
                 *[a for kv in sets for a in ("--set", kv)]])
    return code, out


@pytest.mark.slow
def test_cli_trains_an_env_passed_by_id_on_vector_envs(tmp_path):
    from icml2026.papers.dwc import have_iverilog

    if not have_iverilog():
        pytest.skip("the experiment verifies every circuit with iverilog")
    code, out = _cli(tmp_path, "env=Pendulum-v1", "num_envs=2")
    assert code in (0, 1, 4)
    (res,) = list(out.glob("dwc.sac_pendulum/*/results.json"))
    data = json.loads(res.read_text())
    assert data["config"]["env"] == "Pendulum-v1" and data["config"]["num_envs"] == 2
    assert data["metrics"]["mismatches_total"] == 0.0  # the circuit of a 3-observation policy matches


@pytest.mark.parametrize("env", ["CartPole-v1", "NoSuchEnv-v0", "no_such_module_xyz:f"])
def test_cli_refuses_an_env_sac_cannot_run(tmp_path, env):
    code, out = _cli(tmp_path, f"env={env}")
    assert code == 2
    assert not list(out.rglob("results.json")) if out.exists() else True
