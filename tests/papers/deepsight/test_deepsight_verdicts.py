"""The pieces behind world_model's and adaptive_cot's verdicts (issue 59): the C0 control, the planted and null
controls of criterion 5, and the balanced evaluation split of the reasoning trigger."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from icml2026.core.registry import get_experiment
from icml2026.papers.deepsight.experiments import (
    PLANTED_GAIN,
    _dummy_batch,
    _scale_errors,
    balanced_split,
)
from icml2026.papers.deepsight.method import PlannerConfig
from icml2026.papers.deepsight.training import build_planner


def test_c0_has_the_same_query_tokens_and_no_latent_supervision() -> None:
    c = build_planner(PlannerConfig(variant="C", d_model=32, n_layers=1), np.random.default_rng(0))
    c0 = build_planner(PlannerConfig(variant="C", d_model=32, n_layers=1, mse_weight=0.0, label="C0"),
                       np.random.default_rng(0))
    assert c0.cfg.name == "C0" and c0.cfg.n_bev == c.cfg.n_bev == 95
    r = np.random.default_rng(1)
    batch = _dummy_batch(torch.as_tensor(r.normal(size=(2, 15, 28)).astype(np.float32)),
                         torch.as_tensor(r.normal(size=(2, 14)).astype(np.float32)))
    batch.latents = torch.as_tensor(r.normal(size=(2, 5, 17, 64)).astype(np.float32))
    p, p0 = c.losses(batch), c0.losses(batch)
    torch.testing.assert_close(p0.total, p0.ce + p0.l1)  # the MSE is computed but weighs nothing
    assert p0.mse.item() > 0 and p.total.item() > (p.ce + p.l1).item()
    p0.total.backward()
    assert c0.vis_head.weight.grad is None or float(c0.vis_head.weight.grad.abs().sum()) == 0.0


@pytest.mark.parametrize("k", [0.9, 1.0, 1.1])
def test_scaled_errors_scale_every_samples_l2_exactly(k: float) -> None:
    r = np.random.default_rng(0)
    gt, wp = r.normal(size=(50, 4, 2)), r.normal(size=(50, 4, 2))
    np.testing.assert_allclose(np.linalg.norm(_scale_errors(wp, gt, k) - gt, axis=-1),
                               k * np.linalg.norm(wp - gt, axis=-1))


def test_planted_and_null_presets_are_the_quick_scale_with_a_control() -> None:
    exp = get_experiment("deepsight.world_model")
    quick = exp.presets["quick"]
    for name in ("planted", "null"):
        cfg = exp.presets[name]
        assert cfg.control == name
        assert {k: v for k, v in vars(cfg).items() if k != "control"} == {
            k: v for k, v in vars(quick).items() if k != "control"}
    assert PLANTED_GAIN >= 0.05  # at least the brief's 5 % target


def test_balanced_split_is_balanced_and_keeps_every_minority_frame() -> None:
    cpx = np.zeros(100, bool)
    cpx[[3, 17, 40, 41, 90]] = True
    idx = balanced_split(cpx, np.random.default_rng(0))
    assert cpx[idx].sum() == 5 and (~cpx[idx]).sum() == 5 and set(np.nonzero(cpx)[0]) <= set(idx)
    # answering 'easy' everywhere scores 0.5 on it, whatever the natural complex share
    long_ = np.zeros(len(idx), bool)
    tpr, tnr = long_[cpx[idx]].mean(), (~long_[~cpx[idx]]).mean()
    assert (tpr + tnr) / 2 == 0.5 and (~long_ == ~cpx[idx]).mean() == 0.5
    assert len(balanced_split(np.ones(10, bool), np.random.default_rng(0))) == 0
