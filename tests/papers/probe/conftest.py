"""A tiny trained seen DDPM and detector shared by the tests (8x8 RGB crops, a few training steps)."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def tiny():  # type: ignore[no-untyped-def]
    pytest.importorskip("diffusers")
    pytest.importorskip("peft")
    import torch

    from icml2026.core import make_rng, spawn
    from icml2026.papers.probe import Detector, DiffusionGenerator, real_crops, seen_unet

    torch.set_num_threads(1)
    r = spawn(make_rng(0), 4)
    real = real_crops(8, "train")[::40][:256]
    gen = DiffusionGenerator(seen_unet(8, 3), "ddim", 4).fit(real, r[0], n_steps=5, batch_size=16)
    det = Detector(width=8, epochs=1).fit(real[:64], gen.sample(64, r[1]), r[2])
    return {"real": real, "gen": gen, "det": det}
