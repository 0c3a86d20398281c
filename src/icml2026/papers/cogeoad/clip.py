"""A real open_clip model as the frozen encoder of CoGeoAD: the image tower's layer taps and the text tower's
zero-shot prompts, read from a local folder through :func:`icml2026.core.loaders.load_vision_backbone`.

:class:`ClipEncoder` implements :class:`~.backbone.ImageEncoder` over ``model.visual`` (an open_clip
``VisionTransformer``): the patch tokens and class token after each tap layer, passed through the tower's
final LayerNorm and projection (``ln_post``, ``proj``) into the joint image-text space, as AnomalyCLIP and
PointAD do with intermediate layers. The taps scale the paper's 6/12/18/24 of ViT-L/14's 24 layers to the
model's depth (:func:`clip_taps`). Images follow the model's own preprocessing: resized to its input size
(bicubic) and normalised with its mean and std (``data_config`` of the folder).

:meth:`ClipEncoder.text_prototypes` sends the normal / abnormal prompt ensembles (:data:`NORMAL_STATES`,
:data:`ABNORMAL_STATES` in :data:`TEMPLATES`, about a generic "object": object-agnostic, as the paper's
"[V] perfect object" / "[W] damaged object") through the text tower; the mean of the normalised embeddings
of each ensemble is that class's text feature T. :class:`~.method.CoGeoAD` with ``prompts="text"`` uses them
as the stream prototypes in place of the learnable ones.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from icml2026.core.errors import BadInput, require_module
from icml2026.core.validate import as_array

require_module("torch", "cogeoad")
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

__all__ = ["ClipEncoder", "clip_taps", "load_clip_encoder", "NORMAL_STATES", "ABNORMAL_STATES", "TEMPLATES"]

# Deviation: a hand-written prompt ensemble (the zero-shot text of the paper's object-agnostic prompts,
# "perfect object" / "damaged object", widened by state words and templates) in place of the learned context
# vectors [V1..Vn] / [W1..Wn]; without auxiliary training the context cannot be learned.
NORMAL_STATES = ("perfect {}", "flawless {}", "intact {}", "{} without defect", "{} without damage")
ABNORMAL_STATES = ("damaged {}", "broken {}", "defective {}", "{} with a defect", "{} with damage")
TEMPLATES = ("a photo of a {}.", "a rendering of a {}.", "a close-up photo of the {}.", "a point cloud of a {}.")


def clip_taps(depth: int) -> tuple[int, ...]:
    """Layers (1-based) whose tokens are tapped: the paper's 6/12/18/24 of 24, scaled to ``depth`` layers."""
    if isinstance(depth, bool) or not isinstance(depth, (int, np.integer)) or depth < 1:
        raise ValueError(f"depth = {depth!r}: must be a positive integer")
    return tuple(sorted({max(1, round(depth * k / 4)) for k in (1, 2, 3, 4)}))


