"""MVTec 3D-AD-style point clouds from a local folder (``--set data=DIR``): xyz TIFF + RGB + ground-truth masks.

Layout (the dataset's own; a folder of categories, or one category folder)::

    DIR/<category>/test/<defect>/xyz/<id>.tiff   (H, W, 3) float x, y, z per pixel; (0, 0, 0) = no point
    DIR/<category>/test/<defect>/rgb/<id>.png    (H, W, 3) colour, registered with the xyz image
    DIR/<category>/test/<defect>/gt/<id>.png     (H, W) mask, > 0 on the defect (optional for ``good``)
    DIR/<category>/train/good/{xyz,rgb}/...      normal objects

Each sample becomes one :class:`~.data.PointCloud`: the pixels with a point (background and missing points
are zeros, removed as in the paper's Step 1), their RGB as colours and their mask value as point labels;
``category`` is the category folder, ``defect`` the defect folder (``None`` for ``good``). The xyz images are
in camera coordinates (the camera at the origin looking along +z, image rows growing along +y); the renderer's
camera sits on +z looking down -z, so points are turned by 180 degrees about x (y and z negated), which keeps
the scanned side facing the renderer's camera.

Every problem with the folder is a :class:`~icml2026.core.errors.BadInput` (exit status 2) whose one line
names the key (``data``) and the file or folder at fault.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from icml2026.core.errors import BadInput, one_line

from .data import PointCloud

__all__ = [
    "MVTEC3D_FAMILIES",
    "defect_family",
    "mvtec3d_categories",
    "check_mvtec3d",
    "load_mvtec3d",
    "cloud_from_images",
]

#: MVTec 3D-AD's defect types by the modality they show in (``combined`` = both). Eyecandies-style names
#: and the procedural defects of :mod:`.data` are included so one table serves every data source.
MVTEC3D_FAMILIES: dict[str, str] = {
    "color": "colour", "contamination": "colour", "stain": "colour", "discolour": "colour", "spot": "colour",
    "crack": "geometry", "hole": "geometry", "cut": "geometry", "bent": "geometry", "thread": "geometry",
    "dent": "geometry", "bump": "geometry",
    "combined": "mixed", "mixed": "mixed",
}
_LAYOUT = "<category>/test/<defect>/{xyz/*.tiff, rgb/*.png, gt/*.png}"


def defect_family(defect: str | None) -> str | None:
    """``"colour"``, ``"geometry"``, ``"mixed"``, ``"other"`` (a defect name not in the table) or ``None``."""
    if defect is None:
        return None
    return MVTEC3D_FAMILIES.get(defect, "other")


def _where(root: Path, key: str) -> str:
    return f"{key} = {str(root)!r}"


def mvtec3d_categories(root: str | Path, *, split: str = "test", key: str = "data") -> dict[str, Path]:
    """The category folders under ``root`` that hold ``<split>/<defect>/xyz`` (``root`` itself if it is one).

    A cheap check of the layout (folder names only): :class:`BadInput` naming ``key`` when ``root`` is missing,
    not a folder, or holds no category in the MVTec 3D-AD layout.
    """
    if split not in ("train", "test", "validation"):
        raise ValueError(f"split = {split!r}: must be 'train', 'test' or 'validation'")
    if not str(root).strip():
        raise BadInput(f"{key}: empty path; expected a folder in the MVTec 3D-AD layout {_LAYOUT}")
    p = Path(root).expanduser()
    if not p.exists():
        raise BadInput(f"{_where(p, key)}: no such folder")
    if not p.is_dir():
        raise BadInput(f"{_where(p, key)}: not a folder; expected the MVTec 3D-AD layout {_LAYOUT}")
    candidates = [p] if (p / split).is_dir() else sorted(c for c in p.iterdir() if c.is_dir())
    found = {
        c.name: c
        for c in candidates
        if (c / split).is_dir() and any((d / "xyz").is_dir() for d in (c / split).iterdir() if d.is_dir())
    }
    if not found:
        raise BadInput(f"{_where(p, key)}: no {split} split in the MVTec 3D-AD layout {_LAYOUT.replace('test', split)}")
    return found


def _read(path: Path, what: str, root: Path, key: str) -> np.ndarray:
    try:
        if path.suffix.lower() in (".tif", ".tiff"):
            import tifffile

            return np.asarray(tifffile.imread(str(path)))
        from PIL import Image

        with Image.open(path) as im:
            return np.asarray(im)
    except ModuleNotFoundError:
        raise
    except Exception as exc:  # a broken or foreign file: PIL and tifffile raise many kinds
        raise BadInput(f"{_where(root, key)}: {what} {path.name} cannot be read ({one_line(exc, 120)})") from exc


def cloud_from_images(
    xyz: np.ndarray,
    rgb: np.ndarray,
    gt: np.ndarray | None,
    *,
    category: str = "unknown",
    defect: str | None = None,
    n_points: int | None = None,
    rng: np.random.Generator | None = None,
    name: str = "sample",
) -> PointCloud:
    """One registered (xyz, rgb, gt) triple -> a :class:`PointCloud` (see the module docstring).

    xyz : (H, W, 3) float; a pixel whose three values are 0 (or not finite) holds no point.
    rgb : (H, W, 3) or (H, W, 4) uint8 (or floats in [0, 1]); alpha is dropped. gt : (H, W) or None (normal).
    n_points : keep at most this many points, drawn without replacement by ``rng`` (``None``: all).
    Raises ``ValueError`` (message starting with ``name``) on shapes that do not match.
    """
    xyz = np.asarray(xyz, np.float64)
    if xyz.ndim != 3 or xyz.shape[-1] != 3:
        raise ValueError(f"{name}: xyz must be (H, W, 3), got {xyz.shape}")
    rgb = np.asarray(rgb)
    if rgb.ndim == 2:
        rgb = np.repeat(rgb[..., None], 3, -1)
    if rgb.ndim != 3 or rgb.shape[-1] not in (3, 4) or rgb.shape[:2] != xyz.shape[:2]:
        raise ValueError(f"{name}: rgb is {rgb.shape}, but xyz is {xyz.shape} (need the same H x W, 3 channels)")
    rgb = rgb[..., :3]
    colours = rgb.astype(np.float64) / 255.0 if np.issubdtype(rgb.dtype, np.integer) else rgb.astype(np.float64)
    if gt is None:
        mask = np.zeros(xyz.shape[:2], bool)
    else:
        g = np.asarray(gt)
        if g.ndim == 3:
            g = g[..., 0]
        if g.shape != xyz.shape[:2]:
            raise ValueError(f"{name}: gt is {np.asarray(gt).shape}, but xyz is {xyz.shape} (need the same H x W)")
        mask = g > 0
    valid = np.all(np.isfinite(xyz), -1) & np.any(xyz != 0, -1)
    if valid.sum() < 16:
        raise ValueError(f"{name}: only {int(valid.sum())} pixels hold a point (xyz all zero elsewhere)")
    if gt is not None and mask.any() and not (mask & valid).any():
        raise ValueError(f"{name}: the mask marks no pixel that holds a point")
    idx = np.flatnonzero(valid.ravel())
    if n_points is not None and len(idx) > n_points:
        if rng is None:
            raise ValueError("rng: needed to subsample the points")
        # stratified by label, at least one defect point kept, so a subsampled defective object stays defective
        lab_all = mask.ravel()[idx]
        bad, good = idx[lab_all], idx[~lab_all]
        n_bad = min(len(bad), max(1, int(round(n_points * len(bad) / len(idx))))) if len(bad) else 0
        idx = np.sort(np.concatenate([rng.choice(bad, n_bad, replace=False),
                                      rng.choice(good, min(len(good), n_points - n_bad), replace=False)]))
    pts = xyz.reshape(-1, 3)[idx] * np.array([1.0, -1.0, -1.0])  # camera frame -> renderer frame
    col = np.clip(colours.reshape(-1, 3)[idx], 0.0, 1.0)
    lab = mask.ravel()[idx].astype(np.int8)
    return PointCloud(pts, col, lab, category, defect)


def _samples(root: Path, split: str, per_defect: int, key: str) -> list[tuple[str, Path, Path, Path, Path]]:
    """(category, defect folder, xyz, rgb, gt) of every sample, after checking that each file is there."""
    if isinstance(per_defect, bool) or not isinstance(per_defect, (int, np.integer)) or per_defect < 0:
        raise ValueError(f"per_defect = {per_defect!r}: must be a non-negative integer")
    out = []
    for cat, cdir in mvtec3d_categories(root, split=split, key=key).items():
        for ddir in sorted(d for d in (cdir / split).iterdir() if (d / "xyz").is_dir()):
            files = sorted(f for f in (ddir / "xyz").iterdir() if f.suffix.lower() in (".tif", ".tiff"))
            if not files:
                raise BadInput(f"{_where(root, key)}: {cat}/{split}/{ddir.name}/xyz holds no .tiff file")
            for f in files[:per_defect] if per_defect else files:
                rel = f"{cat}/{split}/{ddir.name}"
                rgb_f, gt_f = ddir / "rgb" / f"{f.stem}.png", ddir / "gt" / f"{f.stem}.png"
                if not rgb_f.is_file():
                    raise BadInput(f"{_where(root, key)}: {rel}/xyz/{f.name} has no {rel}/rgb/{rgb_f.name}")
                if ddir.name != "good" and not gt_f.is_file():
                    raise BadInput(f"{_where(root, key)}: {rel}/xyz/{f.name} has no mask {rel}/gt/{gt_f.name}")
                out.append((cat, ddir, f, rgb_f, gt_f))
    return out


def check_mvtec3d(root: str | Path, *, split: str = "test", per_defect: int = 0, key: str = "data") -> int:
    """Check the whole folder before any work: every file present and every image of a sample the same H x W
    (read from the file headers, no pixel data). Returns the number of samples; :class:`BadInput` naming ``key``
    and the file otherwise."""
    import tifffile
    from PIL import Image

    root_p = Path(root).expanduser()
    samples = _samples(root_p, split, per_defect, key)
    for cat, ddir, f, rgb_f, gt_f in samples:
        rel = f"{cat}/{split}/{ddir.name}"
        try:
            with tifffile.TiffFile(str(f)) as tif:
                shape = tuple(tif.series[0].shape)
            sizes = {"rgb": Image.open(rgb_f).size}
            if gt_f.is_file():
                sizes["gt"] = Image.open(gt_f).size
        except Exception as exc:  # a broken or foreign file: PIL and tifffile raise many kinds
            raise BadInput(f"{_where(root_p, key)}: {rel}/{f.stem} cannot be read ({one_line(exc, 120)})") from exc
        if len(shape) != 3 or shape[-1] != 3:
            raise BadInput(f"{_where(root_p, key)}: {rel}/xyz/{f.name} is {shape}, expected (H, W, 3) xyz")
        for what, (w, h) in sizes.items():
            if (h, w) != shape[:2]:
                raise BadInput(f"{_where(root_p, key)}: {rel}/{what}/{f.stem}.png is {h} x {w}, but the xyz "
                               f"image is {shape[0]} x {shape[1]}")
    return len(samples)


def load_mvtec3d(
    root: str | Path,
    *,
    split: str = "test",
    n_points: int | None = None,
    rng: np.random.Generator | None = None,
    per_defect: int = 0,
    key: str = "data",
) -> list[PointCloud]:
    """Every sample of ``split`` under ``root`` as a :class:`PointCloud` (categories and defects in name order).

    n_points : at most this many points per object (random subset by ``rng``); ``None`` keeps all.
    per_defect : at most this many samples per category and defect folder (the first in name order); 0 = all.
    Raises :class:`BadInput` naming ``key`` and the file on any missing file or mismatched shape.
    """
    root_p = Path(root).expanduser()
    out: list[PointCloud] = []
    for cat, ddir, f, rgb_f, gt_f in _samples(root_p, split, per_defect, key):
        rel = f"{cat}/{split}/{ddir.name}"
        defect = None if ddir.name == "good" else ddir.name
        xyz = _read(f, "xyz", root_p, key)
        rgb = _read(rgb_f, "rgb", root_p, key)
        gt = _read(gt_f, "gt", root_p, key) if gt_f.is_file() else None
        try:
            cloud = cloud_from_images(
                xyz, rgb, gt, category=cat, defect=defect, n_points=n_points, rng=rng,
                name=f"{rel}/{f.stem}",
            )
        except ValueError as exc:
            raise BadInput(f"{_where(root_p, key)}: {one_line(exc, 200)}") from exc
        if (defect is not None) != cloud.is_anomalous:
            raise BadInput(f"{_where(root_p, key)}: {rel}/{f.stem}: a '{ddir.name}' sample whose mask "
                           f"marks {'no' if defect else 'some'} point")
        out.append(cloud)
    return out
