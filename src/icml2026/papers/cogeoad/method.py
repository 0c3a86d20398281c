"""CoGeoAD: MVA (Step 2), MS-CGF with learnable prompts (Step 3), point lifting and training.

Symbols (brief -> code)
-----------------------
I_k, h_k, s_k, alpha_k   view image, ``_MVA.encode`` output, ``_MVA.score`` output, ``CoGeoAD.view_weights``
gamma, tau               ``gamma``, ``tau``: alpha_k = exp(gamma s_k / tau) / sum_j exp(gamma s_j / tau)
L_ent, lambda_ent        ``_entropy``, ``lam_ent``; ``entropy_sign`` = +1 rewards entropy (the stated intent),
                         -1 penalises it (the sign as printed), 0 drops the term
f_k, beta, F_g           layer tokens ``tokens[l]``, the layer selector's softmax output, the fused map
T                        two prototype vectors per stream (stand-in for the learnable prompts)
S_point^Co, S_point^Geo  per-stream point maps; A_point = max over streams (element-wise)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from icml2026.core import torch_generator
from icml2026.core.device import check_device_name, resolve_device
from icml2026.core.errors import require_module
from icml2026.core.progress import track

from .backbone import ImageEncoder
from .data import PointCloud
from .render import DEFAULT_VIEWS, Renders, render_views

require_module("torch", "cogeoad")
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch import nn  # noqa: E402

__all__ = ["CoGeoAD", "Prepared", "prepare_objects", "STREAMS"]

STREAMS = ("colour", "geometry", "concat")
Stream = Literal["colour", "geometry", "concat"]


@dataclass
class Prepared:
    """One object rendered and encoded once (the frozen encoder's output is reused by every variant).

    tokens[m] (L, V, P, d) and cls[m] (L, V, d) for m in {"colour", "geometry"}; small[m] (V, C, h, w) the
    MVA's inputs (renders at half resolution); interp_idx / interp_w (V, n, 4) bilinear sampling of the
    patch grid at every point's pixel (== upsampling the patch map to H x W, then reading pi(p)).
    """

    cloud: PointCloud
    renders: Renders
    tokens: dict[str, np.ndarray]
    cls: dict[str, np.ndarray]
    small: dict[str, np.ndarray]
    interp_idx: np.ndarray
    interp_w: np.ndarray

    def select_views(self, views: Sequence[tuple[float, float]]) -> Prepared:
        """The same object restricted to a subset of its rendered views (no re-rendering)."""
        have = list(self.renders.views)
        try:
            idx = [have.index((float(a), float(b))) for a, b in views]
        except ValueError:
            raise ValueError(f"views: {tuple(views)} are not all among the rendered views") from None
        r = self.renders
        sub = Renders(
            r.colour[idx],
            r.geometry[idx],
            r.mask[idx],
            r.index[idx],
            r.pixels[idx],
            r.visibility[idx],
            tuple(have[i] for i in idx),
            r.size,
        )
        return Prepared(
            self.cloud,
            sub,
            {m: t[:, idx] for m, t in self.tokens.items()},
            {m: c[:, idx] for m, c in self.cls.items()},
            {m: x[idx] for m, x in self.small.items()},
            self.interp_idx[idx],
            self.interp_w[idx],
        )


def _interp(pixels: np.ndarray, size: int, grid: int) -> tuple[np.ndarray, np.ndarray]:
    patch = size / grid
    gy = pixels[..., 0] / patch - 0.5
    gx = pixels[..., 1] / patch - 0.5
    y0, x0 = np.floor(gy), np.floor(gx)
    fy, fx = gy - y0, gx - x0
    idx, w = [], []
    for dy, wy in ((0, 1 - fy), (1, fy)):
        for dx, wx in ((0, 1 - fx), (1, fx)):
            yy = np.clip(y0 + dy, 0, grid - 1).astype(np.int64)
            xx = np.clip(x0 + dx, 0, grid - 1).astype(np.int64)
            idx.append(yy * grid + xx)
            w.append(wy * wx)
    return np.stack(idx, -1), np.stack(w, -1).astype(np.float32)


def prepare_objects(
    clouds: Sequence[PointCloud],
    encoder: ImageEncoder,
    views: Sequence[tuple[float, float]] = DEFAULT_VIEWS,
    *,
    splat: int | None = None,
    lit_colour: bool = False,
    desc: str = "cogeoad render + encode",
) -> list[Prepared]:
    """Render every cloud from ``views`` (one projection pass each) and encode both modalities once
    (``lit_colour``: colour images lit as in the official script, see :func:`~.render.render_views`)."""
    size = int(getattr(encoder, "image_size", 64))
    out = []
    for c in track(list(clouds), desc, total=len(clouds)):
        if not isinstance(c, PointCloud):
            raise TypeError(f"clouds: expected PointCloud items, got {type(c).__name__}")
        r = render_views(c, views, size, splat=splat, lit_colour=lit_colour)
        tok_c, cls_c = encoder.encode_image(r.colour)
        tok_g, cls_g = encoder.encode_image(r.geometry)
        half = max(size // 2, 8)
        col = torch.from_numpy(r.colour.astype(np.float32)).permute(0, 3, 1, 2)
        geo = torch.from_numpy(r.geometry.astype(np.float32))[:, None]
        small_c = F.adaptive_avg_pool2d(col, half).numpy()
        small_g = F.adaptive_avg_pool2d(geo, half).numpy()
        idx, w = _interp(r.pixels, size, encoder.grid)
        out.append(
            Prepared(
                c,
                r,
                {"colour": tok_c, "geometry": tok_g},
                {"colour": cls_c, "geometry": cls_g},
                {"colour": small_c, "geometry": small_g},
                idx,
                w,
            )
        )
    return out


class _MVA(nn.Module):
    """Step 2: h_k = W(A(Phi_conv(I_k))), s_k = score(h_k)."""

    def __init__(self, in_ch: int, hidden: int = 16) -> None:
        super().__init__()
        self.conv = nn.Sequential(
            nn.Conv2d(in_ch, 8, 7, stride=2, padding=3),
            nn.ReLU(),
            nn.Conv2d(8, 16, 5, stride=2, padding=2),
            nn.ReLU(),
            nn.Conv2d(16, 16, 3, stride=2, padding=1),
            nn.ReLU(),
            nn.Conv2d(16, 16, 3, stride=2, padding=1),
            nn.ReLU(),
        )
        self.proj = nn.Linear(16, hidden)  # W
        self.score = nn.Sequential(nn.Tanh(), nn.Linear(hidden, 1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.proj(self.conv(x).mean((2, 3)))  # A = global average pooling
        return self.score(h)[:, 0]


class _Head(nn.Module):
    """The learnable part of one stream: prototypes T, the MS-CGF layer selector and the MVA."""

    def __init__(self, n_layers: int, width: int, in_ch: int) -> None:
        super().__init__()
        self.prompts = nn.Parameter(torch.zeros(2, width))
        self.selector = nn.Sequential(nn.Linear(n_layers * width, 32), nn.ReLU(), nn.Linear(32, n_layers))
        self.mva = _MVA(in_ch)


def _focal(p: torch.Tensor, y: torch.Tensor, gamma: float = 2.0) -> torch.Tensor:
    p = p.clamp(1e-6, 1 - 1e-6)
    return -(y * (1 - p) ** gamma * torch.log(p) + (1 - y) * p**gamma * torch.log(1 - p)).mean()


def _dice(p: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    return 1 - (2 * (p * y).sum() + 1) / (p.sum() + y.sum() + 1)


def _entropy(alpha: torch.Tensor, eps: float = 1e-8) -> torch.Tensor:
    return -(alpha * torch.log(alpha + eps)).sum()  # L_ent of Step 2


class CoGeoAD:
    """Zero-shot colour-geometry anomaly detector (Steps 1-3 and the training of the brief).

    Parameters (hyper-parameters are stored unchanged; validation happens in :meth:`fit`)
    ----------
    encoder : the frozen :class:`~.backbone.ImageEncoder`.
    streams : which modality streams are scored and fused by element-wise max: ``("colour", "geometry")``
        (CoGeoAD), one of them alone (ablations), or ``("concat",)`` (features concatenated before the
        similarity: the concatenation-fusion baseline).
    views : (theta_x, theta_y) view angles (default: the paper's 20).
    lit_colour : render colour images lit (the official script) instead of raw RGB, when scoring clouds.
    view_attention : ``"mva"`` (Step 2) or ``"uniform"`` (view averaging).
    layers : ``"select"`` (MS-CGF's learnable selector beta), ``"mean"`` (fixed equal weights, as
        AnomalyCLIP/PointAD) or ``"last"`` (last layer only).
    similarity : ``"per_layer"`` (similarity per layer, then beta-weighted sum: the project page) or
        ``"fused"`` (beta-weighted features, then one similarity).
    prompts : ``"learned"``, ``"fixed"`` (training-free prototypes: the mean normal token and its
        negation, stand-in for CLIP's hand-written prompts) or ``"text"`` (the encoder's text tower on the
        zero-shot prompt ensembles, :meth:`~.clip.ClipEncoder.text_prototypes`; frozen, while the selector and
        the MVA still learn when ``n_steps > 0``).
    entropy_sign, lam_ent : the MVA entropy term is ``-entropy_sign * lam_ent * L_ent``.
    gamma, tau : the MVA softmax of Step 2.
    n_steps, batch_size, lr : prompt learning on the auxiliary objects.
    top_k : object score = mean of the top ``top_k`` fraction of point scores.
    logit_scale : 1 / temperature of the prompt similarity (CLIP: 100; ours 1/0.07).
    device : torch device name of the heads and their inputs (resolved in :meth:`fit`); the heads are
        initialised on the CPU, so a seed gives the same initial heads on every device.
    """

    def __init__(
        self,
        encoder: ImageEncoder,
        *,
        streams: Sequence[Stream] = ("colour", "geometry"),
        views: Sequence[tuple[float, float]] = DEFAULT_VIEWS,
        splat: int | None = None,
        lit_colour: bool = False,
        view_attention: Literal["mva", "uniform"] = "mva",
        layers: Literal["select", "mean", "last"] = "select",
        similarity: Literal["per_layer", "fused"] = "per_layer",
        prompts: Literal["learned", "fixed", "text"] = "learned",
        entropy_sign: float = 1.0,
        lam_ent: float = 0.1,
        gamma: float = 1.0,
        tau: float = 1.0,
        n_steps: int = 100,
        batch_size: int = 8,
        lr: float = 5e-3,
        top_k: float = 0.02,
        logit_scale: float = 1 / 0.07,
        device: str = "cpu",
    ) -> None:
        self.encoder, self.streams, self.views, self.splat = encoder, tuple(streams), tuple(views), splat
        self.lit_colour = lit_colour
        self.view_attention, self.layers, self.similarity, self.prompts = view_attention, layers, similarity, prompts
        self.entropy_sign, self.lam_ent, self.gamma, self.tau = entropy_sign, lam_ent, gamma, tau
        self.n_steps, self.batch_size, self.lr = n_steps, batch_size, lr
        self.top_k, self.logit_scale = top_k, logit_scale
        self.device = device

    # ------------------------------------------------------------------------------------ validation
    def _validate(self) -> None:
        check_device_name(self.device)
        if not self.streams or any(s not in STREAMS for s in self.streams):
            raise ValueError(f"streams = {self.streams!r}: must be a non-empty subset of {STREAMS}")
        if "concat" in self.streams and len(self.streams) > 1:
            raise ValueError("streams: 'concat' fuses both modalities itself and must stand alone")
        for name, val, ok in (
            ("view_attention", self.view_attention, ("mva", "uniform")),
            ("layers", self.layers, ("select", "mean", "last")),
            ("similarity", self.similarity, ("per_layer", "fused")),
            ("prompts", self.prompts, ("learned", "fixed", "text")),
        ):
            if val not in ok:
                raise ValueError(f"{name} = {val!r}: must be one of {ok}")
        for fname, fval, lo in (
            ("lam_ent", self.lam_ent, 0.0),
            ("gamma", self.gamma, 1e-9),
            ("tau", self.tau, 1e-9),
            ("lr", self.lr, 1e-12),
            ("logit_scale", self.logit_scale, 1e-9),
        ):
            if not isinstance(fval, (int, float)) or not np.isfinite(fval) or fval < lo:
                raise ValueError(f"{fname} = {fval!r}: must be a finite number >= {lo:g}")
        if self.entropy_sign not in (-1, 0, 1):
            raise ValueError(f"entropy_sign = {self.entropy_sign!r}: must be -1, 0 or +1")
        if not 0 < self.top_k <= 1:
            raise ValueError(f"top_k = {self.top_k!r}: must be in (0, 1]")
        for iname, ival in (("n_steps", self.n_steps), ("batch_size", self.batch_size)):
            if (
                isinstance(ival, bool)
                or not isinstance(ival, (int, np.integer))
                or ival < (0 if iname == "n_steps" else 1)
            ):
                raise ValueError(
                    f"{iname} = {ival!r}: must be a non-negative integer"
                    if iname == "n_steps"
                    else f"{iname} = {ival!r}: must be a positive integer"
                )

    def _as_prepared(self, objs: Sequence[PointCloud | Prepared], desc: str) -> list[Prepared]:
        clouds = [o for o in objs if isinstance(o, PointCloud)]
        ready = {i: o for i, o in enumerate(objs) if isinstance(o, Prepared)}
        if len(clouds) + len(ready) != len(objs):
            raise TypeError("objects: expected PointCloud or Prepared items")
        fresh = iter(
            prepare_objects(clouds, self.encoder, self.views, splat=self.splat, lit_colour=self.lit_colour, desc=desc)
            if clouds
            else []
        )
        out = [ready[i] if i in ready else next(fresh) for i in range(len(objs))]
        for p in out:
            if p.renders.views != tuple((float(a), float(b)) for a, b in self.views):
                raise ValueError("objects: a Prepared object was rendered from other views than this model's")
        return out

    # ------------------------------------------------------------------------------------ forward
    def _stream_tensors(self, prep: Prepared, stream: str) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        if stream == "concat":
            tok = np.concatenate([prep.tokens["colour"], prep.tokens["geometry"]], -1)
            cls = np.concatenate([prep.cls["colour"], prep.cls["geometry"]], -1)
            small = np.concatenate([prep.small["colour"], prep.small["geometry"]], 1)
        else:
            tok, cls, small = prep.tokens[stream], prep.cls[stream], prep.small[stream]
        dev = self._dev()
        return torch.from_numpy(tok).to(dev), torch.from_numpy(cls).to(dev), torch.from_numpy(small).to(dev)

    def _dev(self) -> torch.device:
        """The fitted heads' device (the CPU before :meth:`fit`)."""
        return getattr(self, "device_", torch.device("cpu"))

    def _stream_forward(
        self, head: _Head, prep: Prepared, stream: str
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """(patch map (V, P), point scores (n,), alpha (V,)) of one stream."""
        tok, cls, small = self._stream_tensors(prep, stream)
        dev = tok.device
        n_layers, n_views = tok.shape[0], tok.shape[1]
        if self.layers == "select":
            beta = torch.softmax(head.selector(cls.permute(1, 0, 2).reshape(n_views, -1)), -1)  # (V, L)
        elif self.layers == "mean":
            beta = torch.full((n_views, n_layers), 1.0 / n_layers, device=dev)
        else:
            beta = torch.zeros(n_views, n_layers, device=dev)
            beta[:, -1] = 1.0
        t = F.normalize(head.prompts, dim=-1)  # T: [normal, abnormal]
        if self.similarity == "per_layer":  # S_g per layer, then the beta-weighted sum (project page)
            sim = torch.einsum("lvpd,cd->lvpc", F.normalize(tok, dim=-1), t) * self.logit_scale
            prob = torch.softmax(sim, -1)[..., 1]  # (L, V, P)
            pmap = torch.einsum("vl,lvp->vp", beta, prob)
        else:  # F_g = sum_l beta_l f_l, then one similarity
            fused = torch.einsum("vl,lvpd->vpd", beta, F.normalize(tok, dim=-1))
            sim = torch.einsum("vpd,cd->vpc", F.normalize(fused, dim=-1), t) * self.logit_scale
            pmap = torch.softmax(sim, -1)[..., 1]
        if self.view_attention == "mva":
            alpha = torch.softmax(self.gamma * head.mva(small) / self.tau, 0)  # Step 2
        else:
            alpha = torch.full((n_views,), 1.0 / n_views, device=dev)
        idx = torch.from_numpy(prep.interp_idx).reshape(n_views, -1).to(dev)
        w_interp = torch.from_numpy(prep.interp_w).to(dev)
        sv = (torch.gather(pmap, 1, idx).reshape(prep.interp_w.shape) * w_interp).sum(-1)
        vis = torch.from_numpy(prep.renders.visibility.astype(np.float32)).to(dev)
        wm = alpha[:, None] * vis
        den = wm.sum(0)
        point = torch.where(den > 0, (wm * sv).sum(0) / den.clamp(min=1e-12), torch.zeros_like(den))
        return pmap, point, alpha

    def _heads(self) -> list[_Head]:
        return [h for h in self.heads_ if isinstance(h, _Head)]

    def _forward(self, prep: Prepared) -> dict[str, Any]:
        maps, points, alphas = [], [], {}
        for s, head in zip(self.streams, self._heads(), strict=True):
            pmap, point, alpha = self._stream_forward(head, prep, s)
            maps.append(pmap)
            points.append(point)
            alphas[s] = alpha
        point = torch.stack(points).max(0).values  # A_point = max(S^Co, S^Geo)
        k = max(1, int(round(self.top_k * point.numel())))
        obj = torch.topk(point, k).values.mean()
        return {
            "maps": torch.stack(maps).max(0).values,
            "point": point,
            "object": obj,
            "alpha": alphas,
            "stream_points": dict(zip(self.streams, points, strict=True)),
        }

    # ------------------------------------------------------------------------------------ training
    def fit(self, aux_objects: Sequence[PointCloud | Prepared], rng: np.random.Generator) -> CoGeoAD:
        """Learn prompts, MVA and layer selector on auxiliary objects with GT (focal + dice on the 2D maps
        and on the point maps, BCE on the object score, minus the entropy reward of Step 2)."""
        self._validate()
        if not isinstance(rng, np.random.Generator):
            raise TypeError(f"rng: expected numpy.random.Generator, got {type(rng).__name__}")
        self.device_ = resolve_device(self.device)
        if len(aux_objects) == 0:
            raise ValueError("aux_objects: needs at least one object")
        preps = self._as_prepared(aux_objects, "cogeoad aux render + encode")
        self.aux_categories_ = sorted({p.cloud.category for p in preps})
        gen = torch_generator(rng)
        width = self.encoder.width
        text = None
        if self.prompts == "text":
            if not hasattr(self.encoder, "text_prototypes"):
                raise ValueError("prompts = 'text': the encoder has no text tower (use an open_clip encoder)")
            text = self.encoder.text_prototypes()
            if np.shape(text) != (2, width):
                raise ValueError(f"prompts = 'text': text features of shape {np.shape(text)}, need (2, {width})")
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(int(torch.randint(0, 2**31 - 1, (1,), generator=gen)))
            # Deviation: prompts, selector and MVA per stream (the paper does not say whether they are shared)
            self.heads_ = nn.ModuleList(
                [
                    _Head(
                        self.encoder.n_layers,
                        2 * width if s == "concat" else width,
                        {"colour": 3, "geometry": 1, "concat": 4}[s],
                    )
                    for s in self.streams
                ]
            ).to(self.device_)
        for head, s in zip(self._heads(), self.streams, strict=True):
            with torch.no_grad():
                if self.prompts == "fixed":  # Deviation: training-free stand-in for hand-written prompts
                    normals = [p for p in preps if not p.cloud.is_anomalous] or preps
                    mean = torch.stack(
                        [F.normalize(self._stream_tensors(p, s)[0][-1], dim=-1).mean((0, 1)) for p in normals]
                    ).mean(0)
                    head.prompts.copy_(torch.stack([mean, -mean]))
                elif self.prompts == "text":  # T from the text tower, frozen
                    proto = torch.from_numpy(np.asarray(text, np.float32)).to(self.device_)
                    head.prompts.copy_(torch.cat([proto, proto], -1) if s == "concat" else proto)
                    head.prompts.requires_grad_(False)
                else:
                    head.prompts.copy_(0.02 * torch.randn(tuple(head.prompts.shape), generator=gen))  # CPU draw
        self.loss_history_: list[float] = []
        # with text prototypes only the selector and the MVA learn (nothing, for last layer + uniform views)
        learns = self.prompts == "learned" or (
            self.prompts == "text" and (self.layers == "select" or self.view_attention == "mva")
        )
        if learns and self.n_steps > 0:
            labels = np.array([p.cloud.is_anomalous for p in preps])
            if labels.all() or not labels.any():
                raise ValueError("aux_objects: need both normal and defective objects to learn the prompts")
            self._train(preps, rng)
        for prm in self.heads_.parameters():
            prm.requires_grad_(False)
        return self

    def _train(self, preps: list[Prepared], rng: np.random.Generator) -> None:
        opt = torch.optim.Adam(self.heads_.parameters(), lr=self.lr)
        grid = self.encoder.grid
        dev = self._dev()
        # Deviation: the 2D focal + dice losses compare the patch-grid map with area-pooled GT masks (soft
        # targets) instead of the map upsampled to H x W with the binary mask (4-16x cheaper on a CPU).
        masks = [
            F.adaptive_avg_pool2d(torch.from_numpy(p.renders.mask.astype(np.float32))[:, None], grid)[:, 0].to(dev)
            for p in preps
        ]
        for _ in track(range(self.n_steps), "cogeoad prompt learning", total=self.n_steps):
            batch = rng.choice(len(preps), size=min(self.batch_size, len(preps)), replace=False)
            loss = torch.zeros((), device=dev)
            for i in batch:
                p = preps[int(i)]
                out = self._forward(p)
                up = out["maps"].reshape(-1, grid, grid)
                y2d = masks[int(i)]
                seen = torch.from_numpy(p.renders.visibility.any(0)).to(dev)
                yp = torch.from_numpy(p.cloud.labels.astype(np.float32)).to(dev)[seen]
                ap = out["point"][seen]
                obj_y = torch.tensor(float(p.cloud.is_anomalous), device=dev)
                loss = (
                    loss
                    + _focal(up, y2d)
                    + _dice(up, y2d)
                    + _focal(ap, yp)
                    + _dice(ap, yp)
                    + F.binary_cross_entropy(out["object"].clamp(1e-6, 1 - 1e-6), obj_y)
                )
                if self.view_attention == "mva" and self.entropy_sign != 0:
                    ent = sum(_entropy(a) for a in out["alpha"].values())
                    loss = loss - self.entropy_sign * self.lam_ent * ent  # reward (+1) or penalty (-1)
            loss = loss / len(batch)
            opt.zero_grad()
            loss.backward()
            opt.step()
            self.loss_history_.append(float(loss.detach()))

    # ------------------------------------------------------------------------------------ inference
    def _check_fitted(self) -> None:
        if not hasattr(self, "heads_"):
            raise RuntimeError("CoGeoAD: call fit(aux_objects, rng) before scoring")

    def score(self, cloud: PointCloud | Prepared) -> tuple[float, np.ndarray]:
        """(object score, point scores (n,)) of one cloud; scores are abnormal probabilities in [0, 1]."""
        self._check_fitted()
        (prep,) = self._as_prepared([cloud], "cogeoad render + encode")
        with torch.no_grad():
            out = self._forward(prep)
        return float(out["object"]), out["point"].cpu().numpy().astype(np.float64)

    def score_many(self, objs: Sequence[PointCloud | Prepared]) -> tuple[np.ndarray, list[np.ndarray]]:
        res = [self.score(o) for o in objs]
        return np.array([r[0] for r in res]), [r[1] for r in res]

    def view_weights(self, cloud: PointCloud | Prepared) -> dict[str, np.ndarray]:
        """alpha (V,) per stream for one object (uniform when view_attention is 'uniform')."""
        self._check_fitted()
        (prep,) = self._as_prepared([cloud], "cogeoad render + encode")
        with torch.no_grad():
            out = self._forward(prep)
        return {s: a.cpu().numpy().astype(np.float64) for s, a in out["alpha"].items()}

    def anomaly_maps(self, cloud: PointCloud | Prepared) -> np.ndarray:
        """The fused 2D anomaly maps (V, H, W), upsampled from the patch grid."""
        self._check_fitted()
        (prep,) = self._as_prepared([cloud], "cogeoad render + encode")
        g, size = self.encoder.grid, prep.renders.size
        with torch.no_grad():
            out = self._forward(prep)
            up = F.interpolate(
                out["maps"].reshape(-1, 1, g, g), size=(size, size), mode="bilinear", align_corners=False
            )[:, 0]
        return up.cpu().numpy().astype(np.float64)
