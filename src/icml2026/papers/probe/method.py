"""PROBE: probe the generative space with the frozen detector as critic (Stage 1), refine it (Stage 2).

Stage 1 (reconstructed, brief Sec. 2): LoRA adapters Delta-phi (``peft``) on the seen DDPM's UNet, base
weights phi frozen; x_0 = DDIM(x_T; phi + Delta-phi) with backprop through the last K DDIM steps only;

    min_{Delta-phi}  L_probe + lambda * L_prec,
    L_probe = BCE(D_theta(x_0), real) = softplus(D_theta(x_0))                      (the "judgment reward")
    L_prec  = (64 / S^2) || x_0(phi + Delta-phi; x_T) - x_0(phi; x_T) ||^2   (same x_T)   *[assumed form]*

L_prec is per pixel location (the squared difference summed over channels, averaged over the S x S
locations, times 64): lambda weighs every pixel the same at any image size, and lambda = 1 at 8x8 is the
earlier per-image sum. # Deviation (issue 60): summed over pixels, L_prec's weight grew 4x from 8x8 to
16x16 at a fixed lambda, and at 16x16 the critic stopped steering (buffer hardness 0.898 vs 0.894 on
standard samples).

with the detector frozen (eval mode, no parameter gradients). Every ``dump_every`` updates the current
generator's samples go to the boundary-induced buffer B (the whole trajectory, mild to strong); the LoRA
restarts from zero for each of ``n_restarts`` new noise streams.

Stage 2: fine-tune the detector with class-balanced BCE on real (0) and seen fakes plus B (1).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import torch
from torch import nn

from icml2026.core import spawn, torch_generator
from icml2026.core.progress import track
from icml2026.core.validate import finite_number, positive_int

from .detector import Detector
from .generators import DiffusionGenerator, check_images

__all__ = [
    "LORA_TARGETS",
    "ProbeConfig",
    "ProbeResult",
    "RefineConfig",
    "PREC_REF_AREA",
    "add_lora",
    "prec_loss",
    "lora_parameters",
    "lora_delta_norm",
    "probe_generator",
    "refine_detector",
    "random_lora",
]

#: LoRA targets: the convolutions of every resnet block and the attention projections (brief Sec. 5).
LORA_TARGETS = r".*(resnets\.\d+\.conv[12]|attentions\.\d+\.(to_q|to_k|to_v|to_out\.0))$"


@dataclass(frozen=True)
class ProbeConfig:
    """Stage-1 settings (brief Sec. 5 values in the comments; the paper gives none of these).

    lam : lambda, weight of L_prec (brief: swept in {0.1, 1, 10}).
    rank : LoRA rank r (brief: 4).  lr : step size (brief: Adam, 1e-3).
    prox : mu, weight of the LoRA weight-norm part lam * mu * ||B||^2 of L_prec, applied as a proximal step
        after each Adam step: B <- B / (1 + 2 lr lam mu).
        # Deviation: L_prec = pixel term + mu ||B||^2 (the brief lists the weight-norm penalty as an
        # alternative). Adam's first step has size ~lr whatever lam is (the pixel term's gradient is 0 at
        # Delta-phi = 0 and Adam ignores gradient scale), so with the pixel term alone lambda -> infinity does
        # NOT give the base generator (measured: 0.1 max pixel difference at lam = 1e6); the proximal shrink
        # does (B -> 0 as lam -> infinity), and at lam = 1 it removes only 2 lr mu = 0.2 % of B per step.
    n_restarts : LoRA restarts from zero, each on a new noise stream *[assumed]*.
    n_updates : LoRA updates per restart (brief: 100-300 in total).
    dump_every, n_dump : every ``dump_every`` updates, ``n_dump`` samples of the current generator go to B.
    batch_size : x_T per update.  grad_steps : K, DDIM steps back-propagated (brief: 2-4).
    prec : "pixel" (the assumed L_prec above) or "weight" (||Delta-phi||^2, the brief's alternative).
    """

    lam: float = 1.0
    rank: int = 4
    lr: float = 1e-3
    n_restarts: int = 4
    n_updates: int = 40
    dump_every: int = 10
    n_dump: int = 32
    batch_size: int = 16
    grad_steps: int = 2
    prec: Literal["pixel", "weight"] = "pixel"
    prox: float = 0.1

    def __post_init__(self) -> None:
        finite_number(self.lam, "lam", lo=0.0)
        positive_int(self.rank, "rank", maximum=64)
        finite_number(self.lr, "lr", lo=0.0, lo_open=True)
        for k in ("n_restarts", "n_updates", "dump_every", "n_dump", "batch_size", "grad_steps"):
            positive_int(getattr(self, k), k)
        if self.dump_every > self.n_updates:
            raise ValueError(f"dump_every = {self.dump_every}: must be <= n_updates = {self.n_updates}")
        finite_number(self.prox, "prox", lo=0.0)
        if self.prec not in ("pixel", "weight"):
            raise ValueError(f"prec: must be 'pixel' or 'weight', got {self.prec!r}")

    @property
    def buffer_size(self) -> int:
        return self.n_restarts * (self.n_updates // self.dump_every) * self.n_dump


@dataclass
class ProbeResult:
    """What Stage 1 returns.

    buffer : (n, C, S, S) the boundary-induced fake sample buffer B (all dumps of all restarts).
    base : (n, C, S, S) the base generator's samples from the same x_T as ``buffer`` (for realism/diffs).
    noise : (n, C, S, S) those x_T.
    dump_norms : ||Delta-phi||_F (over all adapted layers) at each dump, in buffer order (one per dump).
    history : one row per update (restart, update, L_probe, L_prec, mean p(fake) of the batch).
    """

    buffer: np.ndarray
    base: np.ndarray
    noise: np.ndarray
    dump_norms: list[float]
    history: list[dict[str, float]] = field(default_factory=list)


@dataclass(frozen=True)
class RefineConfig:
    """Stage-2 settings: epochs and Adam step size of the detector fine-tuning (brief: 1-3 epochs, 1e-4)."""

    epochs: int = 2
    lr: float = 1e-4

    def __post_init__(self) -> None:
        positive_int(self.epochs, "epochs")
        finite_number(self.lr, "lr", lo=0.0, lo_open=True)


#: L_prec's reference area: the per-location mean is scaled by 64 (an 8x8 image), see the module docstring.
PREC_REF_AREA = 64


def prec_loss(x0: torch.Tensor, x0_base: torch.Tensor) -> torch.Tensor:
    """L_prec per pixel location: squared difference summed over channels, mean over locations, x 64, batch mean.

    The same pixel-wise change gives the same L_prec at any image size (a 2x nearest-upsampled pair of
    images scores what the original pair scores)."""
    return (x0 - x0_base).pow(2).sum(1).mean((1, 2)).mean() * PREC_REF_AREA


def add_lora(unet: nn.Module, rank: int, rng: np.random.Generator, targets: str = LORA_TARGETS) -> nn.Module:
    """A deep copy of ``unet`` with ``peft`` LoRA adapters on :data:`LORA_TARGETS`; the base is untouched.

    A is drawn from ``rng`` (Kaiming-uniform, as peft does), B = 0, so the copy starts equal to the base.
    Only the LoRA parameters require gradients.
    """
    from peft import LoraConfig, inject_adapter_in_model

    rank = positive_int(rank, "rank", maximum=64)
    model = copy.deepcopy(unet)
    with torch.random.fork_rng(devices=[]):  # peft initialises from torch's global RNG: keep it untouched
        inject_adapter_in_model(
            LoraConfig(r=rank, lora_alpha=rank, target_modules=targets, lora_dropout=0.0), model
        )
    for p in model.parameters():
        p.requires_grad_(False)
    g = torch_generator(rng)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "lora_A" in name:
                fan_in = p[0].numel()
                bound = 1.0 / np.sqrt(fan_in)  # kaiming_uniform(a=sqrt(5)) bound, as torch/peft
                p.copy_(torch.rand(p.shape, generator=g) * 2 * bound - bound)
                p.requires_grad_(True)
            elif "lora_B" in name:
                p.zero_()
                p.requires_grad_(True)
    return model


def lora_parameters(model: nn.Module) -> list[nn.Parameter]:
    return [p for n, p in model.named_parameters() if "lora_" in n]


def _lora_layers(model: nn.Module) -> list[Any]:
    from peft.tuners.lora import LoraLayer

    return [m for m in model.modules() if isinstance(m, LoraLayer)]


def lora_delta_norm(model: nn.Module) -> float:
    """||Delta-phi||: Frobenius norm of all LoRA weight updates B A * (alpha / r) together."""
    with torch.no_grad():
        return float(np.sqrt(sum(float(m.get_delta_weight("default").pow(2).sum()) for m in _lora_layers(model))))


def random_lora(
    unet: nn.Module, rank: int, norm: float, rng: np.random.Generator, targets: str = LORA_TARGETS
) -> nn.Module:
    """Control B4: a LoRA copy of ``unet`` with a random direction (Gaussian A and B) of total norm ``norm``."""
    norm = finite_number(norm, "norm", lo=0.0)
    model = add_lora(unet, rank, rng, targets)
    g = torch_generator(rng)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "lora_" in name:
                p.copy_(torch.randn(p.shape, generator=g))
        cur = lora_delta_norm(model)
        scale = norm / cur if cur > 0 else 0.0
        for name, p in model.named_parameters():
            if "lora_B" in name:
                p.mul_(scale)  # Delta W = B A is linear in B
    return model


class _FrozenCritic:
    """The detector frozen for Stage 1: eval mode (BN statistics fixed), no parameter gradients."""

    def __init__(self, detector: Detector) -> None:
        detector._check_fitted()
        self.net = detector.net_
        self.flags = [p.requires_grad for p in self.net.parameters()]

    def __enter__(self) -> nn.Module:
        self.net.eval()
        for p in self.net.parameters():
            p.requires_grad_(False)
        return self.net

    def __exit__(self, *exc: object) -> None:
        for p, f in zip(self.net.parameters(), self.flags, strict=True):
            p.requires_grad_(f)


def _check_pair(generator: object, detector: object) -> None:
    from .real_parts import StableDiffusionGenerator

    ok = isinstance(generator, StableDiffusionGenerator) or (
        isinstance(generator, DiffusionGenerator) and generator.sampler == "ddim"
    )
    if not ok:
        raise TypeError(f"generator: expected a DDIM DiffusionGenerator or a StableDiffusionGenerator, "
                        f"got {type(generator).__name__}")
    if not isinstance(detector, Detector):
        raise TypeError(f"detector: expected a Detector, got {type(detector).__name__}")


def probe_generator(
    generator: Any, detector: Detector, cfg: ProbeConfig, rng: np.random.Generator
) -> ProbeResult:
    """Stage 1 of PROBE: steer LoRA adapters on the seen DDPM against the frozen detector; fill the buffer.

    Parameters
    ----------
    generator : the seen DDPM (DDIM sampler); its UNet is never modified.
    detector : the critic D_theta; frozen (eval mode, parameters unchanged).
    cfg : :class:`ProbeConfig`.
    rng : the randomness of LoRA init and of every x_T.

    Returns
    -------
    ProbeResult with ``cfg.buffer_size`` buffer images.
    """
    _check_pair(generator, detector)
    if not isinstance(cfg, ProbeConfig):
        raise TypeError(f"cfg: expected a ProbeConfig, got {type(cfg).__name__}")
    if cfg.grad_steps > generator.n_sample_steps:
        raise ValueError(f"cfg.grad_steps = {cfg.grad_steps}: must be <= the {generator.n_sample_steps} DDIM steps")
    buf, base, noise, norms, hist = [], [], [], [], []
    base_unet = generator.unet
    with _FrozenCritic(detector) as critic:
        for restart, r in enumerate(spawn(rng, cfg.n_restarts)):
            r_init, r_noise, r_dump = spawn(r, 3)
            lora = add_lora(base_unet, cfg.rank, r_init, getattr(generator, "lora_targets", LORA_TARGETS))
            params = lora_parameters(lora)
            opt = torch.optim.Adam(params, lr=cfg.lr)
            b_factors = [p for n, p in lora.named_parameters() if "lora_B" in n]
            shrink = 1.0 / (1.0 + 2.0 * cfg.lr * cfg.lam * cfg.prox)
            steps = range(1, cfg.n_updates + 1)
            for u in track(steps, f"PROBE stage 1, restart {restart + 1}/{cfg.n_restarts} (updates)", total=len(steps)):
                x_T = generator.noise(cfg.batch_size, r_noise)
                with torch.no_grad():
                    x0_base = generator.denoise(x_T, base_unet)
                x0 = generator.denoise(x_T, lora, grad_steps=cfg.grad_steps)
                logit = critic(x0)
                l_probe = nn.functional.softplus(logit).mean()  # BCE(D(x_0), label real = 0)
                if cfg.prec == "pixel":
                    l_prec = prec_loss(x0, x0_base)
                else:
                    l_prec = sum(
                        (m.get_delta_weight("default").pow(2).sum() for m in _lora_layers(lora)), torch.zeros(())
                    )
                loss = l_probe + cfg.lam * l_prec
                opt.zero_grad()
                loss.backward()
                opt.step()
                with torch.no_grad():  # proximal step of lam * mu * ||B||^2
                    for b in b_factors:
                        b.mul_(shrink)
                hist.append(
                    {
                        "restart": restart,
                        "update": u,
                        "l_probe": l_probe.item(),
                        "l_prec": float(l_prec.item()),
                        "p_fake": torch.sigmoid(logit).mean().item(),
                    }
                )
                if u % cfg.dump_every == 0:
                    x_d = generator.noise(cfg.n_dump, r_dump)
                    buf.append(generator.sample_from(x_d, lora))
                    base.append(generator.sample_from(x_d, base_unet))
                    noise.append(x_d.cpu().numpy())
                    norms.append(lora_delta_norm(lora))
    return ProbeResult(np.concatenate(buf), np.concatenate(base), np.concatenate(noise), norms, hist)


def refine_detector(
    detector: Detector,
    real: np.ndarray,
    fakes: np.ndarray,
    buffer: np.ndarray | None,
    cfg: RefineConfig,
    rng: np.random.Generator,
    augment: Any = None,
) -> Detector:
    """Stage 2: a fine-tuned copy of ``detector`` on real (0) vs seen fakes + buffer (1), class-balanced.

    ``buffer=None`` fine-tunes on real vs seen fakes only (with ``augment``, control B3). The input
    detector is left unchanged.
    """
    if not isinstance(detector, Detector):
        raise TypeError(f"detector: expected a Detector, got {type(detector).__name__}")
    if not isinstance(cfg, RefineConfig):
        raise TypeError(f"cfg: expected a RefineConfig, got {type(cfg).__name__}")
    real, fakes = check_images(real, "real"), check_images(fakes, "fakes")
    all_fakes = fakes if buffer is None else np.concatenate([fakes, check_images(buffer, "buffer")])
    if all_fakes.shape[1:] != real.shape[1:]:
        raise ValueError(f"fakes/buffer: image shape {all_fakes.shape[1:]} differs from real {real.shape[1:]}")
    return detector.copy().partial_fit(real, all_fakes, rng, epochs=cfg.epochs, lr=cfg.lr, augment=augment)
