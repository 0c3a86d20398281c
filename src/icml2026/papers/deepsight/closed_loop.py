"""Closed loop in highway-env: planner waypoints -> PID (the official gains) -> steering / acceleration.

DS-analogue per episode (brief Sec. 4): ``min(progress / expert progress, 1) * 0.5^collisions * 0.7^off-road``,
the expert being the IDM + MOBIL autopilot on the same simulator seed and event.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from icml2026.core import stats
from icml2026.core.progress import track
from icml2026.core.validate import as_array, finite_number, positive_int

from .data import Episode, ego_state, kinematics_obs, simulate_episode

__all__ = ["PID", "PIDController", "ClosedLoopResult", "closed_loop", "eval_event", "ds_analogue", "bootstrap_ci"]

A_MAX = 5.0  # m/s^2 at full throttle (highway-env's ACC_MAX is 6)
B_MAX = 8.0  # m/s^2 at full brake
STEER_MAX = np.pi / 3  # rad of front-wheel angle at steer = 1 (highway-env's MAX_STEERING_ANGLE)


class PID:
    """The leaderboard's PID: integral = mean and derivative = last difference over a window of errors."""

    def __init__(self, kp: float, ki: float, kd: float, n: int) -> None:
        self.kp, self.ki, self.kd = (finite_number(v, k) for v, k in ((kp, "kp"), (ki, "ki"), (kd, "kd")))
        self.window: deque[float] = deque([0.0] * positive_int(n, "n"), maxlen=n)

    def step(self, error: float) -> float:
        self.window.append(float(error))
        integral = float(np.mean(self.window))
        derivative = self.window[-1] - self.window[-2] if len(self.window) >= 2 else 0.0
        return self.kp * error + self.ki * integral + self.kd * derivative


@dataclass
class PIDController:
    """Waypoints (ego frame, 0.5 s apart) -> steer, throttle, brake with the official gains (brief Sec. 2)."""

    turn: PID = field(default_factory=lambda: PID(1.1, 0.2, 0.4, 20))
    speed: PID = field(default_factory=lambda: PID(5.0, 0.5, 1.0, 40))
    aim_dist: float = 3.5
    max_throttle: float = 0.75

    def control(
        self, waypoints: np.ndarray, speed: float, steer_waypoints: np.ndarray | None = None
    ) -> tuple[float, float, float]:
        """(steer in [-1, 1], throttle in [0, 0.75], brake in [0, 1]) for waypoints (n, 2) and speed (m/s).

        ``steer_waypoints`` (default ``waypoints``): the same plan expressed in the ego frame of this control
        step, used for the aim point when the plan is held between two planner calls.
        """
        wp = _check_wp(waypoints, "waypoints")
        sw = wp if steer_waypoints is None else _check_wp(steer_waypoints, "steer_waypoints")
        speed = finite_number(speed, "speed")
        d = np.linalg.norm(sw, axis=1)
        far = np.nonzero(d >= self.aim_dist)[0]
        aim = sw[far[0]] if far.size else sw[-1]
        angle = float(np.arctan2(aim[1], aim[0])) / (np.pi / 2)  # normalised by 90 degrees as in the code
        steer = float(np.clip(self.turn.step(angle), -1.0, 1.0))
        desired = 0.75 * 2 * float(np.linalg.norm(wp[0])) + 0.25 * 2 * float(np.linalg.norm(wp[1] - wp[0]))
        u = self.speed.step(desired - speed)
        throttle = float(np.clip(u, 0.0, self.max_throttle))
        brake = float(np.clip(-u, 0.0, 1.0))
        if brake < 0.05 or throttle > brake:
            brake = 0.0
        return steer, throttle, brake


def _check_wp(w: np.ndarray, name: str) -> np.ndarray:
    wp = np.asarray(w, float)
    if wp.ndim != 2 or wp.shape[1] != 2 or wp.shape[0] < 2 or not np.all(np.isfinite(wp)):
        raise ValueError(f"{name}: expected finite (n >= 2, 2), got shape {wp.shape}")
    return wp


def eval_event(seed: int) -> str:
    """The long-tail event of closed-loop seed ``seed``: 30 % of seeds (seed % 10 in {0, 4, 7})."""
    r = seed % 10
    return "stalled" if r in (0, 7) else ("brake" if r == 4 else "none")


@dataclass
class ClosedLoopResult:
    """Per-episode closed-loop metrics (arrays of length n_episodes) and the driven episodes."""

    seeds: np.ndarray
    collisions: np.ndarray
    offroad: np.ndarray
    progress: np.ndarray
    expert_progress: np.ndarray
    ds: np.ndarray
    long_tail: np.ndarray
    reasoning_tokens: np.ndarray
    episodes: list[Episode]

    @property
    def collision_rate(self) -> float:
        return float(np.mean(self.collisions > 0))


