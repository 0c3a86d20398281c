"""How runs execute: threads, deterministic kernels, torch imported only when an experiment needs it, and sweeps
that reserve GPUs through Ray and ship every run folder back to the driver."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from icml2026.cli import main
from icml2026.core import runner, sweep
from icml2026.core.runner import default_deterministic

ROOT = Path(__file__).resolve().parents[2]
NUMPY_ONLY = "attention_queries.exact_recovery"  # pure numpy: a closed-form recovery


def _python(code: str) -> str:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, env=env,
                         timeout=300, check=False)
    assert res.returncode == 0, res.stderr
    return res.stdout.strip().splitlines()[-1]


def test_a_numpy_only_experiment_never_imports_torch(tmp_path: Path) -> None:
    out = _python("import sys\nfrom icml2026.cli import main\n"
                  f"code = main(['run', {NUMPY_ONLY!r}, '--preset', 'quick', '--out', {str(tmp_path)!r}])\n"
                  "print(code, 'torch' in sys.modules)")
    assert out == "0 False"


_LAZY = """
import sys
{pre}
from icml2026.core.runner import seed_everything
seed_everything(7, 1)
import torch  # imported after seeding, as an experiment that imports it lazily does
print(float(torch.randn(3).sum()), torch.are_deterministic_algorithms_enabled(), torch.get_num_threads())
"""


def test_torch_imported_lazily_is_seeded_as_if_imported_first() -> None:
    lazy = _python(_LAZY.format(pre=""))
    eager = _python(_LAZY.format(pre="import torch"))
    assert lazy == eager and lazy.endswith("True 1")


def test_deterministic_default_and_record(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    class Cfg:
        device = "cuda:1"

    assert default_deterministic(Cfg()) is False and default_deterministic(object()) is True
    assert main(["run", NUMPY_ONLY, "--preset", "quick", "--out", str(tmp_path), "--no-deterministic",
                 "--threads", "1"]) == 0
    res = json.loads(next(tmp_path.rglob("results.json")).read_text())
    assert res["execution"]["threads"] == 1 and res["execution"]["deterministic"] is False
    assert main(["run", NUMPY_ONLY, "--preset", "quick", "--out", str(tmp_path / "b")]) == 0
    res = json.loads(next((tmp_path / "b").rglob("results.json")).read_text())
    assert res["execution"] == {"threads": runner.available_cores(), "deterministic": True,
                                "cuda_visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES")}
    assert main(["run", NUMPY_ONLY, "--threads", "zero", "--out", str(tmp_path)]) == 2
    assert "--threads" in capsys.readouterr().err


def test_threads_auto_is_the_cores_available(monkeypatch: pytest.MonkeyPatch) -> None:
    from icml2026.cli import _threads

    monkeypatch.setattr(runner, "available_cores", lambda: 3)  # the suite itself pins auto to 1 (tests/conftest)
    assert _threads("auto") == 3 and _threads("2") == 2
    monkeypatch.undo()
    assert 1 <= runner.available_cores() <= (os.cpu_count() or 1)


def test_a_shipped_run_is_written_by_the_driver_not_the_worker(tmp_path: Path) -> None:
    (task,) = sweep.plan_tasks([NUMPY_ONLY], "quick", [3], [{}], tmp_path / "driver")
    res = sweep.run_task(task, ship=True)
    assert res["status"] == "ok" and not (tmp_path / "driver").exists()  # the worker wrote elsewhere
    assert {"results.json", "report.md"} <= set(res["files"])
    sweep.collect_shipped(task, res)
    assert "files" not in res
    written = json.loads((task.folder() / "results.json").read_text())
    assert written["seed"] == 3 and written["metrics"] == res["metrics"]


def test_shipped_files_cannot_leave_their_folder(tmp_path: Path) -> None:
    from icml2026.core.runner import write_run_folder

    with pytest.raises(ValueError, match="leave"):
        write_run_folder(tmp_path / "x" / "quick-seed0", {"../evil.txt": b"x"})
    assert not (tmp_path / "evil.txt").exists() and not (tmp_path / "x" / "quick-seed0").exists()


def test_sweep_refuses_gpus_without_ray(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    assert main(["sweep", NUMPY_ONLY, "--seeds", "0", "--executor", "local", "--gpus-per-run", "1",
                 "--out", str(tmp_path)]) == 2
    assert "--gpus-per-run" in capsys.readouterr().err
    assert main(["sweep", NUMPY_ONLY, "--seeds", "0", "--gpus-per-run", "-1", "--out", str(tmp_path)]) == 2


@pytest.mark.timeout(600)
def test_ray_reserves_a_gpu_per_run_and_ships_folders_back(tmp_path: Path) -> None:
    ray = pytest.importorskip("ray")
    # two fake GPUs: Ray hands each task one and sets CUDA_VISIBLE_DEVICES for it
    ray.init(num_cpus=2, num_gpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    try:
        tasks = sweep.plan_tasks([NUMPY_ONLY], "quick", [0, 1, 2], [{}], tmp_path / "out")
        results = sweep.execute(tasks, executor="ray", workers=2, gpus_per_run=1, cpus_per_run=1)
    finally:
        ray.shutdown()
    assert [r["status"] for r in results] == ["ok"] * 3
    for t in tasks:
        res = json.loads((t.folder() / "results.json").read_text())
        assert res["execution"]["cuda_visible_devices"] in ("0", "1")  # each run saw exactly one device


# ------------------------------------------------------------------------------------- run --jobs (make demo)
def test_runs_in_parallel_processes_equal_the_runs_made_in_turn(tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture) -> None:
    argv = ["run", NUMPY_ONLY, "--preset", "quick", "--seed", "0-2", "--threads", "1"]
    assert main([*argv, "--out", str(tmp_path / "serial")]) == 0
    assert main([*argv, "--jobs", "2", "--out", str(tmp_path / "parallel")]) == 0
    out = capsys.readouterr().out
    assert "3 runs, 2 at a time" in out and out.count(f"REPRODUCED {NUMPY_ONLY}") == 6
    assert "3 runs finished in" in out and "the slowest by CPU time" in out  # make demo's cost summary
    for seed in range(3):
        a, b = (json.loads((tmp_path / kind / NUMPY_ONLY / f"quick-seed{seed}" / "results.json").read_text())
                for kind in ("serial", "parallel"))
        assert a["metrics"] == b["metrics"] and a["verdict"] == b["verdict"]
        assert a["execution"] == b["execution"]


def test_parallel_runs_report_the_worst_status(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    # a config value that the experiment itself refuses fails every run with status 2 and one line each
    assert main(["run", NUMPY_ONLY, "--seed", "0-1", "--jobs", "2", "--threads", "1",
                 "--set", "d_model=1", "--out", str(tmp_path)]) in (2,)
    err = capsys.readouterr().err
    assert err.count("icml2026: error:") >= 1 and "Traceback" not in err


@pytest.mark.parametrize("jobs", ["0", "-1", "two", "1e9"])
def test_bad_jobs_are_refused_before_anything_runs(tmp_path: Path, jobs: str,
                                                   capsys: pytest.CaptureFixture) -> None:
    assert main(["run", NUMPY_ONLY, "--jobs", jobs, "--out", str(tmp_path / "o")]) == 2
    assert "--jobs" in capsys.readouterr().err
    assert not (tmp_path / "o" / NUMPY_ONLY).exists()


def test_parallel_runs_start_round_robin_over_papers() -> None:
    """`run --jobs N` starts the first run of every paper before any paper's second, each paper's runs in their
    order: one paper's runs (which may share a cached encoder) rarely start side by side."""
    from types import SimpleNamespace

    from icml2026.cli import interleave_by_paper

    names = ["a.x", "a.y", "a.z", "b.x", "c.x", "c.y"]
    runs = [(SimpleNamespace(name=n, slug=n.split(".")[0]), None, {}, 0) for n in names]
    assert [r[0].name for r in interleave_by_paper(runs)] == ["a.x", "b.x", "c.x", "a.y", "c.y", "a.z"]
    assert interleave_by_paper([]) == []
