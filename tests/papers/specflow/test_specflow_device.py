"""The ``device`` field of SpecFlow's model experiments: CPU runs, the meta device carries shapes through the
policy (a Llama on token embeddings) and the velocity net, bad names are refused, and a missing CUDA device is a
missing dependency (exit 3), not a crash. ``specflow.transforms`` (DCT and mask algebra, no model) has no field."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from icml2026.papers.specflow.experiments import (  # noqa: E402
    TransformsConfig,
)
from icml2026.papers.specflow.flow import FlowUpdater, VelocityNet  # noqa: E402
from icml2026.papers.specflow.reasoners import ACT, BOS, VIS, build_policy  # noqa: E402


def test_policy_runs_on_the_meta_device():
    # eager attention: the SDPA path of Hugging Face reads mask values (.item()), which meta cannot give
    policy = build_policy(16, 16, 1, 16, 2, 64, torch.Generator().manual_seed(0), attn_implementation="eager")
    policy = policy.to("meta")
    kinds = torch.tensor([BOS, ACT, VIS, VIS])  # built on the CPU: embed moves them to the policy's device
    emb = policy.embed(kinds, torch.zeros(3, 4, dtype=torch.long), torch.zeros(3, 4, 16), torch.tensor([0, 0, 0, 1]))
    from transformers import DynamicCache

    # with a cache, as the reasoners run it (without one, Hugging Face checks position ids for packed sequences
    # by reading their values, which meta cannot give; training runs that path on the CPU in the other tests)
    hidden = policy(emb, DynamicCache(), start=2)
    assert emb.device.type == "meta" and hidden.device.type == "meta" and tuple(hidden.shape) == (3, 4, 16)
    assert tuple(policy.head(hidden).shape) == (3, 4, 5)


def test_velocity_net_runs_on_the_meta_device():
    # the net itself, and the pixel-space velocity; the spectral mask M(t) is built from t's values on the CPU
    net = VelocityNet(width=8).to("meta")
    x = torch.zeros(2, 1, 32, 32, device="meta")
    t = torch.full((2,), 0.5, device="meta")
    cond = net.condition([[1, 3], []])  # traces on the CPU, embedded on the net's device
    x1 = net(x, t, cond, x)
    u = FlowUpdater(net, "pixel").velocity(x, t, cond, x)
    assert cond.device.type == "meta" and tuple(cond.shape) == (2, net.emb_dim)
    assert x1.device.type == "meta" and u.device.type == "meta" and tuple(u.shape) == (2, 1, 32, 32)


def test_the_transforms_experiment_has_no_device_field():
    assert not hasattr(TransformsConfig(), "device")
