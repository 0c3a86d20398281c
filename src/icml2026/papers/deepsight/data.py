"""Expert driving data from the real highway-env simulator, BEV rasters and the rule-based CoT annotator.

The expert is highway-env's IDM + MOBIL autopilot driving the ego (the controlled vehicle is replaced by an
``IDMVehicle`` built from it). Every policy step (0.5 s, 5 simulation steps at 10 Hz) logs the ego pose,
speed and every vehicle. In a fraction of episodes a long-tail event is injected: a stalled vehicle in the
ego lane 40-70 m ahead, or the lead vehicle braking hard.

BEV targets (Sec. 2 of the brief): a numpy rasteriser draws each frame in its own ego frame (3 channels:
road + lane markings, other vehicles, ego) and :func:`future_bev` warps every future frame into the ego
frame at time t, as the official code does (rotate by the heading change, translate so that the current
ego ground point lands at the ego's place in the official forward-biased crop, :func:`ego_row`).
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from icml2026.core.errors import require_module
from icml2026.core.progress import track
from icml2026.core.validate import finite_number, positive_int

__all__ = [
    "OFFICIAL_CROP_PX",
    "OFFICIAL_CROP_AHEAD_PX",
    "ego_row",
    "POLICY_DT",
    "SIM_FREQ",
    "HORIZONS",
    "Episode",
    "collect_episodes",
    "simulate_episode",
    "make_env",
    "rasterize_bev",
    "future_bev",
    "static_world_bev",
    "kinematics_obs",
    "ego_state",
    "future_waypoints",
    "annotate",
    "Annotation",
    "save_episodes",
    "load_episodes",
    "CacheError",
    "cached_episodes",
    "N_NEAR",
    "N_HIST",
    "V_MAX",
]

POLICY_DT = 0.5  # s per policy step (brief: 2 Hz policy)
SIM_FREQ = 10  # Hz simulation (brief: 10 Hz)
HORIZONS = (0.0, 0.5, 1.0, 1.5, 2.0)  # s, the five BEV frames t..t+2 s (paper: +0,+5,+10,+15,+20 at 10 Hz)
N_NEAR = 15  # nearest vehicles in the kinematics observation (brief)
N_HIST = 4  # current + 3 past steps (brief; the paper uses 4 historical frames)
V_MAX = 48  # vehicle slots logged per step
# vehicle columns: id, x, y, heading, speed, length, width
_V_COLS = 7


@dataclass
class Episode:
    """One logged episode; index ``k`` is policy step k (time ``k * 0.5`` s).

    Attributes
    ----------
    ego : (N, 5) x, y, heading, speed, acceleration of the ego.
    vehicles : (N, V_MAX, 7) id, x, y, heading, speed, length, width of other vehicles (id -1: empty slot).
    lanes : (L, 5) start x, start y, end x, end y, width of each straight lane.
    lane_lines : (L, 2) highway-env line types (0 none, 1 striped, 2 continuous, 3 continuous line).
    crashed, on_road : (N,) flags of the ego.
    event : "none", "stalled" or "brake"; ``event_step`` the step it was injected (-1 if none).
    seed : the simulator seed.
    """

    ego: np.ndarray
    vehicles: np.ndarray
    lanes: np.ndarray
    lane_lines: np.ndarray
    crashed: np.ndarray
    on_road: np.ndarray
    event: str = "none"
    event_step: int = -1
    seed: int = 0
    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def n_steps(self) -> int:
        return int(self.ego.shape[0])

    @property
    def long_tail(self) -> bool:
        return self.event != "none"


def make_env(seed: int, n_vehicles: int = 20, lanes_count: int = 3) -> Any:
    """A headless ``highway-v0`` environment at 10 Hz simulation / 2 Hz policy, reset with ``seed``."""
    require_module("highway_env", "deepsight")
    os.environ.setdefault("SDL_VIDEODRIVER", "dummy")  # pygame headless; highway-env reads it at render only
    import gymnasium as gym
    import highway_env  # noqa: F401  (registers the environments)

    env = gym.make(
        "highway-v0",
        config={
            "simulation_frequency": SIM_FREQ,
            "policy_frequency": int(round(1 / POLICY_DT)),
            "vehicles_count": int(n_vehicles),
            "lanes_count": int(lanes_count),
            "duration": 1000,
            "offscreen_rendering": True,
        },
    )
    env.reset(seed=int(seed))
    return env


def _log_vehicles(road: Any, ego: Any, ids: dict[int, tuple[int, Any]]) -> np.ndarray:
    out = np.full((V_MAX, _V_COLS), -1.0)
    others = [v for v in road.vehicles if v is not ego]
    others.sort(key=lambda v: float(np.linalg.norm(v.position - ego.position)))
    for j, v in enumerate(others[:V_MAX]):
        # the vehicle is kept alive beside its number: a freed vehicle's id() can be reused by a new one, which
        # then inherited the old number, depending on the allocator (runs of one seed differed between processes)
        vid = ids.setdefault(id(v), (len(ids), v))[0]
        out[j] = (vid, v.position[0], v.position[1], v.heading, v.speed, v.LENGTH, v.WIDTH)
    return out


def _lanes(road: Any) -> tuple[np.ndarray, np.ndarray]:
    rows, lines = [], []
    for lane in road.network.lanes_list():
        rows.append([*lane.start, *lane.end, lane.width])
        lines.append([int(t) for t in lane.line_types])
    return np.asarray(rows, float), np.asarray(lines, np.int64)


def _inject(road: Any, ego: Any, kind: str, rng: np.random.Generator) -> str:
    """Inject a long-tail event; returns the event actually injected."""
    from highway_env.vehicle.kinematics import Vehicle

    lane = road.network.get_lane(ego.lane_index)
    s_ego, _ = lane.local_coordinates(ego.position)
    if kind == "brake":
        front, _ = road.neighbour_vehicles(ego, ego.lane_index)
        if front is not None and np.linalg.norm(front.position - ego.position) < 80.0:
            front.target_speed = 0.0  # IDM with v0 ~ 0 brakes at the clipped maximum (6 m/s^2)
            if hasattr(front, "enable_lane_change"):
                front.enable_lane_change = False
            return "brake"
        kind = "stalled"  # no lead vehicle to brake: a stalled vehicle instead (recorded as such)
    d = float(rng.uniform(40.0, 70.0))
    pos = lane.position(s_ego + d, 0.0)
    for v in list(road.vehicles):
        if (
            v is not ego
            and v.lane_index == ego.lane_index
            and abs(lane.local_coordinates(v.position)[0] - (s_ego + d)) < 15.0
        ):
            road.vehicles.remove(v)
    road.vehicles.append(Vehicle(road, pos, lane.heading_at(s_ego + d), 0.0))
    return "stalled"


def simulate_episode(
    seed: int,
    n_steps: int,
    event: str,
    rng: np.random.Generator,
    policy: Any = None,
    n_vehicles: int = 20,
    event_step: int | None = None,
) -> Episode:
    """Run one episode of ``n_steps`` policy steps in highway-env and log it.

    ``policy`` None drives the ego with the IDM + MOBIL expert; otherwise ``policy(history, road, ego)`` is
    called once per policy step and returns a controller ``act(ego) -> {"steering": rad, "acceleration":
    m/s^2}`` applied at every simulation step of the next 0.5 s; ``history`` is the :class:`Episode` so far.
    ``event`` in {"none", "stalled", "brake"}.
    The episode stops early when the ego crashes.
    """
    from highway_env.vehicle.behavior import IDMVehicle

    if event not in ("none", "stalled", "brake"):
        raise ValueError(f"event: must be 'none', 'stalled' or 'brake', got {event!r}")
    env = make_env(seed, n_vehicles)
    u = env.unwrapped
    road, ego0 = u.road, u.vehicle
    ego = IDMVehicle.create_from(ego0)
    ego.target_speed = float(rng.uniform(24.0, 30.0))
    road.vehicles[road.vehicles.index(ego0)] = ego
    u.controlled_vehicles = [ego]
    ids: dict[int, tuple[int, Any]] = {}
    lanes, lines = _lanes(road)
    t_event = int(rng.integers(3, 8)) if event_step is None else int(event_step)
    kind = "none"
    rows_ego: list[list[float]] = []
    rows_v: list[np.ndarray] = []
    crashed: list[bool] = []
    on_road: list[bool] = []
    prev_speed = float(ego.speed)
    act: Any = None
    for k in range(n_steps):
        if k == t_event and event != "none":
            kind = _inject(road, ego, event, rng)
        accel = (float(ego.speed) - prev_speed) / POLICY_DT if k else 0.0
        prev_speed = float(ego.speed)
        rows_ego.append([ego.position[0], ego.position[1], ego.heading, ego.speed, accel])
        rows_v.append(_log_vehicles(road, ego, ids))
        crashed.append(bool(ego.crashed))
        on_road.append(bool(ego.on_road))
        if ego.crashed or k == n_steps - 1:
            break
        if policy is not None:
            hist = Episode(
                np.asarray(rows_ego),
                np.stack(rows_v),
                lanes,
                lines,
                np.asarray(crashed),
                np.asarray(on_road),
                kind,
                t_event if kind != "none" else -1,
                seed,
            )
            act = policy(hist, road, ego)
        for _ in range(int(SIM_FREQ * POLICY_DT)):
            road.act()
            if act is not None:
                ego.action = dict(act(ego))  # overrides the IDM action computed by road.act()
            road.step(1.0 / SIM_FREQ)
    env.close()
    return Episode(
        np.asarray(rows_ego, float),
        np.stack(rows_v),
        lanes,
        lines,
        np.asarray(crashed),
        np.asarray(on_road),
        kind,
        t_event if kind != "none" else -1,
        int(seed),
    )


def collect_episodes(
    n: int,
    rng: np.random.Generator,
    long_tail_fraction: float = 0.3,
    *,
    n_steps: int = 36,
    seeds: list[int] | None = None,
) -> list[Episode]:
    """``n`` expert (IDM + MOBIL) episodes from highway-env, about ``long_tail_fraction`` with an event.

    Events alternate between a stalled vehicle and a braking lead. ``seeds`` fixes the simulator seeds
    (e.g. the closed-loop evaluation seeds 1000-1049); by default they are drawn from ``rng``.
    """
    n = positive_int(n, "n")
    frac = finite_number(long_tail_fraction, "long_tail_fraction", lo=0.0, hi=1.0)
    n_steps = positive_int(n_steps, "n_steps", minimum=10, maximum=400)
    if seeds is not None and len(seeds) != n:
        raise ValueError(f"seeds: expected {n} seeds, got {len(seeds)}")
    n_tail = int(round(frac * n))
    tail_idx = set(rng.permutation(n)[:n_tail].tolist())
    out = []
    for i in track(range(n), "deepsight expert episodes (highway-env)", total=n):
        seed = int(seeds[i]) if seeds is not None else int(rng.integers(0, 2**31 - 1))
        event = ("stalled" if i % 2 == 0 else "brake") if i in tail_idx else "none"
        out.append(simulate_episode(seed, n_steps, event, np.random.default_rng(seed)))
    return out


# ------------------------------------------------------------------------------------------ rasteriser
#: The official BEV crop: 512 x 512 px of the top-down camera with the ego 365 px behind the top edge and
#: 147 px above the bottom edge (forward-biased, so the future ego stays in view), resized to 256 x 256.
OFFICIAL_CROP_PX = 512
OFFICIAL_CROP_AHEAD_PX = 365


def ego_row(size: int) -> int:
    """The pixel row boundary at the ego's ground point in a ``size`` raster: the official crop's
    365 / 512 of the rows lie ahead of the ego (46 of 64 rows: 46 ahead, 18 behind)."""
    return int(round(size * OFFICIAL_CROP_AHEAD_PX / OFFICIAL_CROP_PX))


def _pixel_grid(size: int, mpp: float) -> tuple[np.ndarray, np.ndarray]:
    """Ego-frame coordinates (x forward = up, y to the right) of the pixel centres, (size, size) each.

    Rows follow the official forward-biased crop (:func:`ego_row` rows ahead of the ego); columns are
    centred on the ego."""
    # Deviation (issue 59): the official crop is 512 px at 50 m / 560 px (0.089 m/px), 365 ahead / 147 behind;
    # ours keeps that ratio on a 64 px raster at 2 m/px (92 m ahead, 36 m behind) for highway speeds.
    c = (np.arange(size) + 0.5 - size / 2) * mpp
    xs = (ego_row(size) - np.arange(size) - 0.5)[:, None] * mpp * np.ones((1, size))  # row 0 is the far front
    ys = np.ones((size, 1)) * c[None, :]
    return xs, ys


def _to_world(pose: np.ndarray, xs: np.ndarray, ys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    x0, y0, h = pose
    ch, sh = np.cos(h), np.sin(h)
    return x0 + ch * xs - sh * ys, y0 + sh * xs + ch * ys


def _draw(ep: Episode, step: int, wx: np.ndarray, wy: np.ndarray, mpp: float) -> np.ndarray:
    size = wx.shape[0]
    img = np.zeros((3, size, wx.shape[1]), np.float32)
    for (sx, sy, ex, ey, w), lt in zip(ep.lanes, ep.lane_lines, strict=True):
        d = np.array([ex - sx, ey - sy])
        length = float(np.linalg.norm(d))
        d = d / length
        lon = (wx - sx) * d[0] + (wy - sy) * d[1]
        lat = -(wx - sx) * d[1] + (wy - sy) * d[0]
        inside = (np.abs(lat) <= w / 2) & (lon >= 0) & (lon <= length)
        img[0][inside] = np.maximum(img[0][inside], 0.5)
        for side, t in zip((-1.0, 1.0), lt, strict=True):
            if t == 0:
                continue
            on = (np.abs(lat - side * w / 2) <= mpp / 2) & (lon >= 0) & (lon <= length)
            if t == 1:  # striped: 5 m dashes every 10 m (static in the world, so they reveal ego motion)
                on &= np.mod(lon, 10.0) < 5.0
            img[0][on] = 1.0
    for row in ep.vehicles[step]:
        if row[0] < 0:
            continue
        _, vx, vy, vh, _, vl, vw = row
        dx, dy = wx - vx, wy - vy
        lx = np.cos(vh) * dx + np.sin(vh) * dy
        ly = -np.sin(vh) * dx + np.cos(vh) * dy
        img[1][(np.abs(lx) <= vl / 2 + mpp / 2) & (np.abs(ly) <= vw / 2 + mpp / 2)] = 1.0
    ex0, ey0, eh = ep.ego[step, :3]
    dx, dy = wx - ex0, wy - ey0
    lx = np.cos(eh) * dx + np.sin(eh) * dy
    ly = -np.sin(eh) * dx + np.cos(eh) * dy
    img[2][(np.abs(lx) <= 2.5 + mpp / 2) & (np.abs(ly) <= 1.0 + mpp / 2)] = 1.0
    return img


def _check_step(episode: Episode, t: Any, name: str = "t") -> int:
    if not isinstance(episode, Episode):
        raise TypeError(f"episode: expected an Episode, got {type(episode).__name__}")
    return positive_int(t, name, minimum=0, maximum=episode.n_steps - 1)


def rasterize_bev(episode: Episode, t: int, *, size: int = 64, metres_per_px: float = 1.0) -> np.ndarray:
    """The BEV raster of policy step ``t`` in its own ego frame, (3, size, size) float32 in [0, 1].

    Channels: 0 drivable area (0.5) and lane markings (1.0), 1 other vehicles, 2 ego. The ego sits on the
    centre column at row :func:`ego_row` (the official forward-biased crop: 365/512 of the rows ahead),
    heading up (row 0 is ``ego_row(size) * metres_per_px`` metres ahead).
    """
    t = _check_step(episode, t)
    size = positive_int(size, "size", minimum=4, maximum=1024)
    mpp = finite_number(metres_per_px, "metres_per_px", lo=0.0, lo_open=True, hi=100.0)
    xs, ys = _pixel_grid(size, mpp)
    wx, wy = _to_world(episode.ego[t, :3], xs, ys)
    return _draw(episode, t, wx, wy, mpp)


def _warp(img: np.ndarray, pose_k: np.ndarray, pose_t: np.ndarray, mpp: float) -> np.ndarray:
    """Resample frame ``img`` (drawn in the ego frame at ``pose_k``) into the ego frame at ``pose_t``.

    Mirrors the official image warp (with the ego at its place in the forward-biased crop, :func:`ego_row`):
    rotate by the heading change, translate so that the
    current ego ground point lands at the centre; nearest-neighbour sampling, zeros outside the source.
    """
    size = img.shape[-1]
    xs, ys = _pixel_grid(size, mpp)
    wx, wy = _to_world(pose_t, xs, ys)
    x0, y0, h = pose_k
    dx, dy = wx - x0, wy - y0
    lx = np.cos(h) * dx + np.sin(h) * dy  # world -> frame-k ego coordinates
    ly = -np.sin(h) * dx + np.cos(h) * dy
    col = np.floor(ly / mpp + size / 2).astype(int)
    row = np.floor(ego_row(size) - lx / mpp).astype(int)
    ok = (row >= 0) & (row < size) & (col >= 0) & (col < size)
    out = np.zeros_like(img)
    out[:, ok] = img[:, row[ok], col[ok]]
    return out


def future_bev(
    episode: Episode, t: int, horizons: tuple[float, ...] = HORIZONS, *, size: int = 64, metres_per_px: float = 1.0
) -> np.ndarray:
    """The BEV frames at ``t + h`` for each horizon, each warped into the ego frame at ``t``: (T, 3, size, size).

    Horizons are multiples of 0.5 s; ``t + h`` must lie inside the episode.
    """
    t = _check_step(episode, t)
    if not isinstance(horizons, (tuple, list)) or not horizons:
        raise ValueError(f"horizons: expected a non-empty tuple of seconds, got {horizons!r}")
    steps = []
    for h in horizons:
        h = finite_number(h, "horizons", lo=0.0)
        k = h / POLICY_DT
        if abs(k - round(k)) > 1e-9:
            raise ValueError(f"horizons: {h} s is not a multiple of {POLICY_DT} s")
        steps.append(t + int(round(k)))
    if steps[-1] >= episode.n_steps or max(steps) >= episode.n_steps:
        raise ValueError(f"t: t + max(horizons) = step {max(steps)} is past the episode's {episode.n_steps} steps")
    frames = []
    for k in steps:
        img = rasterize_bev(episode, k, size=size, metres_per_px=metres_per_px)
        frames.append(img if k == t else _warp(img, episode.ego[k, :3], episode.ego[t, :3], metres_per_px))
    return np.stack(frames)


def static_world_bev(
    episode: Episode, t: int, horizons: tuple[float, ...] = HORIZONS, *, size: int = 64, metres_per_px: float = 1.0
) -> np.ndarray:
    """A forecasting baseline: the world frozen at ``t`` (other vehicles do not move), the ego extrapolated at
    constant velocity along its heading, rendered and warped exactly like :func:`future_bev`. (T, 3, S, S)."""
    t = _check_step(episode, t)
    n = len(horizons)
    x, y, h, v, _ = episode.ego[t]
    dt = np.asarray(horizons, float)
    ego = np.stack([x + v * dt * np.cos(h), y + v * dt * np.sin(h), np.full(n, h), np.full(n, v), np.zeros(n)], 1)
    frozen = Episode(
        ego,
        np.repeat(episode.vehicles[t : t + 1], n, 0),
        episode.lanes,
        episode.lane_lines,
        np.zeros(n, bool),
        np.ones(n, bool),
    )
    frames = [rasterize_bev(frozen, k, size=size, metres_per_px=metres_per_px) for k in range(n)]
    return np.stack(
        [frames[0]] + [_warp(f, ego[k, :3], ego[0, :3], metres_per_px) for k, f in enumerate(frames) if k > 0]
    )


# ------------------------------------------------------------------------------------ planner inputs
def _rel(pose: np.ndarray, xy: np.ndarray) -> np.ndarray:
    c, s = np.cos(pose[2]), np.sin(pose[2])
    d = xy - pose[:2]
    return np.stack([c * d[..., 0] + s * d[..., 1], -s * d[..., 0] + c * d[..., 1]], -1)


def kinematics_obs(episode: Episode, t: int) -> np.ndarray:
    """Kinematics of the 15 nearest vehicles at ``t`` and the 3 steps before, in the ego frame at ``t``.

    Returns (N_NEAR, N_HIST * 7): per history step presence, x/50, y/10, vx/30, vy/30, cos h, sin h
    (relative heading), vehicles matched by id across steps; missing entries are zeros.
    """
    t = _check_step(episode, t)
    pose = episode.ego[t, :3]
    cur = episode.vehicles[t]
    cur = cur[cur[:, 0] >= 0][:N_NEAR]
    out = np.zeros((N_NEAR, N_HIST, 7), np.float32)
    for j, row in enumerate(cur):
        for h in range(N_HIST):
            k = t - h
            if k < 0:
                continue
            vs = episode.vehicles[k]
            hit = np.nonzero(vs[:, 0] == row[0])[0]
            if not hit.size:
                continue
            v = vs[hit[0]]
            xy = _rel(pose, v[1:3])
            rh = v[3] - pose[2]
            out[j, h] = (
                1.0,
                xy[0] / 50.0,
                xy[1] / 10.0,
                v[4] * np.cos(rh) / 30.0,
                v[4] * np.sin(rh) / 30.0,
                np.cos(rh),
                np.sin(rh),
            )
    return out.reshape(N_NEAR, N_HIST * 7)


def ego_state(episode: Episode, t: int) -> np.ndarray:
    """Ego history (4 past points, ego frame at t), speed, acceleration, lane offset and lane id: (14,)."""
    t = _check_step(episode, t)
    pose = episode.ego[t, :3]
    past = np.stack([episode.ego[max(t - k, 0), :2] for k in (4, 3, 2, 1)])
    hist = _rel(pose, past) / 20.0
    lane_w = float(episode.lanes[0, 4])
    lat = float(episode.ego[t, 1] - episode.lanes[0, 1])
    lane_id = lat / lane_w
    n_lanes = len(episode.lanes)
    return np.concatenate(
        [
            hist.ravel(),
            [
                episode.ego[t, 3] / 30.0,
                episode.ego[t, 4] / 5.0,
                np.sin(pose[2]) * 5.0,
                (lane_id - round(lane_id)),
                round(lane_id) / max(n_lanes - 1, 1),
                (n_lanes - 1 - round(lane_id)) / max(n_lanes - 1, 1),
            ],
        ]
    ).astype(np.float32)


def future_waypoints(episode: Episode, t: int, n: int = 4) -> np.ndarray:
    """The expert's positions at t+0.5..t+2.0 s in the ego frame at t (metres), (n, 2)."""
    t = _check_step(episode, t)
    if t + n >= episode.n_steps:
        raise ValueError(f"t: t + {n} is past the episode's {episode.n_steps} steps")
    return _rel(episode.ego[t, :3], episode.ego[t + 1 : t + 1 + n, :2]).astype(np.float32)


