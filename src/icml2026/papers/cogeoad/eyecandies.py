"""Eyecandies-style scans from a local folder (``--set data=DIR``): 16-bit depth + RGB + ground-truth masks.

Layout (the dataset's own, as its manual download unpacks; a folder of categories, or one category folder)::

    DIR/<Category>/<split>/data/<id>_depth.png        (H, W) uint16 depth, normalised to [0, 65535]
    DIR/<Category>/<split>/data/<id>_info_depth.yaml  normalization: {min: .., max: ..} (metres)
    DIR/<Category>/<split>/data/<id>_image_<k>.png    (H, W, 3) colour under lighting k (k = 0 .. 5)
    DIR/<Category>/<split>/data/<id>_mask.png         (H, W) mask, > 0 on the defect (``test_public`` only)

``split`` is ``test_public`` (the split with masks). Each sample becomes one :class:`~.data.PointCloud`: the depth
is mapped back to metres (d / 65535 (max - min) + min), back-projected with the dataset's pinhole camera (focal
length 711.11 px, principal point at the image centre, the dataset's documented intrinsics) into camera
coordinates, and handed to :func:`~.mvtec3d.cloud_from_images` with the image of lighting ``image_index`` and the
mask (same frame turn as MVTec 3D-AD). A sample whose mask marks a point is defective with ``defect =
"anomalous"`` (its family, "other", counts only in the all-defects subset: the masks do not say whether a defect
is a colour or a shape one); the others are normal.

Deviation: the camera pose (``<id>_pose.txt``) is not applied (points stay in the camera frame, as the renderer
needs) and the conveyor-belt background is kept (remove it first, as for MVTec 3D-AD's background plane).
Every problem with the folder is a :class:`~icml2026.core.errors.BadInput` naming ``key`` and the file.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from icml2026.core.errors import BadInput, one_line

from .data import PointCloud
from .mvtec3d import cloud_from_images

__all__ = ["EYECANDIES_FOCAL", "eyecandies_categories", "is_eyecandies", "depth_to_xyz", "check_eyecandies",
           "load_eyecandies"]

#: the focal length in pixels of the one camera of every Eyecandies image (the dataset's documentation)
EYECANDIES_FOCAL = 711.11
_SPLIT = "test_public"


def _where(root: Path, key: str) -> str:
    return f"{key} = {str(root)!r}"


def eyecandies_categories(root: str | Path, *, split: str = _SPLIT) -> dict[str, Path]:
    """The category folders under ``root`` holding ``<split>/data`` (``root`` itself if it is one; {} if none)."""
    root_p = Path(root).expanduser()
    if not root_p.is_dir():
        return {}
    if (root_p / split / "data").is_dir():
        return {root_p.name: root_p}
    return {d.name: d for d in sorted(root_p.iterdir()) if (d / split / "data").is_dir()}


def is_eyecandies(root: str | Path) -> bool:
    """Whether ``root`` is a folder in the Eyecandies layout (and so not an MVTec 3D-AD one)."""
    return bool(eyecandies_categories(root))


def depth_to_xyz(depth: np.ndarray, d_min: float, d_max: float, focal: float = EYECANDIES_FOCAL) -> np.ndarray:
    """(H, W) uint16 normalised depth -> (H, W, 3) camera-frame xyz in metres (pinhole, centre principal point)."""
    d = np.asarray(depth, np.float64)
    if d.ndim != 2:
        raise ValueError(f"depth must be (H, W), got {d.shape}")
    z = d / 65535.0 * (d_max - d_min) + d_min
    h, w = d.shape
    u, v = np.meshgrid(np.arange(w, dtype=np.float64), np.arange(h, dtype=np.float64))
    return np.stack([(u - w / 2) * z / focal, (v - h / 2) * z / focal, z], -1)


def _normalisation(path: Path, root: Path, key: str) -> tuple[float, float]:
    import yaml

    try:
        info = yaml.safe_load(path.read_text(encoding="utf-8"))
        lo, hi = float(info["normalization"]["min"]), float(info["normalization"]["max"])
    except Exception as exc:  # a missing key, a foreign file: yaml and float raise many kinds
        raise BadInput(f"{_where(root, key)}: {path.name} holds no normalization min/max ({one_line(exc, 120)})") \
            from exc
    if not (np.isfinite(lo) and np.isfinite(hi) and hi > lo):
        raise BadInput(f"{_where(root, key)}: {path.name}: normalization min {lo} / max {hi} (need min < max)")
    return lo, hi


def _samples(root: Path, per_category: int, image_index: int, key: str) -> list[tuple[str, dict[str, Path]]]:
    cats = eyecandies_categories(root)
    if not cats:
        raise BadInput(f"{_where(root, key)}: no <Category>/{_SPLIT}/data folder (the Eyecandies layout)")
    out = []
    for cat, cdir in cats.items():
        data = cdir / _SPLIT / "data"
        depths = sorted(data.glob("*_depth.png"))
        if not depths:
            raise BadInput(f"{_where(root, key)}: {cat}/{_SPLIT}/data holds no *_depth.png")
        for f in depths[:per_category] if per_category else depths:
            sid = f.name[: -len("_depth.png")]
            files = {"depth": f, "info": data / f"{sid}_info_depth.yaml",
                     "rgb": data / f"{sid}_image_{image_index}.png", "mask": data / f"{sid}_mask.png"}
            for what, p in files.items():
                if not p.is_file():
                    raise BadInput(f"{_where(root, key)}: {cat}/{_SPLIT}/data/{f.name} has no {what} file {p.name}")
            out.append((cat, files))
    return out


def check_eyecandies(root: str | Path, *, per_category: int = 0, image_index: int = 0, key: str = "data") -> int:
    """Check that every file of every sample is there (before any work); the number of samples."""
    return len(_samples(Path(root).expanduser(), per_category, image_index, key))


def load_eyecandies(
    root: str | Path,
    *,
    n_points: int | None = None,
    rng: np.random.Generator | None = None,
    per_category: int = 0,
    image_index: int = 0,
    key: str = "data",
) -> list[PointCloud]:
    """Every ``test_public`` sample under ``root`` as a :class:`PointCloud` (categories and ids in name order).

    n_points : at most this many points per object (stratified random subset by ``rng``); ``None`` keeps all.
    per_category : at most this many samples per category (the first in name order); 0 = all.
    image_index : which of the lightings' images gives the colours.
    The whole folder is checked (every file present) before any is read; every fault is a :class:`BadInput`
    naming ``key`` and the file.
    """
    from PIL import Image

    if isinstance(image_index, bool) or not isinstance(image_index, (int, np.integer)) or image_index < 0:
        raise ValueError(f"image_index = {image_index!r}: must be a non-negative integer")
    if isinstance(per_category, bool) or not isinstance(per_category, (int, np.integer)) or per_category < 0:
        raise ValueError(f"per_category = {per_category!r}: must be a non-negative integer")
    root_p = Path(root).expanduser()
    samples = _samples(root_p, per_category, image_index, key)
    out: list[PointCloud] = []
    for cat, files in samples:
        name = f"{cat}/{_SPLIT}/data/{files['depth'].name}"
        lo, hi = _normalisation(files["info"], root_p, key)
        try:
            imgs = {k: np.asarray(Image.open(files[k])) for k in ("depth", "rgb", "mask")}
        except Exception as exc:  # a broken or foreign file: PIL raises many kinds
            raise BadInput(f"{_where(root_p, key)}: {name} cannot be read ({one_line(exc, 120)})") from exc
        try:
            xyz = depth_to_xyz(imgs["depth"], lo, hi)
            labelled = (np.asarray(imgs["mask"]) > 0).any()
            cloud = cloud_from_images(xyz, imgs["rgb"], imgs["mask"], category=cat,
                                      defect="anomalous" if labelled else None, n_points=n_points, rng=rng,
                                      name=name)
        except ValueError as exc:
            raise BadInput(f"{_where(root_p, key)}: {one_line(exc, 200)}") from exc
        out.append(cloud)
    return out
