"""CoGeoAD: hierarchical colour-geometric fusion with multi-view attention for zero-shot 3D anomaly detection.

"CoGeoAD: Hierarchical Color-Geometric Fusion with Multi-View Attention for Zero-Shot 3D Anomaly
Detection", Ke Xu, Xinle Wang, Yanning Hou, Xueliang Ma, Juan Xie, Jianfeng Qiu, ICML 2026 (arXiv id not
found). Official code: https://github.com/kingdomShu/CoGeoAD (rendering scripts only). CPU-scale
reconstruction from the brief: procedural coloured point clouds with injected defects, an own numpy z-buffer
renderer of pixel-aligned colour/geometry pairs, a tiny self-supervised ViT as the frozen "CLIP", learnable
prototype prompts, MVA, the MS-CGF layer selector and max-fusion of the two streams (see README.md).
Real parts: an open_clip model from a local folder (:func:`load_clip_encoder`: layer taps of the image tower,
the text tower's zero-shot prompts as T) and MVTec 3D-AD-style scans (:func:`load_mvtec3d`).

Symbols (paper / brief -> code)
-------------------------------
p_k, colours, GT          :class:`PointCloud` ``.points``, ``.colours``, ``.labels``
R_ij, pi(p'), M_k         :func:`view_rotation`, :class:`Renders` ``.pixels``, ``.visibility``
I^Co, I^Geo               :class:`Renders` ``.colour``, ``.geometry`` (one projection pass per view)
alpha_k, gamma, tau       ``CoGeoAD.view_weights``, ``gamma``, ``tau`` (Step 2, MVA)
L_ent, lambda_ent         ``entropy_sign`` (+1 rewards entropy), ``lam_ent``
beta, F_g, T              layer selector (``layers="select"``), ``similarity``, learnable prototypes or
                          :meth:`ClipEncoder.text_prototypes` (``prompts="text"``)
A_point                   ``CoGeoAD.score(cloud)[1]`` = max(S_point^Co, S_point^Geo)
I-AUROC, AP, P-AUROC, AUPRO   :func:`image_auroc`, :func:`average_precision`, :func:`point_auroc`, :func:`aupro`
"""

from .backbone import FrozenEncoder, ImageEncoder, TinyViT, pretrain_backbone
from .baselines import VARIANTS, clip_render, colour_only, concat_fusion, geometry_only, make_variant, pointad
from .clip import ClipEncoder, clip_taps, load_clip_encoder
from .data import (
    AUX_CATEGORIES,
    CATEGORIES,
    COLOUR_DEFECTS,
    DEFECTS,
    GEOMETRY_DEFECTS,
    TEST_CATEGORIES,
    PointCloud,
    assert_disjoint,
    make_dataset,
    make_object,
)
from .method import STREAMS, CoGeoAD, Prepared, prepare_objects
from .metrics import aupro, average_precision, defect_regions, image_auroc, point_auroc
from .mvtec3d import MVTEC3D_FAMILIES, check_mvtec3d, cloud_from_images, defect_family, load_mvtec3d
from .render import (
    DEFAULT_VIEWS,
    POINTAD_VIEWS,
    SMALL_VIEWS,
    Renders,
    estimate_normals,
    lift_to_points,
    render_views,
    view_rotation,
)

__all__ = [
    "AUX_CATEGORIES",
    "CATEGORIES",
    "COLOUR_DEFECTS",
    "DEFECTS",
    "GEOMETRY_DEFECTS",
    "TEST_CATEGORIES",
    "PointCloud",
    "make_object",
    "make_dataset",
    "assert_disjoint",
    "DEFAULT_VIEWS",
    "POINTAD_VIEWS",
    "SMALL_VIEWS",
    "Renders",
    "render_views",
    "view_rotation",
    "estimate_normals",
    "lift_to_points",
    "ImageEncoder",
    "TinyViT",
    "FrozenEncoder",
    "pretrain_backbone",
    "CoGeoAD",
    "Prepared",
    "prepare_objects",
    "STREAMS",
    "VARIANTS",
    "make_variant",
    "clip_render",
    "pointad",
    "colour_only",
    "geometry_only",
    "concat_fusion",
    "image_auroc",
    "average_precision",
    "point_auroc",
    "aupro",
    "defect_regions",
    "ClipEncoder",
    "clip_taps",
    "load_clip_encoder",
    "MVTEC3D_FAMILIES",
    "check_mvtec3d",
    "cloud_from_images",
    "defect_family",
    "load_mvtec3d",
]

from icml2026.core.validate import check_public_api as _check_public_api  # noqa: E402

_check_public_api(globals())
