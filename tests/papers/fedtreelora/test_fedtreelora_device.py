"""The ``device`` field of fedtreelora's experiments: the clients' LoRA model (frozen external experts and masks
included) carries the meta device through, bad names are refused, and a missing CUDA device is a missing
dependency (exit 3), not a crash."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from icml2026.papers.fedtreelora.experiments import FedConfig  # noqa: E402
from icml2026.papers.fedtreelora.model import Backbone, BackboneConfig, ClientModel  # noqa: E402
from icml2026.papers.fedtreelora.simulator import _to_device  # noqa: E402


def test_client_model_runs_on_the_meta_device():
    backbone = Backbone.from_config(BackboneConfig(n_layers=2, d_model=16, n_heads=2, seq_len=10))
    model = _to_device(ClientModel(backbone, 3, 2, 4.0, 2, torch.Generator().manual_seed(0)), torch.device("meta"))
    assert model.A_e["0_query"].device.type == "meta" and model.has_ext[0].device.type == "meta"
    model.ext_active[1] = True  # the external-expert branch too (lambda mix, has_ext mask)
    logits = model(torch.randint(5, 20, (3, 4, 10)).to("meta"))
    assert logits.device.type == "meta" and tuple(logits.shape) == (3, 4, 2)


def test_device_field_defaults_to_cpu_and_refuses_nonsense():
    assert FedConfig().device == "cpu" and FedConfig().train().device == "cpu"
    with pytest.raises(ValueError, match="^device = 'gpu0'"):
        FedConfig(device="gpu0")