class ClipEncoder:
    """:class:`~.backbone.ImageEncoder` over an open_clip model's image tower, with its text tower for T.

    Parameters
    ----------
    model : an open_clip ``CLIP`` (its ``visual`` an open_clip ``VisionTransformer``), in eval mode.
    tokenizer : open_clip's tokenizer for ``model``.
    data_config : ``input_size`` (3, H, W) with H = W, ``mean``, ``std`` (as :func:`load_vision_backbone` gives).
    batch_size : images per forward pass.
    name : where the model came from, for messages.
    """

    def __init__(
        self, model: Any, tokenizer: Any, data_config: dict[str, Any], *, batch_size: int = 32, name: str = "encoder"
    ) -> None:
        visual = getattr(model, "visual", None)
        blocks = getattr(getattr(visual, "transformer", None), "resblocks", None)
        if visual is None or blocks is None or not hasattr(visual, "forward_intermediates"):
            raise BadInput(
                f"encoder = {name!r}: the image tower is not an open_clip VisionTransformer (ViT-B/L...); "
                "CoGeoAD taps intermediate ViT layers"
            )
        _, height, width = tuple(int(v) for v in data_config["input_size"])
        patch = visual.patch_size[0] if isinstance(visual.patch_size, (tuple, list)) else int(visual.patch_size)
        if height != width or height % patch:
            raise BadInput(f"encoder = {name!r}: needs a square input whose side is a multiple of the patch "
                           f"({height} x {width}, patch {patch})")
        self.model, self.tokenizer, self.visual = model, tokenizer, visual
        self.depth = len(blocks)
        self.taps = clip_taps(self.depth)
        self.n_layers = len(self.taps)
        self.image_size = height
        self.grid = height // patch
        self.width = int(visual.proj.shape[1]) if visual.proj is not None else int(visual.transformer.width)
        self.mean = torch.tensor(data_config["mean"], dtype=torch.float32).view(1, 3, 1, 1)
        self.std = torch.tensor(data_config["std"], dtype=torch.float32).view(1, 3, 1, 1)
        self.batch_size = batch_size
        self.name = name

    @property
    def device(self) -> torch.device:
        return next(self.model.parameters()).device

    @property
    def dtype(self) -> torch.dtype:
        return next(self.model.parameters()).dtype

    def preprocess(self, images: np.ndarray) -> torch.Tensor:
        """(N, H, W, 3) or grey (N, H, W) renders in [0, 1] -> (N, 3, S, S) at the model's input size S,
        normalised with its mean and std (the official open_clip preprocessing, without a crop: renders are
        square)."""
        x = np.asarray(images, np.float32)
        if x.ndim == 3:
            x = np.repeat(x[..., None], 3, axis=-1)
        t = torch.from_numpy(x).permute(0, 3, 1, 2).contiguous()
        if t.shape[-1] != self.image_size or t.shape[-2] != self.image_size:
            t = F.interpolate(t, size=(self.image_size, self.image_size), mode="bicubic", align_corners=False,
                              antialias=True).clamp(0, 1)
        return (t - self.mean) / self.std

    def encode_image(self, images: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """images (N, H, W[, 3]) in [0, 1] -> tokens (L, N, P, d), cls (L, N, d) in the joint space, float32."""
        x = self.preprocess(as_array(images, "images", ndim=(3, 4), lo=0.0, hi=1.0))
        idx = [t - 1 for t in self.taps]  # open_clip counts blocks from 0
        toks, clss = [], []
        with torch.no_grad():
            for i in range(0, len(x), self.batch_size):
                out = self.visual.forward_intermediates(
                    x[i : i + self.batch_size].to(self.device, self.dtype),
                    indices=idx,
                    normalize_intermediates=True,  # ln_post on every tap, as on the last layer
                    intermediates_only=True,
                    output_fmt="NLC",
                    output_extra_tokens=True,
                )
                pt = torch.stack(out["image_intermediates"])  # (L, B, P, width)
                cl = torch.stack(out["image_intermediates_prefix"])[:, :, 0]  # (L, B, width)
                if self.visual.proj is not None:
                    pt, cl = pt @ self.visual.proj, cl @ self.visual.proj
                toks.append(pt.float().cpu())
                clss.append(cl.float().cpu())
        return torch.cat(toks, 1).numpy(), torch.cat(clss, 1).numpy()

    def encode_text(self, prompts: Sequence[str]) -> np.ndarray:
        """Normalised text-tower embeddings (n, d) of ``prompts``."""
        tokens = self.tokenizer(list(prompts)).to(self.device)
        with torch.no_grad():
            emb = self.model.encode_text(tokens).float()
        return F.normalize(emb, dim=-1).cpu().numpy()

    def text_prototypes(self, obj: str = "object") -> np.ndarray:
        """T (2, d): [normal, abnormal], each the renormalised mean of its prompt ensemble's embeddings."""
        out = []
        for states in (NORMAL_STATES, ABNORMAL_STATES):
            prompts = [t.format(s.format(obj)) for s in states for t in TEMPLATES]
            mean = self.encode_text(prompts).mean(0)
            out.append(mean / max(float(np.linalg.norm(mean)), 1e-12))
        return np.stack(out).astype(np.float32)


def load_clip_encoder(path: str | Path, *, device: str = "cpu", key: str = "encoder") -> ClipEncoder:
    """An open_clip folder (``open_clip_config.json`` + weights) as a :class:`ClipEncoder`, never downloaded.

    Raises :class:`~icml2026.core.errors.BadInput` naming ``key`` when the folder is missing, holds no
    open_clip model, or its image tower is not a ViT; ``MissingDependency`` when open_clip is not installed.
    """
    from icml2026.core.loaders import load_vision_backbone

    bb = load_vision_backbone(path, device=device, key=key)
    if bb.kind != "open_clip":
        raise BadInput(f"{key} = {str(path)!r}: holds a {bb.kind} model; CoGeoAD needs an open_clip folder "
                       "(image and text towers)")
    return ClipEncoder(bb.model, bb.tokenizer, bb.data_config, name=str(path))
