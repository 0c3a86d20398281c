"""Procedural coloured point clouds with injected defects (the brief's CPU stand-in for MVTec3D-AD).

Eight categories, each a closed (or nearly closed) surface of unit size sampled uniformly by area, with a
category texture (gradients, stripes, speckles). Defects carry a per-point ground truth and are of two
families that must not leak into each other's modality (pitfall 4 of the brief):

* geometry-only (``dent``, ``bump``, ``hole``, ``crack``): points move (or vanish), colours are unchanged;
* colour-only (``stain``, ``discolour``, ``spot``): colours change, points are bit-identical;
* ``mixed``: a dent with a stain on the same site.

Objects face the camera (+z) with their defect on the visible side unless a ``site`` direction is given;
every object gets a random pose jitter (a rotation of at most ``jitter_deg`` about a random axis).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from icml2026.core import spawn
from icml2026.core.validate import as_array

__all__ = [
    "CATEGORIES",
    "AUX_CATEGORIES",
    "TEST_CATEGORIES",
    "DEFECTS",
    "GEOMETRY_DEFECTS",
    "COLOUR_DEFECTS",
    "PointCloud",
    "make_object",
    "make_dataset",
    "assert_disjoint",
]

CATEGORIES = ("sphere", "bagel", "cylinder", "box", "cone", "blob", "capsule", "cookie")
#: the zero-shot split: prompts, MVA and the layer selector learn on these three only (brief Sec. 4) ...
AUX_CATEGORIES = ("sphere", "box", "capsule")
#: ... and are evaluated on these five, whose geometry and textures never appear in training (criterion 5)
TEST_CATEGORIES = ("bagel", "cylinder", "cone", "blob", "cookie")
GEOMETRY_DEFECTS = ("dent", "bump", "hole", "crack")
COLOUR_DEFECTS = ("stain", "discolour", "spot")
DEFECTS = (*GEOMETRY_DEFECTS, *COLOUR_DEFECTS, "mixed")


@dataclass(frozen=True)
class PointCloud:
    """One object: ``points`` (n, 3), ``colours`` (n, 3) in [0, 1], ``labels`` (n,) in {0, 1} (per-point GT)."""

    points: np.ndarray
    colours: np.ndarray
    labels: np.ndarray
    category: str = "unknown"
    defect: str | None = None
    meta: dict[str, float] = field(default_factory=dict, compare=False)

    def __post_init__(self) -> None:
        pts = as_array(self.points, "points", ndim=2)
        if pts.shape[1] != 3:
            raise ValueError(f"points: expected shape (n, 3), got {pts.shape}")
        col = as_array(self.colours, "colours", ndim=2, lo=0.0, hi=1.0)
        if col.shape != pts.shape:
            raise ValueError(f"colours: expected shape {pts.shape}, got {col.shape}")
        lab = np.asarray(self.labels)
        if lab.shape != (pts.shape[0],) or not np.all((lab == 0) | (lab == 1)):
            raise ValueError(f"labels: expected {pts.shape[0]} values in {{0, 1}}, got shape {lab.shape}")
        for name, arr in (("points", pts), ("colours", col), ("labels", lab.astype(np.int8))):
            arr = np.array(arr)
            arr.setflags(write=False)
            object.__setattr__(self, name, arr)

    @property
    def n_points(self) -> int:
        return int(self.points.shape[0])

    @property
    def is_anomalous(self) -> bool:
        return bool(self.labels.any())

    def with_colours(self, colours: np.ndarray) -> PointCloud:
        """The same geometry and labels with other colours (used by the renderer's invariance test)."""
        return PointCloud(self.points, colours, self.labels, self.category, self.defect, dict(self.meta))


# ---------------------------------------------------------------------------------------------- surfaces
Patch = Callable[[np.ndarray, np.ndarray], np.ndarray]  # (u, v) in [0, 1]^2 -> (m, 3)


def _area_element(f: Patch, u: np.ndarray, v: np.ndarray, h: float = 1e-4) -> np.ndarray:
    du = (f(np.clip(u + h, 0, 1), v) - f(np.clip(u - h, 0, 1), v)) / (2 * h)
    dv = (f(u, np.clip(v + h, 0, 1)) - f(u, np.clip(v - h, 0, 1))) / (2 * h)
    return np.linalg.norm(np.cross(du, dv), axis=1)


def _sample_patches(patches: Sequence[Patch], n: int, rng: np.random.Generator) -> np.ndarray:
    """``n`` points uniform by area over the union of parametric patches (rejection on |f_u x f_v|)."""
    probe_u, probe_v = rng.random(4000), rng.random(4000)
    probes = [_area_element(f, probe_u, probe_v) for f in patches]
    areas = np.array([a.mean() for a in probes])
    # Deviation: the acceptance ceiling is the 99th percentile of the area element, not its supremum (the
    # superquadric's is unbounded at its edges); the few cells above it are slightly under-sampled.
    caps = [float(np.quantile(a, 0.99)) for a in probes]
    counts = rng.multinomial(n, areas / areas.sum())
    out = []
    for f, m, cap in zip(patches, counts, caps, strict=True):
        got: list[np.ndarray] = []
        have = 0
        while have < m:
            u, v = rng.random(4 * m + 16), rng.random(4 * m + 16)
            da = _area_element(f, u, v)
            keep = rng.random(u.size) * cap < da
            pts = f(u[keep], v[keep])
            got.append(pts)
            have += len(pts)
        out.append(np.concatenate(got)[:m])
    pts = np.concatenate(out)
    return pts[rng.permutation(len(pts))]


def _sphere(r: float) -> Patch:
    def f(u: np.ndarray, v: np.ndarray) -> np.ndarray:
        th, ph = 2 * np.pi * u, np.pi * v
        return np.stack([r * np.sin(ph) * np.cos(th), r * np.sin(ph) * np.sin(th), r * np.cos(ph)], 1)

    return f


def _disk(r: float, y: float, axis: int = 1) -> Patch:
    def f(u: np.ndarray, v: np.ndarray) -> np.ndarray:
        th, rho = 2 * np.pi * u, r * v
        a, b = rho * np.cos(th), rho * np.sin(th)
        c = np.full_like(a, y)
        return np.stack([a, c, b], 1) if axis == 1 else np.stack([c, a, b], 1)

    return f


def _tube(r: float, y0: float, y1: float, axis: int = 1, r1: float | None = None) -> Patch:
    """A cylinder side (or a cone side when ``r1`` differs) along ``axis`` (1 = y, 0 = x)."""
    r1 = r if r1 is None else r1

    def f(u: np.ndarray, v: np.ndarray) -> np.ndarray:
        th = 2 * np.pi * u
        rad = r + (r1 - r) * v
        a, b, c = rad * np.cos(th), rad * np.sin(th), y0 + (y1 - y0) * v
        return np.stack([a, c, b], 1) if axis == 1 else np.stack([c, a, b], 1)

    return f


def _cap(r: float, x0: float, sign: float) -> Patch:
    """A hemisphere of radius ``r`` centred at x = ``x0``, bulging towards ``sign`` * x."""

    def f(u: np.ndarray, v: np.ndarray) -> np.ndarray:
        th, ph = 2 * np.pi * u, 0.5 * np.pi * v
        return np.stack([x0 + sign * r * np.cos(ph), r * np.sin(ph) * np.cos(th), r * np.sin(ph) * np.sin(th)], 1)

    return f


def _superquadric(a: float, b: float, c: float, e: float, relief: float = 0.0) -> Patch:
    def sp(x: np.ndarray, p: float) -> np.ndarray:
        return np.sign(x) * np.abs(x) ** p

    def f(u: np.ndarray, v: np.ndarray) -> np.ndarray:
        th, ph = 2 * np.pi * u - np.pi, np.pi * v - 0.5 * np.pi
        x = a * sp(np.cos(ph), e) * sp(np.cos(th), e)
        y = b * sp(np.cos(ph), e) * sp(np.sin(th), e)
        z = c * sp(np.sin(ph), e)
        if relief:
            z = z + relief * np.sin(9 * x) * np.sin(9 * y) * (z > 0)
        return np.stack([x, y, z], 1)

    return f


def _blob(u: np.ndarray, v: np.ndarray) -> np.ndarray:
    th, ph = 2 * np.pi * u, np.pi * v
    r = 0.45 * (1 + 0.14 * np.sin(3 * th) * np.sin(2 * ph) + 0.08 * np.cos(2 * th + 1.0) * np.sin(ph))
    return np.stack([r * np.sin(ph) * np.cos(th), r * np.sin(ph) * np.sin(th), r * np.cos(ph)], 1)


def _torus(u: np.ndarray, v: np.ndarray) -> np.ndarray:
    th, ps = 2 * np.pi * u, 2 * np.pi * v
    big, small = 0.36, 0.15
    return np.stack(
        [(big + small * np.cos(ps)) * np.cos(th), (big + small * np.cos(ps)) * np.sin(th), 1.1 * small * np.sin(ps)], 1
    )


_SHAPES: dict[str, list[Patch]] = {
    "sphere": [_sphere(0.48)],
    "bagel": [_torus],
    "cylinder": [_tube(0.3, -0.42, 0.42), _disk(0.3, -0.42), _disk(0.3, 0.42)],
    "box": [_superquadric(0.45, 0.36, 0.3, 0.25)],
    "cone": [_tube(0.4, -0.4, 0.45, r1=0.02), _disk(0.4, -0.4)],
    "blob": [_blob],
    "capsule": [_tube(0.22, -0.28, 0.28, axis=0), _cap(0.22, 0.28, 1.0), _cap(0.22, -0.28, -1.0)],
    "cookie": [_superquadric(0.48, 0.48, 0.13, 0.6, relief=0.015)],
}

# (colour a, colour b, gradient axis, pattern, pattern frequency): one texture per category
_TEXTURES: dict[str, tuple[tuple[float, float, float], tuple[float, float, float], int, str, float]] = {
    "sphere": ((0.20, 0.45, 0.80), (0.35, 0.75, 0.85), 2, "stripes", 14.0),
    "bagel": ((0.80, 0.60, 0.35), (0.65, 0.45, 0.25), 2, "speckle", 0.0),
    "cylinder": ((0.75, 0.75, 0.78), (0.55, 0.60, 0.70), 1, "stripes", 10.0),
    "box": ((0.85, 0.80, 0.55), (0.60, 0.70, 0.45), 0, "checker", 8.0),
    "cone": ((0.90, 0.55, 0.20), (0.95, 0.80, 0.30), 1, "smooth", 0.0),
    "blob": ((0.45, 0.75, 0.45), (0.70, 0.85, 0.55), 0, "speckle", 0.0),
    "capsule": ((0.85, 0.85, 0.90), (0.75, 0.50, 0.60), 0, "stripes", 6.0),
    "cookie": ((0.85, 0.70, 0.45), (0.75, 0.58, 0.35), 0, "speckle", 0.0),
}


def _texture(category: str, pts: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    a, b, axis, pattern, freq = _TEXTURES[category]
    ca, cb = np.array(a), np.array(b)
    t = np.clip(0.5 + pts[:, axis], 0, 1)[:, None]
    col = (1 - t) * ca + t * cb
    phase = rng.uniform(0, 2 * np.pi)
    if pattern == "stripes":
        w = 0.5 + 0.5 * np.sin(freq * pts[:, (axis + 1) % 3] + phase)
        col = col * (0.85 + 0.15 * w[:, None])
    elif pattern == "checker":
        w = (np.floor(freq * (pts[:, 0] + 2)) + np.floor(freq * (pts[:, 1] + 2))) % 2
        col = col * (0.9 + 0.1 * w[:, None])
    elif pattern == "speckle":
        col = col + rng.normal(0, 0.03, size=col.shape)
    return np.clip(col, 0.0, 1.0)


def _rotation(axis: np.ndarray, angle: float) -> np.ndarray:
    k = axis / np.linalg.norm(axis)
    kx = np.array([[0, -k[2], k[1]], [k[2], 0, -k[0]], [-k[1], k[0], 0]])
    return np.eye(3) + np.sin(angle) * kx + (1 - np.cos(angle)) * kx @ kx


# ----------------------------------------------------------------------------------------------- defects
def _outward_normals(pts: np.ndarray) -> np.ndarray:
    from .render import estimate_normals

    return estimate_normals(pts)


def _site(pts: np.ndarray, normals: np.ndarray, rng: np.random.Generator, site: np.ndarray | None) -> int:
    if site is None:  # a point facing the camera (+z), so that most of the 20 views see the defect
        cand = np.flatnonzero(normals[:, 2] > 0.6)
        cand = cand if cand.size else np.arange(len(pts))
        return int(rng.choice(cand))
    d = np.asarray(site, float) / np.linalg.norm(site)
    return int(np.argmax(pts @ d - 0.5 * np.linalg.norm(pts - (pts @ d)[:, None] * d, axis=1)))


def _geometry_defect(
    kind: str, pts: np.ndarray, nrm: np.ndarray, c: int, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(new points, labels, keep mask) for a geometry-only defect at point ``c``."""
    d = np.linalg.norm(pts - pts[c], axis=1)
    n_c = nrm[c]
    labels = np.zeros(len(pts), np.int8)
    keep = np.ones(len(pts), bool)
    new = pts.copy()
    if kind in ("dent", "bump"):
        rad = rng.uniform(0.13, 0.18)
        depth = rng.uniform(0.6, 0.8) * rad * (-1.0 if kind == "dent" else 1.0)
        w = np.clip(1 - (d / rad) ** 2, 0, None) ** 2
        new = pts + depth * w[:, None] * n_c
        labels[w > 0.05] = 1
    elif kind == "hole":
        rad = rng.uniform(0.09, 0.12)
        keep = d > rad
        rim = (d > rad) & (d < rad + 0.045)
        new = pts - 0.03 * rim[:, None] * n_c  # a slightly sunken rim around the missing patch
        labels[rim] = 1
    elif kind == "crack":
        t = np.cross(n_c, rng.normal(size=3))
        t /= np.linalg.norm(t)
        rel = pts - pts[c]
        along = rel @ t
        half = rng.uniform(0.16, 0.22)
        perp = np.linalg.norm(rel - along[:, None] * t, axis=1)
        width = 0.05
        w = np.clip(1 - (perp / width) ** 2, 0, None) * (np.abs(along) < half)
        new = pts - 0.09 * w[:, None] * n_c
        labels[w > 0.05] = 1
    else:  # pragma: no cover - guarded by make_object
        raise ValueError(kind)
    return new, labels, keep


def _colour_defect(
    kind: str, pts: np.ndarray, col: np.ndarray, c: int, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """(new colours, labels) for a colour-only defect at point ``c`` (points untouched)."""
    labels = np.zeros(len(pts), np.int8)
    new = col.copy()
    if kind == "spot":
        centres = [pts[c]]
        near = np.flatnonzero(np.linalg.norm(pts - pts[c], axis=1) < 0.2)
        centres += [pts[int(rng.choice(near))] for _ in range(int(rng.integers(1, 3)))]
        for p in centres:
            d = np.linalg.norm(pts - p, axis=1)
            rad = rng.uniform(0.05, 0.07)
            w = np.clip(1 - (d / rad) ** 2, 0, None) ** 0.5
            new = new * (1 - 0.85 * w[:, None])  # near-black spots
            labels[w > 0.05] = 1
        return np.clip(new, 0, 1), labels
    d = np.linalg.norm(pts - pts[c], axis=1)
    rad = rng.uniform(0.12, 0.16) if kind == "stain" else rng.uniform(0.15, 0.2)
    w = np.clip(1 - (d / rad) ** 2, 0, None) ** 0.5
    if kind == "stain":
        target = np.array([0.35, 0.22, 0.10]) + rng.normal(0, 0.03, 3)
    else:  # discolour: a hue shift of the underlying texture
        target = col[:, [2, 0, 1]] * 0.9
    new = (1 - 0.9 * w[:, None]) * col + 0.9 * w[:, None] * target
    labels[w > 0.05] = 1
    return np.clip(new, 0, 1), labels


def make_object(
    category: str,
    rng: np.random.Generator,
    defect: str | None = None,
    *,
    n_points: int = 2500,
    jitter_deg: float = 15.0,
    site: Sequence[float] | None = None,
) -> PointCloud:
    """One coloured point cloud of ``category``, normal (``defect=None``) or with one injected defect.

    Parameters
    ----------
    category : one of :data:`CATEGORIES`.
    rng : the generator (shape sampling, texture phase, defect site and size, pose jitter).
    defect : None or one of :data:`DEFECTS`.
    n_points : points sampled before a ``hole`` removes some.
    jitter_deg : the largest random pose rotation (degrees, about a random axis).
    site : optional direction (3,) on which the defect is placed (default: a camera-facing point).
    """
    if category not in _SHAPES:
        raise ValueError(f"category = {category!r}: must be one of {CATEGORIES}")
    if defect is not None and defect not in DEFECTS:
        raise ValueError(f"defect = {defect!r}: must be None or one of {DEFECTS}")
    if isinstance(n_points, bool) or not isinstance(n_points, (int, np.integer)) or not 200 <= n_points <= 200_000:
        raise ValueError(f"n_points = {n_points!r}: must be an integer in [200, 200000]")
    if not np.isfinite(jitter_deg) or not 0 <= jitter_deg <= 90:
        raise ValueError(f"jitter_deg = {jitter_deg!r}: must be in [0, 90]")
    if not isinstance(rng, np.random.Generator):
        raise TypeError(f"rng: expected numpy.random.Generator, got {type(rng).__name__}")
    site_arr = None if site is None else as_array(site, "site", ndim=1)
    if site_arr is not None and (site_arr.shape != (3,) or np.linalg.norm(site_arr) == 0):
        raise ValueError("site: expected a non-zero 3-vector")
    r_shape, r_tex, r_def, r_pose = spawn(rng, 4)
    pts = _sample_patches(_SHAPES[category], n_points, r_shape)
    pts = pts * r_shape.uniform(0.95, 1.05, size=3)  # instance variation of the proportions
    col = _texture(category, pts, r_tex)
    labels = np.zeros(len(pts), np.int8)
    if defect is not None:
        nrm = _outward_normals(pts)
        c = _site(pts, nrm, r_def, site_arr)
        if defect in GEOMETRY_DEFECTS or defect == "mixed":
            kind = "dent" if defect == "mixed" else defect
            new, lab, keep = _geometry_defect(kind, pts, nrm, c, r_def)
            labels = lab
            if defect == "mixed":
                col, lab2 = _colour_defect("stain", pts, col, c, r_def)
                labels = np.maximum(labels, lab2)
            pts, col, labels = new[keep], col[keep], labels[keep]
        else:
            col, labels = _colour_defect(defect, pts, col, c, r_def)
    axis = r_pose.normal(size=3)
    rot = _rotation(axis, np.deg2rad(r_pose.uniform(-jitter_deg, jitter_deg)))
    pts = pts @ rot.T
    return PointCloud(pts, col, labels, category, defect)


def make_dataset(
    categories: Sequence[str],
    n_normal: int,
    n_defective: int,
    rng: np.random.Generator,
    *,
    defects: Sequence[str] = DEFECTS,
    n_points: int = 2500,
) -> list[PointCloud]:
    """``n_normal`` normal and ``n_defective`` defective objects per category (defect types cycled)."""
    out = []
    for cat in categories:
        for i, r in enumerate(spawn(rng, n_normal + n_defective)):
            d = None if i < n_normal else defects[(i - n_normal) % len(defects)]
            out.append(make_object(cat, r, d, n_points=n_points))
    return out


def assert_disjoint(train: Sequence[PointCloud], test: Sequence[PointCloud]) -> None:
    """Criterion 5: no test category (geometry and texture are per category) appears in training."""
    shared = {c.category for c in train} & {c.category for c in test}
    if shared:
        raise ValueError(f"zero-shot split violated: categories {sorted(shared)} are in both train and test")
