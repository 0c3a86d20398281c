"""Benchmark for correctness_models: metric throughput on 10^6 predictions against netcal and scikit-learn.

    python benchmarks/correctness_models.py [--quick]

Times our top-label ECE (30 bins) against netcal's ``ECE(bins=30)`` on the same top-label arrays, our
AUROC (a validated call of sklearn's ``roc_auc_score``) against the bare sklearn call, and our RMSCE and
AURC, on n = 10^6 predictions (--quick: 10^5, one repeat). Prints best-of-repeats wall time, throughput in
million predictions per second, the ratio netcal / ours (sklearn / ours), and the absolute difference of
the values (they must agree). Nothing is written to disk.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from icml2026.papers.correctness_models import aurc, auroc, expected_calibration_error, rms_calibration_error


def _best(fn, repeats: int) -> tuple[float, float]:  # noqa: ANN001
    best, value = float("inf"), float("nan")
    for _ in range(repeats):
        t0 = time.perf_counter()
        value = float(fn())
        best = min(best, time.perf_counter() - t0)
    return best, value


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="n = 10^5 and one repeat instead of 10^6 and 3")
    args = parser.parse_args()
    n, repeats = (10**5, 1) if args.quick else (10**6, 3)
    rng = np.random.default_rng(0)
    p = rng.random(n)
    y = (rng.random(n) < p**1.5).astype(np.int64)
    pred = (p > 0.5).astype(np.int64)
    conf, hit = np.where(pred == 1, p, 1 - p), (pred == y).astype(np.int64)

    from netcal.metrics import ECE
    from sklearn.metrics import roc_auc_score

    rows = [
        ("ECE top-label, 30 bins", lambda: expected_calibration_error(p, y), "netcal ECE(30)",
         lambda: ECE(bins=30).measure(conf, hit)),
        ("AUROC", lambda: auroc(p, y), "sklearn roc_auc_score", lambda: roc_auc_score(y, p)),
        ("RMSCE (100 / bin)", lambda: rms_calibration_error(p, y), None, None),
        ("AURC", lambda: aurc(p, y), None, None),
    ]
    print(f"n = {n:,} predictions, best of {repeats}")
    print(f"{'metric':<24}{'ours [s]':>10}{'M/s':>8}   {'reference':<24}{'ref [s]':>10}{'ref/ours':>10}{'|diff|':>10}")
    for name, ours, ref_name, ref in rows:
        t, v = _best(ours, repeats)
        line = f"{name:<24}{t:>10.4f}{n / t / 1e6:>8.1f}   "
        if ref is not None:
            tr, vr = _best(ref, repeats)
            line += f"{ref_name:<24}{tr:>10.4f}{tr / t:>10.2f}{abs(v - vr):>10.1e}"
        else:
            line += f"{'(no reference)':<24}"
        print(line)


if __name__ == "__main__":
    main()
