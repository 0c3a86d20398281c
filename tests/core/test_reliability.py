"""Reliability: a report and a sweep that no run folder can stop, and a run folder that a crash cannot lose.

Each test is one of the crafted inputs an audit found to stop ``icml2026 report`` or ``icml2026 sweep``; each
must now give a complete result with the bad folder named.
"""

from __future__ import annotations

import json
import os
import socket
import time
from pathlib import Path

import pytest

from icml2026.cli import main
from icml2026.core import atomic, registry, runner, sweep
from icml2026.core.report import terminal_safe
from tests.core.conftest import QUICK


def _run(name: str, out: Path, seed: int = 0) -> runner.RunResult:
    return runner.run_experiment(registry.get_experiment(name), QUICK, preset="quick", seed=seed, out=out)


def _report(runs: Path, out: Path, capsys: pytest.CaptureFixture, *extra: str) -> tuple[int, str]:
    code = main(["report", "--runs", str(runs), "--out", str(out), *extra])
    return code, capsys.readouterr().err


def _craft(runs: Path, seed: int, text: str) -> Path:
    """A run folder of toy.passes whose results.json is ``text``."""
    folder = runs / "toy.passes" / f"quick-seed{seed}"
    folder.mkdir(parents=True)
    (folder / "results.json").write_text(text)
    return folder


def _good_json(res: runner.RunResult, **changes: object) -> str:
    data = json.loads((res.path / "results.json").read_text())
    data.update(changes)
    return json.dumps(data)


# --------------------------------------------------------------------------------------------------- report
def test_a_run_folder_named_like_the_index_never_replaces_it(toy_registry: dict, tmp_path: Path,
                                                             capsys: pytest.CaptureFixture) -> None:
    runs, out = tmp_path / "runs", tmp_path / "reports"
    _run("toy.passes", runs)
    (runs / "index.md" / "quick-seed0").mkdir(parents=True)
    for _ in range(2):  # a second report still works
        code, err = _report(runs, out, capsys)
        assert code == 0 and (out / "index.md").is_file()
        assert "report's own files" in err


@pytest.mark.parametrize(("what", "payload"), [
    ("a 400-digit integer", lambda good: good.replace('"n_steps"', '"big": ' + "9" * 400 + ', "n_steps"', 1)
     if '"n_steps"' in good else good[:-1] + ', "metrics": {"big": ' + "9" * 400 + "}}"),
    ("200,000-deep nesting", lambda good: good[:-1] + ', "deep": ' + "[" * 200_000 + "]" * 200_000 + "}"),
    ("versions that are a list", lambda good: json.dumps({**json.loads(good), "versions": ["x"]})),
    ("a figure named twice", lambda good: json.dumps({**json.loads(good), "figures": ["toy.png", "toy.png"]})),
])
def test_one_crafted_results_json_is_skipped_and_the_report_completes(
        toy_registry: dict, tmp_path: Path, capsys: pytest.CaptureFixture, what: str, payload) -> None:
    runs, out = tmp_path / "runs", tmp_path / "reports"
    good = _run("toy.passes", runs, seed=0)
    _craft(runs, 1, payload(_good_json(good, seed=1)))
    code, err = _report(runs, out, capsys)
    assert code == 0, (what, err)
    index = (out / "index.md").read_text()
    assert "quick-seed1" in index.split("## Skipped", 1)[1], what  # named among the skipped
    assert (out / "toy.passes" / "quick-seed0" / "results.json").is_file()  # the good run is reported
    assert "Traceback" not in err


@pytest.mark.parametrize("payload", ["[" * 200_000 + "]" * 200_000, '{"groups": [{"n_ok": ' + "9" * 400 + "}]}",
                                     '{"groups": "x"}', "[1]"])
def test_a_crafted_sweep_file_is_skipped_before_anything_is_written(
        toy_registry: dict, tmp_path: Path, capsys: pytest.CaptureFixture, payload: str) -> None:
    runs, out = tmp_path / "runs", tmp_path / "reports"
    _run("toy.passes", runs)
    (runs / "sweeps").mkdir()
    (runs / "sweeps" / "evil.json").write_text(payload)
    code, err = _report(runs, out, capsys)
    assert code == 0 and "evil.json" in err and "sweep file is malformed" in err


