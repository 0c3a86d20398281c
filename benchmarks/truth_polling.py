"""Benchmark for truth_polling: polling at 25x compute against one sample, and vectorised vs naive voting.

    python benchmarks/truth_polling.py [--quick]

Prints (1) accuracy of single sample vs majority_cross over 25 pooled samples (and the ratio) in the
simulator's independent and correlated regimes, (2) wall time of the vectorised plurality vote against a
plain Counter loop over questions (and the speed-up). Writes nothing.
"""

from __future__ import annotations

import argparse
import time
from collections import Counter

import numpy as np

from icml2026.core import make_rng
from icml2026.papers.truth_polling import Rule, SimulatorParams, aggregate, simulate_polling


def naive_plurality(answers: np.ndarray) -> np.ndarray:
    """Reference loop: pooled Counter per question, ties to the smallest answer."""
    out = np.empty(answers.shape[2], dtype=int)
    for q in range(answers.shape[2]):
        c = Counter(answers[:, :, q].ravel().tolist())
        top = max(c.values())
        out[q] = min(a for a, n in c.items() if n == top)
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    n_q = 1000 if args.quick else 4000
    rng = make_rng(0)
    print(f"{'regime':<12} {'single':>8} {'cross@25':>9} {'ratio':>7}")
    for name, (a, st, tau, rho) in {
        "independent": (0.4, 0.0, 0.3, 0.0),
        "correlated": (0.0, 3.0, 0.3, 0.8),
    }.items():
        poll = simulate_polling(SimulatorParams(5, 25, n_q, 4, a, st, tau, rho), rng)
        single = float(np.mean(poll.answers[:, 0] == poll.gold))
        cross = float(
            np.mean(aggregate(poll.answers, Rule("majority_cross", k=5), rng=rng).codes == poll.gold)
        )
        print(f"{name:<12} {single:8.3f} {cross:9.3f} {cross / single:7.2f}")
    t0 = time.perf_counter()
    fast = aggregate(poll.answers, "majority_cross").codes
    t_fast = time.perf_counter() - t0
    t0 = time.perf_counter()
    slow = naive_plurality(poll.answers)
    t_slow = time.perf_counter() - t0
    assert np.array_equal(fast, slow), "vectorised and naive plurality disagree"
    print(f"\nplurality of {poll.answers.shape[0] * poll.answers.shape[1]} votes x {n_q} questions")
    print(f"{'method':<12} {'seconds':>9}")
    print(
        f"{'vectorised':<12} {t_fast:9.4f}\n{'naive loop':<12} {t_slow:9.4f}\nspeed-up {t_slow / t_fast:.1f}x"
    )


if __name__ == "__main__":
    main()
