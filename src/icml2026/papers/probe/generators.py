"""Generators trained here from scratch on real train crops: the seen DDPM and the unseen families.

Every generator has ``.sample(n, rng) -> np.ndarray`` (float32, (n, C, S, S), values in [-1, 1]).

* :class:`DiffusionGenerator` -- ``diffusers`` ``UNet2DModel`` trained with ``DDPMScheduler``; samples with
  ``DDIMScheduler`` (seen generator: :func:`seen_unet`, 10 DDIM steps) or ancestral ``DDPMScheduler`` steps
  (unseen "DDPM-2": :func:`unseen_unet`, resnet up/down-sampling blocks, no attention, 40 ancestral steps).
  :meth:`DiffusionGenerator.denoise` is the differentiable DDIM chain used by PROBE (truncated backprop).
* :class:`VAEGenerator` (transposed-conv decoder), :class:`DCGANGenerator` (transposed convs, checkerboard),
  :class:`AEReconstructor` (reconstructions of held-out real crops, B-Free/DRCT style),
  :class:`PCAGaussianGenerator` (Gaussian in the top principal components of the pixels).
"""

from __future__ import annotations

import copy
from typing import Any, Literal, cast

import numpy as np
import torch
from torch import nn

from icml2026.core import spawn, torch_generator
from icml2026.core.progress import track
from icml2026.core.validate import as_array, finite_number, positive_int

__all__ = [
    "DiffusionGenerator",
    "VAEGenerator",
    "DCGANGenerator",
    "AEReconstructor",
    "PCAGaussianGenerator",
    "seen_unet",
    "unseen_unet",
    "check_images",
    "to_tensor",
]


def check_images(x: object, name: str) -> np.ndarray:
    """``x`` as float32 (n, C, S, S) images in [-1, 1]; ValueError naming ``name`` otherwise."""
    arr = as_array(x, name, ndim=4, dtype=np.float32, lo=-1.0 - 1e-5, hi=1.0 + 1e-5)
    if arr.shape[2] != arr.shape[3]:
        raise ValueError(f"{name}: expected square images (n, C, S, S), got shape {arr.shape}")
    return np.ascontiguousarray(arr)


def to_tensor(x: np.ndarray, device: torch.device | str | None = None) -> torch.Tensor:
    """float32 tensor of ``x`` (on ``device``; default the CPU)."""
    return torch.as_tensor(np.ascontiguousarray(x, dtype=np.float32), device=device)


def _device(module: nn.Module) -> torch.device:
    return next(module.parameters()).device


def _batches(n: int, batch_size: int, rng: np.random.Generator) -> np.ndarray:
    return rng.integers(0, n, size=batch_size)


def seen_unet(size: int, channels: int) -> nn.Module:
    """The seen generator's denoiser: 2 resolutions (16, 32 channels), self-attention at the low one."""
    if positive_int(size, "size", minimum=2) % 2:
        raise ValueError(f"size: must be even (one down-sampling by 2), got {size}")
    from diffusers import UNet2DModel

    return cast(
        nn.Module,
        UNet2DModel(
            sample_size=size,
            in_channels=channels,
            out_channels=channels,
            block_out_channels=(16, 32),
            layers_per_block=1,
            norm_num_groups=8,
            attention_head_dim=8,
            down_block_types=("DownBlock2D", "AttnDownBlock2D"),
            up_block_types=("AttnUpBlock2D", "UpBlock2D"),
        ),
    )


def unseen_unet(size: int, channels: int) -> nn.Module:
    """The unseen DDPM-2 denoiser: wider (24, 48), resnet down/up-sampling blocks, no attention anywhere."""
    from diffusers import UNet2DModel

    return cast(
        nn.Module,
        UNet2DModel(
            sample_size=size,
            in_channels=channels,
            out_channels=channels,
            block_out_channels=(24, 48),
            layers_per_block=1,
            norm_num_groups=8,
            down_block_types=("ResnetDownsampleBlock2D", "ResnetDownsampleBlock2D"),
            up_block_types=("ResnetUpsampleBlock2D", "ResnetUpsampleBlock2D"),
            add_attention=False,
            resnet_time_scale_shift="scale_shift",
        ),
    )


