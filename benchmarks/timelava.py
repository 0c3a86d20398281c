"""Benchmark: TimeLAVA vs LAVA on raw segments, segments valued per second and peak memory.

Usage: python benchmarks/timelava.py [--quick]

Each (method, size) runs in a fresh subprocess;
the fit's own memory is the peak resident set after the fit minus the peak before it (so imports such
as POT's torch are not counted); the traced peak (tracemalloc, numpy buffers included) is reported as
well. Evaluated series: the synthetic
sine process of the brief with 2% spikes, T in {10^3, 10^4, 10^5}; reference: a clean 4,000-point draw
(985 segments); L = 64, S = 4, kappa = 2, eps = 0.01, db4 level 2. Plus the UCR InternalBleeding16 series
shipped in aeon (the public re-implementation's timing there: 44.5 s, 756 MiB, AUC 0.999).
Timings on a shared machine are noisy.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys

CHILD = r"""
import json, resource, sys, time, tracemalloc
import numpy as np
from icml2026.core.stats import auroc
from icml2026.papers.timelava import (lava_values, load_internal_bleeding16, make_spike_series,
                                      synthetic_base, value_segments)
method, size = sys.argv[1], sys.argv[2]
if method == "lava_raw":
    # LAVA needs POT (ot.emd); POT imports torch (~300 MiB resident), so it is imported only here and before
    # the baseline measurement. TimeLAVA's unsupervised path does not use POT.
    import ot  # noqa: F401
if size == "ib16":
    ds = load_internal_bleeding16(); x, y, ref = ds.series, ds.labels, ds.reference
else:
    rng = np.random.default_rng(0)
    x, y = make_spike_series(int(size), 0.02, (4.0, 7.0), rng); ref = synthetic_base(4000, rng)
# the fit's own memory: peak resident set after the fit minus the peak before it (imports and data)
rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
tracemalloc.start()
t0 = time.perf_counter()
c0 = time.process_time()
res = value_segments(x, ref, 64, 4, 2.0, 0.01) if method == "timelava" else lava_values(x, ref, 64, 4)
wall = time.perf_counter() - t0
cpu = time.process_time() - c0
peak = tracemalloc.get_traced_memory()[1]
tracemalloc.stop()
auc = auroc(-res.pointwise(), y)
rss_after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps({"n_segments": int(len(res.starts)), "wall_s": wall, "cpu_s": cpu, "traced_peak_mib": peak / 2**20,
                  "maxrss_mib": rss_after, "base_rss_mib": rss_before, "fit_rss_mib": rss_after - rss_before,
                  "auc": auc}))
"""


def run(method: str, size: str, timeout: float) -> dict:
    try:
        out = subprocess.run(
            [sys.executable, "-c", CHILD, method, size],
            capture_output=True,
            text=True,
            timeout=timeout,
            check=True,
        )
    except subprocess.TimeoutExpired:
        return {"error": f"timeout > {timeout:.0f} s"}
    except subprocess.CalledProcessError as exc:
        return {"error": exc.stderr.strip().splitlines()[-1] if exc.stderr else "failed"}
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="sizes 10^3 and 10^4 only")
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds per run before giving up")
    args = parser.parse_args()
    sizes = ["ib16", "1000", "10000"] + ([] if args.quick else ["100000"])
    header = (
        f"{'series':>10} {'method':>9} {'segments':>9} {'wall s':>8} {'cpu s':>7} {'seg/s':>9} {'traced MiB':>11} "
        f"{'fit RSS MiB':>12} {'base RSS':>9} {'AUC':>6} {'LAVA/TimeLAVA cpu':>18}"
    )
    print(header)
    print("-" * len(header))
    for size in sizes:
        res = {m: run(m, size, args.timeout) for m in ("timelava", "lava_raw")}
        for m, r in res.items():
            name = "IB16 7501" if size == "ib16" else size
            if "error" in r:
                print(f"{name:>10} {m:>9} {r['error']}")
                continue
            ratio = ""
            if m == "lava_raw" and "error" not in res["timelava"]:
                ratio = f"{r['cpu_s'] / res['timelava']['cpu_s']:.2f}x"
            print(
                f"{name:>10} {m:>9} {r['n_segments']:>9} {r['wall_s']:>8.2f} "
                f"{r['cpu_s']:>7.2f} {r['n_segments'] / r['cpu_s']:>9.0f} "
                f"{r['traced_peak_mib']:>11.0f} {r['fit_rss_mib']:>12.0f} {r['base_rss_mib']:>9.0f} "
                f"{r['auc']:>6.3f} {ratio:>18}"
            )
        sys.stdout.flush()
    print(
        "fit RSS = peak resident memory after the fit minus the peak before it (imports, data): the fit's own.\n"
        "Public re-implementation (lww28/TimeLAVA), measured on this project's machines on identical inputs "
        "(issue 32; not re-run by this script): 10^4 points 100 s CPU / 2.50 GiB; 10^5 points: needs 11.7 GiB "
        "for one array."
    )


if __name__ == "__main__":
    main()
