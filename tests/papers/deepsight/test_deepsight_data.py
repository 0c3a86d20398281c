"""BEV rasters, the official warp (criterion 3), annotator rules, the episode cache, input validation."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from icml2026.papers.deepsight import (
    CacheError,
    Episode,
    annotate,
    cached_episodes,
    future_bev,
    load_episodes,
    rasterize_bev,
    save_episodes,
    straight_drive_episode,
    warp_displacements,
)
from icml2026.papers.deepsight.data import _warp, ego_row


def _with_vehicle(ep: Episode, x: float, y: float, speed: float) -> Episode:
    v = np.full((ep.n_steps, 1, 7), -1.0)
    v[:, 0] = (7, x, y, 0.0, speed, 5.0, 2.0)
    v[:, 0, 1] = x + speed * 0.5 * np.arange(ep.n_steps)
    return Episode(ep.ego, v, ep.lanes, ep.lane_lines, ep.crashed, ep.on_road)


def test_raster_channels_and_ego_on_the_official_forward_biased_row() -> None:
    ep = straight_drive_episode(10.0)
    img = rasterize_bev(ep, 0, size=64, metres_per_px=1.0)
    assert img.shape == (3, 64, 64) and img.dtype == np.float32
    rows, cols = np.nonzero(img[2])
    # the official crop: 365 of 512 px ahead of the ego, 147 behind -> 46 of 64 rows ahead, 18 behind
    assert ego_row(64) == 46 and ego_row(512) == 365
    # ego 5 m x 2 m at 1 m/px: centred on row boundary 46 and column 32 (+- 1)
    assert abs(rows.mean() - 45.5) <= 1 and abs(cols.mean() - 31.5) <= 1
    assert img[1].sum() == 0  # no other vehicles
    assert set(np.unique(img[0])) <= {0.0, 0.5, 1.0}  # off-road, drivable, markings


@pytest.mark.parametrize("mpp", [1.0, 2.0])
def test_straight_drive_warp_follows_the_official_code(mpp: float) -> None:
    # criterion 3 with the official warp: static markings stay put (+-1 px), the ego moves forward by
    # speed x dt / mpp (+-1 px). Without the warp (each frame in its own ego frame) the ego would stay at
    # the centre (error up to 26 px) and the markings would move by 6.5 m per step (3.5 px modulo the dashes).
    speed = 13.0
    d = warp_displacements(straight_drive_episode(speed), 2, metres_per_px=mpp)
    expected = np.array([speed * h / mpp for h in (0.0, 0.5, 1.0, 1.5, 2.0)])
    assert np.all(np.isfinite(d.ego_rows))
    np.testing.assert_allclose(d.ego_rows, expected, atol=1.0)
    assert d.road_shift_max <= 1


@pytest.mark.parametrize("speed", [33.0, 40.0])
def test_future_ego_stays_in_view_at_highway_speed(speed: float) -> None:
    # the experiments' raster (64 px at 2 m/px): with the forward-biased crop the ego of t+2 s (80 m ahead at
    # 40 m/s) is still in the warped frame; an ego-centred crop (32 rows = 64 m ahead) would lose it
    d = warp_displacements(straight_drive_episode(speed), 2, metres_per_px=2.0, max_shift=1)
    assert np.all(np.isfinite(d.ego_rows)), d.ego_rows
    np.testing.assert_allclose(d.ego_rows, [speed * h / 2.0 for h in (0.0, 0.5, 1.0, 1.5, 2.0)], atol=1.0)
    frames = future_bev(straight_drive_episode(speed), 2, size=64, metres_per_px=2.0)
    assert all(f[2].sum() > 0 for f in frames)  # the ego blob is drawn in every one of the five frames
    assert speed * 2.0 / 2.0 > 64 / 2  # ... where an ego-centred 64 px crop would have lost it


def test_unwarped_frames_would_fail_the_check() -> None:
    # the probe can fail: frames left in their own ego frame keep the ego at the centre
    ep = straight_drive_episode(13.0)
    own = rasterize_bev(ep, 6, size=64, metres_per_px=1.0)
    warped = _warp(own, ep.ego[6, :3], ep.ego[2, :3], 1.0)
    r_own = np.nonzero(own[2])[0].mean()
    r_warped = np.nonzero(warped[2])[0].mean()
    assert abs((r_own - r_warped) - 26.0) <= 1.0  # 4 steps x 6.5 m


def test_future_vehicle_moves_in_current_frame() -> None:
    ep = _with_vehicle(straight_drive_episode(10.0), 100.0, 8.0, 12.0)  # next lane, 2 m/s faster
    f = future_bev(ep, 2, size=64, metres_per_px=1.0)
    r = [np.nonzero(f[k, 1])[0].mean() for k in range(5)]
    # in the ego frame at t the vehicle advances by 12 m per second of horizon: 6 px per frame
    np.testing.assert_allclose(np.diff(r), -6.0, atol=1.0)


def test_bad_inputs_are_refused() -> None:
    ep = straight_drive_episode(10.0)
    with pytest.raises(ValueError, match="t"):
        rasterize_bev(ep, 99)
    with pytest.raises(ValueError, match="metres_per_px"):
        rasterize_bev(ep, 0, metres_per_px=0.0)
    with pytest.raises(ValueError, match="horizons"):
        future_bev(ep, 0, horizons=(0.0, 0.3))
    with pytest.raises(ValueError, match="t"):
        future_bev(ep, 10)  # t + 2 s is past the end
    with pytest.raises(TypeError, match="episode"):
        rasterize_bev("not an episode", 0)  # type: ignore[arg-type]


def test_annotator_flags_a_stalled_vehicle_and_not_a_clear_road() -> None:
    base = straight_drive_episode(20.0)
    clear = annotate(base, 3)
    assert not clear.complex and clear.reason == "clear-road" and clear.direction == "keep-lane"
    stalled = _with_vehicle(base, base.ego[3, 0] + 50.0, 4.0, 0.0)
    stalled.vehicles[:, 0, 1] = base.ego[3, 0] + 50.0
    a = annotate(stalled, 3)
    assert a.complex and a.reason == "stalled-ahead"
    other_lane = _with_vehicle(base, base.ego[3, 0] + 50.0, 8.0, 0.0)  # stalled, but in the next lane
    other_lane.vehicles[:, 0, 1] = base.ego[3, 0] + 50.0
    assert annotate(other_lane, 3).reason != "stalled-ahead"


def test_cache_round_trip_and_corruption_is_rebuilt(tmp_path: Path) -> None:
    eps = [straight_drive_episode(10.0), straight_drive_episode(12.0)]
    save_episodes(eps, tmp_path / "e.npz")
    back = load_episodes(tmp_path / "e.npz")
    np.testing.assert_array_equal(back[1].ego, eps[1].ego)
    (tmp_path / "bad.npz").write_bytes(b"not a zip")
    with pytest.raises(CacheError):
        load_episodes(tmp_path / "bad.npz")
    calls = []

    def build() -> list[Episode]:
        calls.append(1)
        return eps

    key = {"k": 1}
    cached_episodes(key, build, tmp_path)
    cached_episodes(key, build, tmp_path)
    assert len(calls) == 1  # second call read the cache
    path = next(tmp_path.glob("episodes-*.npz"))
    raw = bytearray(path.read_bytes())
    raw[len(raw) // 2] ^= 0xFF  # flip one byte: checksum or zip error
    path.write_bytes(bytes(raw))
    got = cached_episodes(key, build, tmp_path)
    assert len(calls) == 2  # detected and rebuilt, never silently used
    np.testing.assert_array_equal(got[0].ego, eps[0].ego)


def test_vehicle_numbers_are_not_reused_when_a_vehicle_is_freed() -> None:
    # CPython hands a freed object's address to the next one of its size; numbering by id() alone gave the new
    # vehicle the freed one's number (and which one depended on the allocator, so runs of a seed differed)
    from icml2026.papers.deepsight.data import _log_vehicles

    class Car:
        LENGTH, WIDTH, heading, speed = 5.0, 2.0, 0.0, 20.0

        def __init__(self, x: float) -> None:
            self.position = np.array([x, 0.0])

    class Road:
        def __init__(self, vehicles: list) -> None:
            self.vehicles = vehicles

    ego = Car(0.0)
    ids: dict = {}
    _log_vehicles(Road([ego, Car(10.0), Car(20.0)]), ego, ids)  # the two cars are freed after this call
    rows = _log_vehicles(Road([ego, Car(10.0), Car(20.0)]), ego, ids)
    assert sorted(rows[:2, 0].tolist()) == [2.0, 3.0]  # new cars, new numbers
