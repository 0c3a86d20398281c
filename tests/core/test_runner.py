import json
from pathlib import Path

import pytest

from icml2026.core import registry, runner
from tests.core.conftest import QUICK


def _run(name: str, out: Path, seed: int = 0):
    exp = registry.get_experiment(name)
    return runner.run_experiment(exp, QUICK, preset="quick", seed=seed, out=out)


def _visible(folder: Path) -> list[str]:
    """Entries other than the per-folder lock files (``.<run>.lock``, kept so that writers can lock)."""
    return sorted(p.name for p in folder.iterdir() if not p.name.endswith(".lock"))


def test_run_folder_contents(toy_registry: dict, tmp_path: Path) -> None:
    res = _run("toy.passes", tmp_path)
    assert res.path == tmp_path / "toy.passes" / "quick-seed0"
    assert sorted(p.name for p in res.path.iterdir()) == ["report.md", "results.json", "toy.png"]
    data = json.loads((res.path / "results.json").read_text())
    for key in ("experiment", "claim", "preset", "seed", "config", "metrics", "checks", "verdict", "timing",
                "versions", "git_commit"):
        assert key in data
    assert data["config"]["sizes"] == [1, 2] and data["verdict"] == "reproduced"
    assert data["timing"]["wall_s"] >= 0 and data["timing"]["cpu_s"] >= 0
    report = (res.path / "report.md").read_text()
    assert "toy claim that passes" in report and "REPRODUCED" in report and "![toy.png](toy.png)" in report
    assert _visible(tmp_path / "toy.passes") == ["quick-seed0"]  # no temporaries


def test_failed_check_gives_failed_verdict(toy_registry: dict, tmp_path: Path) -> None:
    res = _run("toy.fails", tmp_path)
    assert not res.passed and res.results["verdict"] == "not reproduced"
    assert "NOT REPRODUCED" in (res.path / "report.md").read_text()


def test_same_seed_same_metrics_new_seed_different(toy_registry: dict, tmp_path: Path) -> None:
    for name in ("toy.passes", "toy.torchy"):
        a = _run(name, tmp_path / "a").results["metrics"]
        b = _run(name, tmp_path / "b").results["metrics"]
        c = _run(name, tmp_path / "c", seed=1).results["metrics"]
        assert a == b
        assert a != c


def test_interrupted_write_leaves_nothing_and_keeps_previous_run(
    toy_registry: dict, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    good = _run("toy.passes", tmp_path)
    before = (good.path / "results.json").read_text()

    def boom(*args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(runner, "render_run_report", boom)  # interrupt after figures and JSON are written
    with pytest.raises(KeyboardInterrupt):
        _run("toy.passes", tmp_path, seed=0)
    assert (good.path / "results.json").read_text() == before  # the previous good run survives
    assert _visible(tmp_path / "toy.passes") == ["quick-seed0"]  # no temporary left
    with pytest.raises(KeyboardInterrupt):
        _run("toy.passes", tmp_path, seed=5)
    assert not (tmp_path / "toy.passes" / "quick-seed5").exists()


def test_experiment_error_writes_nothing(toy_registry: dict, tmp_path: Path) -> None:
    def broken(cfg: object, rng: object) -> None:
        raise RuntimeError("boom")

    registry.experiment("toy.broken", claim="c", presets=registry.get_experiment("toy.passes").presets)(broken)
    with pytest.raises(RuntimeError):
        _run("toy.broken", tmp_path)
    assert not (tmp_path / "toy.broken").exists() or not any((tmp_path / "toy.broken").iterdir())


def test_rerun_replaces_folder(toy_registry: dict, tmp_path: Path) -> None:
    first = _run("toy.passes", tmp_path)
    (first.path / "stale.txt").write_text("old")
    second = _run("toy.passes", tmp_path)
    assert not (second.path / "stale.txt").exists()


def test_to_jsonable_handles_non_finite_and_numpy() -> None:
    import numpy as np

    assert runner.to_jsonable({"a": np.float64("nan"), "b": np.inf, "c": np.int64(3), "d": np.arange(2)}) == {
        "a": "nan", "b": "inf", "c": 3, "d": [0, 1]}


def test_report_index_uses_newest_run(toy_registry: dict, tmp_path: Path) -> None:
    from icml2026.core.report import write_index

    runs = tmp_path / "runs"
    _run("toy.passes", runs)
    _run("toy.fails", runs)
    index = write_index(runs, tmp_path / "reports")
    text = index.read_text()
    assert "toy.passes/quick-seed0/report.md" in text and "toy claim that fails" in text
    assert "Of 2 rows: 1 reproduced on every seed, 1 not reproduced, 0 undecided." in text
    assert (tmp_path / "reports" / "toy.passes" / "quick-seed0" / "toy.png").exists()
