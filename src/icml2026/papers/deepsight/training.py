"""Datasets from episodes, pre-training of the frozen BEV encoder, training and open-loop evaluation."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from icml2026.core.errors import BadInput
from icml2026.core.progress import track
from icml2026.core.rng import torch_generator, torch_seeded
from icml2026.core.training import TrainingOptions, train_steps
from icml2026.core.validate import positive_int

from .data import (
    HORIZONS,
    Episode,
    _warp,
    annotate,
    ego_state,
    future_waypoints,
    kinematics_obs,
    rasterize_bev,
    static_world_bev,
)
from .method import MAX_THINK, BEVEncoder, DeepSightPlanner, PlannerBatch, PlannerConfig, think_tokens, token_id

__all__ = [
    "SampleSet",
    "build_samples",
    "pretrain_encoder",
    "encode_targets",
    "train_planner",
    "open_loop_eval",
    "OpenLoop",
    "build_planner",
    "make_batch",
    "frame_index",
    "PretrainedBEVEncoder",
    "load_bev_encoder",
    "IMAGENET_MEAN",
    "IMAGENET_STD",
]

#: ImageNet statistics of the official DINOv3 preprocessing (images in [0, 1], then (x - mean) / std)
IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)


class PretrainedBEVEncoder(torch.nn.Module):
    """A pretrained DINOv3-class ViT from a local folder as the frozen BEV encoder, with the official
    preprocessing: the BEV crop resized (bilinear) to the model's ``image_size`` and ImageNet-normalised.

    ``latents(x)`` (x: (B, 3, S, S) in [0, 1]) returns the last hidden states without the register tokens,
    (B, 1 + P, hidden), like :meth:`BEVEncoder.latents`."""

    def __init__(self, model: Any) -> None:
        super().__init__()
        cfg = model.config
        self.vit = model
        self.image_size = int(cfg.image_size)
        self.patch_size = int(cfg.patch_size)
        self.registers = int(getattr(cfg, "num_register_tokens", 0))
        self.n_patches = (self.image_size // self.patch_size) ** 2
        self.hidden = int(cfg.hidden_size)
        self.mean: torch.Tensor
        self.std: torch.Tensor
        self.register_buffer("mean", torch.tensor(IMAGENET_MEAN).view(1, 3, 1, 1))
        self.register_buffer("std", torch.tensor(IMAGENET_STD).view(1, 3, 1, 1))

    def preprocess(self, x: torch.Tensor) -> torch.Tensor:
        """Resize to the model's input size and ImageNet-normalise (the official DINOv3 path)."""
        if x.shape[-1] != self.image_size or x.shape[-2] != self.image_size:
            x = torch.nn.functional.interpolate(x, size=(self.image_size, self.image_size), mode="bilinear",
                                                align_corners=False)
        return (x - self.mean.to(x.dtype)) / self.std.to(x.dtype)

    @torch.no_grad()
    def latents(self, x: torch.Tensor) -> torch.Tensor:
        h: torch.Tensor = self.vit(pixel_values=self.preprocess(x)).last_hidden_state
        return torch.cat([h[:, :1], h[:, 1 + self.registers :]], 1)  # registers masked out (Sec. 2)


def load_bev_encoder(path: str, device: str | torch.device = "cpu") -> PretrainedBEVEncoder:
    """A frozen pretrained BEV encoder (e.g. DINOv3 ViT-L/16 saved with ``save_pretrained``) from ``path``."""
    from icml2026.core.loaders import load_encoder

    model = load_encoder(path, load_tokenizer=False, key="encoder", device=str(device)).model
    for k in ("image_size", "patch_size", "hidden_size"):
        if not isinstance(getattr(model.config, k, None), int):
            from icml2026.core.errors import BadInput

            raise BadInput(f"encoder = {path!r}: not a ViT image encoder (its config has no integer {k})")
    enc = PretrainedBEVEncoder(model).to(device)
    enc.eval()
    for p in enc.parameters():
        p.requires_grad_(False)
    return enc


