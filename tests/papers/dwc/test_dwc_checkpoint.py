"""Compact SAC checkpoints (issue 56): a finished run re-evaluates identically from its compact file, an
unfinished run resumes from one and finishes, full-format files still load, and the committed Hopper checkpoints
are compact, small and named as the full preset's runs look them up."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from icml2026.core import make_rng, spawn
from icml2026.core.registry import get_experiment
from icml2026.papers.dwc import SACConfig, train_sac
from icml2026.papers.dwc.checkpoint import (
    COMPACT_FORMAT,
    compact_state,
    convert_checkpoint,
    expand_state,
    is_compact,
    load_checkpoint,
)
from icml2026.papers.dwc.experiments import _checkpoint_file

torch.set_num_threads(1)  # shared 2-core machine

# tiny DWC and FP32 runs on InvertedPendulum: 60 env steps, 20 updates, log_last_obs < steps so that the buffer
# holds both subsampled and exact recent slots
TINY_DWC = SACConfig(total_steps=60, learning_starts=40, batch_size=8, critic_hidden=8, n_luts=8, bits=15,
                     eval_episodes=2, checkpoint_every=1000, log_last_obs=20)
TINY_MLP = SACConfig(actor="mlp", total_steps=60, learning_starts=40, batch_size=8, mlp_hidden=8, critic_hidden=8,
                     eval_episodes=2, checkpoint_every=1000, log_last_obs=20, eval_every=30, curve_episodes=1)
REPO = Path(__file__).resolve().parents[3]
COMMITTED = REPO / "checkpoints" / "dwc_locomotion"


def _same_state(a: dict, b: dict) -> None:
    assert a.keys() == b.keys()
    for k in a:
        assert a[k].dtype == b[k].dtype and torch.equal(a[k], b[k]), k


@pytest.mark.parametrize("cfg", [TINY_DWC, TINY_MLP], ids=["dwc", "mlp"])
def test_finished_run_reevaluates_identically_from_its_compact_file(tmp_path, cfg):
    full = tmp_path / "full.pt"
    done = train_sac(cfg, make_rng(0), checkpoint_path=full)
    compact = convert_checkpoint(full, tmp_path / "compact.pt", buffer_stride=4)
    assert compact.stat().st_size < full.stat().st_size
    assert is_compact(load_checkpoint(compact, expand=False))
    before = full.read_bytes()
    again = train_sac(cfg, make_rng(5), checkpoint_path=full)      # the state comes from the file
    small = train_sac(cfg, make_rng(5), checkpoint_path=compact)
    for res in (again, small):
        assert res.resumed_from == cfg.total_steps and res.steps_done == cfg.total_steps
        _same_state(res.actor.state_dict(), done.actor.state_dict())   # the evaluation reads identical actors
        assert res.eval_returns == done.eval_returns
        np.testing.assert_array_equal(res.logged_obs, done.logged_obs)  # the circuit check's states, bit-exact
        assert res.episode_returns == done.episode_returns and res.extra == done.extra
    assert full.read_bytes() == before  # re-evaluating a finished run leaves its file alone
    assert is_compact(load_checkpoint(compact, expand=False))


def test_unfinished_run_resumes_from_a_compact_file_and_finishes(tmp_path):
    ckpt = tmp_path / "c.pt"
    part = train_sac(TINY_DWC, make_rng(0), checkpoint_path=ckpt, stop_at=50)
    convert_checkpoint(ckpt, buffer_stride=4)  # in place
    stored = load_checkpoint(ckpt, expand=False)
    assert stored["format"] == COMPACT_FORMAT and stored["step"] == 50
    res = train_sac(TINY_DWC, make_rng(1), checkpoint_path=ckpt)
    assert res.resumed_from == 50 and res.steps_done == 60 and len(res.eval_returns) == 2
    assert np.isfinite(res.eval_returns).all()
    pol = res.actor.policy
    assert int(pol.train_steps) == int(stored["actor"]["policy.train_steps"]) + 10  # trained on from the file
    assert pol.normalizer.count.item() == 60
    assert all(p.dtype == torch.float32 for p in res.actor.parameters())
    # the next checkpoint is the full format again (plain torch.load), holding the finished run
    after = torch.load(ckpt, weights_only=True)
    assert "format" not in after and after["step"] == 60
    assert after["returns"][: len(part.episode_returns)] == part.episode_returns


def test_full_format_files_still_load(tmp_path):
    ckpt = tmp_path / "old.pt"
    train_sac(TINY_MLP, make_rng(0), checkpoint_path=ckpt, stop_at=50)
    plain = torch.load(ckpt, weights_only=True)
    loaded = load_checkpoint(ckpt)
    assert not is_compact(loaded) and loaded.keys() == plain.keys()
    _same_state(loaded["actor"], plain["actor"])
    for k in plain["buffer"]:
        assert torch.equal(loaded["buffer"][k], plain["buffer"][k])
    res = train_sac(TINY_MLP, make_rng(1), checkpoint_path=ckpt)
    assert res.resumed_from == 50 and res.steps_done == 60


def test_compact_state_keeps_what_it_says(tmp_path):
    ckpt = tmp_path / "c.pt"
    train_sac(TINY_MLP, make_rng(0), checkpoint_path=ckpt, stop_at=50)
    full = torch.load(ckpt, weights_only=True)
    small = compact_state(full, buffer_stride=7)
    assert small["q1t"]["0.weight"].dtype == torch.float16
    assert all(s["exp_avg_sq"].dtype == torch.bfloat16 for s in small["opt_pi"]["state"].values())
    _same_state(small["actor"], full["actor"])
    _same_state(small["q1"], full["q1"])
    assert small["rng_state"] == full["rng_state"] and torch.equal(small["torch_rng"], full["torch_rng"])
    back = expand_state(small)
    assert back.keys() == full.keys()
    buf, ref = back["buffer"], full["buffer"]
    kept = small["buffer"]["index"].tolist()
    assert kept == sorted(set(range(0, 50, 7)) | set(range(30, 50)))  # every 7th slot + the last 20
    for j in range(50):  # each slot holds the nearest kept transition at or before it
        src = max(i for i in kept if i <= j)
        assert torch.equal(buf["act"][j], ref["act"][src].half().float())
        assert torch.equal(buf["rew"][j], ref["rew"][src]) and torch.equal(buf["term"][j], ref["term"][src])
    assert torch.equal(buf["obs"][30:50], ref["obs"][30:50])  # the recent observations bit-exact
    assert not buf["obs"][50:].any()  # unfilled slots stay zero
    assert torch.allclose(back["q1t"]["0.weight"], full["q1t"]["0.weight"], rtol=1e-3, atol=1e-7)


def test_bad_inputs(tmp_path):
    ckpt = tmp_path / "c.pt"
    train_sac(TINY_MLP, make_rng(0), checkpoint_path=ckpt, stop_at=45)
    full = torch.load(ckpt, weights_only=True)
    with pytest.raises(ValueError, match="buffer_stride"):
        compact_state(full, buffer_stride=0)
    with pytest.raises(ValueError, match="missing keys"):
        compact_state({"step": 1})
    convert_checkpoint(ckpt)
    with pytest.raises(ValueError, match="already in the compact format"):
        convert_checkpoint(ckpt)
    with pytest.raises(ValueError, match="not a compact checkpoint"):
        expand_state(full)


def test_committed_hopper_checkpoints_are_compact_and_resume_by_name():
    """The committed run's files: compact, <= 20 MB together, finished, and exactly the files that the full
    preset's three SAC runs look up (so rerunning its command re-evaluates them instead of training)."""
    exp = get_experiment("dwc.sac_locomotion")
    cfg = exp.presets["full"]
    streams = spawn(spawn(make_rng(0), cfg.n_seeds)[0], 4)  # as sac_compare draws them, seed 0
    which = {"dwc": 0, "mlp": 1, "qmlp": 3}
    files = {a: _checkpoint_file(str(COMMITTED), cfg.sac(a), streams[which[a]], 0) for a in cfg.actors()}
    assert sorted(p.name for p in files.values()) == sorted(p.name for p in COMMITTED.glob("*.pt"))
    assert sum(p.stat().st_size for p in files.values()) <= 20_000_000
    for a, path in files.items():
        state = load_checkpoint(path, expand=False)
        assert is_compact(state) and state["step"] == cfg.total_steps and state["config"]["actor"] == a


def test_convert_refuses_a_file_that_is_not_a_checkpoint(tmp_path):
    bad = tmp_path / "bad.pt"
    torch.save({"weights": torch.zeros(2)}, bad)
    before = bad.read_bytes()
    with pytest.raises(ValueError, match="not a train_sac checkpoint"):
        convert_checkpoint(bad)
    assert bad.read_bytes() == before
