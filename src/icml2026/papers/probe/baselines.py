"""Controls B1-B5 of the brief (B0 is the detector as trained): each yields extra fakes for Stage 2.

B1 extra standard samples of the seen DDPM; B2 pixel-space PGD fakes (off-manifold); B3 CNNSpot-style
blur/JPEG/noise augmentation (no extra images); B4 random LoRA directions of PROBE's norm (no critic);
B5 latent-noise steering (OMAT-style: x_T optimised against the frozen detector, generator frozen).
"""

from __future__ import annotations

import io
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from icml2026.core import spawn
from icml2026.core.validate import finite_number, positive_int

from .detector import Detector
from .generators import DiffusionGenerator, check_images, to_tensor
from .method import LORA_TARGETS, ProbeConfig, ProbeResult, _check_pair, _FrozenCritic, random_lora

__all__ = [
    "extra_standard_samples",
    "pgd_fakes",
    "cnnspot_augment",
    "random_lora_buffer",
    "LatentSteerResult",
    "latent_steer_buffer",
]


def extra_standard_samples(generator: DiffusionGenerator, n: int, rng: np.random.Generator) -> np.ndarray:
    """B1: ``n`` more standard samples of the seen generator ("scale is not enough")."""
    return generator.sample(positive_int(n, "n"), rng)


def pgd_fakes(
    detector: Detector, fakes: np.ndarray, eps: float = 8 / 255, n_steps: int = 10, step: float | None = None
) -> np.ndarray:
    """B2: L_inf PGD on ``fakes`` towards "real" against the frozen detector (minimise softplus(D(x))).

    ``eps`` is in the [-1, 1] pixel scale (8/255 here = the brief's 4/255 on [0, 1]); step = eps / 4.
    """
    fakes = check_images(fakes, "fakes")
    eps = finite_number(eps, "eps", lo=0.0)
    n_steps = positive_int(n_steps, "n_steps", minimum=0)
    alpha = eps / 4 if step is None else finite_number(step, "step", lo=0.0)
    with _FrozenCritic(detector) as critic:
        x0 = to_tensor(fakes, next(critic.parameters()).device)
        x = x0.clone()
        for _ in range(n_steps):
            x.requires_grad_(True)
            loss = nn.functional.softplus(critic(x)).sum()
            (grad,) = torch.autograd.grad(loss, x)
            with torch.no_grad():
                x = x - alpha * grad.sign()
                x = (x0 + (x - x0).clamp(-eps, eps)).clamp(-1, 1)
    return x.detach().cpu().numpy().astype(np.float32)


def _gaussian_blur(img: np.ndarray, sigma: float) -> np.ndarray:
    from scipy.ndimage import gaussian_filter

    return gaussian_filter(img, sigma=(0, sigma, sigma), mode="reflect")


def _jpeg(img: np.ndarray, quality: int) -> np.ndarray:
    from PIL import Image

    u8 = np.clip((img.transpose(1, 2, 0) + 1) * 127.5 + 0.5, 0, 255).astype(np.uint8)
    pil = Image.fromarray(u8[..., 0] if u8.shape[2] == 1 else u8)
    buf = io.BytesIO()
    pil.save(buf, format="JPEG", quality=int(quality))
    out = np.asarray(Image.open(io.BytesIO(buf.getvalue())), dtype=np.float32)
    out = out[..., None] if out.ndim == 2 else out
    return out.transpose(2, 0, 1) / 127.5 - 1.0


def cnnspot_augment(x: np.ndarray, rng: np.random.Generator, p: float = 0.5) -> np.ndarray:
    """B3 (CNNSpot, Wang et al. 2020): each image independently blurred (sigma ~ U[0, 1.5]) with prob. p,
    JPEG-compressed (quality ~ U{30..100}, PIL) with prob. p, and given Gaussian noise (std ~ U[0, 0.05])
    with prob. p."""
    x = check_images(x, "x").copy()
    for i in range(len(x)):
        if rng.random() < p:
            x[i] = _gaussian_blur(x[i], float(rng.uniform(0.0, 1.5)))
        if rng.random() < p:
            x[i] = _jpeg(x[i], int(rng.integers(30, 101)))
        if rng.random() < p:
            x[i] = x[i] + float(rng.uniform(0.0, 0.05)) * rng.standard_normal(x[i].shape).astype(np.float32)
    return np.clip(x, -1, 1).astype(np.float32)