def test_a_hard_linked_figure_or_results_file_is_not_read(toy_registry: dict, tmp_path: Path,
                                                          capsys: pytest.CaptureFixture) -> None:
    runs, out = tmp_path / "runs", tmp_path / "reports"
    res = _run("toy.passes", runs)
    outside = tmp_path / "secret.png"
    (res.path / "toy.png").rename(outside)
    os.link(outside, res.path / "toy.png")  # the figure is another name of a file outside the runs folder
    code, err = _report(runs, out, capsys)
    assert code == 0 and not (out / "toy.passes" / "quick-seed0" / "toy.png").exists()
    assert "hard links" in err or "links are not followed" in err
    res2 = _run("toy.passes", runs, seed=1)
    secret = tmp_path / "secret.json"
    (res2.path / "results.json").rename(secret)
    os.link(secret, res2.path / "results.json")
    code, err = _report(runs, out, capsys)
    assert code == 0 and not (out / "toy.passes" / "quick-seed1").exists() and "quick-seed1" in err


def test_control_characters_in_names_are_escaped_on_the_terminal(toy_registry: dict, tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture) -> None:
    runs, out = tmp_path / "runs", tmp_path / "reports"
    _run("toy.passes", runs)
    (runs / "toy.passes" / "evil\x1b[31mred").mkdir()
    code, err = _report(runs, out, capsys)
    assert code == 0 and "\x1b" not in err and "\\x1b[31mred" in err
    assert "\x1b" not in (out / "index.md").read_text()
    assert terminal_safe("a\nb\x07") == "a\\nb\\x07"


def test_a_site_that_cannot_be_written_leaves_the_old_report_whole(toy_registry: dict, tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture) -> None:
    runs, out = tmp_path / "runs", tmp_path / "reports"
    _run("toy.passes", runs)
    assert _report(runs, out, capsys)[0] == 0
    before = (out / "index.md").read_text()
    _run("toy.passes", runs, seed=1)  # a new run the next report would add
    (out / "html").write_text("a file where the site goes")  # the site cannot be written there
    code, err = _report(runs, out, capsys, "--html")
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert (out / "index.md").read_text() == before and not (out / "toy.passes" / "quick-seed1").exists()
    assert not [p for p in out.iterdir() if ".old-" in p.name or ".tmp-" in p.name]


def test_a_file_where_an_experiment_folder_goes_is_left_alone(toy_registry: dict, tmp_path: Path,
                                                              capsys: pytest.CaptureFixture) -> None:
    runs, out = tmp_path / "runs", tmp_path / "reports"
    _run("toy.passes", runs)
    _run("toy.fails", runs)
    out.mkdir()
    (out / "toy.passes").write_text("the user's own file")
    code, err = _report(runs, out, capsys)
    assert code == 0 and (out / "toy.passes").read_text() == "the user's own file"
    assert (out / "toy.fails" / "quick-seed0" / "results.json").is_file() and "is a file" in err


