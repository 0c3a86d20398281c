"""The ``device`` field of PROBE's experiments: CPU runs, the meta device carries shapes through the torch models
(seen and unseen UNets, the detector, VAE, DCGAN and AE networks), bad names are refused, and a missing CUDA device
is a missing dependency (exit 3), not a crash. The realism feature space stays on the CPU (a fixed instrument)."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("diffusers")

from icml2026.papers.probe.detector import Detector, _ResNet  # noqa: E402
from icml2026.papers.probe.generators import (  # noqa: E402
    AEReconstructor,
    DCGANGenerator,
    DiffusionGenerator,
    VAEGenerator,
    seen_unet,
    unseen_unet,
)


@pytest.mark.parametrize("build", [seen_unet, unseen_unet])
def test_unets_and_the_noise_run_on_the_meta_device(build):
    gen = DiffusionGenerator(build(8, 3).to("meta"), "ddim", 4)
    x_t = gen.noise(2, np.random.default_rng(0))  # drawn on the CPU, moved to the UNet's device
    assert x_t.device.type == "meta"
    eps = gen.unet(x_t, gen.scheduler.timesteps[0]).sample
    assert eps.device.type == "meta" and tuple(eps.shape) == (2, 3, 8, 8)


def test_detector_network_runs_on_the_meta_device():
    assert Detector(device="meta").device == "meta"
    out = _ResNet(3, 8).to("meta")(torch.empty(4, 3, 8, 8, device="meta"))
    assert out.device.type == "meta" and tuple(out.shape) == (4,)


def test_unseen_family_networks_run_on_the_meta_device():
    z = torch.empty(2, 16, device="meta")
    assert tuple(VAEGenerator(8, 3, device="meta").net.decode(z).shape) == (2, 3, 8, 8)
    dc = DCGANGenerator(8, 3, device="meta")
    fake = dc.gen(torch.empty(2, 32, device="meta"))
    assert fake.device.type == "meta" and tuple(fake.shape) == (2, 3, 8, 8) and tuple(dc.disc(fake).shape) == (2, 1)
    ae = AEReconstructor(8, 3, device="meta").net
    assert tuple(ae.decode(ae.encode(torch.empty(2, 3, 8, 8, device="meta"))[0]).shape) == (2, 3, 8, 8)
