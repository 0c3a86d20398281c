"""The frozen image encoder ("CLIP") behind a pluggable interface, and its CPU-scale stand-in.

Interface (what :class:`~.method.CoGeoAD` needs): ``encode_image(images) -> (tokens, cls)`` with tokens
(L, N, P, d) the patch tokens of L intermediate layer groups and cls (L, N, d), plus ``n_layers``,
``width`` and ``grid`` (patches per side). The paper uses CLIP ViT-L/14@336 with taps at layers 6/12/18/24;
at CPU scale :class:`TinyViT` (patch 8, width 96, 6 layers, taps 2/4/6 by default) is **pre-trained here**
by masked patch reconstruction on *normal* renders of auxiliary categories only, then frozen.

The text side (learnable prompts through a frozen text tower) is replaced by two learnable prototype
vectors per stream in token space (see :class:`~.method.CoGeoAD`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

import numpy as np

from icml2026.core import torch_generator
from icml2026.core.errors import require_module
from icml2026.core.progress import track
from icml2026.core.validate import as_array

__all__ = ["ImageEncoder", "TinyViT", "FrozenEncoder", "pretrain_backbone", "to_batch"]

require_module("torch", "cogeoad")
import torch  # noqa: E402
from torch import nn  # noqa: E402


class ImageEncoder(Protocol):
    n_layers: int
    width: int
    grid: int

    def encode_image(self, images: np.ndarray) -> tuple[np.ndarray, np.ndarray]: ...


def to_batch(images: np.ndarray) -> torch.Tensor:
    """(N, H, W, 3) or grey (N, H, W) images in [0, 1] -> a centred float tensor (N, 3, H, W)."""
    x = np.asarray(images, np.float32)
    if x.ndim == 3:
        x = np.repeat(x[..., None], 3, axis=-1)
    return torch.from_numpy(x - 0.5).permute(0, 3, 1, 2).contiguous()


class TinyViT(nn.Module):
    """A small pre-LN ViT returning the (LayerNorm'd) tokens after each tap layer."""

    def __init__(
        self,
        image_size: int = 64,
        patch: int = 8,
        width: int = 96,
        depth: int = 6,
        heads: int = 4,
        taps: Sequence[int] = (2, 4, 6),
    ) -> None:
        super().__init__()
        if image_size % patch:
            raise ValueError(f"image_size = {image_size}: must be a multiple of patch = {patch}")
        if not taps or any(t < 0 or t > depth for t in taps):
            raise ValueError(f"taps = {tuple(taps)}: must lie in [0, depth = {depth}] (0: the patch embedding)")
        self.image_size, self.patch, self.width, self.depth, self.heads = image_size, patch, width, depth, heads
        self.taps = tuple(int(t) for t in taps)
        self.grid = image_size // patch
        self.embed = nn.Conv2d(3, width, patch, stride=patch)
        self.cls = nn.Parameter(torch.zeros(1, 1, width))
        self.pos = nn.Parameter(torch.zeros(1, self.grid**2 + 1, width))
        self.mask_token = nn.Parameter(torch.zeros(1, 1, width))
        self.blocks = nn.ModuleList(
            [
                nn.TransformerEncoderLayer(
                    width, heads, 4 * width, dropout=0.0, activation="gelu", batch_first=True, norm_first=True
                )
                for _ in range(depth)
            ]
        )
        self.norms = nn.ModuleList([nn.LayerNorm(width) for _ in self.taps])
        self.decoder = nn.Linear(width, 3 * patch * patch)  # pre-training head only

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None) -> list[torch.Tensor]:
        """x (B, 3, H, W) -> one (B, 1 + P, d) tensor per tap; ``mask`` (B, P) bool replaces patches."""
        t = self.embed(x).flatten(2).transpose(1, 2)
        if mask is not None:
            t = torch.where(mask[..., None], self.mask_token.expand_as(t), t)
        t = torch.cat([self.cls.expand(len(t), -1, -1), t], 1) + self.pos
        outs = [self.norms[self.taps.index(0)](t)] if 0 in self.taps else []
        for i, blk in enumerate(self.blocks, 1):
            t = blk(t)
            if i in self.taps:
                outs.append(self.norms[self.taps.index(i)](t))
        return outs

    def patchify(self, x: torch.Tensor) -> torch.Tensor:
        b, c, _, _ = x.shape
        p, g = self.patch, self.grid
        return x.reshape(b, c, g, p, g, p).permute(0, 2, 4, 1, 3, 5).reshape(b, g * g, c * p * p)