class DiffusionGenerator:
    """A DDPM (``UNet2DModel`` + ``DDPMScheduler``) with DDIM or ancestral sampling.

    Parameters
    ----------
    unet : a ``diffusers.UNet2DModel`` (predicts the noise epsilon); the generator runs where it is (move it with
        ``.to(device)`` before); every random draw is made on the CPU and moved there.
    sampler : "ddim" (deterministic, eta = 0) or "ddpm" (ancestral).
    n_sample_steps : number of sampling steps.
    n_train_timesteps : T of the forward process (squared-cosine schedule).
    scheduler_config : the forward process of a pretrained pipeline (its scheduler's ``config``), used instead
        of the squared-cosine schedule with ``n_train_timesteps`` (see :meth:`from_pipeline`).
    """

    def __init__(
        self,
        unet: nn.Module,
        sampler: Literal["ddim", "ddpm"] = "ddim",
        n_sample_steps: int = 10,
        n_train_timesteps: int = 1000,
        scheduler_config: Any = None,
    ) -> None:
        from diffusers import DDIMScheduler, DDPMScheduler

        if sampler not in ("ddim", "ddpm"):
            raise ValueError(f"sampler: must be 'ddim' or 'ddpm', got {sampler!r}")
        self.unet: Any = cast(Any, unet)
        self.sampler = sampler
        if scheduler_config is not None:
            self.train_scheduler: Any = cast(Any, DDPMScheduler.from_config(scheduler_config))
            n_train_timesteps = int(self.train_scheduler.config.num_train_timesteps)
        else:
            self.train_scheduler = cast(
                Any, DDPMScheduler(num_train_timesteps=n_train_timesteps, beta_schedule="squaredcos_cap_v2")
            )
        self.n_sample_steps = positive_int(n_sample_steps, "n_sample_steps", maximum=n_train_timesteps)
        self.scheduler: Any
        if sampler == "ddim":
            self.scheduler = DDIMScheduler.from_config(self.train_scheduler.config)
        else:
            self.scheduler = DDPMScheduler.from_config(self.train_scheduler.config)
        self.scheduler.set_timesteps(self.n_sample_steps)
        cfg = self.unet.config
        self.size, self.channels = int(cfg.sample_size), int(cfg.in_channels)

    @classmethod
    def from_pipeline(
        cls,
        path: str,
        sampler: Literal["ddim", "ddpm"] = "ddim",
        n_sample_steps: int = 10,
        device: str = "cpu",
        key: str = "model",
    ) -> DiffusionGenerator:
        """A pretrained generator from a diffusers pipeline folder (e.g. ``DDPMPipeline.save_pretrained``):
        its ``unet`` (a ``UNet2DModel`` predicting the noise) and its scheduler's forward process, read through
        :func:`icml2026.core.loaders.load_diffusers_pipeline`; frozen, as a generator trained by :meth:`fit`.

        Raises
        ------
        BadInput
            The folder is missing or not a pipeline, or its denoiser is not a pixel-space ``UNet2DModel``
            predicting epsilon (a latent-diffusion pipeline needs its VAE, which this generator does not run).
        """
        from icml2026.core.errors import BadInput
        from icml2026.core.loaders import load_diffusers_pipeline

        pipe = load_diffusers_pipeline(path, device=device, key=key)
        unet, sched = getattr(pipe, "unet", None), getattr(pipe, "scheduler", None)
        if unet is None or sched is None or getattr(pipe, "vae", None) is not None:
            raise BadInput(f"{key} = {path!r}: needs a pixel-space pipeline with a unet and a scheduler "
                           f"(got {type(pipe).__name__}; latent pipelines are not run by this generator)")
        if getattr(sched.config, "prediction_type", "epsilon") != "epsilon":
            raise BadInput(f"{key} = {path!r}: the scheduler predicts {sched.config.prediction_type!r}; "
                           "this generator needs epsilon prediction")
        gen = cls(unet, sampler, n_sample_steps, scheduler_config=sched.config)
        gen.unet.eval()
        for p in gen.unet.parameters():
            p.requires_grad_(False)
        return gen

    @property
    def device(self) -> torch.device:
        return _device(self.unet)

    def fit(
        self, x: np.ndarray, rng: np.random.Generator, n_steps: int = 1000, batch_size: int = 64, lr: float = 2e-3
    ) -> DiffusionGenerator:
        """Train the denoiser with the epsilon-prediction loss of DDPM (Ho et al., Eq. 14)."""
        x = check_images(x, "x")
        n_steps = positive_int(n_steps, "n_steps")
        batch_size = positive_int(batch_size, "batch_size")
        lr = finite_number(lr, "lr", lo=0.0, lo_open=True)
        g = torch_generator(rng)
        data = to_tensor(x)
        opt = torch.optim.Adam(self.unet.parameters(), lr=lr)
        sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, n_steps)
        self.unet.train()
        T = self.train_scheduler.config.num_train_timesteps
        dev = self.device
        for _ in track(range(n_steps), "train DDPM (steps)", total=n_steps):
            x0 = data[_batches(len(data), batch_size, rng)].to(dev)
            noise = torch.randn(x0.shape, generator=g).to(dev)
            t = torch.randint(0, T, (len(x0),), generator=g).to(dev)
            xt = self.train_scheduler.add_noise(x0, noise, t)
            loss = (self.unet(xt, t).sample - noise).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
        self.unet.eval()
        for p in self.unet.parameters():
            p.requires_grad_(False)
        return self

    def noise(self, n: int, rng: np.random.Generator) -> torch.Tensor:
        """x_T ~ N(0, I) of shape (n, C, S, S) drawn from ``rng``."""
        x = torch.randn((n, self.channels, self.size, self.size), generator=torch_generator(rng))
        return x.to(self.device)

    def denoise(self, x_t: torch.Tensor, unet: nn.Module | None = None, grad_steps: int = 0) -> torch.Tensor:
        """The DDIM chain x_T -> x_0 (eta = 0) with ``unet`` (default: the base one).

        Only the last ``grad_steps`` steps are recorded for autograd (truncated backprop, brief Stage 1
        *[assumed]*); the earlier ones run under ``no_grad``.
        """
        if self.sampler != "ddim":
            raise ValueError("denoise: defined for the deterministic DDIM sampler only")
        net = self.unet if unet is None else unet
        steps = list(self.scheduler.timesteps)
        n_free = len(steps) - int(grad_steps)
        x = x_t
        for i, t in enumerate(steps):
            with torch.set_grad_enabled(i >= n_free and torch.is_grad_enabled()):
                eps = net(x, t).sample
                x = self.scheduler.step(eps, t, x, eta=0.0).prev_sample
        return x.clamp(-1.0, 1.0)

    def sample_from(
        self,
        x_t: torch.Tensor,
        unet: nn.Module | None = None,
        rng: np.random.Generator | None = None,
        batch_size: int = 256,
    ) -> np.ndarray:
        """Samples from the given x_T (no gradients), in batches."""
        out = []
        net = self.unet if unet is None else unet
        g = torch_generator(rng) if rng is not None else None
        with torch.no_grad():
            for i in range(0, len(x_t), batch_size):
                x = x_t[i : i + batch_size]
                if self.sampler == "ddim":
                    x = self.denoise(x, net)
                else:
                    for t in self.scheduler.timesteps:
                        x = self.scheduler.step(net(x, t).sample, t, x, generator=g).prev_sample
                    x = x.clamp(-1.0, 1.0)
                out.append(x.cpu().numpy())
        return (
            np.concatenate(out).astype(np.float32)
            if out
            else np.zeros((0, self.channels, self.size, self.size), np.float32)
        )

    def sample(self, n: int, rng: np.random.Generator, unet: nn.Module | None = None) -> np.ndarray:
        """``n`` samples (float32, (n, C, S, S), in [-1, 1])."""
        n = positive_int(n, "n")
        r_noise, r_steps = spawn(rng, 2)
        return self.sample_from(self.noise(n, r_noise), unet, r_steps)

    def copy_unet(self) -> nn.Module:
        return copy.deepcopy(self.unet)


