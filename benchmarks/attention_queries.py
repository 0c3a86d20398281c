"""Benchmark for attention_queries: queries used against the theoretical counts, and batched wall time.

Prints, for d up to 128 (64 with --quick): the queries used by the exact method (d^2 + d), the adaptive
low-rank method ((2r + 2) d) and compressed sensing (d + kappa r d) over their theoretical counts and over
the exact baseline; then the wall time of exact recovery at the largest d with the non-adaptive queries
batched into one vectorised call against one call per query.

    python benchmarks/attention_queries.py [--quick]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from icml2026.papers.attention_queries import (
    CountingOracle,
    random_single_head,
    recover_exact,
    recover_low_rank,
    relative_error,
)
from icml2026.papers.attention_queries._threads import single_blas_thread


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="d up to 64 (compressed sensing up to d = 32)")
    args = parser.parse_args()
    d_max = 64 if args.quick else 128
    kappa = 6.0
    print(
        f"{'method':<22}{'d':>5}{'r':>4}{'queries':>9}{'theory':>9}{'used/theory':>12}"
        f"{'vs d^2+d':>10}{'rel_err_A':>11}"
    )
    rng = np.random.default_rng(0)
    # One BLAS thread throughout: faster for these small solves on a shared machine, and the two timed
    # runs below get the same setting.
    with single_blas_thread():
        _query_table(rng, d_max, kappa)
        head = random_single_head(d_max, d_max, rng)
        times = {}
        for batch in (True, False):
            t0 = time.perf_counter()
            est = recover_exact(CountingOracle(head), d_max, batch=batch)
            times[batch] = time.perf_counter() - t0
    print(
        f"\nexact recovery, d={d_max} ({est.n_queries} queries): batched {times[True]:.3f} s, "
        f"one call per query {times[False]:.3f} s, speed-up x{times[False] / times[True]:.1f}"
    )


def _query_table(rng: np.random.Generator, d_max: int, kappa: float) -> None:
    """One row per (method, d, r): queries used, theoretical count, ratios, error."""
    d = 8
    while d <= d_max:
        runs = [("exact", d, None)] + [("adaptive", d, r) for r in (1, 2, 4) if r <= d // 4]
        runs += [("compressed_sensing", d, 2)] if d <= min(64, d_max // 2) else []
        for method, dd, r in runs:
            head = random_single_head(dd, r if r is not None else dd, rng)
            oracle = CountingOracle(head)
            if method == "exact":
                est, theory = recover_exact(oracle, dd), dd * dd + dd
            elif method == "adaptive":
                est, theory = recover_low_rank(oracle, dd, None, "adaptive", rng), (2 * r + 2) * dd
            else:
                est = recover_low_rank(oracle, dd, r, "compressed_sensing", rng, kappa=kappa)
                theory = dd + int(np.ceil(kappa * r * dd))
            label = method if r is None else f"{method} r={r}"
            print(
                f"{label:<22}{dd:>5}{r if r else dd:>4}{oracle.n_queries:>9}{theory:>9}"
                f"{oracle.n_queries / theory:>12.3f}{oracle.n_queries / (dd * dd + dd):>10.3f}"
                f"{relative_error(est.A, head.A):>11.1e}"
            )
        d *= 2


if __name__ == "__main__":
    main()
