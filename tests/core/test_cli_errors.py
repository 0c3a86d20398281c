"""Exit statuses 0/1/2/3, one line on stderr, no traceback without --debug; discovery without heavy imports."""

from __future__ import annotations

import errno
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from icml2026.cli import main
from icml2026.core import registry
from icml2026.core.errors import MissingDependency, require_tool
from tests.core.conftest import PRESETS, toy_pass

ROOT = Path(__file__).resolve().parents[2]


def _one_line(err: str) -> str:
    lines = [ln for ln in err.strip().splitlines() if ln.startswith("icml2026")]
    assert "Traceback" not in err, err
    assert len(lines) >= 1, err
    return err


def _register(name: str, func) -> None:  # type: ignore[no-untyped-def]
    registry.experiment(name, claim="c", presets=PRESETS)(func)


@pytest.mark.parametrize(
    ("exc", "code", "message"),
    [
        (ValueError("deep inside numpy"), 3, "internal error: ValueError: deep inside numpy"),
        (RuntimeError("boom"), 3, "internal error: RuntimeError: boom"),
        (MemoryError(), 3, "out of memory"),
        (OSError(errno.ENOSPC, "No space left on device"), 3, "no space left"),
        (MissingDependency("the system tool 'iverilog'", "apt-get install iverilog"), 3, "apt-get install iverilog"),
        (ModuleNotFoundError("No module named 'gymnasium'", name="gymnasium"), 3, "pip install 'icml2026[toy]'"),
    ],
)
def test_errors_inside_an_experiment_are_one_line_with_their_status(
    toy_registry: dict, tmp_path: Path, capsys: pytest.CaptureFixture, exc: BaseException, code: int, message: str
) -> None:
    def broken(cfg: object, rng: object) -> None:
        raise exc

    _register("toy.broken", broken)
    assert main(["run", "toy.broken", "--out", str(tmp_path)]) == code
    err = _one_line(capsys.readouterr().err)
    assert message in err and "toy.broken" in err
    assert not (tmp_path / "toy.broken" / "quick-seed0").exists()


def test_debug_prints_the_traceback(toy_registry: dict, tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    def broken(cfg: object, rng: object) -> None:
        raise ValueError("deep")

    _register("toy.broken", broken)
    assert main(["run", "toy.broken", "--debug", "--out", str(tmp_path)]) == 3
    assert "Traceback" in capsys.readouterr().err
    assert main(["--debug", "run", "toy.broken", "--out", str(tmp_path)]) == 3
    assert "Traceback" in capsys.readouterr().err


def test_later_experiments_still_run_after_one_fails(toy_registry: dict, tmp_path: Path,
                                                      capsys: pytest.CaptureFixture) -> None:
    def broken(cfg: object, rng: object) -> None:
        raise RuntimeError("boom")

    _register("toy.abroken", broken)  # sorts before toy.passes
    assert main(["run", "toy", "--out", str(tmp_path)]) == 3  # the worst status: internal error
    assert (tmp_path / "toy.passes" / "quick-seed0" / "results.json").exists()
    assert (tmp_path / "toy.fails" / "quick-seed0" / "results.json").exists()
    capsys.readouterr()


def test_several_seeds_in_one_run(toy_registry: dict, tmp_path: Path) -> None:
    assert main(["run", "toy.passes", "--seed", "0-2,5", "--out", str(tmp_path)]) == 0
    assert sorted(p.name for p in (tmp_path / "toy.passes").iterdir() if not p.name.startswith(".")) == [
        "quick-seed0", "quick-seed1", "quick-seed2", "quick-seed5"]


def test_version_and_show(toy_registry: dict, capsys: pytest.CaptureFixture) -> None:
    with pytest.raises(SystemExit) as ex:
        main(["--version"])
    assert ex.value.code == 0 and "icml2026 0." in capsys.readouterr().out
    assert main(["show", "toy.passes"]) == 0
    out = capsys.readouterr().out
    assert "toy claim that passes" in out and "scale" in out and "quick" in out and "full" in out
    assert main(["show", "toy.nope"]) == 2
    assert "did you mean" in capsys.readouterr().err


def test_show_prints_declared_ranges(capsys: pytest.CaptureFixture, monkeypatch: pytest.MonkeyPatch) -> None:
    from icml2026.core.config import config, param

    @config
    class RangedConfig:
        n: int = param(4, 1, 100, help="how many")
        rate: float = param(0.5, 0, 1, lo_open=True)

    table: dict = {}
    monkeypatch.setattr(registry, "_REGISTRY", table)
    registry.experiment("toy.ranged", claim="ranges", presets={"quick": RangedConfig(), "full": RangedConfig(n=8)})(
        toy_pass)
    assert main(["show", "toy.ranged"]) == 0
    out = capsys.readouterr().out
    assert "[1, 100]" in out and "(0, 1]" in out and "how many" in out and "8" in out
    assert main(["run", "toy.ranged", "--set", "rate=0"]) == 2
    err = capsys.readouterr().err
    assert "rate" in err and "(0, 1]" in err


def test_require_tool_names_the_package() -> None:
    with pytest.raises(MissingDependency, match="apt-get install no-such-pkg"):
        require_tool("no-such-tool-xyz", apt="no-such-pkg")


def _python(code: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code), *args], capture_output=True, text=True,
                          env=env, cwd=ROOT, timeout=120)