def ds_analogue(progress: float, expert_progress: float, collisions: int, offroad: int) -> float:
    """``min(progress / expert_progress, 1) * 0.5^collisions * 0.7^offroad``."""
    ratio = float(np.clip(progress / max(expert_progress, 1e-6), 0.0, 1.0))
    return ratio * 0.5 ** int(collisions) * 0.7 ** int(offroad)


def _progress(ep: Episode) -> float:
    return float(ep.ego[-1, 0] - ep.ego[0, 0])


def closed_loop(
    planner: Any, seeds: list[int], *, n_steps: int = 30, expert: dict[int, Episode] | None = None
) -> ClosedLoopResult:
    """Drive highway-env with ``planner`` (anything with ``.plan(obs) -> Plan``) through the PID on each seed.

    The plan is recomputed every 0.5 s; the PID runs at every 10 Hz simulation step on the waypoints
    expressed in the current ego frame. ``expert`` maps seed -> the expert's episode (computed if absent).
    """
    if not seeds:
        raise ValueError("seeds: needs at least one seed")
    n_steps = positive_int(n_steps, "n_steps", minimum=10, maximum=400)
    rows: dict[str, list[Any]] = {k: [] for k in ("col", "off", "prog", "eprog", "ds", "lt", "tok", "ep")}
    for seed in track(seeds, "deepsight closed-loop episodes", total=len(seeds)):
        seed = int(seed)
        event = eval_event(seed)
        pid = PIDController()
        tokens: list[int] = []

        def policy(
            hist: Episode, road: Any, ego: Any, _pid: PIDController = pid, _tok: list[int] = tokens
        ) -> Callable[[Any], dict[str, float]]:
            t = hist.n_steps - 1
            plan = planner.plan({"kin": kinematics_obs(hist, t), "ego": ego_state(hist, t)})
            _tok.append(len(plan.reasoning))
            x0, y0, h0 = float(ego.position[0]), float(ego.position[1]), float(ego.heading)
            c, s = np.cos(h0), np.sin(h0)
            world = np.stack(
                [
                    x0 + c * plan.waypoints[:, 0] - s * plan.waypoints[:, 1],
                    y0 + s * plan.waypoints[:, 0] + c * plan.waypoints[:, 1],
                ],
                1,
            )

            def act(veh: Any) -> dict[str, float]:
                cc, ss = np.cos(veh.heading), np.sin(veh.heading)
                d = world - veh.position
                local = np.stack([cc * d[:, 0] + ss * d[:, 1], -ss * d[:, 0] + cc * d[:, 1]], 1)
                # Deviation: the plan is made every 0.5 s and held; the speed target comes from the plan as
                # made, the aim point from the plan in the current ego frame (CARLA re-plans every frame).
                steer, thr, brk = _pid.control(plan.waypoints, float(veh.speed), local)
                return {"steering": steer * STEER_MAX, "acceleration": thr * A_MAX - brk * B_MAX}

            return act

        ep = simulate_episode(seed, n_steps, event, np.random.default_rng(seed), policy=policy)
        ref = (expert or {}).get(seed)
        if ref is None:
            ref = simulate_episode(seed, n_steps, event, np.random.default_rng(seed))
        col = int(ep.crashed.any())
        off = int(np.sum(np.diff(np.concatenate([[1], ep.on_road.astype(int)])) == -1))
        prog, eprog = _progress(ep), _progress(ref)
        for k, v in (
            ("col", col),
            ("off", off),
            ("prog", prog),
            ("eprog", eprog),
            ("ds", ds_analogue(prog, eprog, col, off)),
            ("lt", event != "none"),
            ("tok", float(np.mean(tokens)) if tokens else 0.0),
            ("ep", ep),
        ):
            rows[k].append(v)
    return ClosedLoopResult(
        np.asarray(seeds),
        np.asarray(rows["col"]),
        np.asarray(rows["off"]),
        np.asarray(rows["prog"]),
        np.asarray(rows["eprog"]),
        np.asarray(rows["ds"]),
        np.asarray(rows["lt"]),
        np.asarray(rows["tok"]),
        rows["ep"],
    )


def bootstrap_ci(
    x: np.ndarray, rng: np.random.Generator, n_boot: int = 1000, level: float = 0.95
) -> tuple[float, float]:
    """Percentile bootstrap interval of the mean of ``x`` (:func:`icml2026.core.stats.bootstrap_ci`, i.e.
    ``scipy.stats.bootstrap`` with ``n_boot`` resamples)."""
    x = as_array(x, "x", ndim=1)
    n_boot = positive_int(n_boot, "n_boot")
    ci = stats.bootstrap_ci(x, rng, n_resamples=n_boot, level=level, method="percentile")
    return ci.low, ci.high
