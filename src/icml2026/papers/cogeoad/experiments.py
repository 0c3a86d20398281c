"""Registered experiments of cogeoad: the renderer (criterion 1), the zero-shot study with every variant
(criteria 2, 3, 4a, 5 and the ablation table) and the view-attention study (criteria 2 and 4b).

The frozen encoder (the "CLIP" stand-in) is pre-trained once per run on normal renders of the auxiliary
categories and then shared by the sub-seeds, as one CLIP checkpoint is shared by every run of the paper;
each sub-seed draws its own auxiliary and test objects and trains its own prompts, MVA and selector.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Literal

import numpy as np

from icml2026.core import Check, Outcome, experiment, spawn
from icml2026.core.config import config, param
from icml2026.core.device import check_device_name, resolve_device
from icml2026.core.errors import BadInput
from icml2026.core.plotting import new_figure
from icml2026.core.progress import track

from .backbone import FrozenEncoder, ImageEncoder, pretrain_backbone
from .baselines import VARIANTS, make_variant
from .data import (
    AUX_CATEGORIES,
    COLOUR_DEFECTS,
    DEFECTS,
    GEOMETRY_DEFECTS,
    TEST_CATEGORIES,
    PointCloud,
    assert_disjoint,
    make_dataset,
    make_object,
)
from .eyecandies import check_eyecandies, is_eyecandies, load_eyecandies
from .method import CoGeoAD, Prepared, prepare_objects
from .metrics import aupro, average_precision, image_auroc, point_auroc
from .mvtec3d import check_mvtec3d, defect_family, load_mvtec3d, mvtec3d_categories
from .render import DEFAULT_VIEWS, POINTAD_VIEWS, SMALL_VIEWS, estimate_normals, lift_to_points, render_views

ViewSet = Literal["paper", "nine", "small"]
SUBSETS = {"colour": COLOUR_DEFECTS, "geometry": GEOMETRY_DEFECTS, "mixed": ("mixed",), "all": DEFECTS}
#: the defect families of the I-AUROC subsets (every defect counts in "all"; see ``defect_family``)
FAMILIES = ("colour", "geometry", "mixed", "all")


def _views(name: str) -> tuple[tuple[float, float], ...]:
    """The paper's 20 views, 9 of them (the 3 x 3 grid of the PointAD-style baseline; the quick preset) or 4."""
    return {"paper": DEFAULT_VIEWS, "nine": POINTAD_VIEWS}.get(name, SMALL_VIEWS)


def _spread(vals: list[float]) -> tuple[float, float, float]:
    a = np.asarray(vals, float)
    return float(a.mean()), float(a.min()), float(a.max())


def _summarise(per: dict[str, list[float]]) -> dict[str, float]:
    out: dict[str, float] = {}
    for k, v in per.items():
        out[k], out[f"{k}_min"], out[f"{k}_max"] = _spread(v)
    return out


# ============================================================================================ renderer

#: I-AUROC below which variant comparisons are not evidence (a detector must detect before its parts are
#: compared); fixed with the gating rule, not from a run: the brief's own detection targets are >= 0.85.
MIN_DETECTION_AUROC = 0.75

@config
class RendererConfig:
    """Criterion 1 on the renderer alone (sizes per sub-seed)."""

    n_seeds: int = param(3, 1, 10, help="independent sets of objects")
    n_points: int = param(2500, 300, 6000, help="points per object before defects")
    image_size: int = param(128, 16, 256, help="render side in pixels (paper: 336)")
    view_set: ViewSet = "paper"
    n_defective: int = param(8, 1, 32, help="defective objects per seed for the mask back-projection")


