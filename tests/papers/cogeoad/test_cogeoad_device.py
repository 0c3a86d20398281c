"""The ``device`` field of cogeoad's torch experiments: the ViT backbone and the learnable heads carry the meta
device through, bad names are refused (by the config and by the detector), and a missing CUDA device is a
missing dependency (exit 3), not a crash."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from icml2026.papers.cogeoad import CoGeoAD, FrozenEncoder, TinyViT  # noqa: E402
from icml2026.papers.cogeoad.experiments import ZeroShotConfig  # noqa: E402
from icml2026.papers.cogeoad.method import _Head  # noqa: E402


def test_backbone_and_heads_run_on_the_meta_device():
    vit = TinyViT(32, 4, 16, 2, 2, (1, 2)).to("meta")
    mask = torch.zeros(3, 64, dtype=torch.bool, device="meta")
    outs = vit(torch.empty(3, 3, 32, 32, device="meta"), mask)
    assert [tuple(o.shape) for o in outs] == [(3, 65, 16)] * 2 and outs[0].device.type == "meta"
    head = _Head(2, 16, 3).to("meta")
    alpha = head.mva(torch.empty(5, 3, 16, 16, device="meta"))
    beta = head.selector(torch.empty(5, 2 * 16, device="meta"))
    assert alpha.device.type == "meta" and tuple(alpha.shape) == (5,) and tuple(beta.shape) == (5, 2)


def test_device_field_defaults_to_cpu_and_refuses_nonsense():
    assert ZeroShotConfig().device == "cpu"
    with pytest.raises(ValueError, match="^device = 'gpu0'"):
        ZeroShotConfig(device="gpu0")
    enc = FrozenEncoder(TinyViT(32, 4, 16, 2, 2, (1, 2)))
    with pytest.raises(ValueError, match="^device = 'gpu0'"):  # validated in fit, before any rendering
        CoGeoAD(enc, device="gpu0").fit([object()], np.random.default_rng(0))  # type: ignore[list-item]