# ------------------------------------------------------------------------------------------ annotator
REASONS = ("clear-road", "stalled-ahead", "lead-braking", "cut-in-left", "cut-in-right", "slow-lead")
DIRECTIONS = ("keep-lane", "change-left", "change-right")
SPEEDS = ("stop", "decelerate", "keep", "accelerate")


@dataclass(frozen=True)
class Annotation:
    """The rule-based annotator's label of one frame (plays the role of the paper's Qwen3-VL annotator)."""

    complex: bool
    reason: str
    direction: str
    speed: str


def annotate(episode: Episode, t: int) -> Annotation:
    """Complexity, reason and summary (direction x speed) of step ``t`` from simulator ground truth.

    Complex (long-tail) scenes: a (near-)stopped vehicle in the ego lane within 80 m ahead, a lead vehicle
    within 50 m decelerating harder than 3 m/s^2, or a vehicle in an adjacent lane within 25 m ahead moving
    into the ego lane. The summary describes the expert's next 2 s (lane change, speed change).
    """
    t = _check_step(episode, t)
    pose = episode.ego[t, :3]
    lane_w = float(episode.lanes[0, 4])
    vs = episode.vehicles[t]
    vs = vs[vs[:, 0] >= 0]
    reason = "clear-road"
    if len(vs):
        rel = _rel(pose, vs[:, 1:3])
        ahead = (rel[:, 0] > 0) & (np.abs(rel[:, 1]) < lane_w / 2)
        stalled = ahead & (rel[:, 0] < 80.0) & (vs[:, 4] < 2.0)
        lead_brake = False
        if t > 0 and ahead.any():
            i = int(np.argmin(np.where(ahead, rel[:, 0], np.inf)))
            prev = episode.vehicles[t - 1]
            hit = np.nonzero(prev[:, 0] == vs[i, 0])[0]
            if hit.size and rel[i, 0] < 50.0:
                lead_brake = (vs[i, 4] - prev[hit[0], 4]) / POLICY_DT < -3.0
        if stalled.any():
            reason = "stalled-ahead"
        elif lead_brake:
            reason = "lead-braking"
        elif t > 0:
            for i in np.nonzero(
                (rel[:, 0] > 0)
                & (rel[:, 0] < 25.0)
                & (np.abs(rel[:, 1]) > lane_w / 2)
                & (np.abs(rel[:, 1]) < 1.5 * lane_w)
            )[0]:
                prev = episode.vehicles[t - 1]
                hit = np.nonzero(prev[:, 0] == vs[i, 0])[0]
                if not hit.size:
                    continue
                prel = _rel(pose, prev[hit[0], 1:3][None])[0]
                if abs(rel[i, 1]) < abs(prel[1]) - 0.3:  # closing in laterally by > 0.6 m/s
                    reason = "cut-in-left" if rel[i, 1] < 0 else "cut-in-right"
                    break
        if reason == "clear-road" and ahead.any():
            i = int(np.argmin(np.where(ahead, rel[:, 0], np.inf)))
            if rel[i, 0] < 40.0 and vs[i, 4] < episode.ego[t, 3] - 3.0:
                reason = "slow-lead"
    end = min(t + 4, episode.n_steps - 1)
    dlat = _rel(pose, episode.ego[end, :2][None])[0, 1]
    direction = "keep-lane" if abs(dlat) < lane_w / 2 else ("change-left" if dlat < 0 else "change-right")
    dv = float(episode.ego[end, 3] - episode.ego[t, 3])
    if episode.ego[end, 3] < 2.0:
        speed = "stop"
    elif dv < -2.0:
        speed = "decelerate"
    elif dv > 2.0:
        speed = "accelerate"
    else:
        speed = "keep"
    return Annotation(
        reason in ("stalled-ahead", "lead-braking", "cut-in-left", "cut-in-right"), reason, direction, speed
    )


