"""``icml2026 report`` against crafted run folders: each test is one attack or defect found by an audit."""

from __future__ import annotations

import json
import os
import re
import threading
from pathlib import Path

import pytest

from icml2026.cli import main
from icml2026.core import registry, runner
from icml2026.core.report import collect_runs, md, write_index
from tests.core.conftest import QUICK


def _run(name: str, out: Path, seed: int = 0, overrides: dict | None = None) -> runner.RunResult:
    exp = registry.get_experiment(name)
    return runner.run_experiment(exp, QUICK, preset="quick", seed=seed, out=out, overrides=overrides)


def _edit(path: Path, **changes: object) -> None:
    data = json.loads(path.read_text())
    data.update(changes)
    path.write_text(json.dumps(data))


def _report(runs: Path, out: Path, capsys: pytest.CaptureFixture) -> tuple[int, str]:
    code = main(["report", "--runs", str(runs), "--out", str(out)])
    return code, capsys.readouterr().err


@pytest.mark.parametrize("evil", ["../victim", "/ABS/victim"])
def test_experiment_field_cannot_choose_the_destination(
    toy_registry: dict, tmp_path: Path, capsys: pytest.CaptureFixture, evil: str
) -> None:
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "precious.txt").write_text("keep me")
    runs = tmp_path / "runs"
    res = _run("toy.passes", runs)
    _edit(res.path / "results.json", experiment=evil.replace("/ABS", str(tmp_path)))
    code, err = _report(runs, tmp_path / "reports", capsys)
    assert code == 0
    assert (victim / "precious.txt").read_text() == "keep me"
    assert "does not match its folder" in err
    assert "Skipped" in (tmp_path / "reports" / "index.md").read_text()


@pytest.mark.parametrize("out", ["runs", "runs/inside", "."])
def test_out_inside_runs_is_refused(toy_registry: dict, tmp_path: Path, capsys: pytest.CaptureFixture,
                                    out: str) -> None:
    runs = tmp_path / "runs"
    res = _run("toy.passes", runs)
    code, err = _report(runs, tmp_path / out, capsys)
    assert code == 2 and len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert (res.path / "results.json").exists()


