"""The paper's pipeline on real parts: Stable Diffusion, a pretrained detector backbone, benchmark image folders.

* :class:`StableDiffusionGenerator` -- a ``diffusers`` ``StableDiffusionPipeline`` folder (text-conditioned,
  latent): DDIM in the latent space from the pipeline's own forward process, the VAE decoder, prompts encoded by
  the pipeline's text encoder. It has the interface of :class:`~.generators.DiffusionGenerator` that PROBE's
  Stage 1 uses (``noise``, ``denoise`` with truncated backprop, ``sample_from``, ``sample``), so
  :func:`~.method.probe_generator` puts ``peft`` LoRA adapters on its ``UNet2DConditionModel`` and steers it
  exactly as it steers the toy DDPM. The prompt of each sample rides along with its latent x_T as one extra
  constant channel (its index in ``prompts``), so that a batch of x_T carries its own conditioning.
* :class:`PretrainedDetector` -- a Hugging Face vision backbone from a local folder (``transformers``
  ``AutoModel`` through :func:`icml2026.core.loaders.load_encoder`: DINOv2 (with registers) or ResNet-50) plus a
  linear head on its pooled output (DINOv2: the CLS token, as in the official detector code), trained and
  fine-tuned end to end by the :class:`~.detector.Detector` recipe.
* :func:`load_image_folder` -- a folder of benchmark images: ``DIR/train`` holds the real training images;
  every other subfolder of ``DIR`` is one benchmark, whose images are real when a folder on their path below the
  benchmark contains "real" (the official evaluator's convention) and fake otherwise.

Nothing is downloaded: every folder is read by the core loaders with ``local_files_only``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, cast

import numpy as np
import torch
from torch import nn

from icml2026.core import torch_generator
from icml2026.core.errors import BadInput
from icml2026.core.rng import torch_seeded
from icml2026.core.validate import positive_int

from .detector import Detector
from .generators import check_images

__all__ = [
    "SD_LORA_TARGETS",
    "DEFAULT_PROMPTS",
    "StableDiffusionGenerator",
    "PretrainedDetector",
    "load_image_folder",
]

#: LoRA targets on a ``UNet2DConditionModel``: resnet convolutions and the self/cross-attention projections.
SD_LORA_TARGETS = r".*(resnets\.\d+\.conv[12]|attn[12]\.(to_q|to_k|to_v|to_out\.0))$"
#: Prompts used when the user gives none (object and scene classes, as the paper's diverse conditioning).
DEFAULT_PROMPTS = (
    "a photo of a dog", "a photo of a cat", "a photo of a car", "a photo of a bird", "a city street",
    "a mountain landscape", "a bowl of fruit", "a portrait of a person", "a flower garden", "a beach at sunset",
)
_IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".webp", ".bmp")


class StableDiffusionGenerator:
    """A text-to-image latent diffusion pipeline as PROBE's seen generator (see the module docstring).

    Parameters
    ----------
    pipe : a loaded ``StableDiffusionPipeline`` (``vae``, ``text_encoder``, ``tokenizer``, ``unet``, ``scheduler``).
    prompts : the conditioning; each x_T draws one uniformly.
    n_sample_steps : DDIM steps (eta = 0).

    # Deviation: no classifier-free guidance (one conditional UNet pass per step), to halve the cost of the
    # differentiable chain; the paper does not say which guidance its Stage 1 uses.
    """

    sampler = "ddim"
    lora_targets = SD_LORA_TARGETS

    def __init__(self, pipe: Any, prompts: tuple[str, ...] = DEFAULT_PROMPTS, n_sample_steps: int = 10) -> None:
        from diffusers import DDIMScheduler

        if not prompts:
            raise ValueError("prompts: give at least one prompt")
        self.unet: Any = pipe.unet
        self.vae, self.text_encoder, self.tokenizer = pipe.vae, pipe.text_encoder, pipe.tokenizer
        for m in (self.unet, self.vae, self.text_encoder):
            m.eval()
            for p in m.parameters():
                p.requires_grad_(False)
        self.prompts = tuple(prompts)
        self.n_sample_steps = positive_int(n_sample_steps, "n_sample_steps", maximum=1000)
        self.scheduler: Any = DDIMScheduler.from_config(pipe.scheduler.config)
        self.scheduler.set_timesteps(self.n_sample_steps)
        self.latent_channels = int(self.unet.config.in_channels)
        self.latent_size = int(self.unet.config.sample_size)
        self.vae_scale = 2 ** (len(self.vae.config.block_out_channels) - 1)
        self.size, self.channels = self.latent_size * self.vae_scale, 3
        self.scaling = float(getattr(self.vae.config, "scaling_factor", 0.18215))
        ids = self.tokenizer(list(self.prompts), padding="max_length", truncation=True,
                             max_length=self.tokenizer.model_max_length, return_tensors="pt").input_ids
        with torch.no_grad():
            self.embeddings = self.text_encoder(ids.to(self.device))[0]

    @classmethod
    def from_folder(cls, path: str, prompts: tuple[str, ...] = DEFAULT_PROMPTS, n_sample_steps: int = 10,
                    device: str = "cpu", key: str = "generator") -> StableDiffusionGenerator:
        """Read a ``StableDiffusionPipeline.save_pretrained`` folder through the core loader."""
        from icml2026.core.loaders import load_diffusers_pipeline

        pipe = load_diffusers_pipeline(path, device=device, key=key)
        parts = ("vae", "text_encoder", "tokenizer", "unet", "scheduler")
        missing = [c for c in parts if getattr(pipe, c, None) is None]
        if missing:
            raise BadInput(f"{key} = {path!r}: needs a text-to-image latent pipeline (StableDiffusionPipeline); "
                           f"{type(pipe).__name__} has no {', '.join(missing)}")
        if getattr(pipe.scheduler.config, "prediction_type", "epsilon") != "epsilon":
            raise BadInput(f"{key} = {path!r}: the scheduler predicts {pipe.scheduler.config.prediction_type!r}; "
                           "this generator needs epsilon prediction")
        return cls(pipe, prompts, n_sample_steps)

    @property
    def device(self) -> torch.device:
        return next(self.unet.parameters()).device

    def noise(self, n: int, rng: np.random.Generator) -> torch.Tensor:
        """x_T (n, latent channels + 1, h, w): the latent noise and, as a last constant channel, the prompt index."""
        g = torch_generator(rng)
        n = positive_int(n, "n")
        lat = torch.randn((n, self.latent_channels, self.latent_size, self.latent_size), generator=g)
        idx = torch.randint(0, len(self.prompts), (n,), generator=g).float()
        cond = idx[:, None, None, None].expand(n, 1, self.latent_size, self.latent_size)
        return torch.cat([lat, cond], 1).to(self.device)

    def denoise(self, x_t: torch.Tensor, unet: nn.Module | None = None, grad_steps: int = 0) -> torch.Tensor:
        """DDIM in the latent space (the last ``grad_steps`` steps recorded for autograd), then the VAE decoder
        (differentiable); images in [-1, 1], shape (n, 3, S, S)."""
        net: Any = self.unet if unet is None else unet
        lat, idx = x_t[:, : self.latent_channels], x_t[:, self.latent_channels, 0, 0].round().long()
        cond = self.embeddings[idx]
        steps = list(self.scheduler.timesteps)
        n_free = len(steps) - int(grad_steps)
        x = lat * self.scheduler.init_noise_sigma
        for i, t in enumerate(steps):
            with torch.set_grad_enabled(i >= n_free and torch.is_grad_enabled()):
                eps = net(self.scheduler.scale_model_input(x, t), t, encoder_hidden_states=cond).sample
                x = self.scheduler.step(eps, t, x, eta=0.0).prev_sample
        return self.vae.decode(x / self.scaling).sample.clamp(-1.0, 1.0)

    def sample_from(self, x_t: torch.Tensor, unet: nn.Module | None = None, rng: np.random.Generator | None = None,
                    batch_size: int = 32) -> np.ndarray:
        with torch.no_grad():
            out = [self.denoise(x_t[i : i + batch_size], unet).cpu().numpy() for i in range(0, len(x_t), batch_size)]
        return np.concatenate(out).astype(np.float32)

    def sample(self, n: int, rng: np.random.Generator, unet: nn.Module | None = None) -> np.ndarray:
        return self.sample_from(self.noise(n, rng), unet)


class _BackboneWithHead(nn.Module):
    """Images in [-1, 1] -> ImageNet normalisation (resized to the backbone's input size) -> pooled feature -> logit."""

    def __init__(self, backbone: nn.Module, image_size: int | None, channels: int) -> None:
        super().__init__()
        self.backbone, self.image_size = backbone, image_size
        self.register_buffer("mean", torch.tensor([0.485, 0.456, 0.406])[:channels].view(1, -1, 1, 1))
        self.register_buffer("std", torch.tensor([0.229, 0.224, 0.225])[:channels].view(1, -1, 1, 1))
        with torch.no_grad():
            dim = self._features(torch.zeros(1, channels, image_size or 32, image_size or 32)).shape[1]
        self.head = nn.Linear(dim, 1)

    def _features(self, x: torch.Tensor) -> torch.Tensor:
        out = self.backbone(pixel_values=x)
        pooled = getattr(out, "pooler_output", None)
        if pooled is None:
            pooled = out.last_hidden_state[:, 0]
        return pooled.flatten(1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = (x + 1) / 2
        if self.image_size is not None and x.shape[-1] != self.image_size:
            x = nn.functional.interpolate(x, size=(self.image_size, self.image_size), mode="bilinear",
                                          align_corners=False)
        mean, std = cast(torch.Tensor, self.mean), cast(torch.Tensor, self.std)
        return self.head(self._features((x - mean) / std)).squeeze(1)


class PretrainedDetector(Detector):
    """A pretrained backbone from a local Hugging Face folder + a linear head (see the module docstring).

    ``fit`` draws the head from the run's stream and trains backbone and head together (the Detector recipe);
    Stage 2 fine-tunes a copy, as for the toy detector.
    """

    def __init__(self, path: str, epochs: int = 2, lr: float = 1e-4, batch_size: int = 16,
                 device: torch.device | str = "cpu", key: str = "detector") -> None:
        super().__init__(epochs=epochs, lr=lr, batch_size=batch_size, device=device)
        self.path, self.key = path, key

    def fit(self, real: np.ndarray, fake: np.ndarray, rng: np.random.Generator) -> PretrainedDetector:
        from icml2026.core import spawn
        from icml2026.core.loaders import load_encoder

        real, fake = check_images(real, "real"), check_images(fake, "fake")
        loaded = load_encoder(self.path, device="cpu", load_tokenizer=False, key=self.key)
        cfg = loaded.model.config
        size = getattr(cfg, "image_size", None)
        if getattr(cfg, "num_channels", real.shape[1]) != real.shape[1]:
            raise BadInput(f"{self.key} = {self.path!r}: the backbone takes {cfg.num_channels}-channel images, "
                           f"the data has {real.shape[1]}")
        r_init, r_train = spawn(rng, 2)
        with torch_seeded(r_init, high=2**31 - 1):
            net = _BackboneWithHead(loaded.model, int(size) if size else None, real.shape[1])
            self.net_ = net.to(self.device)  # type: ignore[assignment]
        for p in self.net_.parameters():
            p.requires_grad_(True)
        self.n_params_ = sum(p.numel() for p in self.net_.parameters())
        return self.partial_fit(real, fake, r_train, epochs=self.epochs, lr=self.lr)  # type: ignore[return-value]


def _read_image(path: Path, size: int) -> np.ndarray:
    from PIL import Image

    with Image.open(path) as f:
        im = f.convert("RGB")
        w, h = im.size
        s = min(w, h)  # centre crop to a square, then resize (BICUBIC) to the generator's size
        im = im.crop(((w - s) // 2, (h - s) // 2, (w - s) // 2 + s, (h - s) // 2 + s))
        if s != size:
            im = im.resize((size, size), Image.Resampling.BICUBIC)
        return np.asarray(im, dtype=np.float32).transpose(2, 0, 1) / 127.5 - 1.0


def load_image_folder(
    path: str, size: int, key: str = "data"
) -> tuple[np.ndarray, dict[str, tuple[np.ndarray, np.ndarray]]]:
    """(real train images, {benchmark: (images, labels 0 real / 1 fake)}) from a folder (module docstring).

    Raises
    ------
    BadInput
        The folder is missing, has no ``train`` images, no benchmark, or a benchmark lacks real or fake images.
    """
    root = Path(path)
    if not root.is_dir():
        raise BadInput(f"{key} = {path!r}: not a folder")
    size = positive_int(size, "size", minimum=4)

    def images(folder: Path) -> list[Path]:
        return sorted(p for p in folder.rglob("*") if p.suffix.lower() in _IMAGE_SUFFIXES and p.is_file())

    train = images(root / "train") if (root / "train").is_dir() else []
    if not train:
        raise BadInput(f"{key} = {path!r}: no real training images under {key}/train")
    benches: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    for sub in sorted(p for p in root.iterdir() if p.is_dir() and p.name != "train"):
        files = images(sub)
        labels = np.array([0 if any("real" in part.lower() for part in f.relative_to(sub).parts[:-1]) else 1
                           for f in files], dtype=int)
        if not files or labels.min() == labels.max():
            raise BadInput(f"{key} = {path!r}: benchmark {sub.name!r} needs real images (a folder named '*real*') "
                           "and fake ones")
        benches[sub.name] = (np.stack([_read_image(f, size) for f in files]), labels)
    if not benches:
        raise BadInput(f"{key} = {path!r}: no benchmark folder beside train/")
    return np.stack([_read_image(f, size) for f in train]), benches
