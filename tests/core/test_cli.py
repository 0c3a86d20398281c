import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from icml2026.cli import main, parse_overrides
from tests.core.conftest import ToyConfig


def test_list(toy_registry: dict, capsys: pytest.CaptureFixture) -> None:
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    assert "toy.passes" in out and "toy claim that passes" in out and "quick, full" in out


def test_run_exit_statuses(toy_registry: dict, tmp_path: Path) -> None:
    assert main(["run", "toy.passes", "--out", str(tmp_path)]) == 0
    assert main(["run", "toy.fails", "--out", str(tmp_path)]) == 1
    assert main(["run", "toy", "--out", str(tmp_path)]) == 1  # a paper with a failing experiment
    assert main(["run", "--all", "--preset", "full", "--seed", "3", "--out", str(tmp_path)]) == 1
    assert (tmp_path / "other.passes" / "full-seed3" / "results.json").exists()


def test_set_overrides_are_typed(toy_registry: dict, tmp_path: Path) -> None:
    assert main(["run", "toy.passes", "--set", "n=7", "--set", "scale=0.5", "--set", "flag=true",
                 "--set", "sizes=3,4", "--set", "threshold=none", "--out", str(tmp_path)]) == 0
    (folder,) = (tmp_path / "toy.passes").glob("quick-seed0-*")  # overrides get their own hashed folder
    assert len(folder.name) == len("quick-seed0-") + 8
    cfg = json.loads((folder / "results.json").read_text())["config"]
    assert cfg["n"] == 7 and cfg["scale"] == 0.5 and cfg["flag"] is True and cfg["sizes"] == [3, 4]
    assert cfg["threshold"] is None


def test_parse_overrides_types() -> None:
    assert parse_overrides(ToyConfig, ["threshold=0.25", "label=xyz"]) == {"threshold": 0.25, "label": "xyz"}


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["run", "toy.pases"], "did you mean toy.passes"),
        (["run", "nothing_like_it"], "icml2026 list"),
        (["run", "toy.passes", "--set", "m=3"], "valid keys: n, scale, label, flag, threshold, sizes"),
        (["run", "toy.passes", "--set", "n=three"], "expected an integer"),
        (["run", "toy.passes", "--set", "scale=big"], "expected a number"),
        (["run", "toy.passes", "--set", "flag=maybe"], "expected a boolean"),
        (["run", "toy.passes", "--set", "n"], "expected KEY=VALUE"),
        (["run", "toy.passes", "--set", "n=0"], "n must be >= 1"),
        (["run", "toy.passes", "--preset", "huge"], "no preset 'huge'"),
        (["run"], "name at least one experiment"),
        (["run", "toy.passes", "--all"], "not both"),
        (["run", "toy.passes", "--seed", "-1"], "--seed must be in 0..4294967295"),
        (["run", "toy.passes", "--seed", "abc"], "--seed must be an integer"),
        (["run", "toy.passes", "--seed", str(2**64)], "--seed must be in 0..4294967295"),
        (["run", "toy.passes", "--threads", "100000"], "--threads must be in 1.."),
        (["run", "toy.passes", "--threads", "0"], "--threads must be in 1.."),
    ],
)
def test_bad_input_is_one_line_and_exit_2(
    toy_registry: dict, tmp_path: Path, capsys: pytest.CaptureFixture, argv: list[str], message: str
) -> None:
    assert main([*argv, "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert message in err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert not any(tmp_path.rglob("*"))  # nothing written


def test_unwritable_out_is_exit_2(toy_registry: dict, tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")  # a file where a folder is needed: not writable as a folder, even as root
    assert main(["run", "toy.passes", "--out", str(blocker / "sub")]) == 2
    assert "not writable" in capsys.readouterr().err


def test_argparse_errors_are_exit_2(capsys: pytest.CaptureFixture) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["frobnicate"])
    assert exc.value.code == 2


def test_report_without_runs_is_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    assert main(["report", "--runs", str(tmp_path / "none"), "--out", str(tmp_path / "rep")]) == 2
    assert "run experiments first" in capsys.readouterr().err


SLOW_EXPERIMENT = """
import signal, sys, time
# A test runner started in the background (nohup, &) passes SIGINT on as ignored; restore Python's handler
# so that the test checks the CLI, not how the suite was launched.
signal.signal(signal.SIGINT, signal.default_int_handler)
from tests.core.conftest import PRESETS
from icml2026.core import registry, Outcome, Check
registry.discover = lambda slugs=None: None
def slow(cfg, rng):
    print("started", flush=True)
    time.sleep(30)
    return Outcome(checks=[Check("x", 1, "== 1")])
registry.experiment("toy.slow", claim="sleeps", presets=PRESETS)(slow)
from icml2026.cli import main
sys.exit(main(["run", "toy.slow", "--out", sys.argv[1]]))
"""


def test_interrupted_cli_run_leaves_no_folder(tmp_path: Path) -> None:
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": str(root) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    proc = subprocess.Popen([sys.executable, "-c", SLOW_EXPERIMENT, str(tmp_path)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env, cwd=root)
    assert proc.stdout is not None
    deadline = time.monotonic() + 60
    while "started" not in proc.stdout.readline():
        assert time.monotonic() < deadline and proc.poll() is None, proc.stderr.read() if proc.stderr else ""
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err
    assert "interrupted" in err
    assert not (tmp_path / "toy.slow").exists() or not any((tmp_path / "toy.slow").iterdir())