def pretrain_backbone(
    images: np.ndarray,
    rng: np.random.Generator,
    *,
    patch: int = 8,
    width: int = 96,
    depth: int = 6,
    heads: int = 4,
    taps: Sequence[int] = (2, 4, 6),
    n_steps: int = 300,
    batch_size: int = 32,
    lr: float = 2e-3,
    mask_ratio: float = 0.5,
    device: str | torch.device = "cpu",
) -> TinyViT:
    """Self-supervised pre-training by masked patch reconstruction (brief Sec. 4), on normal renders only.

    images : (N, H, W, 3) colour and grey renders (grey ones repeated to 3 channels) in [0, 1].
    device : where the model is trained (and stays); initial weights, batches, flips and masks are drawn on
        the CPU with the run's generator and moved, so the draws do not depend on the device.
    """
    imgs = as_array(images, "images", ndim=4, lo=0.0, hi=1.0)
    if imgs.shape[-1] != 3 or imgs.shape[1] != imgs.shape[2]:
        raise ValueError(f"images: expected (N, H, H, 3), got {imgs.shape}")
    gen = torch_generator(rng)
    with torch.random.fork_rng(devices=[]):  # the init draws from the run's stream; global state restored
        torch.manual_seed(int(torch.randint(0, 2**31 - 1, (1,), generator=gen)))
        model = TinyViT(imgs.shape[1], patch, width, depth, heads, taps)
    for name, prm in model.named_parameters():
        if name in ("pos", "cls", "mask_token"):
            with torch.no_grad():
                prm.copy_(0.02 * torch.randn(prm.shape, generator=gen))
    model.to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.05)
    x_all = to_batch(imgs)
    n_patch = model.grid**2
    model.train()
    for step in track(range(n_steps), "cogeoad backbone pre-training", total=n_steps):
        idx = torch.randint(0, len(x_all), (batch_size,), generator=gen)
        x = x_all[idx].to(device)
        flip = (torch.rand(batch_size, generator=gen) < 0.5).to(device)  # augmentation: horizontal flips
        x = torch.where(flip[:, None, None, None], x.flip(-1), x)
        mask = (torch.rand(batch_size, n_patch, generator=gen) < mask_ratio).to(device)
        out = model(x, mask)[-1][:, 1:]
        pred = model.decoder(out)
        target = model.patchify(x)
        err = ((pred - target) ** 2).mean(-1)
        loss = (err * mask).sum() / mask.sum().clamp(min=1) + 0.1 * err.mean()
        for g in opt.param_groups:
            g["lr"] = lr * min(1.0, (step + 1) / 20) * 0.5 * (1 + np.cos(np.pi * step / n_steps))
        opt.zero_grad()
        loss.backward()
        opt.step()
    model.eval()
    for prm in model.parameters():
        prm.requires_grad_(False)
    return model


class FrozenEncoder:
    """:class:`ImageEncoder` over a frozen :class:`TinyViT` (or any module with the same ``forward``)."""

    def __init__(self, model: TinyViT, batch_size: int = 256) -> None:
        self.model = model.eval()
        self.n_layers = len(model.taps)
        self.width = model.width
        self.grid = model.grid
        self.image_size = model.image_size
        self.batch_size = batch_size

    def encode_image(self, images: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """images (N, H, W[, 3]) in [0, 1] -> tokens (L, N, P, d), cls (L, N, d) as float32."""
        x = to_batch(as_array(images, "images", ndim=(3, 4), lo=0.0, hi=1.0))
        if x.shape[-1] != self.image_size:
            raise ValueError(f"images: expected side {self.image_size}, got {x.shape[-1]}")
        toks, clss = [], []
        device = next(self.model.parameters()).device  # the images go to the model; the tokens come back
        with torch.no_grad():
            for i in range(0, len(x), self.batch_size):
                outs = self.model(x[i : i + self.batch_size].to(device))
                toks.append(torch.stack([o[:, 1:] for o in outs]).cpu())
                clss.append(torch.stack([o[:, 0] for o in outs]).cpu())
        return torch.cat(toks, 1).numpy(), torch.cat(clss, 1).numpy()

    def save(self, path: Any) -> None:
        torch.save(
            {
                "state": self.model.state_dict(),
                "args": dict(
                    image_size=self.model.image_size,
                    patch=self.model.patch,
                    width=self.model.width,
                    depth=self.model.depth,
                    heads=self.model.heads,
                    taps=self.model.taps,
                ),
            },
            path,
        )

    @classmethod
    def load(cls, path: Any) -> FrozenEncoder:
        """A saved encoder from a local path (the same route a user's own checkpoint takes)."""
        blob = torch.load(path, map_location="cpu", weights_only=True)
        model = TinyViT(**blob["args"])
        model.load_state_dict(blob["state"])
        for prm in model.parameters():
            prm.requires_grad_(False)
        return cls(model)