# --------------------------------------------------------------------------------------------- run folders
def test_a_crash_between_the_two_renames_keeps_the_old_run(toy_registry: dict, tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    first = _run("toy.passes", tmp_path)
    old_metrics = json.loads((first.path / "results.json").read_text())["metrics"]
    # the fallback of systems without an atomic exchange, killed after moving the old run aside
    monkeypatch.setattr(atomic, "exchange_paths", lambda a, b: False)
    real_rename = os.rename
    calls = []

    def dying_rename(src, dst):  # noqa: ANN001 - os.rename's own signature
        calls.append((src, dst))
        if len(calls) == 2:
            raise KeyboardInterrupt  # the process dies between the two renames
        real_rename(src, dst)

    monkeypatch.setattr(os, "rename", dying_rename)
    with pytest.raises(KeyboardInterrupt):
        _run("toy.passes", tmp_path)
    monkeypatch.setattr(os, "rename", real_rename)
    # the except path puts the old run back at once; a hard kill would leave it aside, and the next writer
    # (or the report's reader) finds it restored
    assert json.loads((first.path / "results.json").read_text())["metrics"] == old_metrics


def test_an_interrupted_swap_is_restored_by_the_next_writer(toy_registry: dict, tmp_path: Path) -> None:
    first = _run("toy.passes", tmp_path)
    aside = first.path.with_name(f".{first.path.name}.old-{2**22 + 99}-1")  # a dead process's
    os.rename(first.path, aside)
    assert atomic.restore_interrupted(first.path) and (first.path / "results.json").is_file()
    assert not aside.exists()
    assert not atomic.restore_interrupted(first.path)  # nothing to do twice


def test_the_atomic_exchange_swaps_two_folders(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    (a / "f").write_text("new")
    (b / "f").write_text("old")
    if not atomic.exchange_paths(a, b):
        pytest.skip("this system has no atomic exchange of paths (the fallback is tested above)")
    assert (b / "f").read_text() == "new" and (a / "f").read_text() == "old"


def test_a_planted_lock_link_creates_nothing_outside(toy_registry: dict, tmp_path: Path,
                                                     capsys: pytest.CaptureFixture) -> None:
    out = tmp_path / "runs"
    (out / "toy.passes").mkdir(parents=True)
    target = tmp_path / "outside" / "created"
    (tmp_path / "outside").mkdir()
    os.symlink(target, out / "toy.passes" / ".quick-seed0.lock")
    code = main(["run", "toy.passes", "--out", str(out)])
    assert code in (2, 3) and not target.exists()
    assert "symbolic link" in capsys.readouterr().err


# --------------------------------------------------------------------------------------------------- sweep
NUMPY_ONLY = "attention_queries.exact_recovery"  # a real experiment (spawned workers see the real registry)


def test_a_sweep_over_a_bad_folder_runs_the_rest_and_names_it(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    out = tmp_path / "runs"
    assert main(["run", NUMPY_ONLY, "--seed", "0", "--threads", "1", "--out", str(out)]) == 0
    good = out / NUMPY_ONLY / "quick-seed0"
    bad = good.with_name("quick-seed1")
    bad.mkdir()
    data = json.loads((good / "results.json").read_text())
    (bad / "results.json").write_text(json.dumps({**data, "seed": 1, "metrics": {"x": "a string"}}))
    code = main(["sweep", NUMPY_ONLY, "--seeds", "0-2", "--executor", "local", "--workers", "1",
                 "--out", str(out)])
    err = capsys.readouterr().err
    assert code == 0, err
    assert "rerunning" in err and "quick-seed1" in err and "metric 'x' is not a number" in err
    assert json.loads((bad / "results.json").read_text())["seed"] == 1  # made again, whole
    assert (out / NUMPY_ONLY / "quick-seed2" / "results.json").is_file()


def test_a_linked_run_folder_never_counts_as_done(toy_registry: dict, tmp_path: Path) -> None:
    out, elsewhere = tmp_path / "runs", tmp_path / "elsewhere"
    _run("toy.passes", elsewhere)
    (out / "toy.passes").mkdir(parents=True)
    os.symlink(elsewhere / "toy.passes" / "quick-seed0", out / "toy.passes" / "quick-seed0")
    (task,) = sweep.plan_tasks(["toy.passes"], "quick", [0], [{}], out)
    assert not sweep.is_done(task) and "symbolic links" in str(sweep.why_not_done(task))
    (task_there,) = sweep.plan_tasks(["toy.passes"], "quick", [0], [{}], elsewhere)
    assert sweep.is_done(task_there)


def test_a_linked_sweeps_folder_is_not_written_through(toy_registry: dict, tmp_path: Path,
                                                       capsys: pytest.CaptureFixture) -> None:
    out, elsewhere = tmp_path / "runs", tmp_path / "elsewhere"
    out.mkdir()
    elsewhere.mkdir()
    os.symlink(elsewhere, out / "sweeps")
    code = main(["sweep", "toy.passes", "--seeds", "0", "--executor", "local", "--workers", "1", "--out", str(out)])
    assert code in (2, 3) and not any(elsewhere.iterdir())
    assert "not a plain folder" in capsys.readouterr().err


def test_an_unreachable_ray_address_fails_fast_in_one_line(toy_registry: dict, tmp_path: Path,
                                                           capsys: pytest.CaptureFixture) -> None:
    pytest.importorskip("ray")
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    t0 = time.monotonic()
    code = main(["sweep", "toy.passes", "--seeds", "0", "--address", f"127.0.0.1:{port}", "--out", str(tmp_path)])
    assert code == 2 and time.monotonic() - t0 < sweep.CONNECT_TIMEOUT_S + 5
    err = capsys.readouterr().err
    assert "--address" in err and len(err.strip().splitlines()) == 1
    with pytest.raises(Exception, match="host:port"):
        sweep.check_address("nonsense")


def test_a_huge_plan_asks_for_yes_and_says_its_size_first(toy_registry: dict, tmp_path: Path,
                                                          capsys: pytest.CaptureFixture) -> None:
    t0 = time.monotonic()
    code = main(["sweep", "toy.passes", "--seeds", "0-9999", "--grid", "n=" + ",".join(map(str, range(1, 11))),
                 "--grid", "scale=" + ",".join(str(0.1 * i) for i in range(1, 55)), "--executor", "local",
                 "--out", str(tmp_path)])
    captured = capsys.readouterr()
    assert code == 2 and time.monotonic() - t0 < 5
    assert "5400000 runs planned" in captured.out and "--yes" in captured.err
    assert not (tmp_path / "toy.passes").exists()


def test_pool_workers_die_with_their_parent(tmp_path: Path) -> None:
    """A worker that asked to die with its parent ends when the parent is killed with SIGKILL."""
    import subprocess
    import sys

    code = ("import os, subprocess, sys, time\n"
            "child = subprocess.Popen([sys.executable, '-c', 'from icml2026.core.sweep import die_with_parent; "
            "die_with_parent(); import time; time.sleep(60)'])\n"
            "print(child.pid, flush=True)\n"
            "time.sleep(60)\n")
    root = Path(__file__).resolve().parents[2]
    parent = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True, cwd=root,
                              env={**os.environ, "PYTHONPATH": str(root / "src")})
    assert parent.stdout is not None
    child = int(parent.stdout.readline())
    time.sleep(2.0)  # the child has imported and asked to die with its parent
    parent.kill()
    parent.wait()
    for _ in range(100):
        if not _running(child):
            break
        time.sleep(0.1)
    else:
        os.kill(child, 9)
        pytest.fail("the worker outlived its killed parent")


def _descendants(pid: int) -> list[int]:
    """Every process below ``pid`` (read from /proc)."""
    children: dict[int, list[int]] = {}
    for p in Path("/proc").iterdir():
        if p.name.isdigit():
            try:
                ppid = int((p / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(p.name))
    found, stack = [], [pid]
    while stack:
        for c in children.get(stack.pop(), []):
            found.append(c)
            stack.append(c)
    return found


def _running(pid: int) -> bool:
    """Alive and not a zombie (a zombie is dead, waiting for whoever adopted it to reap it)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X")


def _cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


RAY_DRIVER = """
import sys
from icml2026.core import sweep
task = sweep.SweepTask("attention_queries.exact_recovery", "quick", 0, (("d_max", 512),), sys.argv[1])
for _ in sweep._ray([task], 1, None):
    pass
"""


@pytest.mark.slow
@pytest.mark.timeout(600)
@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads the process tree from /proc (Linux)")
def test_ray_workers_die_with_a_killed_sweep(tmp_path: Path) -> None:
    """kill -9 of a Ray sweep's driver mid-run: every process it started (GCS, raylet, the worker computing the
    run) stops within a minute; none keeps computing."""
    pytest.importorskip("ray")
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[2]
    driver = subprocess.Popen([sys.executable, "-c", RAY_DRIVER, str(tmp_path / "out")], cwd=root,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                              env={**os.environ, "PYTHONPATH": str(root / "src")})
    deadline = time.monotonic() + 300
    workers: list[int] = []
    while not workers:  # the run is being computed by a Ray worker
        assert time.monotonic() < deadline and driver.poll() is None, "the Ray sweep never started its run"
        time.sleep(0.5)
        tree = _descendants(driver.pid)
        workers = [p for p in tree if _cmdline(p).startswith(b"ray::run_task")]
    tree = _descendants(driver.pid)
    computing = [p for p in tree if not _cmdline(p).startswith(b"ray::") or p in workers]
    driver.kill()
    driver.wait()
    killed = time.monotonic()
    # the run's worker, the raylet and the GCS share the driver's fate at once; Ray's idle per-node agents
    # (ray::DashboardAgent, ray::RuntimeEnvAgent) notice their raylet's death on their own and may first try
    # to report it to the dead GCS, which Ray times out: they get longer
    for limit, group in ((60.0, computing), (300.0, tree)):
        while True:
            left = [p for p in group if _running(p)]
            if not left or time.monotonic() > killed + limit:
                break
            time.sleep(0.2)
        if left:
            names = [_cmdline(p)[:60].replace(b"\0", b" ").decode(errors="replace").strip() for p in left]
            for p in left:
                try:
                    os.kill(p, 9)
                except OSError:
                    pass
            pytest.fail(f"{len(left)} of the {len(group)} processes of the killed Ray sweep outlived it by "
                        f"{limit:.0f} s: {names}")
