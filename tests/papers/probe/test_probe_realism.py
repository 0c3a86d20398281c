"""Issue 60: the realism check in a trained feature space can fail (noise, lambda = 0), and L_prec is per pixel."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from icml2026.papers.probe.data import real_crops
from icml2026.papers.probe.method import prec_loss
from icml2026.papers.probe.realism import SEEN_BAR, RealismSpace, matched_noise


@pytest.fixture(scope="module")
def space_and_reals() -> tuple[RealismSpace, np.ndarray, np.ndarray]:
    tr, te = real_crops(8, "train"), real_crops(8, "test")
    return RealismSpace().fit(tr), tr, te


def test_the_space_separates_real_from_noise(space_and_reals) -> None:  # type: ignore[no-untyped-def]
    space, tr, te = space_and_reals
    rng = np.random.default_rng(0)
    assert space.train_accuracy_ >= 0.85  # measured 0.870 (8x8 photos); its mistakes are mostly mild noisy crops
    real_ref = tr[rng.choice(len(tr), 256, replace=False)]
    noise = matched_noise(tr, 256, rng)
    fd_real, fd_noise = space.distance(te, real_ref), space.distance(te, noise)
    # other real crops pass the seen generator's bar, matched noise fails it (its ratio to itself is 1 > 0.2)
    assert fd_real <= SEEN_BAR * fd_noise
    # and the buffer check (<= 1.5 x the reference) fails on noise by a wide margin
    assert fd_noise > 1.5 * fd_real


def test_the_space_is_a_fixed_instrument(space_and_reals) -> None:  # type: ignore[no-untyped-def]
    space, tr, te = space_and_reals
    again = RealismSpace().fit(tr)
    assert np.array_equal(space.features(te[:16]), again.features(te[:16]))


def test_l_prec_weighs_a_pixel_the_same_at_8x8_and_16x16() -> None:
    """A pixel-wise change and its 2x nearest-upsampled copy give the same L_prec (the summed form gave 4x)."""
    g = torch.Generator().manual_seed(0)
    a, b = torch.randn(4, 3, 8, 8, generator=g), torch.randn(4, 3, 8, 8, generator=g)
    up = torch.nn.functional.interpolate
    a2, b2 = up(a, scale_factor=2, mode="nearest"), up(b, scale_factor=2, mode="nearest")
    assert torch.allclose(prec_loss(a, b), prec_loss(a2, b2))
    # and at 8x8 it equals the per-image sum of the earlier form (lambda = 1 at 8x8 unchanged)
    assert torch.allclose(prec_loss(a, b), (a - b).pow(2).sum((1, 2, 3)).mean())


@pytest.mark.slow  # ~30 s: a 60-step DDPM, a detector and 20 LoRA updates without L_prec
def test_the_buffer_realism_check_fails_at_lambda_0(space_and_reals) -> None:  # type: ignore[no-untyped-def]
    """With lambda = 0 the buffer drifts off the image manifold: its distance exceeds 1.5x the standard samples'
    (development run, 3 sub-seeds: 1.82-4.18). Would pass wrongly in the earlier random-CNN space (0.95)."""
    from icml2026.core.rng import torch_seeded
    from icml2026.papers.probe.detector import Detector
    from icml2026.papers.probe.generators import DiffusionGenerator, seen_unet
    from icml2026.papers.probe.method import ProbeConfig, probe_generator

    space, tr, te = space_and_reals
    rng = np.random.default_rng(0)
    real = tr[rng.choice(len(tr), 1024, replace=False)]
    with torch_seeded(rng):
        unet = seen_unet(8, 3)
    gen = DiffusionGenerator(unet, "ddim", 6).fit(real, rng, n_steps=60)
    det = Detector(epochs=1).fit(real[:256], gen.sample(256, rng), rng)
    fd_std = space.distance(te, gen.sample(128, rng))
    res = probe_generator(gen, det, ProbeConfig(lam=0.0, lr=2e-2, n_restarts=1, n_updates=20, dump_every=20,
                                                n_dump=128, batch_size=4), rng)
    assert space.distance(te, res.buffer) > 1.5 * fd_std
