"""Step 1 of CoGeoAD: pixel-aligned colour / geometry multi-view renders of a point cloud (numpy z-buffer).

For view (i, j) the cloud is rotated about its centre by ``R_ij = R_y(theta_j) R_x(theta_i)`` and projected
once (orthographic camera on +z looking down -z). That single projection pass gives the point-to-pixel map
``pi(p')``, the z-buffer and the winning point of every pixel, from which all images are read:

* colour image: the winner's RGB, unlit by default (``lit_colour=False``), or, as in the official render
  script (lighting on, estimated normals), lit by the same light as the geometry image (``lit_colour=True``:
  RGB x (ambient + (1 - ambient) max(0, n.l))); geometry image: uniform grey 0.7 lit by Lambert shading of the
  winner's normal (normals by PCA on a k-NN graph, scipy ``cKDTree``); mask image: the winner's GT label.
  The two modalities are therefore pixel-aligned by construction (pitfall 1 of the brief).
* visibility ``M_k = 1[z'_k <= min{z'_m : pi(p'_m) = pi(p'_k)} + tol]`` (Step 1; see the deviation on tol).

Background is white (1.0) in both images, as in the official script.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from icml2026.core.validate import as_array

from .data import PointCloud

__all__ = [
    "DEFAULT_VIEWS",
    "POINTAD_VIEWS",
    "SMALL_VIEWS",
    "Renders",
    "view_rotation",
    "estimate_normals",
    "render_views",
    "lift_to_points",
]

#: the paper's 20 views: theta_x in {-45, -15, 0, 15, 45} x theta_y in {-30, -15, 15, 30} degrees
DEFAULT_VIEWS: tuple[tuple[float, float], ...] = tuple(
    (float(tx), float(ty)) for tx in (-45, -15, 0, 15, 45) for ty in (-30, -15, 15, 30)
)
# Deviation: PointAD renders 9 views by rotating about the axes; we take 9 of the 20 views (a 3 x 3 grid),
# so that the PointAD-style baseline reuses the same renders.
POINTAD_VIEWS: tuple[tuple[float, float], ...] = tuple(
    (float(tx), float(ty)) for tx in (-45, 0, 45) for ty in (-30, 15, 30)
)
#: the CI smoke setting of the brief (4 views)
SMALL_VIEWS: tuple[tuple[float, float], ...] = ((-45.0, -30.0), (-45.0, 30.0), (45.0, -30.0), (45.0, 30.0))

_LIGHT = np.array([-0.35, 0.45, 0.82]) / np.linalg.norm([-0.35, 0.45, 0.82])  # in camera coordinates
_GREY = 0.7  # the official script's uniform point colour for geometry renders
_AMBIENT = 0.25


@dataclass(frozen=True)
class Renders:
    """Renders of one cloud from ``V`` views at ``H = W = size``.

    colour (V, H, W, 3), geometry (V, H, W), mask (V, H, W) in {0, 1}, index (V, H, W) winning point or -1,
    pixels (V, n, 2) continuous (row, col) image coordinates of every point, visibility (V, n) bool.
    """

    colour: np.ndarray
    geometry: np.ndarray
    mask: np.ndarray
    index: np.ndarray
    pixels: np.ndarray
    visibility: np.ndarray
    views: tuple[tuple[float, float], ...]
    size: int

    @property
    def n_views(self) -> int:
        return len(self.views)


def view_rotation(theta_x: float, theta_y: float) -> np.ndarray:
    """``R_ij = R_y(theta_y) R_x(theta_x)`` (Step 1), angles in degrees."""
    a, b = np.deg2rad(theta_x), np.deg2rad(theta_y)
    rx = np.array([[1, 0, 0], [0, np.cos(a), -np.sin(a)], [0, np.sin(a), np.cos(a)]])
    ry = np.array([[np.cos(b), 0, np.sin(b)], [0, 1, 0], [-np.sin(b), 0, np.cos(b)]])
    return ry @ rx


def estimate_normals(points: np.ndarray, k: int = 12) -> np.ndarray:
    """Unit normals (n, 3) by PCA of each point's ``k`` nearest neighbours, oriented away from the centroid."""
    from scipy.spatial import cKDTree

    pts = as_array(points, "points", ndim=2)
    if pts.shape[1] != 3 or len(pts) < 4:
        raise ValueError(f"points: expected shape (n >= 4, 3), got {pts.shape}")
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 3:
        raise ValueError(f"k = {k!r}: must be an integer >= 3")
    k = min(int(k), len(pts))
    _, idx = cKDTree(pts).query(pts, k=k)
    nb = pts[idx] - pts[idx].mean(axis=1, keepdims=True)
    cov = np.einsum("nki,nkj->nij", nb, nb)
    _, vecs = np.linalg.eigh(cov)
    nrm = vecs[:, :, 0]  # eigenvector of the smallest eigenvalue
    flip = np.einsum("ni,ni->n", nrm, pts - pts.mean(0)) < 0
    nrm[flip] *= -1
    return nrm


