"""Benchmark for sweeps: runs per second of one seed sweep through Ray, the process pool and a shell loop.

    python benchmarks/sweep.py [--quick] [--seeds N] [--workers W]

Sweeps ``attention_queries.exact_recovery`` with ``d_max=8`` (a run of a fraction of a second, so that the
cost measured is the machinery's: start-up, imports, scheduling, writing run folders) over N seeds (50; --quick
10) three ways, each into a fresh folder: ``icml2026 sweep --executor ray``, ``icml2026 sweep --executor
local`` and a shell loop of ``icml2026 run`` (one process per seed, the way a sweep was run before). Prints
wall time and runs/s of each and the speed-up over the shell loop, and checks that all three wrote the same
metrics for every seed. Folders are made under a temporary directory and removed.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

NAME = "attention_queries.exact_recovery"


def _metrics(out: Path) -> dict[str, dict]:
    return {p.parent.name: json.loads(p.read_text())["metrics"] for p in sorted((out / NAME).glob("*/results.json"))}


def _timed(cmd: list[str] | str, shell: bool = False) -> float:
    t0 = time.perf_counter()
    subprocess.run(cmd, shell=shell, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - t0


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="10 seeds instead of 50")
    p.add_argument("--seeds", type=int, default=None)
    p.add_argument("--workers", type=int, default=2)
    args = p.parse_args()
    n = args.seeds or (10 if args.quick else 50)
    py = sys.executable
    rows = []
    with tempfile.TemporaryDirectory(prefix="icml2026-bench-sweep-") as tmp:
        base = Path(tmp)
        common = [NAME, "--seeds", f"0-{n - 1}", "--set", "d_max=8", "--workers", str(args.workers)]
        for label, extra in (("ray", ["--executor", "ray"]), ("process pool", ["--executor", "local"])):
            out = base / label.replace(" ", "_")
            rows.append((label, _timed([py, "-m", "icml2026", "sweep", *common, *extra, "--out", str(out)]), out))
        out = base / "shell"
        loop = (f"for s in $(seq 0 {n - 1}); do {py} -m icml2026 run {NAME} --seed $s --set d_max=8 "
                f"--out {out} || exit 1; done")
        rows.append(("shell loop of icml2026 run", _timed(["bash", "-c", loop]), out))
        ref = _metrics(rows[-1][2])
        same = all(_metrics(o) == ref for _, _, o in rows) and len(ref) == n
    shell_s = rows[-1][1]
    print(f"{n} seeds of {NAME} (d_max=8), {args.workers} workers")
    print(f"{'how':28s} {'wall s':>8s} {'runs/s':>8s} {'x shell loop':>13s}")
    for label, wall, _ in rows:
        print(f"{label:28s} {wall:8.1f} {n / wall:8.2f} {shell_s / wall:13.2f}")
    print(f"identical metrics for every seed: {same}")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