@dataclass
class SampleSet:
    """Per-sample arrays: kin (N, 15, 28), ego (N, 14), wp (N, 4, 2), bev (N, 5, 3, S, S) uint8 x255,
    complex (N,) bool, ann (annotations), episode index and step of each sample, long_tail (N,) bool."""

    kin: np.ndarray
    ego: np.ndarray
    wp: np.ndarray
    bev: np.ndarray
    complex: np.ndarray
    ann: list
    episode: np.ndarray
    step: np.ndarray
    long_tail: np.ndarray
    static_world: np.ndarray | None = None  # (N, 5, 3, S, S) uint8: the frozen-world baseline's frames

    def __len__(self) -> int:
        return int(self.kin.shape[0])


def build_samples(
    episodes: list[Episode], *, size: int = 64, metres_per_px: float = 2.0, stride: int = 1, static_world: bool = False
) -> SampleSet:
    """Every step t with 3 past and 4 future steps: inputs, expert waypoints, BEV targets t..t+2 s (warped
    into the ego frame at t) and the annotation."""
    kin, ego, wp, bev, cpx, ann, epi, stp, lt = [], [], [], [], [], [], [], [], []  # type: ignore[var-annotated]
    sw: list[np.ndarray] = []
    n_future = int(round(HORIZONS[-1] / 0.5))
    for e_i, ep in enumerate(episodes):
        if ep.n_steps < n_future + 4:
            continue
        own = [rasterize_bev(ep, k, size=size, metres_per_px=metres_per_px) for k in range(ep.n_steps)]
        for t in range(3, ep.n_steps - n_future, stride):
            frames = [own[t]] + [
                _warp(own[t + int(round(h / 0.5))], ep.ego[t + int(round(h / 0.5)), :3], ep.ego[t, :3], metres_per_px)
                for h in HORIZONS[1:]
            ]
            a = annotate(ep, t)
            if static_world:
                sw.append(
                    (static_world_bev(ep, t, size=size, metres_per_px=metres_per_px) * 255).round().astype(np.uint8)
                )
            kin.append(kinematics_obs(ep, t))
            ego.append(ego_state(ep, t))
            wp.append(future_waypoints(ep, t))
            bev.append((np.stack(frames) * 255).round().astype(np.uint8))
            cpx.append(a.complex)
            ann.append(a)
            epi.append(e_i)
            stp.append(t)
            lt.append(ep.long_tail)
    if not kin:
        raise ValueError("episodes: no episode is long enough for a sample (needs >= 8 steps)")
    return SampleSet(
        np.stack(kin),
        np.stack(ego),
        np.stack(wp),
        np.stack(bev),
        np.asarray(cpx),
        ann,
        np.asarray(epi),
        np.asarray(stp),
        np.asarray(lt),
        np.stack(sw) if sw else None,
    )


def pretrain_encoder(
    frames: np.ndarray,
    rng: np.random.Generator,
    *,
    n_steps: int = 200,
    batch: int = 64,
    patch_size: int = 16,
    mask_ratio: float = 0.5,
    lr: float = 2e-3,
    device: str | torch.device = "cpu",
) -> BEVEncoder:
    """Masked image modelling pre-training of the BEV encoder on frames (N, 3, S, S) uint8; returns it frozen.

    Trained on ``device``; batches and masks are drawn on the CPU with the run's generator and moved."""
    n_steps = positive_int(n_steps, "n_steps", minimum=0)
    x_all = torch.as_tensor(frames).float() / 255.0
    g = torch_generator(rng)
    with torch_seeded(rng, high=2**31 - 1):  # module init draws from torch's global RNG: isolate it
        enc = BEVEncoder(image_size=frames.shape[-1], patch_size=patch_size)
    enc.to(device)
    opt = torch.optim.AdamW(enc.parameters(), lr=lr, weight_decay=0.01)
    n_p = enc.n_patches
    # In train mode DINOv3's RoPE rescaling augmentation (config pos_embed_rescale = 2) draws from torch's global
    # generator: seeded from the run's stream here, so the encoder does not depend on what ran before in the
    # process (it did: the same seed gave different latents in a fresh process and after other work)
    with torch_seeded(rng):
        for _ in track(range(n_steps), "deepsight BEV encoder pre-training", total=n_steps):
            idx = torch.randint(0, x_all.shape[0], (min(batch, x_all.shape[0]),), generator=g)
            mask = torch.rand(len(idx), n_p, generator=g) < mask_ratio
            loss = enc.mim_loss(x_all[idx].to(device), mask.to(device))
            opt.zero_grad()
            loss.backward()
            opt.step()
    enc.eval()
    for p in enc.parameters():
        p.requires_grad_(False)
    return enc


