"""The ``device`` field of dwc's torch experiments and ``train_sac(..., device=...)``: the default is the CPU,
bad names are refused, the meta device carries shapes through every network, a missing CUDA device is a
missing dependency (exit 3), checkpoints load onto the run's device; and SAC workers report plain progress."""

from __future__ import annotations

import io
import sys

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from icml2026.core import make_rng  # noqa: E402
from icml2026.core.errors import MissingDependency  # noqa: E402
from icml2026.papers.dwc import DWCPolicy, SACConfig, train_sac  # noqa: E402
from icml2026.papers.dwc import sac as sac_mod  # noqa: E402
from icml2026.papers.dwc.baselines import DWCActor, MLPActor, QuantMLPActor  # noqa: E402
from icml2026.papers.dwc.experiments import _train_job  # noqa: E402

torch.set_num_threads(1)  # shared 2-core machine

# the cheapest SAC run that updates: 30 env steps, 10 updates, 8-unit networks
TINY = SACConfig(actor="mlp", total_steps=30, learning_starts=20, batch_size=8, mlp_hidden=8, critic_hidden=8,
                 eval_episodes=1, checkpoint_every=1000)
EXPERIMENTS = ["dwc.sanity_fit", "dwc.sac_pendulum", "dwc.sac_hopper", "dwc.sac_locomotion"]


def test_device_is_not_a_sac_config_field():
    """The checkpoint file name hashes the SACConfig: the device must not enter it (a run resumes anywhere)."""
    assert "device" not in {f for f in SACConfig.__dataclass_fields__}


def _policy(obs_dim=11, act_dim=3, mapping="learnable"):
    return DWCPolicy(obs_dim, act_dim, n_luts=16, bits=15, mapping=mapping, generator=torch.Generator().manual_seed(0))


@pytest.mark.parametrize("mapping", ["learnable", "random"])
def test_dwc_policy_runs_on_the_meta_device(mapping):
    pol = _policy(mapping=mapping).to("meta")
    obs = torch.empty(5, 11, device="meta")
    for out in (pol(obs), pol.pre_tanh(obs)):
        assert out.device.type == "meta" and tuple(out.shape) == (5, 3)
    assert tuple(pol.encode(obs).shape) == (5, 11 * 15)


@pytest.mark.parametrize("build", [
    lambda: DWCActor(_policy(), generator=torch.Generator().manual_seed(0)),
    lambda: MLPActor(11, 3, 32, generator=torch.Generator().manual_seed(0)),
    lambda: QuantMLPActor(11, 3, 32, generator=torch.Generator().manual_seed(0)),
], ids=["dwc", "mlp", "qmlp"])
def test_actors_run_on_the_meta_device(build):
    actor = build().to("meta")
    mean, log_std = actor.dist_params(torch.empty(4, 11, device="meta"))
    for t in (mean, log_std):
        assert t.device.type == "meta" and tuple(t.shape) == (4, 3)


def test_critics_run_on_the_meta_device():
    q = sac_mod._critic(11, 3, 16, torch.Generator().manual_seed(0)).to("meta")
    out = q(torch.empty(6, 14, device="meta"))
    assert out.device.type == "meta" and tuple(out.shape) == (6, 1)


def test_train_sac_refuses_bad_devices():
    with pytest.raises(ValueError, match="^device = 'gpu0'"):
        train_sac(TINY, make_rng(0), device="gpu0")
    with pytest.raises(ValueError, match="^device = 'meta'"):
        train_sac(TINY, make_rng(0), device="meta")
    with pytest.raises(ValueError, match="^device = 3|^device: "):
        train_sac(TINY, make_rng(0), device=3)  # type: ignore[arg-type]
    if not torch.cuda.is_available():
        with pytest.raises(MissingDependency, match="CUDA"):
            train_sac(TINY, make_rng(0), device="cuda")


def test_checkpoints_load_onto_the_run_device(tmp_path, monkeypatch):
    """A checkpoint is read with ``map_location`` = the run's device (a CUDA checkpoint resumes on the CPU and
    vice versa); the resumed CPU run equals the uninterrupted one up to the resumed episode."""
    ckpt = tmp_path / "c.pt"
    train_sac(TINY, make_rng(0), checkpoint_path=ckpt, stop_at=25)
    seen = []
    real_load = torch.load

    def spy(*args, **kwargs):
        seen.append(kwargs.get("map_location"))
        return real_load(*args, **kwargs)

    monkeypatch.setattr(torch, "load", spy)
    res = train_sac(TINY, make_rng(0), checkpoint_path=ckpt, device=torch.device("cpu"))
    assert seen == [torch.device("cpu")] and res.resumed_from == 25 and res.steps_done == 30
    assert all(t.device.type == "cpu" for t in res.actor.state_dict().values())


class _FakeTerminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_worker_job_reports_plain_progress_lines(monkeypatch):
    """In a worker (n_threads set) the SAC loop writes plain lines naming actor, env and seed, even when
    stderr is a terminal (where ``track`` would otherwise draw a live bar)."""
    fake = _FakeTerminal()
    monkeypatch.setattr(sys, "stderr", fake)
    det, warn = torch.are_deterministic_algorithms_enabled(), torch.is_deterministic_algorithms_warn_only_enabled()
    try:
        res, state, _ = _train_job(TINY, make_rng(0), None, "SAC mlp InvertedPendulum-v4 seed 0", 1)
    finally:
        torch.use_deterministic_algorithms(det, warn_only=warn)
        torch.set_num_threads(1)
    text = fake.getvalue()
    assert "[SAC mlp InvertedPendulum-v4 seed 0] start (30 steps)" in text
    assert "[SAC mlp InvertedPendulum-v4 seed 0] done 30 steps" in text
    assert res.steps_done == 30 and state and np.isfinite(res.eval_returns).all()
