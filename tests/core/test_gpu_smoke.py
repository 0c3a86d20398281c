"""`make gpu-smoke` / `icml2026 gpu-smoke`: its CPU half runs here; without CUDA it refuses with one line (exit 3)."""

from __future__ import annotations

import io
import math
import subprocess
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest

from icml2026.cli import main
from icml2026.core.gpu_smoke import device_experiments, max_relative_difference

ROOT = Path(__file__).resolve().parents[2]
CHEAP = "dwc.sanity_fit"  # a torch experiment with a device field whose smoke preset takes a few seconds


def _cli(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(argv)
    return code, out.getvalue(), err.getvalue()


def test_the_cpu_half_writes_one_table(tmp_path: Path) -> None:
    page = tmp_path / "gpu-smoke.md"
    code, out, err = _cli(["gpu-smoke", CHEAP, "--device", "cpu", "--workers", "1", "--out", str(page)])
    assert code == 0, err
    text = page.read_text()
    row = next(line for line in text.splitlines() if line.startswith("| dwc.sanity\\_fit"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[1] == "smoke" and cells[4] == cells[5]  # the same verdict on both runs
    assert cells[6] == "0"  # same seed, same machine: identical metrics
    assert "CPU only" in text and "wrote" in out


def test_without_cuda_it_refuses_with_one_line(tmp_path: Path) -> None:
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    code, _, err = _cli(["gpu-smoke", "--out", str(tmp_path / "x.md")])
    assert code == 3 and len(err.strip().splitlines()) == 1 and "CUDA" in err
    assert not (tmp_path / "x.md").exists()
    res = subprocess.run(["make", "-s", "gpu-smoke", "GPU_PYTHON=" + __import__("sys").executable], cwd=ROOT,
                         capture_output=True, text=True, timeout=120, check=False)
    assert res.returncode != 0 and "no CUDA device here" in res.stdout + res.stderr


def test_bad_device_and_names_are_bad_input(tmp_path: Path) -> None:
    assert _cli(["gpu-smoke", "--device", "gpu", "--out", str(tmp_path / "x.md")])[0] == 2
    assert _cli(["gpu-smoke", "no_such.paper", "--device", "cpu", "--out", str(tmp_path / "x.md")])[0] == 2


def test_every_device_experiment_is_listed() -> None:
    exps, skipped = device_experiments()
    assert CHEAP in {e.name for e in exps} and not skipped
    assert all("device" in e.config_type.__dataclass_fields__ for e in exps)


def test_max_relative_difference() -> None:
    assert max_relative_difference({"a": 1.0, "b": 2.0}, {"a": 1.0, "b": 2.2}) == (pytest.approx(0.2 / 2.2), "b")
    assert max_relative_difference({"a": math.nan}, {"a": math.nan}) == (0.0, "a")
    assert max_relative_difference({"a": 1.0}, {"a": math.inf}) == (1.0, "a")
    assert max_relative_difference({"a": 0.0}, {"a": 0.0}) == (0.0, "a")