@torch.no_grad()
def encode_targets(enc: BEVEncoder | PretrainedBEVEncoder, bev: np.ndarray, chunk: int = 256) -> np.ndarray:
    """Frozen-encoder latents without registers of BEV stacks (N, T, 3, S, S) uint8: (N, T, 1 + P, d)."""
    n, t = bev.shape[:2]
    flat = bev.reshape(n * t, *bev.shape[2:])
    dev = next(enc.parameters()).device
    out = [
        enc.latents(torch.as_tensor(flat[i : i + chunk]).to(dev).float() / 255.0).cpu().numpy()
        for i in range(0, len(flat), chunk)
    ]
    z = np.concatenate(out)
    return z.reshape(n, t, *z.shape[1:])


def build_planner(cfg: PlannerConfig, rng: np.random.Generator) -> DeepSightPlanner:
    """A freshly initialised planner, its init drawn from ``rng`` (torch's global RNG left untouched)."""
    with torch_seeded(rng, high=2**31 - 1):
        return DeepSightPlanner(cfg)


def frame_index(variant: str) -> list[int]:
    """Which of the five BEV frames a variant predicts (B: t+0.5 s only)."""
    return [] if variant == "A" else ([1] if variant == "B" else list(range(len(HORIZONS))))


def make_batch(
    s: SampleSet, idx: np.ndarray, variant: str, lat: np.ndarray | None, cot_mode: str, flags: np.ndarray
) -> PlannerBatch:
    """Tensors for samples ``idx``; ``flags`` (N,) marks annotated frames (False: think segment None)."""
    think = np.full((len(idx), MAX_THINK), token_id("<pad>"), np.int64)
    lens = np.zeros(len(idx), np.int64)
    for j, i in enumerate(idx):
        toks = think_tokens(s.ann[i] if flags[i] else None, "long" if cot_mode == "long" else "adaptive")
        think[j, : len(toks)] = [token_id(t) for t in toks]
        lens[j] = len(toks)
    latents = None
    if lat is not None and variant != "A":
        latents = torch.as_tensor(lat[idx][:, frame_index(variant)])
    return PlannerBatch(
        torch.as_tensor(s.kin[idx]),
        torch.as_tensor(s.ego[idx]),
        torch.as_tensor(flags[idx]),
        torch.as_tensor(think),
        torch.as_tensor(lens),
        torch.as_tensor(s.wp[idx]),
        latents,
    )


