"""PID with the official gains, DS-analogue, bootstrap, and one real closed-loop episode."""

from __future__ import annotations

import numpy as np
import pytest

from icml2026.papers.deepsight import PIDController, Plan, bootstrap_ci, closed_loop, ds_analogue


def test_pid_steers_towards_the_waypoints_and_tracks_speed() -> None:
    straight = np.array([[5.0 * (k + 1), 0.0] for k in range(4)])  # 10 m/s plan
    steer, thr, brk = PIDController().control(straight, 10.0)
    assert steer == 0.0 and thr == 0.0 and brk == 0.0  # on target: no action
    left = straight + np.array([0.0, -2.0])
    assert PIDController().control(left, 10.0)[0] < 0
    assert PIDController().control(straight + np.array([0.0, 2.0]), 10.0)[0] > 0
    _, thr, brk = PIDController().control(straight, 5.0)  # 5 m/s too slow
    assert thr == 0.75 and brk == 0.0  # KP=5 x 5 m/s saturates at the 0.75 clip
    _, thr, brk = PIDController().control(straight, 15.0)
    assert thr == 0.0 and brk == 1.0
    _, thr, brk = PIDController().control(straight, 10.005)  # tiny brake demand is zeroed (< 0.05)
    assert brk == 0.0
    with pytest.raises(ValueError, match="waypoints"):
        PIDController().control(np.zeros(3), 1.0)


def test_ds_analogue_and_bootstrap() -> None:
    assert ds_analogue(50.0, 100.0, 0, 0) == 0.5
    assert ds_analogue(200.0, 100.0, 1, 1) == pytest.approx(0.5 * 0.7)  # progress ratio capped at 1
    lo, hi = bootstrap_ci(np.array([0.0, 1.0] * 50), np.random.default_rng(0), 500)
    assert lo < 0.5 < hi and hi - lo < 0.25


class _Straight:
    def plan(self, obs: dict) -> Plan:  # 25 m/s straight ahead, whatever happens
        return Plan(np.array([[12.5 * (k + 1), 0.0] for k in range(4)]), ["easy"], None, 1)


@pytest.mark.slow
def test_blind_straight_driver_crashes_into_a_stalled_vehicle() -> None:
    # seed 1000 injects a stalled vehicle in the ego lane: a planner that ignores it must collide, the
    # IDM expert (the reference) does not; the straight plan is tracked at 25 m/s without leaving the road
    res = closed_loop(_Straight(), [1000], n_steps=24)
    assert res.long_tail[0] and res.collisions[0] == 1 and res.offroad[0] == 0
    assert not res.episodes[0].ego[:, 1].std() > 0.1
    assert res.ds[0] < 0.5
