"""The Eyecandies loader on a tiny fake folder in the dataset's layout, written here (issue 61)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from icml2026.core.errors import BadInput
from icml2026.papers.cogeoad.eyecandies import (
    EYECANDIES_FOCAL,
    depth_to_xyz,
    is_eyecandies,
    load_eyecandies,
)

SIDE = 24
D_MIN, D_MAX = 0.5, 1.2


def write_eyecandies(root: Path, categories: tuple[str, ...] = ("Lollipop", "Confetto"), n_per: int = 2) -> Path:
    """Per category ``n_per`` normal and ``n_per`` defective samples: a dome on a belt plane at 1.0 m."""
    import yaml
    from PIL import Image

    rng = np.random.default_rng(0)
    i, j = np.mgrid[0:SIDE, 0:SIDE]
    r2 = ((i - SIDE / 2) ** 2 + (j - SIDE / 2) ** 2) * 1e-4
    for cat in categories:
        data = root / cat / "test_public" / "data"
        data.mkdir(parents=True)
        for k in range(2 * n_per):
            z = 1.0 - np.sqrt(np.clip(0.08**2 - r2, 0, None))
            mask = np.zeros((SIDE, SIDE), np.uint8)
            rgb = np.full((SIDE, SIDE, 3), 120, np.uint8)
            if k >= n_per:  # defective: a bump and a stain on one site
                site = np.hypot(i - rng.integers(9, 15), j - rng.integers(9, 15)) < 3
                z = np.where(site, z - 0.01, z)
                rgb[site] = (230, 20, 20)
                mask[site] = 255
            d16 = np.rint((z - D_MIN) / (D_MAX - D_MIN) * 65535).astype(np.uint16)
            sid = f"{k:03d}"
            Image.fromarray(d16).save(data / f"{sid}_depth.png")
            Image.fromarray(rgb).save(data / f"{sid}_image_0.png")
            Image.fromarray(mask).save(data / f"{sid}_mask.png")
            (data / f"{sid}_info_depth.yaml").write_text(
                yaml.safe_dump({"normalization": {"min": D_MIN, "max": D_MAX}}), encoding="utf-8")
    return root


def test_depth_to_xyz_is_the_pinhole_back_projection() -> None:
    d = np.full((4, 6), 65535, np.uint16)
    xyz = depth_to_xyz(d, 0.0, 2.0)
    assert np.allclose(xyz[..., 2], 2.0)
    assert np.isclose(xyz[0, 0, 0], (0 - 3) * 2.0 / EYECANDIES_FOCAL) and np.isclose(xyz[3, 5, 1], (3 - 2) * 2.0 /
                                                                                      EYECANDIES_FOCAL)


def test_eyecandies_folder_becomes_point_clouds(tmp_path: Path) -> None:
    root = write_eyecandies(tmp_path / "ec")
    assert is_eyecandies(root) and not is_eyecandies(tmp_path)
    clouds = load_eyecandies(root)
    assert [c.category for c in clouds] == ["Confetto"] * 4 + ["Lollipop"] * 4
    assert [c.is_anomalous for c in clouds] == [False, False, True, True] * 2
    assert all(c.defect in (None, "anomalous") for c in clouds)
    c = clouds[2]
    assert c.n_points == SIDE * SIDE  # every pixel holds a point (the belt is kept)
    # depth back to metres within a 16-bit step; the frame turn negates z
    assert np.all(np.abs(-c.points[:, 2] - np.clip(-c.points[:, 2], 0.9, 1.0)) < 1e-4)
    assert np.allclose(c.colours[c.labels == 1], (230 / 255, 20 / 255, 20 / 255))
    sub = load_eyecandies(root, n_points=50, rng=np.random.default_rng(0), per_category=3)
    assert len(sub) == 6 and all(s.n_points == 50 for s in sub) and sub[2].labels.sum() >= 1


@pytest.mark.parametrize("missing", ["info_depth.yaml", "image_0.png", "mask.png"])
def test_a_missing_file_is_refused_naming_data(missing: str, tmp_path: Path) -> None:
    root = write_eyecandies(tmp_path / "ec", categories=("Lollipop",), n_per=1)
    (root / "Lollipop" / "test_public" / "data" / f"001_{missing}").unlink()
    with pytest.raises(BadInput, match=r"^data = .*001_depth\.png has no"):
        load_eyecandies(root)


@pytest.mark.slow
def test_zero_shot_runs_on_an_eyecandies_folder(tmp_path: Path) -> None:
    import json

    from icml2026.cli import main

    root = write_eyecandies(tmp_path / "ec")
    code = main(["run", "cogeoad.zero_shot", "--preset", "smoke", "--threads", "1", "--out", str(tmp_path / "runs"),
                 "--set", f"data={root}", "--set", "n_points=400"])
    assert code in (0, 1, 4)
    (res,) = (tmp_path / "runs" / "cogeoad.zero_shot").glob("smoke-seed0*/results.json")
    m = json.loads(res.read_text())["metrics"]
    assert 0 <= m["cogeoad_i_auroc_all"] <= 1 and 0 <= m["cogeoad_aupro"] <= 1
