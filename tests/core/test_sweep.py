"""Sweeps: Ray and the process pool give identical runs; an interrupted sweep resumes; failures are collected."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from icml2026.cli import main
from icml2026.core import sweep
from icml2026.core.aggregate import bootstrap_ci, summarize

ROOT = Path(__file__).resolve().parents[2]
NAME = "attention_queries.exact_recovery"
TINY = ["--set", "d_max=8"]  # d = 8 only: each run is a fraction of a second, the sweep machinery is what is tested


def _metrics(out: Path) -> dict[str, dict]:
    return {p.parent.name: json.loads(p.read_text())["metrics"] for p in sorted((out / NAME).glob("*/results.json"))}


def _sweep_json(out: Path) -> dict:
    (f,) = (out / "sweeps").glob("*.json")
    return json.loads(f.read_text())


#: The acceptance size (20 seeds) runs in ``make test-slow``; the default suite runs the same test on 4.
SIZES = [4, pytest.param(20, marks=pytest.mark.slow)]


@pytest.mark.timeout(900)
@pytest.mark.parametrize("n", SIZES)
def test_ray_and_process_pool_give_identical_runs_and_aggregate(tmp_path: Path, capsys: pytest.CaptureFixture,
                                                                 n: int) -> None:
    pytest.importorskip("ray")
    a, b = tmp_path / "pool", tmp_path / "ray"
    seeds = f"0-{n - 1}"
    assert main(["sweep", NAME, "--seeds", seeds, *TINY, "--executor", "local", "--workers", "2",
                 "--out", str(a)]) == 0
    assert main(["sweep", NAME, "--seeds", seeds, *TINY, "--executor", "ray", "--workers", "2",
                 "--out", str(b)]) == 0
    ma, mb = _metrics(a), _metrics(b)
    assert len(ma) == n and ma == mb
    ga, gb = _sweep_json(a)["groups"], _sweep_json(b)["groups"]
    assert ga == gb and ga[0]["n_ok"] == n and ga[0]["seeds"] == list(range(n))
    assert all(v["passed"] == n for v in ga[0]["checks"].values())
    capsys.readouterr()


def test_grid_runs_every_combination_into_hashed_folders(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    assert main(["sweep", NAME, "--seeds", "0,1", "--grid", "d_max=8,16", "--executor", "local",
                 "--workers", "2", "--out", str(tmp_path)]) == 0
    folders = sorted(p.name for p in (tmp_path / NAME).iterdir() if not p.name.startswith("."))
    assert len(folders) == 4 and all(f.count("-") == 2 for f in folders)  # <preset>-seed<n>-<hash>
    groups = _sweep_json(tmp_path)["groups"]
    assert sorted(g["overrides"]["d_max"] for g in groups) == [8, 16]
    capsys.readouterr()


def test_bad_grid_is_refused_before_anything_runs(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    assert main(["sweep", NAME, "--grid", "d_max=8,0", "--executor", "local", "--out", str(tmp_path)]) == 2
    assert "d_max" in capsys.readouterr().err and not (tmp_path / NAME).exists()
    assert main(["sweep", NAME, "--grid", "nope=1", "--executor", "local", "--out", str(tmp_path)]) == 2


KILLABLE = """
import sys
from icml2026.cli import main
sys.exit(main(["sweep", "%s", "--seeds", "0-" + sys.argv[2], "--set", "d_max=8", "--executor", "local",
               "--workers", "1", "--out", sys.argv[1]]))
""".replace("%s", NAME)


@pytest.mark.timeout(900)
@pytest.mark.parametrize("n", [8, pytest.param(20, marks=pytest.mark.slow)])
def test_interrupted_sweep_resumes_without_redoing_finished_runs(tmp_path: Path, capsys: pytest.CaptureFixture,
                                                                 n: int) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    proc = subprocess.Popen([sys.executable, "-c", KILLABLE, str(tmp_path), str(n - 1)], env=env, cwd=ROOT,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.monotonic() + 300
    while len(list((tmp_path / NAME).glob("*/results.json"))) < n // 4:
        assert time.monotonic() < deadline and proc.poll() is None
        time.sleep(0.2)
    os.killpg(proc.pid, signal.SIGKILL)  # the sweep and its workers, mid-run
    proc.wait()
    finished = {p.parent.name: p.stat().st_mtime_ns for p in (tmp_path / NAME).glob("*/results.json")}
    assert n // 4 <= len(finished) < n
    assert main(["sweep", NAME, "--seeds", f"0-{n - 1}", *TINY, "--executor", "local", "--workers", "2",
                 "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert f"({len(finished)} already done, {n - len(finished)} to run)" in out
    after = {p.parent.name: p.stat().st_mtime_ns for p in (tmp_path / NAME).glob("*/results.json")}
    assert len(after) == n
    assert all(after[k] == v for k, v in finished.items())  # not redone
    assert _sweep_json(tmp_path)["n_resumed"] == len(finished)


def test_a_failing_run_is_collected_not_fatal(tmp_path: Path) -> None:
    tasks = sweep.plan_tasks(["no_such.experiment", NAME], "quick", [0], [{"d_max": 8}], tmp_path)
    results = [sweep.run_task(t) for t in tasks]
    assert results[0]["status"] == "error" and "unknown experiment" in results[0]["error"]
    assert results[1]["status"] == "ok"
    groups = sweep.aggregate(results)
    assert groups[0]["failures"] and groups[1]["n_ok"] == 1
    assert groups[0]["verdicts"] == {"reproduced": 0, "not reproduced": 0, "undecided": 0}
    assert sum(groups[1]["verdicts"].values()) == 1 and groups[1]["verdicts"][results[1]["verdict"]] == 1


def test_summaries() -> None:
    s = summarize([1.0, 2.0, 3.0, float("nan")])
    assert s["n"] == 4 and s["n_finite"] == 3 and s["mean"] == 2.0 and s["sd"] == 1.0
    lo, hi = s["ci95"]
    assert 1.0 <= lo <= 2.0 <= hi <= 3.0
    assert bootstrap_ci([5.0]) == (5.0, 5.0)
    assert bootstrap_ci([1.0, 2.0, 3.0]) == bootstrap_ci([1.0, 2.0, 3.0])  # its own fixed stream


def _draws(seed: int, n: int) -> list[float]:
    import numpy as np

    return np.random.default_rng(seed).normal(size=n).tolist()


def test_map_in_processes_returns_results_in_call_order_for_any_worker_count() -> None:
    calls = [(_draws, (s, 3 + s)) for s in (5, 1, 4, 2)]  # unequal work, so they may finish out of order
    here = sweep.map_in_processes(calls, workers=1)
    assert here == [_draws(s, 3 + s) for s in (5, 1, 4, 2)]
    assert sweep.map_in_processes(calls, workers=2) == here


def test_map_in_processes_refuses_bad_counts_and_passes_errors_through() -> None:
    with pytest.raises(ValueError, match="workers = 0"):
        sweep.map_in_processes([(_draws, (0, 1))], workers=0)
    with pytest.raises(ValueError, match="n_threads = 0"):
        sweep.map_in_processes([(_draws, (0, 1))], workers=2, n_threads=0)
    with pytest.raises(ValueError):  # numpy's own error from a worker process reaches the caller
        sweep.map_in_processes([(_draws, (0, 1)), (_draws, (0, -1))], workers=2)
