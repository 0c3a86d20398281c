"""The renderer on its own (brief criterion 1 and the issue's renderer tests) and the data's invariants."""

from __future__ import annotations

import numpy as np
import pytest

from icml2026.papers.cogeoad import (
    COLOUR_DEFECTS,
    DEFAULT_VIEWS,
    GEOMETRY_DEFECTS,
    SMALL_VIEWS,
    PointCloud,
    estimate_normals,
    lift_to_points,
    make_object,
    render_views,
    view_rotation,
)
from icml2026.papers.cogeoad.render import _AMBIENT, _GREY, _LIGHT


@pytest.fixture(scope="module")
def sphere() -> PointCloud:
    return make_object("sphere", np.random.default_rng(0), None, n_points=2000, jitter_deg=0.0)


def test_twenty_views_are_the_papers_grid() -> None:
    assert len(DEFAULT_VIEWS) == 20
    assert {a for a, _ in DEFAULT_VIEWS} == {-45, -15, 0, 15, 45}
    assert {b for _, b in DEFAULT_VIEWS} == {-30, -15, 15, 30}
    r = view_rotation(30.0, -20.0)
    np.testing.assert_allclose(r @ r.T, np.eye(3), atol=1e-12)  # a rotation
    a = np.deg2rad(30.0)
    rx = np.array([[1, 0, 0], [0, np.cos(a), -np.sin(a)], [0, np.sin(a), np.cos(a)]])
    np.testing.assert_allclose(view_rotation(30.0, 0.0), rx, atol=1e-12)  # R_y(0) R_x(theta) = R_x(theta)