# ------------------------------------------------------------------------------------------------ cache
class CacheError(RuntimeError):
    """A cached episode file is corrupt or from another format."""


_FORMAT = 2  # 2: vehicle numbers no longer reused through id() (format-1 caches are rebuilt)


def save_episodes(episodes: list[Episode], path: Path) -> None:
    """Write episodes to one ``.npz`` atomically (temporary file, then rename) with a content checksum."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    arrays: dict[str, np.ndarray] = {}
    meta = []
    for i, ep in enumerate(episodes):
        for k in ("ego", "vehicles", "lanes", "lane_lines", "crashed", "on_road"):
            arrays[f"{i}_{k}"] = getattr(ep, k)
        meta.append({"event": ep.event, "event_step": ep.event_step, "seed": ep.seed})
    digest = hashlib.sha256()
    for k in sorted(arrays):
        digest.update(k.encode())
        digest.update(np.ascontiguousarray(arrays[k]).tobytes())
    header = {"format": _FORMAT, "n": len(episodes), "meta": meta, "sha256": digest.hexdigest()}
    arrays["header"] = np.frombuffer(json.dumps(header).encode(), np.uint8)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".npz")
    os.close(fd)
    try:
        np.savez(tmp, **arrays)  # type: ignore[arg-type]
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def load_episodes(path: Path) -> list[Episode]:
    """Read episodes written by :func:`save_episodes`; :class:`CacheError` if the file is corrupt."""
    try:
        with np.load(Path(path)) as z:
            header = json.loads(bytes(z["header"]).decode())
            arrays = {k: z[k] for k in z.files if k != "header"}
    except (OSError, ValueError, KeyError, zipfile.BadZipFile, json.JSONDecodeError, EOFError) as exc:
        raise CacheError(f"{path}: unreadable episode cache ({exc})") from exc
    if header.get("format") != _FORMAT:
        raise CacheError(f"{path}: cache format {header.get('format')} != {_FORMAT}")
    digest = hashlib.sha256()
    for k in sorted(arrays):
        digest.update(k.encode())
        digest.update(np.ascontiguousarray(arrays[k]).tobytes())
    if digest.hexdigest() != header.get("sha256"):
        raise CacheError(f"{path}: checksum mismatch")
    out = []
    for i, m in enumerate(header["meta"]):
        a = {k: arrays[f"{i}_{k}"] for k in ("ego", "vehicles", "lanes", "lane_lines", "crashed", "on_road")}
        out.append(
            Episode(
                a["ego"],
                a["vehicles"],
                a["lanes"],
                a["lane_lines"],
                a["crashed"],
                a["on_road"],
                m["event"],
                int(m["event_step"]),
                int(m["seed"]),
            )
        )
    return out


def cached_episodes(key: dict[str, Any], build: Any, cache_dir: Path | None) -> list[Episode]:
    """Episodes from ``cache_dir/<hash of key>.npz`` if valid, else ``build()`` (and cache them).

    A corrupt or mismatching cache file is detected by its checksum and rebuilt, never silently used.
    """
    if cache_dir is None:
        result: list[Episode] = build()
        return result
    h = hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:16]
    path = Path(cache_dir) / f"episodes-{h}.npz"
    if path.exists():
        try:
            return load_episodes(path)
        except CacheError:
            path.unlink()  # rebuilt below
    eps: list[Episode] = build()
    save_episodes(eps, path)
    return eps