@experiment(
    "cogeoad.renderer",
    claim="One projection pass per view gives pixel-aligned colour/geometry renders: every visible point "
    "samples the same pixel in both, back-side points are occluded, a sphere is ~40-60% visible per view, "
    "rendered GT masks back-project to the point GT with IoU >= 0.9, and colours never touch geometry images.",
    presets={
        "smoke": RendererConfig(n_seeds=1, n_points=800, image_size=32, view_set="small", n_defective=2),
        "quick": RendererConfig(),
        "full": RendererConfig(n_points=4000, image_size=256, n_defective=24),
    },
)
def renderer(cfg: RendererConfig, rng: np.random.Generator) -> Outcome:
    views = _views(cfg.view_set)
    per: dict[str, list[float]] = {}

    def put(k: str, v: float) -> None:
        per.setdefault(k, []).append(float(v))

    for r in track(spawn(rng, cfg.n_seeds), "renderer seeds", total=cfg.n_seeds):
        r_s, r_d, r_p = spawn(r, 3)
        sphere = make_object("sphere", r_s, None, n_points=cfg.n_points, jitter_deg=0.0)
        # alignment probe: colours that encode the point id (16 levels per channel, 4096 ids)
        n = sphere.n_points
        put("probe_points", n)
        ids = np.arange(n)
        code = np.stack([ids % 16, (ids // 16) % 16, ids // 256], 1) / 15.0
        probe = sphere.with_colours(code)
        nrm = estimate_normals(probe.points)
        ren = render_views(probe, views, cfg.image_size, normals=nrm)
        agree, total, back_vis, front_vis, n_back, n_front = 0, 0, 0, 0, 0, 0
        for k, (tx, ty) in enumerate(views):
            # decode the point id from the colour image, recompute its shade independently, compare
            fg = ren.index[k] >= 0
            dec = np.rint(ren.colour[k][fg] * 15).astype(int)
            pid = dec[:, 0] + 16 * dec[:, 1] + 256 * dec[:, 2]
            from .render import _AMBIENT, _GREY, _LIGHT, view_rotation

            n_cam = nrm[pid] @ view_rotation(tx, ty).T
            n_cam[n_cam[:, 2] < 0] *= -1
            shade = _GREY * (_AMBIENT + (1 - _AMBIENT) * np.clip(n_cam @ _LIGHT, 0, None))
            agree += int(np.sum(np.abs(ren.geometry[k][fg] - shade) < 1e-9))
            total += int(fg.sum())
            # occlusion: outward normals (analytic on a sphere: the position) facing away are hidden
            z_cam = (probe.points - probe.points.mean(0)) @ view_rotation(tx, ty).T
            zc = z_cam[:, 2] / np.linalg.norm(z_cam, axis=1)
            back, front = zc < -0.3, zc > 0.3
            back_vis += int(ren.visibility[k][back].sum())
            n_back += int(back.sum())
            front_vis += int(ren.visibility[k][front].sum())
            n_front += int(front.sum())
            put("sphere_visible_fraction", float(ren.visibility[k].mean()))
        put("alignment_agreement", agree / max(total, 1))
        put("back_side_visible_fraction", back_vis / max(n_back, 1))
        put("front_side_visible_fraction", front_vis / max(n_front, 1))
        # mask back-projection: majority vote of the rendered masks over the views that see a point
        inter = union = 0
        for i, rr in enumerate(spawn(r_d, cfg.n_defective)):
            obj = make_object(
                TEST_CATEGORIES[i % len(TEST_CATEGORIES)], rr, DEFECTS[i % len(DEFECTS)], n_points=cfg.n_points
            )
            rd = render_views(obj, views, cfg.image_size)
            seen = rd.visibility.any(0)
            rec = (lift_to_points(rd.mask.astype(float), rd) > 0.5) & seen
            gt = obj.labels.astype(bool) & seen
            inter += int((rec & gt).sum())
            union += int((rec | gt).sum())
        put("mask_backprojection_iou", inter / max(union, 1))
        put("defect_points_seen", union)
        # permuting colours leaves every geometry image bit-identical
        perm = sphere.with_colours(sphere.colours[r_p.permutation(n)])
        g0 = render_views(sphere, views, cfg.image_size, normals=nrm).geometry
        g1 = render_views(perm, views, cfg.image_size, normals=nrm).geometry
        put("geometry_change_under_colour_permutation", float(np.abs(g0 - g1).max()))
    m = _summarise(per)
    checks = [
        # preconditions: the id-coded probe gives every point its own colour (16^3 codes), and the defective
        # objects have defect points that some view sees (an IoU over an empty set means nothing)
        Check("probe_ids_distinct", m["probe_points_max"], "<= 4096", role="precondition"),
        Check("defect_points_seen", m["defect_points_seen_min"], ">= 1", role="precondition"),
        # fails if the two modalities came from different projections (e.g. a jittered camera for one)
        Check("alignment_agreement", m["alignment_agreement_min"], ">= 0.999", paper="pixel-aligned pairs"),
        # fails without the z-buffer (every point visible): the back half would be ~100% visible
        Check("back_side_visible_fraction", m["back_side_visible_fraction_max"], "<= 0.01"),
        Check("front_side_visible_fraction", m["front_side_visible_fraction_min"], ">= 0.9"),
        Check("sphere_visible_fraction_min", m["sphere_visible_fraction_min"], ">= 0.4"),
        Check("sphere_visible_fraction_max", m["sphere_visible_fraction_max"], "<= 0.6"),
        # fails if masks were rendered with another camera or the point-to-pixel map were off by a pixel
        Check("mask_backprojection_iou", m["mask_backprojection_iou_min"], ">= 0.9"),
        # fails if the geometry image read colours (e.g. colour-weighted shading)
        Check("geometry_change_under_colour_permutation", m["geometry_change_under_colour_permutation_max"], "== 0"),
    ]
    fig, ax = new_figure("Visible fraction of a sphere per view", "view index", "fraction of points with M_k = 1")
    ax.plot(per["sphere_visible_fraction"], "o-")
    ax.axhspan(0.4, 0.6, alpha=0.15)
    return Outcome(metrics=m, checks=checks, figures={"sphere_visibility": fig})


# ============================================================================================ zero-shot
@config
class ZeroShotConfig:
    """Zero-shot study: train on auxiliary categories, test on unseen ones (brief Sec. 4)."""

    n_seeds: int = param(3, 1, 5, help="sub-seeds (objects, prompt learning)")
    n_points: int = param(2000, 400, 4000, help="points per object (brief: 4-8 k)")
    image_size: int = param(64, 32, 96, help="render side (paper: 336; a multiple of patch)")
    view_set: ViewSet = "paper"
    n_aux_categories: int = param(3, 1, 3, help="auxiliary categories used")
    n_test_categories: int = param(5, 1, 5, help="unseen test categories used")
    n_aux_normal: int = param(3, 1, 20, help="normal objects per auxiliary category")
    n_aux_defective: int = param(7, 1, 40, help="defective objects per auxiliary category")
    n_test_normal: int = param(3, 2, 40, help="normal objects per test category")
    n_test_defective: int = param(8, 8, 40, help="defective objects per test category (>= 8: every type)")
    pretrain_objects: int = param(4, 1, 20, help="normal objects per auxiliary category for pre-training")
    pretrain_steps: int = param(60, 1, 3000, help="masked-reconstruction steps of the backbone")
    patch: int = param(4, 4, 8, help="ViT patch side (brief: 8; 4 gives a 16 x 16 grid at 64 px, paper 24 x 24)")
    width: int = param(48, 16, 128, help="ViT width (brief: 96)")
    depth: int = param(4, 2, 8, help="ViT layers (brief: 6); taps at 1/3, 2/3 and the last")
    n_steps: int = param(50, 0, 1000, help="prompt-learning steps")
    batch_size: int = param(4, 1, 32, help="objects per step")
    lr: float = param(0.03, 1e-4, 1.0, help="Adam learning rate")
    lam_ent: float = param(0.1, 0.0, 10.0, help="weight of the MVA entropy term")
    device: str = param("cpu", help="torch device: cpu, cuda, cuda:<n>, mps (icml2026 run --device)")
    encoder: str = param("", help="an open_clip folder (ViT image + text towers, e.g. ViT-L-14-336) as the frozen "
                         "encoder, its text tower's zero-shot prompts as the prototypes; renders at its input size "
                         "(image_size, patch, width, depth and the pre-training are then unused); empty: the "
                         "tiny ViT pre-trained here")
    data: str = param("", help="a folder in the MVTec 3D-AD layout (<category>/test/<defect>/{xyz,rgb,gt}) or the "
                      "Eyecandies layout (<Category>/test_public/data/<id>_{depth,image_0,mask}.png + "
                      "_info_depth.yaml) whose test split replaces the procedural test objects; empty: procedural")
    colour_render: Literal["unlit", "lit"] = param(
        "unlit", choices=("unlit", "lit"), help="colour images: raw RGB (our default, a deviation) or lit with "
        "the geometry image's light, as the official render script does")
    data_per_defect: int = param(0, 0, 100000, help="with data: at most this many samples per category and "
                                 "defect folder (Eyecandies: per category; 0: all)")
    control: Literal["none", "planted", "null"] = param(
        "none", choices=("none", "planted", "null"), help="controls of the comparative fusion check: 'planted' = "
        "each single stream given the oracle's defect points on a share of the objects of its own defect family "
        "(the paper's single-stream level), the fused arm their max; 'null' = the same with no oracle for the "
        "geometry stream (the second stream adds no family); only colour-only and geometry-only are trained")

    def __post_init__(self) -> None:
        check_device_name(self.device)
        if self.encoder:
            from icml2026.core.loaders import check_model_path

            check_model_path(self.encoder, key="encoder", kinds=("open_clip",))
        if self.data and not is_eyecandies(self.data):
            mvtec3d_categories(self.data, key="data")
        if self.image_size % self.patch:
            raise ValueError(f"image_size = {self.image_size}: must be a multiple of patch = {self.patch}")


def _taps(depth: int) -> tuple[int, ...]:
    return tuple(sorted({max(1, round(depth / 3)), max(1, round(2 * depth / 3)), depth}))


def _encoder(cfg: ZeroShotConfig, rng: np.random.Generator) -> ImageEncoder:
    """The user's open_clip model (``cfg.encoder``), or the backbone pre-trained here on normal renders of the
    auxiliary categories only (never a test category), on ``cfg.device`` (resolved first, so a missing device
    fails before any work)."""
    device = resolve_device(cfg.device)
    if cfg.encoder:
        from .clip import load_clip_encoder

        return load_clip_encoder(cfg.encoder, device=cfg.device, key="encoder")
    views, lit = _views(cfg.view_set), cfg.colour_render == "lit"
    objs = make_dataset(
        AUX_CATEGORIES[: cfg.n_aux_categories], cfg.pretrain_objects, 0, spawn(rng, 1)[0], n_points=cfg.n_points
    )
    imgs = []
    for o in objs:
        r = render_views(o, views, cfg.image_size, lit_colour=lit)
        imgs += [r.colour, np.repeat(r.geometry[..., None], 3, -1)]
    # Deviation: patch 4 instead of the brief's 8 (an 8 x 8 grid at 64 px cannot localise the defects)
    model = pretrain_backbone(
        np.concatenate(imgs),
        rng,
        patch=cfg.patch,
        width=cfg.width,
        depth=cfg.depth,
        taps=_taps(cfg.depth),
        n_steps=cfg.pretrain_steps,
        batch_size=16,
        device=device,
    )
    return FrozenEncoder(model)


def _evaluate(model: CoGeoAD, test: list[Prepared]) -> tuple[dict[str, float], np.ndarray, list[np.ndarray]]:
    obj, pts = model.score_many(test)
    return _scores_metrics(test, obj, pts), obj, pts


def _fit_kwargs(cfg: ZeroShotConfig) -> dict[str, Any]:
    kw: dict[str, Any] = {"n_steps": cfg.n_steps, "batch_size": cfg.batch_size, "lr": cfg.lr,
                          "lam_ent": cfg.lam_ent, "device": cfg.device}
    if cfg.encoder:  # the text tower's zero-shot prompts replace the learnable prototypes
        kw["prompts"] = "text"
    return kw


def _test_objects(cfg: ZeroShotConfig, test_cats: tuple[str, ...], rng: np.random.Generator) -> list[PointCloud]:
    """The procedural test set, or the test split of the user's MVTec 3D-AD- or Eyecandies-style folder."""
    if cfg.data and is_eyecandies(cfg.data):
        return load_eyecandies(cfg.data, n_points=cfg.n_points, rng=rng, per_category=cfg.data_per_defect)
    if cfg.data:
        return load_mvtec3d(cfg.data, split="test", n_points=cfg.n_points, rng=rng, per_defect=cfg.data_per_defect)
    return make_dataset(test_cats, cfg.n_test_normal, cfg.n_test_defective, rng, n_points=cfg.n_points)


def _view_figure(model: CoGeoAD, prep: Prepared) -> Any:
    """The views of one defective object: colour, geometry and the fused anomaly map."""
    fig, _ = new_figure("", "", "")
    fig.clear()
    maps = model.anomaly_maps(prep)
    v = prep.renders.n_views
    fig.set_size_inches(max(6.0, 0.9 * v), 3.2)
    for k in range(v):
        styles: tuple[tuple[np.ndarray, dict[str, Any]], ...] = (
            (prep.renders.colour[k], {}),
            (prep.renders.geometry[k], {"cmap": "gray", "vmin": 0, "vmax": 1}),
            (maps[k], {"cmap": "jet", "vmin": 0, "vmax": 1}),
        )
        for row, (img, kw) in enumerate(styles):
            ax = fig.add_subplot(3, v, row * v + k + 1)
            ax.imshow(img, **kw)
            ax.set_xticks([])
            ax.set_yticks([])
            if row == 0:
                tx, ty = prep.renders.views[k]
                ax.set_title(f"{tx:+.0f},{ty:+.0f}", fontsize=6)
    fig.suptitle(f"{prep.cloud.category} / {prep.cloud.defect}: colour, geometry, anomaly map (CoGeoAD)", fontsize=8)
    return fig


#: Share of a stream's own-family defective objects whose defect points the planted control sets to the top
#: score (1): a stream that ranks that share first and the rest at chance has I-AUROC 0.5 + 0.68 / 2 = 0.84 on its
#: own family, the paper's single-stream level (geometry only 84.3, colour only 83.6 I-AUROC, MVTec3D).
ORACLE_SHARE = 0.68
#: the defect families each single stream is given the oracle for in the planted control (mixed: dent + stain)
_OWN_FAMILIES = {"colour_only": ("colour", "mixed"), "geometry_only": ("geometry", "mixed")}
#: the arms a control run trains (the fused arm is built from them)
CONTROL_VARIANTS = ("colour_only", "geometry_only")


def _scores_metrics(test: list[Prepared], obj: np.ndarray, pts: list[np.ndarray]) -> dict[str, float]:
    """I-AUROC per defect family, AP, P-AUROC and AUPRO of object scores ``obj`` and point scores ``pts``."""
    y = np.array([p.cloud.is_anomalous for p in test])
    res = {}
    for sub in FAMILIES:
        idx = [i for i, p in enumerate(test) if p.cloud.defect is None
               or sub == "all" or defect_family(p.cloud.defect) == sub]
        # a family absent from a user's folder has no subset: NaN, and its checks are left out
        res[f"i_auroc_{sub}"] = image_auroc(y[idx], obj[idx]) if 0 < y[idx].sum() < len(idx) else float("nan")
    res["ap"] = average_precision(y, obj)
    labels = [p.cloud.labels for p in test]
    res["p_auroc"] = point_auroc(labels, pts)
    res["aupro"] = aupro([p.cloud.points for p in test], labels, pts)
    return res


def _control_arms(
    pts: dict[str, list[np.ndarray]], test: list[Prepared], control: str, rng: np.random.Generator, top_k: float
) -> dict[str, tuple[np.ndarray, list[np.ndarray]]]:
    """The arms of a control run from the trained single streams' point scores ``pts`` (by variant name).

    planted: each stream's scores with the oracle (its defect points set to 1) on a share ``ORACLE_SHARE`` of the
    test objects whose defect family it sees (``_OWN_FAMILIES``), the fused arm ``cogeoad`` = the point-wise max
    of the two (the paper's A_point = max(S^Co, S^Geo)); object score = mean of the top ``top_k`` point scores, as
    :class:`CoGeoAD` scores. null: the same with no oracle for the geometry stream, so that the fused arm gets no
    family that the colour stream lacks: a gain of the fusion over the best single stream is then noise.
    """
    arms: dict[str, tuple[np.ndarray, list[np.ndarray]]] = {}
    for (name, fams), r in zip(_OWN_FAMILIES.items(), spawn(rng, len(_OWN_FAMILIES)), strict=True):
        own = [i for i, p in enumerate(test) if p.cloud.defect is not None and defect_family(p.cloud.defect) in fams]
        # exactly the share, drawn in both presets, so that the colour stream's oracle is the same in both
        chosen = set(r.permutation(own)[: int(round(ORACLE_SHARE * len(own)))].tolist())
        on = control == "planted" or name == "colour_only"
        new = []
        for i, (p, s) in enumerate(zip(test, pts[name], strict=True)):
            s = s.copy()
            if on and i in chosen:
                s[p.cloud.labels == 1] = 1.0
            new.append(s)
        arms[name] = (np.array([_top_mean(s, top_k) for s in new]), new)
    fused = [np.maximum(c, g) for c, g in zip(arms["colour_only"][1], arms["geometry_only"][1], strict=True)]
    arms["cogeoad"] = (np.array([_top_mean(s, top_k) for s in fused]), fused)
    return arms


def _top_mean(s: np.ndarray, top_k: float) -> float:
    k = max(1, int(round(top_k * s.size)))
    return float(np.sort(s)[-k:].mean())


def zero_shot_checks(m: dict[str, float]) -> list[Check]:
    """The checks of :func:`zero_shot` from its metrics (those of a control run hold only the fusion's arms).

    Every comparison (the blindness checks included) is a claim behind the preconditions: the run is undecided
    when one of them fails, whatever the comparisons give.
    """
    fin = lambda k: k in m and bool(np.isfinite(m[k]))  # noqa: E731
    checks = []
    if "alpha_mean_max" in m:
        # criterion 2 (sum by construction of the softmax; max fails on a collapsed MVA)
        checks += [Check("alpha_sum_error", m["alpha_sum_error_max"], "<= 1e-5"),
                   Check("alpha_mean_max_entropy_reward", m["alpha_mean_max"], "<= 0.5")]
    checks += [
        # criterion 5
        Check("aux_test_shared_categories", m["shared_categories"], "== 0", paper="unseen categories"),
        # criterion 3's detection targets (a family absent from a user's data folder has no check)
        *[
            Check(f"cogeoad_on_{fam}_defects_i_auroc", m[f"cogeoad_i_auroc_{fam}"], ">= 0.85", paper="—")
            for fam in ("colour", "geometry")
            if fin(f"cogeoad_i_auroc_{fam}")
        ],
        # preconditions of every comparison below: a detector must detect before its parts are compared
        Check(
            "guard_cogeoad_i_auroc_all", m["cogeoad_i_auroc_all"], f">= {MIN_DETECTION_AUROC}", role="precondition"
        ),
    ]
    # ... and each single stream must see its own family before its blindness to the other one means anything
    # (issue 61: geometry-only scored 0.531 on geometry defects, full, while "blind" to colour at 0.529). The bar
    # is MIN_DETECTION_AUROC, fixed with the guard before any run with these checks.
    own = {"geometry_only": "geometry", "colour_only": "colour"}
    for variant, fam in own.items():
        if fin(f"{variant}_i_auroc_{fam}"):
            checks.append(Check(f"{variant}_on_{fam}_defects_i_auroc", m[f"{variant}_i_auroc_{fam}"],
                                f">= {MIN_DETECTION_AUROC}", role="precondition"))
    # The comparisons are claims: below the preconditions (a stream "blind" at 0.50 says nothing when it scores
    # 0.53 on what it should see) the run is undecided on every seed, whatever they give.
    if fin("geometry_only_i_auroc_colour"):
        # the geometry stream never sees colours, so this fails only if colour leaks into it
        checks.append(Check("geometry_only_on_colour_defects_i_auroc", m["geometry_only_i_auroc_colour"], "<= 0.65"))
    if fin("colour_only_i_auroc_geometry"):
        # fails if colour renders carry the geometry (lit colour renders show dents as shading)
        checks.append(Check("colour_only_on_geometry_defects_i_auroc", m["colour_only_i_auroc_geometry"], "<= 0.70"))
    # fusion over the best single stream (criterion 4a's complementarity); its power and false-positive rate
    # come from the planted / null presets (controls.json)
    checks.append(Check("fusion_minus_best_single_i_auroc_all", m["fusion_margin_all"], ">= 0.05",
                        paper="87.4 vs 84.3 (geo only) / 83.6 (colour only), MVTec3D", comparative=True))
    # MS-CGF - last layer (AUPRO, paper +4.0) is a metric, not a check: with the ~0.1 spread of a variant's
    # score over initialisations (issue 61) a one-sided test of +0.04 needs ~40 sub-seeds for power 0.8, and a
    # target ">= 0" passes half the time on two equal arms (false-positive rate 0.5); see the card.
    return checks

#: Presets shared by zero_shot and view_attention (the same training; view_attention evaluates few-view defects).
_ZS_SMOKE = ZeroShotConfig(
    n_seeds=1, n_points=600, image_size=32, view_set="small", n_aux_categories=1, n_test_categories=1,
    n_aux_normal=1, n_aux_defective=2, n_test_normal=2, pretrain_objects=1, pretrain_steps=2, width=16, depth=2,
    n_steps=2, batch_size=2,
)
# Changed for the demo budget (issue 56: the paper's quick presets must stay under ~150 CPU-s together; they took
# 302 and 263 CPU-s): one sub-seed instead of three (the headline rests on runner seeds 0-2), 9 of the 20 views
# (the 3 x 3 grid the PointAD-style baseline uses), 2 normal + 4 defective auxiliary and 2 normal test objects per
# category, 2 pre-training objects per category, 40 pre-training and 30 prompt steps. No result prompted it: the
# preconditions failed before at the old size (guard 0.51-0.58) and are the same checks at this one.
_ZS_QUICK = ZeroShotConfig(
    n_seeds=1, view_set="nine", n_aux_normal=2, n_aux_defective=4, n_test_normal=2, pretrain_objects=2,
    pretrain_steps=40, n_steps=30,
)
_ZS_FULL = ZeroShotConfig(
    n_points=3000, n_aux_normal=8, n_aux_defective=16, n_test_normal=12, n_test_defective=16, pretrain_objects=8,
    pretrain_steps=400, width=96, depth=6, n_steps=200,
)


@experiment(
    "cogeoad.zero_shot",
    claim="Trained on 3 auxiliary categories, CoGeoAD detects defects of 5 unseen categories; colour and "
    "geometry are complementary (each single stream is blind to the other family, the max-fusion sees both "
    "and beats both on the mixed test set), and multi-layer MS-CGF beats the last layer on AUPRO.",
    presets={
        "smoke": _ZS_SMOKE,
        "quick": _ZS_QUICK,
        "full": _ZS_FULL,
        # controls of the comparative fusion check: the quick preset with the arms built by construction
        "planted": dataclasses.replace(_ZS_QUICK, control="planted"),
        "null": dataclasses.replace(_ZS_QUICK, control="null"),
    },
)
def zero_shot(cfg: ZeroShotConfig, rng: np.random.Generator) -> Outcome:
    if cfg.data and is_eyecandies(cfg.data):  # every file of the user's folder, before any work
        check_eyecandies(cfg.data, per_category=cfg.data_per_defect, key="data")
    elif cfg.data:  # every file and shape of the user's folder, before any work
        check_mvtec3d(cfg.data, split="test", per_defect=cfg.data_per_defect, key="data")
    r_pre, r_run = spawn(rng, 2)
    enc = _encoder(cfg, r_pre)
    lit = cfg.colour_render == "lit"
    views = _views(cfg.view_set)
    aux_cats, test_cats = AUX_CATEGORIES[: cfg.n_aux_categories], TEST_CATEGORIES[: cfg.n_test_categories]
    names = CONTROL_VARIANTS if cfg.control != "none" else VARIANTS
    per: dict[str, list[float]] = {}
    rows: list[dict[str, Any]] = []
    figures: dict[str, Any] = {}
    roc: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    shared = 0
    for s, r in enumerate(track(spawn(r_run, cfg.n_seeds), "zero-shot seeds", total=cfg.n_seeds)):
        r_aux, r_test, r_fit, r_ctl = spawn(r, 4)
        aux = make_dataset(aux_cats, cfg.n_aux_normal, cfg.n_aux_defective, r_aux, n_points=cfg.n_points)
        test = _test_objects(cfg, test_cats, r_test)
        assert_disjoint(aux, test)  # criterion 5 (raises on a violation)
        shared += len({c.category for c in aux} & {c.category for c in test})
        cache = {
            views: (
                prepare_objects(aux, enc, views, lit_colour=lit, desc="aux render + encode"),
                prepare_objects(test, enc, views, lit_colour=lit, desc="test render + encode"),
            )
        }
        scored: dict[str, tuple[np.ndarray, list[np.ndarray]]] = {}
        top_k = 0.02
        for name, rv in zip(VARIANTS, spawn(r_fit, len(VARIANTS)), strict=True):
            if name not in names:
                continue
            kw = _fit_kwargs(cfg)
            model = make_variant(name, enc, **kw) if name == "pointad" else make_variant(name, enc, views=views, **kw)
            if model.views not in cache and set(model.views) <= set(views):
                cache[model.views] = (
                    [p.select_views(model.views) for p in cache[views][0]],
                    [p.select_views(model.views) for p in cache[views][1]],
                )
            elif model.views not in cache:
                cache[model.views] = (
                    prepare_objects(aux, enc, model.views, lit_colour=lit, desc="aux render + encode"),
                    prepare_objects(test, enc, model.views, lit_colour=lit, desc="test render + encode"),
                )
            pa, pt = cache[model.views]
            model.fit(pa, rv)
            scored[name] = model.score_many(pt)
            top_k = model.top_k
            if name == "cogeoad":
                maxes = [max(float(a.max()) for a in model.view_weights(p).values()) for p in pt]
                sums = [max(abs(float(a.sum()) - 1) for a in model.view_weights(p).values()) for p in pt[:5]]
                per.setdefault("alpha_mean_max", []).append(float(np.mean(maxes)))
                per.setdefault("alpha_sum_error", []).append(float(np.max(sums)))
                if s == 0:
                    defective = [p for p in pt if p.cloud.defect == "mixed"] or [p for p in pt if p.cloud.is_anomalous]
                    figures["views_cogeoad"] = _view_figure(model, defective[0])
        pt = cache[views][1]
        if cfg.control != "none":
            scored = _control_arms({k: v[1] for k, v in scored.items()}, pt, cfg.control, r_ctl, top_k)
        for name in (v for v in VARIANTS if v in scored):
            obj, pts = scored[name]
            res = _scores_metrics(pt, obj, pts)
            for k, v in res.items():
                per.setdefault(f"{name}_{k}", []).append(v)
            rows.append({"seed": s, "variant": name, **{k: round(v, 3) for k, v in res.items()}})
            if s == 0:
                y = np.array([p.cloud.is_anomalous for p in pt])
                from sklearn.metrics import roc_curve

                fpr, tpr, _ = roc_curve(y, obj)
                roc[name] = (fpr, tpr)
    m = _summarise(per)
    m["shared_categories"] = float(shared)
    m["fusion_margin_all"] = m["cogeoad_i_auroc_all"] - max(
        m["colour_only_i_auroc_all"], m["geometry_only_i_auroc_all"]
    )
    if "last_layer_aupro" in per:
        m["msgcf_aupro_gain"] = m["cogeoad_aupro"] - m["last_layer_aupro"]
        gains = [a - b for a, b in zip(per["cogeoad_aupro"], per["last_layer_aupro"], strict=True)]
        m["msgcf_aupro_gain_min"], m["msgcf_aupro_gain_max"] = min(gains), max(gains)
    checks = zero_shot_checks(m)
    fig, ax = new_figure("Object-level ROC, mixed test set (sub-seed 0)", "false positive rate", "true positive rate")
    for name, (fpr, tpr) in roc.items():
        ax.plot(fpr, tpr, label=name, lw=1.2)
    ax.plot([0, 1], [0, 1], "k:", lw=0.8)
    ax.legend(fontsize=7)
    figures["roc"] = fig
    fig2, ax2 = new_figure("I-AUROC per defect family (mean over sub-seeds)", "variant", "I-AUROC")
    shown = [v for v in VARIANTS if f"{v}_i_auroc_all" in m]
    x = np.arange(len(shown))
    for j, sub in enumerate(("colour", "geometry", "mixed", "all")):
        ax2.bar(x + 0.2 * (j - 1.5), [m[f"{v}_i_auroc_{sub}"] for v in shown], 0.2, label=sub)
    ax2.set_xticks(x, shown, fontsize=6, rotation=20)
    ax2.axhline(0.5, color="k", lw=0.6, ls=":")
    ax2.legend(fontsize=7)
    figures["complementarity"] = fig2
    return Outcome(metrics=m, checks=checks, figures=figures, tables={"per_seed": rows})


# ====================================================================================== view attention
def few_view_objects(
    categories: tuple[str, ...],
    n_per_category: int,
    views: tuple[tuple[float, float], ...],
    rng: np.random.Generator,
    n_points: int,
    image_size: int,
    max_tries: int = 60,
) -> list[PointCloud]:
    """Defective objects whose defect is seen (>= half of its points visible) in 1 .. V/3 of the views.

    The defect is placed on a side of the object tilted away from the camera; objects are drawn until the
    renderer itself confirms the view count (criterion 4b's construction).
    """
    out: list[PointCloud] = []
    limit = len(views) / 3
    for cat in categories:
        got = 0
        for r in spawn(rng, max_tries):
            if got >= n_per_category:
                break
            a = r.uniform(np.deg2rad(100), np.deg2rad(125))
            phi = r.uniform(0, 2 * np.pi)
            site = (np.sin(a) * np.cos(phi), np.sin(a) * np.sin(phi), np.cos(a))
            kind = (GEOMETRY_DEFECTS + COLOUR_DEFECTS)[(got + len(out)) % 7]
            obj = make_object(cat, r, kind, n_points=n_points, site=site, jitter_deg=0.0)
            if obj.labels.sum() < 5:
                continue
            rd = render_views(obj, views, image_size)
            count = int((rd.visibility[:, obj.labels == 1].mean(1) >= 0.5).sum())
            if 1 <= count <= limit:
                out.append(obj)
                got += 1
    return out


@experiment(
    "cogeoad.view_attention",
    claim="Data-driven multi-view attention (MVA) with the entropy reward does not collapse onto one view "
    "(mean max alpha <= 0.5) and detects defects visible from at most a third of the views; MVA against "
    "uniform view averaging is reported (a +0.012 I-AUROC gain in the paper, below the noise at CPU scale).",
    presets={
        "smoke": _ZS_SMOKE,
        "quick": _ZS_QUICK,
        "full": _ZS_FULL,
    },
)
def view_attention(cfg: ZeroShotConfig, rng: np.random.Generator) -> Outcome:
    if cfg.data:  # its few-view defects are placed by construction; a user's scans carry no such guarantee
        raise BadInput("data: cogeoad.view_attention builds its few-view defects procedurally; run a data folder "
                       "with cogeoad.zero_shot")
    if cfg.control != "none":
        raise BadInput("control: cogeoad.view_attention has no comparative check; the controls are "
                       "cogeoad.zero_shot's")
    r_pre, r_run = spawn(rng, 2)
    enc = _encoder(cfg, r_pre)
    lit = cfg.colour_render == "lit"
    views = _views(cfg.view_set)
    aux_cats, test_cats = AUX_CATEGORIES[: cfg.n_aux_categories], TEST_CATEGORIES[: cfg.n_test_categories]
    per: dict[str, list[float]] = {}
    variants = {"mva_reward": 1.0, "mva_no_entropy": 0.0, "mva_penalty": -1.0, "uniform": None}
    for r in track(spawn(r_run, cfg.n_seeds), "view-attention seeds", total=cfg.n_seeds):
        r_aux, r_norm, r_few, r_fit = spawn(r, 4)
        aux = make_dataset(aux_cats, cfg.n_aux_normal, cfg.n_aux_defective, r_aux, n_points=cfg.n_points)
        normals = make_dataset(test_cats, cfg.n_test_normal, 0, r_norm, n_points=cfg.n_points)
        few = few_view_objects(test_cats, cfg.n_test_normal, views, r_few, cfg.n_points, cfg.image_size)
        assert_disjoint(aux, normals + few)
        pa = prepare_objects(aux, enc, views, lit_colour=lit, desc="aux render + encode")
        pt = prepare_objects(
            normals + few, enc, views, lit_colour=lit, desc="test render + encode"
        )
        y = np.array([p.cloud.is_anomalous for p in pt])
        per.setdefault("n_few_view_objects", []).append(float(len(few)))
        for (name, sign), rv in zip(variants.items(), spawn(r_fit, len(variants)), strict=True):
            kw = _fit_kwargs(cfg)
            if sign is None:
                model = CoGeoAD(enc, views=views, view_attention="uniform", **kw)
            else:
                model = CoGeoAD(enc, views=views, entropy_sign=sign, **kw)
            model.fit(pa, rv)
            obj, _ = model.score_many(pt)
            per.setdefault(f"{name}_i_auroc_few_view", []).append(
                image_auroc(y, obj) if 0 < y.sum() < len(y) else float("nan")
            )
            maxes = [max(float(a.max()) for a in model.view_weights(p).values()) for p in pt]
            per.setdefault(f"{name}_alpha_mean_max", []).append(float(np.mean(maxes)))
    m = _summarise(per)
    gains = [a - b for a, b in zip(per["mva_reward_i_auroc_few_view"], per["uniform_i_auroc_few_view"], strict=True)]
    m["mva_minus_uniform_i_auroc"], m["mva_minus_uniform_min"], m["mva_minus_uniform_max"] = _spread(gains)
    checks = [
        # fails on a collapsed MVA (e.g. entropy_sign=-1 with a large lam_ent drives max alpha to 1)
        Check("alpha_mean_max_entropy_reward", m["mva_reward_alpha_mean_max"], "<= 0.5"),
        # guard, as in zero_shot: MVA against uniform weights is compared only for a detector that detects
        # (per sub-seed the difference ranged -0.071..+0.080 around chance-level scores)
        Check("guard_mva_i_auroc_few_view", m["mva_reward_i_auroc_few_view"], f">= {MIN_DETECTION_AUROC}",
              role="precondition"),
    ]
    # MVA - uniform (paper +0.012 I-AUROC) is a metric, not a check: the spread of one variant's score over
    # initialisations is ~0.1 (issue 61: identical uniform weights, 0.474 vs 0.584), so a one-sided test of that
    # gain has no power at any sub-seed count this budget allows, and ">= 0" passes half the time on equal arms.
    fig, ax = new_figure("Mean max view weight by entropy setting", "variant", "mean max_k alpha_k")
    names = [k for k, v in variants.items() if v is not None]
    ax.bar(range(len(names)), [m[f"{k}_alpha_mean_max"] for k in names])
    ax.set_xticks(range(len(names)), names, fontsize=7)
    ax.axhline(1 / len(views), color="k", ls=":", lw=0.8)
    return Outcome(metrics=m, checks=checks, figures={"alpha_max": fig})