def test_colour_and_geometry_sample_the_same_pixel(sphere: PointCloud) -> None:
    # colours that encode the point id: decode the id from the colour image, recompute its shade from the
    # normal independently and compare with the geometry image at the same pixel
    n = sphere.n_points
    ids = np.arange(n)
    probe = sphere.with_colours(np.stack([ids % 16, (ids // 16) % 16, ids // 256], 1) / 15.0)
    nrm = estimate_normals(probe.points)
    views = DEFAULT_VIEWS[:4]
    ren = render_views(probe, views, 48, normals=nrm)
    for k, (tx, ty) in enumerate(views):
        fg = ren.index[k] >= 0
        dec = np.rint(ren.colour[k][fg] * 15).astype(int)
        pid = dec[:, 0] + 16 * dec[:, 1] + 256 * dec[:, 2]
        n_cam = nrm[pid] @ view_rotation(tx, ty).T
        n_cam[n_cam[:, 2] < 0] *= -1
        shade = _GREY * (_AMBIENT + (1 - _AMBIENT) * np.clip(n_cam @ _LIGHT, 0, None))
        np.testing.assert_allclose(ren.geometry[k][fg], shade, atol=1e-12)
        assert np.all(ren.colour[k][~fg] == 1.0) and np.all(ren.geometry[k][~fg] == 1.0)  # white background


def test_back_side_is_occluded_and_a_sphere_is_half_visible(sphere: PointCloud) -> None:
    ren = render_views(sphere, DEFAULT_VIEWS, 64)
    frac = ren.visibility.mean(1)
    assert np.all((frac >= 0.4) & (frac <= 0.6)), frac  # criterion 1 (exact orthographic value: 0.5)
    for k, (tx, ty) in enumerate(DEFAULT_VIEWS):
        q = (sphere.points - sphere.points.mean(0)) @ view_rotation(tx, ty).T
        zc = q[:, 2] / np.linalg.norm(q, axis=1)
        assert ren.visibility[k][zc < -0.3].mean() <= 0.02  # the far side is hidden by the z-buffer
        assert ren.visibility[k][zc > 0.5].mean() >= 0.95


def test_without_the_z_buffer_the_check_would_fail(sphere: PointCloud) -> None:
    # a renderer that marked every projected point visible would give 100%: the bound above can fail
    ren = render_views(sphere, DEFAULT_VIEWS[:2], 64, depth_tol=10.0)
    assert ren.visibility.mean() > 0.95


def test_mask_back_projection_recovers_point_labels() -> None:
    inter = union = 0
    for i, d in enumerate(("dent", "stain", "bump", "discolour")):
        obj = make_object(("cylinder", "cookie", "blob", "bagel")[i], np.random.default_rng(10 + i), d, n_points=2000)
        ren = render_views(obj, DEFAULT_VIEWS[::4], 128)
        seen = ren.visibility.any(0)
        rec = (lift_to_points(ren.mask.astype(float), ren) > 0.5) & seen
        gt = obj.labels.astype(bool) & seen
        inter += int((rec & gt).sum())
        union += int((rec | gt).sum())
    # criterion 1 (pooled IoU) on the four blob-shaped defect types; thin ones (crack, hole rim, spots) lose
    # a one-pixel boundary at 128 px and reach 0.80-0.85 only (cogeoad.renderer reports all eight types)
    assert inter / union >= 0.9


def test_permuting_colours_leaves_geometry_bit_identical(sphere: PointCloud) -> None:
    perm = sphere.with_colours(sphere.colours[np.random.default_rng(1).permutation(sphere.n_points)])
    a, b = render_views(sphere, DEFAULT_VIEWS[:3], 32), render_views(perm, DEFAULT_VIEWS[:3], 32)
    assert np.array_equal(a.geometry, b.geometry) and np.array_equal(a.visibility, b.visibility)
    assert not np.array_equal(a.colour, b.colour)


def test_defect_families_stay_in_their_modality() -> None:
    # colour-only defects keep every point; geometry-only defects keep every colour (pitfall 4)
    for d in COLOUR_DEFECTS:
        base = make_object("cone", np.random.default_rng(3), None)
        obj = make_object("cone", np.random.default_rng(3), d)
        assert np.array_equal(base.points, obj.points) and obj.labels.sum() > 0
        assert not np.array_equal(base.colours, obj.colours)
    for d in ("dent", "bump", "crack"):
        base = make_object("cone", np.random.default_rng(3), None)
        obj = make_object("cone", np.random.default_rng(3), d)
        assert np.array_equal(base.colours, obj.colours) and obj.labels.sum() > 0
        assert not np.array_equal(base.points, obj.points)
    hole = make_object("cone", np.random.default_rng(3), "hole")
    assert hole.n_points < 2500 and hole.labels.sum() > 0
    assert set(GEOMETRY_DEFECTS) & set(COLOUR_DEFECTS) == set()


def test_same_seed_same_object_and_bad_inputs() -> None:
    a = make_object("bagel", np.random.default_rng(5), "crack")
    b = make_object("bagel", np.random.default_rng(5), "crack")
    assert np.array_equal(a.points, b.points) and np.array_equal(a.labels, b.labels)
    with pytest.raises(ValueError, match="category"):
        make_object("teapot", np.random.default_rng(0))
    with pytest.raises(ValueError, match="defect"):
        make_object("sphere", np.random.default_rng(0), "scratch")
    with pytest.raises(TypeError, match="rng"):
        make_object("sphere", 0)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="colours"):
        PointCloud(np.zeros((4, 3)), np.full((4, 3), 2.0), np.zeros(4))
    with pytest.raises(ValueError, match="size"):
        render_views(a, DEFAULT_VIEWS, 0)
    with pytest.raises(TypeError, match="cloud"):
        render_views(np.zeros((10, 3)), DEFAULT_VIEWS)  # type: ignore[arg-type]


def test_lit_colour_is_the_raw_colour_under_the_geometry_light() -> None:
    # the official script renders the colour cloud with lighting on: the same light as the grey geometry image
    obj = make_object("cone", np.random.default_rng(4), "dent", n_points=1500)
    unlit = render_views(obj, SMALL_VIEWS, 48)
    lit = render_views(obj, SMALL_VIEWS, 48, lit_colour=True)
    fg = unlit.index >= 0
    np.testing.assert_array_equal(lit.index, unlit.index)  # one projection pass: the same winners
    light = unlit.geometry[fg] / 0.7  # the geometry image is grey 0.7 x light
    np.testing.assert_allclose(lit.colour[fg], unlit.colour[fg] * light[:, None], atol=1e-12)
    assert np.abs(lit.colour[fg] - unlit.colour[fg]).max() > 0.1  # shading is visible in the lit colour image
    np.testing.assert_array_equal(lit.colour[~fg], 1.0)  # white background either way
    np.testing.assert_array_equal(lit.geometry, unlit.geometry)