def render_views(
    cloud: PointCloud,
    views: Sequence[tuple[float, float]] = DEFAULT_VIEWS,
    size: int = 64,
    *,
    splat: int | None = None,
    depth_tol: float = 0.05,
    k_normals: int = 20,
    normals: np.ndarray | None = None,
    lit_colour: bool = False,
) -> Renders:
    """Colour, geometry and mask images of ``cloud`` from one projection pass per view (Step 1).

    Parameters
    ----------
    cloud : the point cloud.
    views : (theta_x, theta_y) pairs in degrees (default: the paper's 20).
    size : image side H = W in pixels (paper: 336; CPU scale: 64).
    splat : side of the square splat of each point in pixels (paper: 5-12 px at 1024, then resized);
        default ``round(3.5 * size / sqrt(n))``, which closes the surface so back points cannot shine through.
    depth_tol : visibility tolerance on depth in units of the normalised cloud radius.
    k_normals : neighbours of the PCA normal estimate.
    normals : optional precomputed normals (n, 3).
    lit_colour : shade the colour image with the geometry image's light (the official script's lit rendering);
        ``False`` keeps the raw RGB (our default, a deviation: see the card).
    """
    if not isinstance(cloud, PointCloud):
        raise TypeError(f"cloud: expected PointCloud, got {type(cloud).__name__}")
    if isinstance(size, bool) or not isinstance(size, (int, np.integer)) or not 8 <= size <= 2048:
        raise ValueError(f"size = {size!r}: must be an integer in [8, 2048]")
    if splat is None:
        splat = max(1, int(round(3.5 * size / np.sqrt(cloud.n_points))))
    if isinstance(splat, bool) or not isinstance(splat, (int, np.integer)) or not 1 <= splat <= 32:
        raise ValueError(f"splat = {splat!r}: must be an integer in [1, 32]")
    if not np.isfinite(depth_tol) or depth_tol < 0:
        raise ValueError(f"depth_tol = {depth_tol!r}: must be a finite number >= 0")
    views = tuple((float(a), float(b)) for a, b in views)
    if not views:
        raise ValueError("views: needs at least one (theta_x, theta_y) pair")
    pts = cloud.points
    n = len(pts)
    nrm = estimate_normals(pts, k_normals) if normals is None else as_array(normals, "normals", ndim=2)
    centre = pts.mean(0)
    scale = float(np.linalg.norm(pts - centre, axis=1).max()) * 1.08
    rel = (pts - centre) / scale
    v_count = len(views)
    colour = np.ones((v_count, size, size, 3))
    geometry = np.ones((v_count, size, size))
    mask = np.zeros((v_count, size, size), np.int8)
    index = np.full((v_count, size, size), -1, np.int64)
    pixels = np.zeros((v_count, n, 2))
    visibility = np.zeros((v_count, n), bool)
    offs = np.arange(splat) - (splat - 1) // 2
    dy, dx = (a.ravel() for a in np.meshgrid(offs, offs, indexing="ij"))
    ids = np.repeat(np.arange(n), len(dy))
    for k, (tx, ty) in enumerate(views):
        rot = view_rotation(tx, ty)
        q = rel @ rot.T
        # Deviation: orthographic projection instead of the official script's pinhole camera
        col_f = (q[:, 0] + 1) * 0.5 * size
        row_f = (1 - q[:, 1]) * 0.5 * size
        depth = -q[:, 2]  # the camera sits on +z: smaller is nearer
        pixels[k] = np.stack([row_f, col_f], 1)
        r0 = np.clip(np.floor(row_f).astype(np.int64), 0, size - 1)
        c0 = np.clip(np.floor(col_f).astype(np.int64), 0, size - 1)
        rr = np.clip(np.repeat(r0, len(dy)) + np.tile(dy, n), 0, size - 1)
        cc = np.clip(np.repeat(c0, len(dx)) + np.tile(dx, n), 0, size - 1)
        pix = rr * size + cc
        n_cam = nrm @ rot.T
        n_cam[n_cam[:, 2] < 0] *= -1  # unoriented normals face the viewer
        # surface splats: each splat pixel takes the depth of the point's tangent plane there, so that a
        # neighbour on the same surface never occludes a point (grazing slopes clamped at 3 px of depth)
        nz = np.maximum(n_cam[:, 2], 0.05)
        step = 2.0 / size
        slope_x = np.clip(n_cam[:, 0] / nz, -3, 3) * step
        slope_y = np.clip(n_cam[:, 1] / nz, -3, 3) * step
        off_x = cc + 0.5 - col_f[ids]  # pixel centre minus the point's exact position, in pixels
        off_y = rr + 0.5 - row_f[ids]
        # + a radial bias: among splats at one depth the nearest point centre wins (Voronoi-like splats, so
        # that pixels carry their own point's label and colour, not a neighbour's)
        d_s = depth[ids] + off_x * slope_x[ids] - off_y * slope_y[ids] + 0.3 * step * (off_x**2 + off_y**2)
        lo, span = d_s.min(), np.ptp(d_s) + 1e-12
        order = np.argsort(pix + 0.999 * (d_s - lo) / span, kind="stable")  # by pixel, then depth, then id
        pix_s = pix[order]
        first = np.ones(len(order), bool)
        first[1:] = pix_s[1:] != pix_s[:-1]
        win_pix, win_id = pix_s[first], ids[order][first]
        zbuf = np.full(size * size, np.inf)
        zbuf[win_pix] = d_s[order][first]
        flat_idx = np.full(size * size, -1, np.int64)
        flat_idx[win_pix] = win_id
        index[k] = flat_idx.reshape(size, size)
        # Step 1's M_k. Deviation: a depth tolerance against surface splats instead of exact equality
        visibility[k] = depth <= zbuf[r0 * size + c0] + depth_tol * 2.0  # (x2: coordinates span [-1, 1])
        light = _AMBIENT + (1 - _AMBIENT) * np.clip(n_cam[win_id] @ _LIGHT, 0, None)
        g = geometry[k].reshape(-1)
        g[win_pix] = _GREY * light
        c = colour[k].reshape(-1, 3)
        # Deviation (default): raw RGB; the official script renders the colour cloud lit (lit_colour=True)
        c[win_pix] = cloud.colours[win_id] * light[:, None] if lit_colour else cloud.colours[win_id]
        m = mask[k].reshape(-1)
        m[win_pix] = cloud.labels[win_id]
    return Renders(colour, geometry, mask, index, pixels, visibility, views, int(size))