def test_stored_passed_is_never_trusted(toy_registry: dict, tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    runs = tmp_path / "runs"
    res = _run("toy.passes", runs)
    data = json.loads((res.path / "results.json").read_text())
    data["checks"][0].update(value="nan", passed=True)
    data["verdict"] = "passed"
    (res.path / "results.json").write_text(json.dumps(data))
    code, err = _report(runs, tmp_path / "reports", capsys)
    text = (tmp_path / "reports" / "index.md").read_text()
    assert "**not reproduced**" in text and "**reproduced**" not in text.split("| toy |", 1)[1].split("\n")[0]
    assert "recomputed: False" in err
    copied = (tmp_path / "reports" / "toy.passes" / "quick-seed0" / "report.md").read_text()
    assert "NOT REPRODUCED" in copied


MALFORMED = [
    "{",  # truncated
    "[]",  # not an object
    json.dumps({"experiment": "toy.passes", "claim": "c", "preset": "quick", "seed": 0, "checks": "x",
                "metrics": {}, "config": {}, "timing": {"wall_s": 1}}),
    json.dumps({"experiment": "toy.passes", "claim": "c", "preset": "quick", "seed": 0,
                "checks": [{"name": "a", "value": "abc", "target": "< 1"}], "metrics": {}, "config": {},
                "timing": {"wall_s": 1}}),
    json.dumps({"experiment": "toy.passes", "claim": "c", "preset": "quick", "seed": 0, "checks": [],
                "metrics": [], "config": {}, "timing": {"wall_s": 1}}),
    json.dumps({"experiment": "toy.passes", "claim": "c", "preset": "quick", "seed": 0, "checks": [],
                "metrics": {}, "config": {}}),
    json.dumps({"experiment": "toy.passes", "claim": "c", "preset": "quick", "seed": 0,
                "checks": [{"name": "a", "value": 1, "target": "roughly"}], "metrics": {}, "config": {},
                "timing": {"wall_s": 1}}),
    json.dumps({"experiment": "toy.passes", "claim": "c", "preset": "full", "seed": 0, "checks": [],
                "metrics": {}, "config": {}, "timing": {"wall_s": 1}}),
    json.dumps({"experiment": "toy.passes", "claim": "c", "preset": "quick", "seed": 0, "checks": [],
                "metrics": {"m": {"x": 1}}, "config": {}, "timing": {"wall_s": 1}}),
    json.dumps({"experiment": "toy.passes", "claim": "c", "preset": "quick", "seed": 0, "checks": [],
                "metrics": {}, "config": {}, "timing": {"wall_s": 1}, "tables": {"t": [1, 2]}}),
]


@pytest.mark.parametrize("text", MALFORMED)
def test_malformed_results_are_named_and_skipped(toy_registry: dict, tmp_path: Path,
                                                 capsys: pytest.CaptureFixture, text: str) -> None:
    runs = tmp_path / "runs"
    good = _run("toy.fails", runs)
    bad = runs / "toy.passes" / "quick-seed0"
    bad.mkdir(parents=True)
    (bad / "results.json").write_text(text)
    code, err = _report(runs, tmp_path / "reports", capsys)
    assert code == 0 and "Traceback" not in err
    assert f"skipped {bad}" in err
    index = (tmp_path / "reports" / "index.md").read_text()
    assert "toy.passes/quick-seed0" in index.split("## Skipped", 1)[1]
    assert good.path.name in index


def test_symlinks_in_a_run_folder_are_not_followed(toy_registry: dict, tmp_path: Path,
                                                   capsys: pytest.CaptureFixture) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("TOP SECRET")
    runs = tmp_path / "runs"
    res = _run("toy.passes", runs)
    (res.path / "toy.png").unlink()
    (res.path / "toy.png").symlink_to(secret)
    linked_run = runs / "toy.fails" / "quick-seed0"
    linked_run.parent.mkdir()
    linked_run.symlink_to(res.path)
    code, err = _report(runs, tmp_path / "reports", capsys)
    assert code == 0
    for f in (tmp_path / "reports").rglob("*"):
        assert not f.is_symlink()
        if f.is_file():
            assert b"TOP SECRET" not in f.read_bytes()
    assert "not a regular file" in err and "symbolic links are not followed" in err


def test_markdown_and_html_are_escaped(toy_registry: dict, tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    res = _run("toy.passes", runs)
    evil = "<script>alert(1)</script> | [click](http://x.invalid) ![img](http://x.invalid/a.png) **bold**"
    data = json.loads((res.path / "results.json").read_text())
    data["claim"] = evil + "\nnew row"
    data["checks"][0]["name"] = "<b>n</b>|x"
    data["checks"][0]["paper"] = "[p](javascript:alert(1))"
    (res.path / "results.json").write_text(json.dumps(data))
    write_index(runs, tmp_path / "reports", log=open(os.devnull, "w"))  # noqa: SIM115
    for f in [tmp_path / "reports" / "index.md", tmp_path / "reports" / "toy.passes" / "quick-seed0" / "report.md"]:
        text = f.read_text()
        assert "<script>" not in text and "<b>" not in text
        assert not re.search(r"(?<!\\)\]\((http|javascript)", text)  # no live link: every ] is escaped
        assert "**bold**" not in text and "\\[click\\]" in text
        assert "\nnew row" not in text
    assert md("a|b") == "a\\|b" and md("<x>") == "&lt;x&gt;"


def test_planted_symlink_at_the_temporary_index_name_is_harmless(toy_registry: dict, tmp_path: Path) -> None:
    runs, reports = tmp_path / "runs", tmp_path / "reports"
    _run("toy.passes", runs)
    reports.mkdir()
    target = tmp_path / "target.txt"
    target.write_text("untouched")
    (reports / ".index.md.tmp").symlink_to(target)
    write_index(runs, reports, log=open(os.devnull, "w"))  # noqa: SIM115
    assert target.read_text() == "untouched"
    assert "toy" in (reports / "index.md").read_text()


def test_overrides_get_their_own_folder_and_show_in_the_report(toy_registry: dict, tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    plain = _run("toy.passes", runs)
    over = _run("toy.passes", runs, overrides={"n": 7})
    assert plain.path != over.path and plain.path.exists()
    assert over.path.name == f"quick-seed0-{runner.overrides_hash({'n': 7})}"
    assert over.results["overrides"] == {"n": 7}
    write_index(runs, tmp_path / "reports", log=open(os.devnull, "w"))  # noqa: SIM115
    index = (tmp_path / "reports" / "index.md").read_text()
    assert f"overrides {runner.overrides_hash({'n': 7})}" in index
    assert "n=7" in (tmp_path / "reports" / "toy.passes" / over.path.name / "report.md").read_text()


def test_seeds_are_aggregated_and_a_seed_that_fails_is_visible(toy_registry: dict, tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    for seed in (0, 1, 2):
        _run("toy.passes", runs, seed=seed)
    res = runs / "toy.passes" / "quick-seed1" / "results.json"
    data = json.loads(res.read_text())
    data["checks"][0]["value"] = 0  # "n >= 1" now fails on seed 1 only
    res.write_text(json.dumps(data))
    write_index(runs, tmp_path / "reports", log=open(os.devnull, "w"))  # noqa: SIM115
    index = (tmp_path / "reports" / "index.md").read_text()
    row = next(line for line in index.splitlines() if line.startswith("| toy |"))
    assert "0, 1, 2" in row and "2/3 seeds" in row and "(2/3 reproduced, 1/3 not reproduced)" in row and "⚠️" in row
    agg = (tmp_path / "reports" / "toy.passes" / "aggregate-quick.md").read_text()
    assert "| n | claim | &gt;= 1 |" in agg and "| 2/3 | 1 |" in agg  # check n: passed 2/3, failed on seed 1
    assert "mean" in agg and "sd" in agg


def test_stale_temporaries_of_a_killed_run_are_removed(toy_registry: dict, tmp_path: Path) -> None:
    exp_dir = tmp_path / "toy.passes"
    exp_dir.mkdir()
    dead = 2**22 + 12345  # above the default pid_max of 4194304 on Linux: no such process
    stale = [exp_dir / f".quick-seed0.tmp-{dead}-abc", exp_dir / f".quick-seed0.old-{dead}-1"]
    live = exp_dir / f".quick-seed0.tmp-{os.getpid()}-xyz"  # a writer that still runs keeps its folder
    for d in [*stale, live]:
        d.mkdir()
    _run("toy.passes", tmp_path)
    assert not any(d.exists() for d in stale) and live.exists()
    records, skipped = collect_runs(tmp_path)
    assert len(records) == 1 and any("temporary" in s.reason for s in skipped)


def test_run_folders_are_readable_by_the_group(toy_registry: dict, tmp_path: Path) -> None:
    old = os.umask(0o022)
    try:
        res = _run("toy.passes", tmp_path)
    finally:
        os.umask(old)
    assert res.path.stat().st_mode & 0o777 == 0o755


def test_two_writers_of_one_folder_do_not_corrupt_it(toy_registry: dict, tmp_path: Path) -> None:
    errors: list[BaseException] = []

    def write() -> None:
        try:
            for _ in range(5):
                _run("toy.passes", tmp_path)
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)

    threads = [threading.Thread(target=write) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    folder = tmp_path / "toy.passes" / "quick-seed0"
    assert json.loads((folder / "results.json").read_text())["experiment"] == "toy.passes"
    assert sorted(p.name for p in (tmp_path / "toy.passes").iterdir() if ".tmp-" in p.name or ".old-" in p.name) == []


def test_a_papers_cache_folder_is_neither_a_run_nor_skipped(toy_registry: dict, tmp_path: Path) -> None:
    """A paper's data cache lives at runs/<slug>.cache (deepsight's episodes). Would fail if the report listed
    its files as skipped run folders (they were, in the index's "Skipped" section) or read them as runs."""
    _run("toy.passes", tmp_path)
    cache = tmp_path / "toy.cache"
    cache.mkdir()
    (cache / "episodes-0123.npz").write_bytes(b"\x00" * 8)
    records, skipped = collect_runs(tmp_path)
    assert len(records) == 1 and skipped == []


def test_a_figure_that_is_not_a_png_is_skipped_and_named(toy_registry: dict, tmp_path: Path,
                                                         capsys: pytest.CaptureFixture) -> None:
    runs = tmp_path / "runs"
    res = _run("toy.passes", runs)
    (res.path / "toy.png").write_text("<svg>not a png</svg>")
    code, err = _report(runs, tmp_path / "reports", capsys)
    assert code == 0 and "figure is not a readable PNG image" in err
    assert not (tmp_path / "reports" / "toy.passes" / "quick-seed0" / "toy.png").exists()
    assert "toy.png" not in (tmp_path / "reports" / "toy.passes" / "quick-seed0" / "report.md").read_text()
