"""Benchmark for deepsight: planner steps/s in closed loop and highway-env simulator steps/s, in one run.

    python benchmarks/deepsight.py [--quick]

Prints (1) policy steps per second of the simulator alone (IDM + MOBIL expert, 5 simulation steps of
0.1 s per 0.5 s policy step), (2) closed-loop policy steps per second with untrained planners of variants
A (no world model), C (five frames in parallel, one pass) and D (five frames autoregressive, five passes),
planner time per step, and the ratio of C's planner time to D's (the paper's case for parallel prediction).
Writes nothing.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from icml2026.core import make_rng
from icml2026.core.runner import limit_blas_threads
from icml2026.papers.deepsight import PlannerConfig, build_planner, closed_loop, simulate_episode
from icml2026.papers.deepsight.data import ego_state, kinematics_obs


class _Timed:
    def __init__(self, planner: object) -> None:
        self.planner, self.seconds, self.calls = planner, 0.0, 0

    def plan(self, obs: dict) -> object:
        t0 = time.perf_counter()
        out = self.planner.plan(obs)  # type: ignore[attr-defined]
        self.seconds += time.perf_counter() - t0
        self.calls += 1
        return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    limit_blas_threads(1)
    import torch

    torch.set_num_threads(1)
    n_steps, seeds = (16, [1001]) if args.quick else (30, [1001, 1002, 1003])
    t0 = time.perf_counter()
    eps = [simulate_episode(s, n_steps, "none", np.random.default_rng(s)) for s in seeds]
    dt = time.perf_counter() - t0
    sim_steps = sum(e.n_steps for e in eps)
    print(f"simulator (expert): {sim_steps} policy steps in {dt:.2f} s = {sim_steps / dt:.1f} steps/s")
    expert = dict(zip(seeds, eps, strict=True))
    ep = eps[0]
    obs = {"kin": kinematics_obs(ep, 5), "ego": ego_state(ep, 5)}
    rng = make_rng(0)
    per_plan = {}
    print(f"\n{'variant':<8} {'steps/s (loop)':>15} {'planner ms/step':>16} {'passes':>7}")
    for v in ("A", "C", "D"):
        planner = build_planner(PlannerConfig(variant=v), rng)  # the full preset's size (d=128, 4 layers)
        planner.plan(obs)  # warm-up
        timed = _Timed(planner)
        t0 = time.perf_counter()
        res = closed_loop(timed, seeds, n_steps=n_steps, expert=expert)
        dt = time.perf_counter() - t0
        steps = sum(e.n_steps for e in res.episodes)
        per_plan[v] = timed.seconds / max(timed.calls, 1)
        print(f"{v:<8} {steps / dt:15.1f} {1000 * per_plan[v]:16.1f} {planner.plan(obs).world_model_passes:7d}")
    print(f"\nplanner time per step, C (parallel) / D (autoregressive): {per_plan['C'] / per_plan['D']:.2f}")


if __name__ == "__main__":
    main()