BLOCK = """
import sys, time
for m in {blocked!r}:
    sys.modules[m] = None  # as if the extra that provides it were not installed
t0 = time.process_time()
from icml2026.cli import main
code = main(sys.argv[1:])
print("SECONDS", time.process_time() - t0, file=sys.stderr)
print("HEAVY", [m for m in ("numpy", "torch", "matplotlib", "scipy") if sys.modules.get(m)], file=sys.stderr)
sys.exit(code)
"""


def test_list_imports_nothing_heavy_and_works_without_extras() -> None:
    res = _python(BLOCK.format(blocked=["torch", "transformers", "gymnasium", "numpy", "scipy"]), "list")
    assert res.returncode == 0, res.stderr
    assert "HEAVY []" in res.stderr
    seconds = float(res.stderr.split("SECONDS", 1)[1].split()[0])
    assert seconds < 1.0, seconds  # CPU time of imports and source parsing (wall time follows the load); ~0.25 s
    assert res.stdout.count("\n    claim:") >= 30  # every paper listed


def test_running_a_paper_whose_extra_is_missing_names_the_extra() -> None:
    from icml2026.core.catalog import catalog

    torch_papers = [n for n, i in catalog().items() if "import torch" in i.source.read_text()]
    if not torch_papers:
        pytest.skip("no paper imports torch at module level")
    name = torch_papers[0]
    res = _python(BLOCK.format(blocked=["torch"]), "run", name, "--out", "/nonexistent-never-written")
    assert res.returncode == 3, res.stderr
    slug = name.split(".", 1)[0]
    assert f"pip install 'icml2026[{slug}]'" in res.stderr and "Traceback" not in res.stderr
    typo = _python(BLOCK.format(blocked=["torch"]), "run", name + "x")
    assert typo.returncode == 2 and "did you mean" in typo.stderr and "Traceback" not in typo.stderr


def test_unreadable_experiments_source_is_a_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from icml2026 import papers
    from icml2026.core import catalog as cat

    pkg = tmp_path / "fakepaper_fstring"
    pkg.mkdir()
    (pkg / "experiments.py").write_text('x = 1\n@experiment("fakepaper_fstring.a", claim=f"{x}", presets={})\n'
                                        "def a(cfg, rng): ...\n")
    monkeypatch.setattr(papers, "__path__", [*papers.__path__, str(tmp_path)])
    with pytest.raises(cat.CatalogError, match="string literal"):
        cat.catalog()


def test_device_option(toy_registry: dict, tmp_path: Path, capsys: pytest.CaptureFixture,
                       monkeypatch: pytest.MonkeyPatch) -> None:
    from icml2026.core.config import config, param
    from icml2026.core.device import resolve_device
    from icml2026.core.outcome import Check, Outcome

    @config
    class DeviceConfig:
        n: int = param(2, 1, 10)
        device: str = "cpu"

    def on_device(cfg: DeviceConfig, rng: object) -> Outcome:
        import torch

        x = torch.ones(cfg.n, device=resolve_device(cfg.device))
        return Outcome(metrics={"shape": float(x.shape[0])}, checks=[Check("n", float(x.shape[0]), "== 2")])

    registry.experiment("toy.device", claim="c", presets={"quick": DeviceConfig(), "full": DeviceConfig()})(on_device)
    # the meta device carries shapes only: refused as a name, nothing written
    assert main(["run", "toy.device", "--device", "meta", "--out", str(tmp_path / "m")]) == 2
    assert "must be cpu, cuda" in capsys.readouterr().err and not (tmp_path / "m").exists()
    assert main(["run", "toy.passes", "--device", "cuda", "--out", str(tmp_path)]) == 2
    assert "has no device option" in capsys.readouterr().err
    assert main(["run", "toy.device", "--device", "gpu9", "--out", str(tmp_path)]) == 2
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert main(["run", "toy.device", "--device", "cuda", "--out", str(tmp_path)]) == 3
    assert "CUDA" in capsys.readouterr().err
