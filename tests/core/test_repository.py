"""The repository itself: small enough for the machines that lend a GPU (a working tree of at most 64 MiB) and for
the project's own limit on tracked files (40 MiB)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
MAX_TRACKED_BYTES = 40 * 2**20  # the project's budget for tracked files


def test_tracked_files_stay_under_40_mib() -> None:
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("not a git checkout")
    res = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True, timeout=60)
    files = [ROOT / name for name in res.stdout.decode().split("\0") if name]
    sizes = {f: f.stat().st_size for f in files if f.is_file()}
    total = sum(sizes.values())
    biggest = sorted(sizes.items(), key=lambda kv: -kv[1])[:5]
    assert total <= MAX_TRACKED_BYTES, (
        f"tracked files take {total / 2**20:.1f} MiB > 40 MiB; the largest: "
        + ", ".join(f"{p.relative_to(ROOT)} {s / 2**20:.1f} MiB" for p, s in biggest))
