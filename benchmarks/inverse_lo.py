"""Benchmark for inverse_lo: centroid cost per round, and the centroid learner against ONS.

    python benchmarks/inverse_lo.py [--quick]

Part 1 times one exact centroid (DP over order ideals) at d = 10, 14, 18 on the empty poset (2^d ideals,
the worst case, i.e. the first round) and on a random poset with 20% of the pairs ordered; and one sampled
centroid (Markov chain on linear extensions) at d = 50. Part 2 plays the centroid learner and ONS on the
same uniform-matroid instances (d = 10, T = 10^4; --quick: T = 2000) and prints regret, wrong rounds and
wall time, with the ratio ONS / ours. Part 3 times the min-cost-flow oracle of a random flow-defined M-convex
set (``random_flow_set``) at d = 10 and 50: maximize (network simplex), contains (max flow) and
exchange_pairs (one max flow + residual reachability). Nothing is written to disk.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from icml2026.papers.inverse_lo import (
    CentroidLearner,
    OnlineNewtonStepLearner,
    linear_extension_heights,
    make_instances,
    mistake_bound,
    play,
    random_flow_set,
    sample_w_star,
)


def _random_poset(d: int, p: float, rng: np.random.Generator) -> list[tuple[int, int]]:
    order = rng.permutation(d)
    return [(int(order[a]), int(order[b])) for a in range(d) for b in range(a) if rng.random() < p]


def _time(fn, repeats: int) -> float:  # noqa: ANN001
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="T = 2000 instead of 10^4, fewer repeats")
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    repeats = 1 if args.quick else 3

    print(f"centroid per round (best of {repeats})")
    print(f"{'method':<22}{'d':>4}{'poset':>14}{'time [ms]':>12}")
    for d in (10, 14, 18):
        for label, edges in (("empty", []), ("random 20%", _random_poset(d, 0.2, rng))):
            sec = _time(lambda d=d, edges=edges: linear_extension_heights(d, edges, method="exact"), repeats)
            print(f"{'exact DP (ideals)':<22}{d:>4}{label:>14}{1e3 * sec:>12.1f}")
    for label, edges in (("empty", []), ("random 20%", _random_poset(50, 0.2, rng))):
        sec = _time(lambda edges=edges: linear_extension_heights(50, edges, method="mcmc", rng=rng), repeats)
        print(f"{'MCMC (32 chains)':<22}{50:>4}{label:>14}{1e3 * sec:>12.1f}")

    d = 10
    n_rounds = 2000 if args.quick else 10_000
    inst_rng = np.random.default_rng(1)
    w_star = sample_w_star(d, inst_rng)
    instances = make_instances("uniform", d, n_rounds, inst_rng)
    k_diam = max(fs.diameter_bound() for fs in instances)
    rows = {}
    for name, learner in (
        ("centroid (ours)", CentroidLearner(d)),
        ("ONS", OnlineNewtonStepLearner(d, action_diameter=k_diam)),
    ):
        t0 = time.perf_counter()
        trace = play(learner, w_star, instances)
        rows[name] = (trace.total_regret, trace.n_wrong, time.perf_counter() - t0)
    print(
        f"\nlearner vs ONS: uniform matroid, d={d}, T={n_rounds}, bound ln(d!)/ln(e/(e-1)) = "
        f"{mistake_bound(d):.1f}"
    )
    print(f"{'learner':<18}{'regret':>10}{'wrong':>8}{'wall [s]':>10}")
    for name, (reg, wrong, sec) in rows.items():
        print(f"{name:<18}{reg:>10.3f}{wrong:>8d}{sec:>10.2f}")
    ours, ons = rows["centroid (ours)"], rows["ONS"]
    print(f"{'ratio ONS/ours':<18}{ons[0] / ours[0]:>10.2f}{ons[1] / ours[1]:>8.2f}{ons[2] / ours[2]:>10.2f}")
    flow_oracle_timings(repeats)


def flow_oracle_timings(repeats: int) -> None:
    """Part 3: per-call cost of the flow oracle (mean over 20 random sets, best of ``repeats``)."""
    rng = np.random.default_rng(2)
    print(f"\nflow oracle per call (mean over 20 random flow sets, best of {repeats})")
    print(f"{'d':>4}{'maximize [ms]':>16}{'contains [ms]':>16}{'exchange [ms]':>16}")
    for d in (10, 50):
        sets = [random_flow_set(d, rng) for _ in range(20)]
        w = sample_w_star(d, rng)
        xs = [fs.maximize(w) for fs in sets]
        pairs = list(zip(sets, xs, strict=True))
        t_max = _time(lambda sets=sets, w=w: [fs.maximize(w) for fs in sets], repeats) / len(sets)
        t_in = _time(lambda pairs=pairs: [fs.contains(x) for fs, x in pairs], repeats) / len(sets)
        t_ex = _time(lambda pairs=pairs: [fs.exchange_pairs(x) for fs, x in pairs], repeats) / len(sets)
        print(f"{d:>4}{1e3 * t_max:>16.2f}{1e3 * t_in:>16.2f}{1e3 * t_ex:>16.2f}")


if __name__ == "__main__":
    main()
