"""Stage 1 / Stage 2: only Delta-phi moves, lambda -> large gives the base generator, LoRA plumbing."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from icml2026.core import make_rng
from icml2026.papers.probe import (
    ProbeConfig,
    RefineConfig,
    add_lora,
    lora_delta_norm,
    probe_generator,
    random_lora,
    refine_detector,
)


def _state(m: torch.nn.Module) -> dict[str, torch.Tensor]:
    return {k: v.clone() for k, v in m.state_dict().items()}


def test_stage1_leaves_base_unet_and_detector_bit_identical(tiny) -> None:  # type: ignore[no-untyped-def]
    gen, det = tiny["gen"], tiny["det"]
    u0, d0 = _state(gen.unet), _state(det.net_)
    flags = [p.requires_grad for p in det.net_.parameters()]
    res = probe_generator(
        gen,
        det,
        ProbeConfig(lam=1.0, lr=5e-2, n_restarts=1, n_updates=3, dump_every=3, n_dump=4, batch_size=4),
        make_rng(0),
    )
    assert all(torch.equal(u0[k], v) for k, v in gen.unet.state_dict().items())
    assert all(torch.equal(d0[k], v) for k, v in det.net_.state_dict().items())  # incl. BN running stats
    assert flags == [p.requires_grad for p in det.net_.parameters()]
    assert res.buffer.shape == (4, 3, 8, 8) and res.dump_norms[0] > 0  # ... while Delta-phi did move
    assert np.abs(res.buffer - res.base).max() > 1e-3


def test_large_lambda_gives_the_base_samples(tiny) -> None:  # type: ignore[no-untyped-def]
    gen, det = tiny["gen"], tiny["det"]
    cfg = ProbeConfig(lam=1e6, lr=5e-2, n_restarts=1, n_updates=4, dump_every=2, n_dump=4, batch_size=4)
    res = probe_generator(gen, det, cfg, make_rng(1))
    assert np.abs(res.buffer - res.base).max() < 1e-3  # criterion 1 of the brief
    assert max(res.dump_norms) < 1e-3  # ||Delta-phi|| -> 0 (it is > 0.1 after a few updates at lam = 1)


def test_lora_copy_starts_at_the_base_and_random_lora_has_the_asked_norm(tiny) -> None:  # type: ignore[no-untyped-def]
    gen = tiny["gen"]
    lora = add_lora(gen.unet, 4, make_rng(2))
    x = gen.noise(3, make_rng(3))
    np.testing.assert_array_equal(gen.sample_from(x, lora), gen.sample_from(x))  # B = 0: exactly the base
    assert lora_delta_norm(lora) == 0.0
    assert sum(p.requires_grad for p in lora.parameters()) == sum("lora_" in n for n, _ in lora.named_parameters())
    r = random_lora(gen.unet, 4, 0.7, make_rng(4))
    assert lora_delta_norm(r) == pytest.approx(0.7, rel=1e-4)


def test_truncated_backprop_reaches_only_the_last_steps(tiny) -> None:  # type: ignore[no-untyped-def]
    gen = tiny["gen"]
    lora = add_lora(gen.unet, 2, make_rng(5))
    x = gen.noise(2, make_rng(6))
    full = gen.denoise(x, lora, grad_steps=gen.n_sample_steps)
    trunc = gen.denoise(x, lora, grad_steps=1)
    torch.testing.assert_close(full, trunc)  # same values, different graph
    assert trunc.requires_grad and not gen.denoise(x, lora, grad_steps=0).requires_grad


def test_refine_detector_returns_a_new_detector(tiny) -> None:  # type: ignore[no-untyped-def]
    det, real = tiny["det"], tiny["real"]
    d0 = _state(det.net_)
    fakes = tiny["gen"].sample(16, make_rng(7))
    new = refine_detector(det, real[:16], fakes, fakes[:8], RefineConfig(epochs=1, lr=1e-3), make_rng(8))
    assert all(torch.equal(d0[k], v) for k, v in det.net_.state_dict().items())
    assert any(not torch.equal(d0[k], v) for k, v in new.net_.state_dict().items())
    with pytest.raises(ValueError, match="fakes"):
        refine_detector(det, real[:16], fakes[:, :1], None, RefineConfig(), make_rng(8))


def test_bad_configs_are_refused(tiny) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ValueError, match="lam"):
        ProbeConfig(lam=-1)
    with pytest.raises(ValueError, match="dump_every"):
        ProbeConfig(n_updates=2, dump_every=5)
    with pytest.raises(ValueError, match="grad_steps"):
        probe_generator(tiny["gen"], tiny["det"], ProbeConfig(grad_steps=9, n_updates=1, dump_every=1), make_rng(0))
    with pytest.raises(TypeError, match="detector"):
        probe_generator(tiny["gen"], object(), ProbeConfig(), make_rng(0))  # type: ignore[arg-type]