def lift_to_points(maps: np.ndarray, renders: Renders, weights: np.ndarray | None = None) -> np.ndarray:
    """Back-project per-view maps (V, H, W) to points: the weighted mean over the views that see a point.

    ``S_point(p) = sum_k a_k M_k(p) S_k(pi_k(p)) / sum_k a_k M_k(p)``; a point seen in no view gets 0.
    """
    maps = as_array(maps, "maps", ndim=3)
    if maps.shape != renders.geometry.shape:
        raise ValueError(f"maps: expected shape {renders.geometry.shape}, got {maps.shape}")
    v_count, size = renders.n_views, renders.size
    w = np.ones(v_count) if weights is None else as_array(weights, "weights", ndim=1, lo=0.0)
    if w.shape != (v_count,):
        raise ValueError(f"weights: expected shape ({v_count},), got {w.shape}")
    r = np.clip(np.floor(renders.pixels[..., 0]).astype(np.int64), 0, size - 1)
    c = np.clip(np.floor(renders.pixels[..., 1]).astype(np.int64), 0, size - 1)
    vals = np.take_along_axis(maps.reshape(v_count, -1), r * size + c, axis=1)
    wm = w[:, None] * renders.visibility
    den = wm.sum(0)
    return np.where(den > 0, (wm * vals).sum(0) / np.maximum(den, 1e-12), 0.0)
