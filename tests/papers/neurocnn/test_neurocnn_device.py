"""The ``device`` field of neurocnn's torch experiments: CPU runs, the meta device carries shapes through every
model, bad names are refused, and a missing CUDA device is a missing dependency (exit 3), not a crash."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from icml2026.papers.neurocnn import NeurOCNN  # noqa: E402
from icml2026.papers.neurocnn.baselines import FixedCNN, ResampleBack  # noqa: E402
from icml2026.papers.neurocnn.pooling import FourierProjectionPool  # noqa: E402
from icml2026.papers.neurocnn.spline_conv import SplineConv1d  # noqa: E402


@pytest.mark.parametrize("build", [
    lambda: NeurOCNN(1, 5, (4, 8), 12, 0.25, 8, 2.0, 4.0),
    lambda: FixedCNN(1, 5, (4, 8)),
    lambda: ResampleBack(FixedCNN(1, 5, (4, 8)), 100.0),
])
def test_models_run_on_the_meta_device(build):
    model = build().to("meta")
    for fs in (100.0, 250.0):
        out = model(torch.empty(3, 1, int(4 * fs), device="meta"), fs)
        assert out.device.type == "meta" and tuple(out.shape) == (3, 5)


def test_layer_and_pool_of_layer_invariance_run_on_the_meta_device():
    layer = SplineConv1d(2, 3, 15, 0.5, generator=torch.Generator().manual_seed(0)).to("meta")
    pool = FourierProjectionPool(16, 2.0).to("meta")
    for fs in (100.0, 1000.0):
        y, _ = layer(torch.empty(1, 2, int(10 * fs), device="meta"), fs)
        assert y.device.type == "meta" and y.shape[:2] == (1, 3)
        tok = pool(torch.empty(1, 4, int(10 * fs), device="meta"), fs)
        assert tok.device.type == "meta" and tok.shape[-1] == 4