def train_planner(
    planner: DeepSightPlanner,
    s: SampleSet,
    lat: np.ndarray | None,
    rng: np.random.Generator,
    *,
    n_steps: int = 300,
    batch: int = 32,
    lr: float = 1e-3,
    cot_mode: str = "adaptive",
    unannotated: float = 0.3,
    complex_share: float = 0.0,
    precision: str = "fp32",
    grad_accum: int = 1,
) -> list[float]:
    """AdamW on L = CE + L1 + w * MSE; ``unannotated`` of the frames get flag False / ``None`` (brief).

    ``complex_share`` > 0 oversamples the complex (long-tail) frames: that share of every batch is drawn from
    them (0: uniform batches). ``precision`` (``fp32``, ``bf16``, ``fp16`` on a GPU) and ``grad_accum`` are
    :class:`icml2026.core.training.TrainingOptions`': each step's batch of ``batch`` frames is split into
    ``grad_accum`` equal micro-batches whose gradients are averaged (a memory knob: the batch a step sees stays
    ``batch``). The loop is :func:`icml2026.core.training.train_steps` (``accelerate``); with fp32 and
    ``grad_accum = 1`` it computes what a plain AdamW loop computes. Returns the loss of every step."""
    options = TrainingOptions(precision=precision, grad_accum=grad_accum, max_grad_norm=1.0)  # checks both
    n_batch = min(batch, len(s))
    if n_batch % grad_accum:
        raise BadInput(f"grad_accum = {grad_accum}: must divide the batch ({n_batch} frames) into equal "
                       "micro-batches")
    g = torch_generator(rng)
    flags = rng.random(len(s)) >= unannotated
    cpx = np.nonzero(s.complex & flags)[0]
    simple = np.nonzero(~(s.complex & flags))[0]
    # the linear ego -> waypoint path needs weights of order 1 (e.g. 0.5 a t^2 from the acceleration input):
    # it learns at 10x the rate, else AdamW moves it by only ~lr per step
    lin = {id(p) for p in planner.ego_wp.parameters()}
    groups: list[dict[str, Any]] = [
        {"params": [p for p in planner.parameters() if id(p) not in lin]},
        {"params": list(planner.ego_wp.parameters()), "weight_decay": 0.0},
    ]
    opt = torch.optim.AdamW(groups, lr=lr, weight_decay=0.01)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=[lr, 10 * lr], total_steps=max(n_steps, 1),
                                                pct_start=0.1)

    def micro_batches() -> Iterator[PlannerBatch]:
        for _ in track(range(n_steps), f"deepsight planner {planner.cfg.variant} training", total=n_steps):
            idx = torch.randint(0, len(s), (n_batch,), generator=g).numpy()
            if complex_share > 0 and len(cpx) and len(simple):
                k = int(round(complex_share * len(idx)))
                pick = torch.randint(0, 2**31 - 1, (len(idx),), generator=g).numpy()
                idx = np.concatenate([cpx[pick[:k] % len(cpx)], simple[pick[k:] % len(simple)]])
            for part in np.split(idx, grad_accum):
                yield make_batch(s, part, planner.cfg.variant, lat, cot_mode, flags)

    device = str(next(planner.parameters()).device)
    # the planner is trained in place (one process: accelerate does not wrap it); its loss is a method, not forward
    result = train_steps(planner, opt, micro_batches(), lambda _m, b: planner.losses(b).total, options=options,
                         device=device, scheduler=sched)
    planner.eval()
    return result.losses


@dataclass
class OpenLoop:
    """Open-loop metrics on a sample set: per-sample L2 at 1 s and 2 s (metres), latent cosines per horizon
    (planner and persistence, (N, T)), reasoning tokens per sample and the predicted latents."""

    l2_1s: np.ndarray
    l2_2s: np.ndarray
    cos: np.ndarray | None
    cos_persist: np.ndarray | None
    reasoning_tokens: np.ndarray
    pred_latents: np.ndarray | None
    waypoints: np.ndarray | None = None  # (N, 4, 2) metres, the plans themselves


def _cos(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Mean over tokens of the cosine between (…, tokens, d) arrays."""
    num = (a * b).sum(-1)
    den = np.linalg.norm(a, axis=-1) * np.linalg.norm(b, axis=-1) + 1e-8
    out: np.ndarray = (num / den).mean(-1)
    return out


@torch.no_grad()
def open_loop_eval(planner: DeepSightPlanner, s: SampleSet, lat: np.ndarray | None, chunk: int = 128) -> OpenLoop:
    """Greedy plans on every sample (flag True); L2 of waypoints at t+1 s / t+2 s; cosine of the predicted
    standardised latents to the targets per horizon, beside the persistence baseline (copy the t latent)."""
    planner.eval()
    wps: list[np.ndarray] = []
    toks: list[int] = []
    lats: list[np.ndarray] = []
    for i in range(0, len(s), chunk):
        sl = slice(i, i + chunk)
        wp, reasoning, pl, _ = planner.plan_batch(torch.as_tensor(s.kin[sl]), torch.as_tensor(s.ego[sl]))
        wps.append(wp.cpu().numpy())
        toks.extend(len(r) for r in reasoning)
        if pl is not None:
            lats.append(pl.cpu().numpy())
    wp = np.concatenate(wps)
    err = np.linalg.norm(wp - s.wp, axis=-1)
    cos = cos_p = pred = None
    if lats and lat is not None:
        pred = np.concatenate(lats)
        tgt = lat[:, frame_index(planner.cfg.variant)]
        cos = _cos(pred, tgt)
        cos_p = _cos(np.repeat(lat[:, :1], tgt.shape[1], 1), tgt)
    return OpenLoop(err[:, 1], err[:, 3], cos, cos_p, np.asarray(toks, float), pred, wp)