def random_lora_buffer(
    generator: DiffusionGenerator, probe: ProbeResult, cfg: ProbeConfig, rng: np.random.Generator
) -> np.ndarray:
    """B4: for each of PROBE's dumps, a random LoRA direction with the same ||Delta-phi|| samples as many
    images (no critic)."""
    if not isinstance(probe, ProbeResult):
        raise TypeError(f"probe: expected a ProbeResult, got {type(probe).__name__}")
    out = []
    for norm, r in zip(probe.dump_norms, spawn(rng, len(probe.dump_norms)), strict=True):
        r_lora, r_noise = spawn(r, 2)
        lora = random_lora(generator.unet, cfg.rank, norm, r_lora, getattr(generator, "lora_targets", LORA_TARGETS))
        out.append(generator.sample_from(generator.noise(cfg.n_dump, r_noise), lora))
    return np.concatenate(out)


@dataclass
class LatentSteerResult:
    """B5's buffer (like :class:`ProbeResult`): steered samples, base samples of the initial x_T."""

    buffer: np.ndarray
    base: np.ndarray


def latent_steer_buffer(
    generator: DiffusionGenerator, detector: Detector, cfg: ProbeConfig, rng: np.random.Generator, lr: float = 0.05
) -> LatentSteerResult:
    """B5 (OMAT-style latent steering): optimise the latent, generator frozen, objective L_probe + lambda L_prec.

    Per restart, ``n_dump`` chains are run from fresh x_T to the latent x_{t_K} that enters the last
    ``cfg.grad_steps`` DDIM steps; that latent is optimised by Adam for ``n_updates`` steps (backprop through
    the same K steps as PROBE) and every ``dump_every`` updates the current samples go to the buffer, so the
    buffer has PROBE's size.
    """
    # Deviation: OMAT optimises x_T through the whole chain; we steer the latent K steps before the end so
    # that B5 costs what PROBE costs (same truncated backprop); it is still "latent steering, weights frozen".
    _check_pair(generator, detector)
    lr = finite_number(lr, "lr", lo=0.0, lo_open=True)
    sched = generator.scheduler
    steps = list(sched.timesteps)
    head, tail = steps[: len(steps) - cfg.grad_steps], steps[len(steps) - cfg.grad_steps :]

    def run(x: torch.Tensor, ts: list[object]) -> torch.Tensor:
        for t in ts:
            x = sched.step(generator.unet(x, t).sample, t, x, eta=0.0).prev_sample
        return x

    buf, base = [], []
    with _FrozenCritic(detector) as critic:
        for r in spawn(rng, cfg.n_restarts):
            with torch.no_grad():
                z0 = run(generator.noise(cfg.n_dump, r), head)
                x0_base = run(z0, tail).clamp(-1, 1)
            z = z0.clone().requires_grad_(True)
            opt = torch.optim.Adam([z], lr=lr)
            for u in range(1, cfg.n_updates + 1):
                x0 = run(z, tail).clamp(-1, 1)
                l_prec = (x0 - x0_base).pow(2).sum((1, 2, 3)).mean()
                loss = nn.functional.softplus(critic(x0)).mean() + cfg.lam * l_prec
                opt.zero_grad()
                loss.backward()
                opt.step()
                if u % cfg.dump_every == 0:
                    with torch.no_grad():
                        buf.append(run(z.detach(), tail).clamp(-1, 1).cpu().numpy())
                        base.append(x0_base.cpu().numpy())
    return LatentSteerResult(np.concatenate(buf).astype(np.float32), np.concatenate(base).astype(np.float32))
