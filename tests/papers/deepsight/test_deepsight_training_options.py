"""Planner training through core.training: fp32 equals a plain AdamW loop; bf16 and gradient accumulation run;
bad precision / accumulation values are refused with the argument named."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import torch

from icml2026.core.errors import BadInput
from icml2026.core.rng import torch_generator
from icml2026.papers.deepsight.data import collect_episodes
from icml2026.papers.deepsight.experiments import DriveConfig
from icml2026.papers.deepsight.method import PlannerConfig
from icml2026.papers.deepsight.training import (
    build_planner,
    build_samples,
    encode_targets,
    make_batch,
    pretrain_encoder,
    train_planner,
)


@pytest.fixture(scope="module")
def data() -> tuple[Any, np.ndarray]:
    eps = collect_episodes(3, np.random.default_rng(0), long_tail_fraction=0.3, n_steps=14)
    s = build_samples(eps, metres_per_px=2.0)
    enc = pretrain_encoder(s.bev.reshape(-1, 3, 64, 64), np.random.default_rng(1), n_steps=2)
    z = encode_targets(enc, s.bev)
    return s, (z - z.mean((0, 1, 2))) / (z.std((0, 1, 2)) + 1e-6)


def _planner(variant: str = "C") -> torch.nn.Module:
    return build_planner(PlannerConfig(variant=variant, d_model=32, n_layers=1), np.random.default_rng(2))


def _plain_loop(planner: Any, s: Any, lat: np.ndarray, rng: np.random.Generator, n_steps: int, batch: int,
                lr: float = 1e-3) -> list[float]:
    """The planner's loop written out by hand: AdamW, one-cycle schedule, clipping at 1, uniform batches."""
    g = torch_generator(rng)
    flags = rng.random(len(s)) >= 0.3
    lin = {id(p) for p in planner.ego_wp.parameters()}
    opt = torch.optim.AdamW([{"params": [p for p in planner.parameters() if id(p) not in lin]},
                             {"params": list(planner.ego_wp.parameters()), "weight_decay": 0.0}],
                            lr=lr, weight_decay=0.01)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=[lr, 10 * lr], total_steps=n_steps, pct_start=0.1)
    planner.train()
    out = []
    for _ in range(n_steps):
        idx = torch.randint(0, len(s), (batch,), generator=g).numpy()
        loss = planner.losses(make_batch(s, idx, planner.cfg.variant, lat, "adaptive", flags)).total
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(planner.parameters(), 1.0)
        opt.step()
        sched.step()
        out.append(float(loss.detach()))
    return out


def test_fp32_without_accumulation_is_the_plain_loop_bit_for_bit(data) -> None:  # type: ignore[no-untyped-def]
    s, z = data
    a, b = _planner(), _planner()
    got = train_planner(a, s, z, np.random.default_rng(3), n_steps=5, batch=8)
    want = _plain_loop(b, s, z, np.random.default_rng(3), n_steps=5, batch=8)
    assert got == want
    for pa, pb in zip(a.parameters(), b.parameters(), strict=True):
        assert torch.equal(pa, pb)


def test_accumulation_and_bf16_train_the_same_steps(data) -> None:  # type: ignore[no-untyped-def]
    s, z = data
    ref = train_planner(_planner(), s, z, np.random.default_rng(3), n_steps=4, batch=8)
    acc = train_planner(_planner(), s, z, np.random.default_rng(3), n_steps=4, batch=8, grad_accum=2)
    bf16 = train_planner(_planner(), s, z, np.random.default_rng(3), n_steps=4, batch=8, precision="bf16")
    assert len(acc) == len(bf16) == 4
    # the first step's loss is the untrained planner's on the same frames: the mean of the two halves' losses
    # differs from the whole batch's only through the CE's token weighting; bf16 only through rounding
    assert acc[0] == pytest.approx(ref[0], rel=0.05)
    assert bf16[0] == pytest.approx(ref[0], rel=0.05)
    assert all(np.isfinite(acc)) and all(np.isfinite(bf16))
    assert acc[-1] < acc[0] and bf16[-1] < bf16[0]


def test_bad_precision_and_accumulation_are_refused(data) -> None:  # type: ignore[no-untyped-def]
    s, z = data
    with pytest.raises(BadInput, match="grad_accum"):
        train_planner(_planner(), s, z, np.random.default_rng(3), n_steps=1, batch=8, grad_accum=3)
    with pytest.raises(BadInput, match="grad_accum"):
        train_planner(_planner(), s, z, np.random.default_rng(3), n_steps=1, batch=8, grad_accum=0)
    with pytest.raises(BadInput, match="precision"):
        train_planner(_planner(), s, z, np.random.default_rng(3), n_steps=1, batch=8, precision="fp64")
    with pytest.raises(BadInput, match="fp16"):
        train_planner(_planner(), s, z, np.random.default_rng(3), n_steps=1, batch=8, precision="fp16")
    with pytest.raises(ValueError, match="grad_accum"):
        DriveConfig(batch=32, grad_accum=3)
    with pytest.raises(ValueError, match="precision"):
        DriveConfig(precision="fp16")
    with pytest.raises(ValueError, match="precision"):
        DriveConfig(precision="fp64")  # type: ignore[arg-type]
    assert DriveConfig(batch=32, grad_accum=4, precision="bf16").grad_accum == 4