class _ConvVAE(nn.Module):
    def __init__(self, size: int, channels: int, z_dim: int, variational: bool) -> None:
        super().__init__()
        s4 = size // 4
        self.s4, self.variational = s4, variational
        self.enc = nn.Sequential(
            nn.Conv2d(channels, 16, 4, 2, 1),
            nn.ReLU(),
            nn.Conv2d(16, 32, 4, 2, 1),
            nn.ReLU(),
            nn.Flatten(),
            nn.Linear(32 * s4 * s4, 2 * z_dim),
        )
        self.dec_in = nn.Linear(z_dim, 32 * s4 * s4)
        self.dec = nn.Sequential(
            nn.ReLU(),
            nn.ConvTranspose2d(32, 16, 4, 2, 1),
            nn.ReLU(),
            nn.ConvTranspose2d(16, channels, 4, 2, 1),
            nn.Tanh(),
        )

    def encode(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        mu, logvar = self.enc(x).chunk(2, dim=1)
        return mu, logvar.clamp(-8, 4)

    def decode(self, z: torch.Tensor) -> torch.Tensor:
        return self.dec(self.dec_in(z).view(len(z), 32, self.s4, self.s4))


def _check_fit_args(x: object, n_steps: int, batch_size: int, lr: float) -> tuple[np.ndarray, int, int, float]:
    return (
        check_images(x, "x"),
        positive_int(n_steps, "n_steps"),
        positive_int(batch_size, "batch_size"),
        finite_number(lr, "lr", lo=0.0, lo_open=True),
    )


class VAEGenerator:
    """A convolutional VAE; samples decode z ~ N(0, I) through transposed convolutions (unseen family)."""

    def __init__(
        self, size: int, channels: int, z_dim: int = 16, beta: float = 0.5, device: torch.device | str = "cpu"
    ) -> None:
        self.size, self.channels, self.z_dim, self.beta = size, channels, z_dim, beta
        self.net = _ConvVAE(size, channels, z_dim, variational=True).to(device)

    def fit(
        self, x: np.ndarray, rng: np.random.Generator, n_steps: int = 800, batch_size: int = 64, lr: float = 2e-3
    ) -> VAEGenerator:
        x, n_steps, batch_size, lr = _check_fit_args(x, n_steps, batch_size, lr)
        g, data, dev = torch_generator(rng), to_tensor(x), _device(self.net)
        opt = torch.optim.Adam(self.net.parameters(), lr=lr)
        for _ in track(range(n_steps), "train VAE (steps)", total=n_steps):
            xb = data[_batches(len(data), batch_size, rng)].to(dev)
            mu, logvar = self.net.encode(xb)
            z = mu + torch.randn(mu.shape, generator=g).to(dev) * (0.5 * logvar).exp()
            rec = (self.net.decode(z) - xb).pow(2).sum((1, 2, 3)).mean()
            kl = -0.5 * (1 + logvar - mu.pow(2) - logvar.exp()).sum(1).mean()
            loss = (rec + self.beta * kl) / xb[0].numel()
            opt.zero_grad()
            loss.backward()
            opt.step()
        self.net.eval()
        return self

    def sample(self, n: int, rng: np.random.Generator) -> np.ndarray:
        n = positive_int(n, "n")
        with torch.no_grad():
            z = torch.randn((n, self.z_dim), generator=torch_generator(rng)).to(_device(self.net))
            return self.net.decode(z).cpu().numpy().astype(np.float32)


class AEReconstructor:
    """Autoencoder reconstructions of held-out real crops as fakes (the DRCT / B-Free "reconstruction" idea).

    ``sources`` are the real images to reconstruct; ``sample(n, rng)`` reconstructs ``n`` of them drawn with
    replacement.
    """

    def __init__(self, size: int, channels: int, z_dim: int = 48, device: torch.device | str = "cpu") -> None:
        self.size, self.channels, self.z_dim = size, channels, z_dim
        self.net = _ConvVAE(size, channels, z_dim, variational=False).to(device)
        self.sources: np.ndarray | None = None

    def fit(
        self, x: np.ndarray, rng: np.random.Generator, n_steps: int = 800, batch_size: int = 64, lr: float = 2e-3
    ) -> AEReconstructor:
        x, n_steps, batch_size, lr = _check_fit_args(x, n_steps, batch_size, lr)
        data, dev = to_tensor(x), _device(self.net)
        opt = torch.optim.Adam(self.net.parameters(), lr=lr)
        for _ in track(range(n_steps), "train AE (steps)", total=n_steps):
            xb = data[_batches(len(data), batch_size, rng)].to(dev)
            mu, _ = self.net.encode(xb)
            loss = (self.net.decode(mu) - xb).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
        self.net.eval()
        return self

    def set_sources(self, sources: np.ndarray) -> AEReconstructor:
        self.sources = check_images(sources, "sources")
        return self

    def reconstruct(self, x: np.ndarray) -> np.ndarray:
        x = check_images(x, "x")
        with torch.no_grad():
            xt = to_tensor(x, _device(self.net))
            return self.net.decode(self.net.encode(xt)[0]).cpu().numpy().astype(np.float32)

    def sample(self, n: int, rng: np.random.Generator) -> np.ndarray:
        n = positive_int(n, "n")
        if self.sources is None:
            raise ValueError("sources: call set_sources(real_images) before sample")
        return self.reconstruct(self.sources[rng.integers(0, len(self.sources), size=n)])


class _DCGenerator(nn.Module):
    def __init__(self, size: int, channels: int, z_dim: int) -> None:
        super().__init__()
        self.s4 = size // 4
        self.fc = nn.Linear(z_dim, 64 * self.s4 * self.s4)
        self.net = nn.Sequential(
            nn.ReLU(),
            nn.ConvTranspose2d(64, 32, 4, 2, 1),
            nn.ReLU(),
            nn.ConvTranspose2d(32, channels, 4, 2, 1),
            nn.Tanh(),
        )

    def forward(self, z: torch.Tensor) -> torch.Tensor:
        return self.net(self.fc(z).view(len(z), 64, self.s4, self.s4))


class DCGANGenerator:
    """A DCGAN (transposed-conv generator, conv discriminator, non-saturating loss; unseen family)."""

    def __init__(self, size: int, channels: int, z_dim: int = 32, device: torch.device | str = "cpu") -> None:
        self.size, self.channels, self.z_dim = size, channels, z_dim
        self.gen = _DCGenerator(size, channels, z_dim).to(device)
        s4 = size // 4
        self.disc = nn.Sequential(
            nn.Conv2d(channels, 32, 4, 2, 1),
            nn.LeakyReLU(0.2),
            nn.Conv2d(32, 64, 4, 2, 1),
            nn.LeakyReLU(0.2),
            nn.Flatten(),
            nn.Linear(64 * s4 * s4, 1),
        ).to(device)

    def fit(
        self, x: np.ndarray, rng: np.random.Generator, n_steps: int = 800, batch_size: int = 64, lr: float = 2e-4
    ) -> DCGANGenerator:
        x, n_steps, batch_size, lr = _check_fit_args(x, n_steps, batch_size, lr)
        g, data, dev = torch_generator(rng), to_tensor(x), _device(self.gen)
        opt_g = torch.optim.Adam(self.gen.parameters(), lr=lr, betas=(0.5, 0.999))
        opt_d = torch.optim.Adam(self.disc.parameters(), lr=lr, betas=(0.5, 0.999))
        sp = nn.functional.softplus
        for _ in track(range(n_steps), "train DCGAN (steps)", total=n_steps):
            xb = data[_batches(len(data), batch_size, rng)].to(dev)
            fake = self.gen(torch.randn((batch_size, self.z_dim), generator=g).to(dev))
            d_loss = sp(-self.disc(xb)).mean() + sp(self.disc(fake.detach())).mean()
            opt_d.zero_grad()
            d_loss.backward()
            opt_d.step()
            g_loss = sp(-self.disc(fake)).mean()
            opt_g.zero_grad()
            g_loss.backward()
            opt_g.step()
        self.gen.eval()
        return self

    def sample(self, n: int, rng: np.random.Generator) -> np.ndarray:
        n = positive_int(n, "n")
        with torch.no_grad():
            z = torch.randn((n, self.z_dim), generator=torch_generator(rng)).to(_device(self.gen))
            return self.gen(z).cpu().numpy().astype(np.float32)


class PCAGaussianGenerator:
    """Gaussian pixel sampler in the top ``n_components`` principal components (plus isotropic residual)."""

    def __init__(self, n_components: int = 24) -> None:
        self.n_components = n_components

    def fit(self, x: np.ndarray, rng: np.random.Generator | None = None) -> PCAGaussianGenerator:
        x = check_images(x, "x")
        k = positive_int(self.n_components, "n_components", maximum=x[0].size)
        flat = x.reshape(len(x), -1).astype(np.float64)
        self.shape_ = x.shape[1:]
        self.mean_ = flat.mean(0)
        _, s, vt = np.linalg.svd(flat - self.mean_, full_matrices=False)
        var = s**2 / max(len(x) - 1, 1)
        self.components_, self.std_ = vt[:k], np.sqrt(var[:k])
        self.residual_std_ = float(np.sqrt(var[k:].mean())) if len(var) > k else 0.0
        return self

    def sample(self, n: int, rng: np.random.Generator) -> np.ndarray:
        n = positive_int(n, "n")
        z = rng.standard_normal((n, len(self.std_))) * self.std_
        flat = self.mean_ + z @ self.components_ + self.residual_std_ * rng.standard_normal((n, self.mean_.size))
        return np.clip(flat, -1, 1).reshape((n, *self.shape_)).astype(np.float32)
