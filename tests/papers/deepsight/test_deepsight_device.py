"""The ``device`` field of deepsight's experiments: the planner builds its teacher-forced sequence from a CPU
batch on its own device and the BEV encoder runs there (meta device), bad names are refused, and a missing CUDA
device is a missing dependency (exit 3), not a crash."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from icml2026.papers.deepsight.experiments import _dummy_batch  # noqa: E402
from icml2026.papers.deepsight.method import BEVEncoder, DeepSightPlanner, PlannerConfig  # noqa: E402


@pytest.mark.parametrize("variant", ["A", "C"])
def test_planner_sequence_and_heads_run_on_the_meta_device(variant):
    # transformers' causal-mask code reads values meta tensors lack, so the decoder itself is not run here
    # (nor variant D's sequence, which runs it frame by frame): the planner's own tensors (prompt, BEV queries,
    # think ids, labels, masks) built from a CPU batch must all land on its device
    planner = DeepSightPlanner(PlannerConfig(variant=variant, d_model=32, n_layers=1, n_heads=4)).to("meta")
    kin, ego = torch.randn(2, 15, 28), torch.randn(2, 14)  # a CPU batch, as make_batch builds it
    emb, labels, _, _ = planner.sequence(_dummy_batch(kin, ego))
    assert emb.device.type == "meta" and labels.device.type == "meta" and emb.shape[:2] == labels.shape
    assert tuple(planner.wp_head(emb[:, -1]).shape) == (2, 8)
    assert planner.bev_position_mask().device.type == "meta" and planner.bev_ids().device.type == "meta"


def test_bev_encoder_runs_on_the_meta_device():
    enc = BEVEncoder(image_size=32, patch_size=16, hidden=16, layers=1, heads=2).to("meta")
    z = enc.latents(torch.empty(3, 3, 32, 32, device="meta"))
    assert z.device.type == "meta" and tuple(z.shape) == (3, 1 + 4, 16)
