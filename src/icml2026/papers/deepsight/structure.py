"""Probes of the structural claims (criteria 1-3): counting backbone passes, and the warping of a straight drive."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from .data import HORIZONS, POLICY_DT, Episode, ego_row, future_bev

__all__ = ["count_backbone_calls", "straight_drive_episode", "warp_displacements", "WarpDisplacements"]


def count_backbone_calls(planner: Any, fn: Callable[[], Any]) -> int:
    """How many times ``planner.backbone`` (the decoder) is called while ``fn()`` runs (a forward hook)."""
    calls = [0]

    def hook(*_: Any) -> None:
        calls[0] += 1

    handle = planner.backbone.register_forward_hook(hook)
    try:
        fn()
    finally:
        handle.remove()
    return calls[0]


def straight_drive_episode(speed: float, n_steps: int = 12, lanes: int = 3) -> Episode:
    """A synthetic episode: the ego drives straight in lane 1 at constant ``speed`` on an empty highway."""
    k = np.arange(n_steps)
    ego = np.stack(
        [
            100.0 + speed * POLICY_DT * k,
            np.full(n_steps, 4.0),
            np.zeros(n_steps),
            np.full(n_steps, speed),
            np.zeros(n_steps),
        ],
        1,
    )
    vehicles = np.full((n_steps, 1, 7), -1.0)
    lane_rows = np.array([[0.0, 4.0 * i, 10000.0, 4.0 * i, 4.0] for i in range(lanes)])
    lines = np.array([[3 if i == 0 else 1, 3 if i == lanes - 1 else 0] for i in range(lanes)])
    return Episode(ego, vehicles, lane_rows, lines, np.zeros(n_steps, bool), np.ones(n_steps, bool))


@dataclass
class WarpDisplacements:
    """ego_rows: (T,) forward displacement (px) of the ego blob's centre from the ego's row at t in each warped
    frame (NaN when it left the image); road_shifts: (T,) the row shift that best re-aligns the lane
    markings of each warped frame with frame t; road_shift_max: max |road_shifts|."""

    ego_rows: np.ndarray
    road_shifts: np.ndarray
    road_shift_max: float


def warp_displacements(
    ep: Episode, t: int, *, size: int = 64, metres_per_px: float = 1.0, max_shift: int = 4
) -> WarpDisplacements:
    """Measure where the ego and the lane markings are in the warped future frames of ``ep`` at ``t``.

    The dashes repeat every 10 m, so a marking shift is only identifiable modulo 10 m: the search covers
    |shift| <= ``max_shift`` px (smallest first), and a test drive should not move a multiple of 10 m per
    0.5 s (the default 13 m/s moves 6.5 m, seen as 3.5 px at 1 m/px if the frames were not warped).
    """
    frames = future_bev(ep, t, HORIZONS, size=size, metres_per_px=metres_per_px)
    rows = np.arange(size)
    ego_rows, shifts = [], []
    marks0 = frames[0, 0] == 1.0
    for f in frames:
        m = f[2] > 0
        ego_rows.append(ego_row(size) - 0.5 - float((rows[:, None] * m).sum() / m.sum()) if m.sum() else np.nan)
        marks = f[0] == 1.0
        valid = f[0] > 0  # where the warped frame has content
        best, best_score = 0, -1.0
        for s in sorted(range(-max_shift, max_shift + 1), key=abs):
            a = np.roll(marks0, s, axis=0)
            score = float((a & marks & valid).sum()) / max(float((a & valid).sum()), 1.0)
            if score > best_score + 1e-9:
                best, best_score = s, score
        shifts.append(best)
    sh = np.asarray(shifts, float)
    return WarpDisplacements(np.asarray(ego_rows), sh, float(np.max(np.abs(sh))))
