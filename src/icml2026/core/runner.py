"""Run one experiment: seeding, thread count, timing, and the atomic writing of its run folder.

The folder ``<out>/<experiment>/<preset>-seed<seed>[-<hash>]/`` (``<hash>``: 8 hex digits of the ``--set``
overrides, so an override never replaces the preset's own run) is first built under a hidden temporary name
in the same parent and renamed into place only when complete, so an interrupted or failed run leaves nothing
behind and never replaces the previous good run before the new one is whole. The rename happens under a lock
per run folder (two writers cannot corrupt it), and temporary folders left by a killed run are removed by the
next run of the same experiment. Folders get the permissions of a plain ``mkdir`` (the umask's), not 0700.
"""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import fcntl
import hashlib
import json
import math
import os
import platform
import re
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np

from .controls import attach_controls
from .outcome import REPRODUCED, Outcome
from .plotting import save_figure
from .registry import Experiment
from .report import render_run_report
from .rng import make_rng

__all__ = [
    "RunResult",
    "run_experiment",
    "seed_everything",
    "available_cores",
    "default_deterministic",
    "limit_blas_threads",
    "run_dir_for",
    "write_run_folder",
    "overrides_hash",
    "to_jsonable",
    "MAX_SEED",
    "RUN_FOLDER_RE",
]

#: Seeds are 0 .. 2**32 - 1: every generator we seed (numpy, torch, gymnasium) accepts that range.
MAX_SEED = 2**32 - 1

#: ``<preset>-seed<seed>`` or ``<preset>-seed<seed>-<8 hex digits of the overrides>``.
RUN_FOLDER_RE = re.compile(r"^(?P<preset>[A-Za-z0-9_]+)-seed(?P<seed>\d{1,10})(?:-(?P<hash>[0-9a-f]{8}))?$")

#: Threads for torch and BLAS: one, because a second thread on a shared 2-core machine was measured to slow
#: small models many times over (and one thread keeps reductions in one order).
DEFAULT_THREADS = 1


@dataclass(frozen=True)
class RunResult:
    """What the runner returns: the folder written and the parsed ``results.json``."""

    path: Path
    results: dict[str, Any]

    @property
    def verdict(self) -> str:
        """``reproduced``, ``not reproduced`` or ``undecided``."""
        return str(self.results["verdict"])

    @property
    def passed(self) -> bool:
        return self.verdict == REPRODUCED


def available_cores() -> int:
    """The CPU cores this process may run on (its affinity mask where the OS has one)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - macOS, Windows
        return max(1, os.cpu_count() or 1)


def default_deterministic(cfg: Any) -> bool:
    """Deterministic kernels by default on the CPU, not on CUDA (where they cost speed and some ops lack one)."""
    device = str(getattr(cfg, "device", "cpu") or "cpu")
    return not device.startswith("cuda")


def _seed_torch(seed: int, n_threads: int, deterministic: bool) -> None:
    import torch

    torch.manual_seed(seed)
    torch.use_deterministic_algorithms(deterministic, warn_only=True)
    torch.set_num_threads(n_threads)


class _SeedTorchOnImport:
    """A one-shot import hook: seeds torch right after its first import, so that an experiment that imports
    torch lazily gets the same seeded state as one whose paper imported it at import time, and a numpy-only
    experiment never pays for importing torch."""

    def __init__(self, seed: int, n_threads: int, deterministic: bool) -> None:
        self.args = (seed, n_threads, deterministic)

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> Any:
        if name != "torch":
            return None
        import importlib.machinery
        import importlib.util
        import sys

        sys.meta_path.remove(self)  # find the real spec without this hook, and never fire twice
        spec = importlib.util.find_spec(name)
        if spec is None or spec.loader is None:
            return spec
        real_exec = spec.loader.exec_module  # type: ignore[union-attr]
        args = self.args

        def exec_then_seed(module: Any) -> None:
            real_exec(module)
            _seed_torch(*args)

        spec.loader.exec_module = exec_then_seed  # type: ignore[method-assign, union-attr]
        return spec


def seed_everything(seed: int, n_threads: int = DEFAULT_THREADS, *, deterministic: bool = True) -> np.random.Generator:
    """The experiment's numpy generator for ``seed``; seeds torch too, without importing it.

    When torch is already imported (a paper that needs it imports it), it is seeded now: manual seed,
    deterministic algorithms when ``deterministic`` (warnings only where an op has no deterministic kernel) and
    ``n_threads`` threads. Otherwise a one-shot import hook seeds it the moment something imports it, so a
    numpy-only experiment never imports torch. This is the only place in the package that touches torch's
    global state.
    """
    import sys

    rng = make_rng(seed)
    limit_blas_threads(n_threads)
    for hook in [h for h in sys.meta_path if isinstance(h, _SeedTorchOnImport)]:
        sys.meta_path.remove(hook)  # an earlier run's hook that never fired
    if "torch" in sys.modules:
        _seed_torch(seed, n_threads, deterministic)
    else:
        sys.meta_path.insert(0, _SeedTorchOnImport(seed, n_threads, deterministic))
    return rng


def limit_blas_threads(n_threads: int) -> None:
    """Cap the BLAS/OpenMP thread pools of numpy and scipy at ``n_threads`` (process-wide).

    An oversubscribed multi-threaded BLAS is many times slower on small dense solves (a paper measured
    92 s instead of 6 s on a loaded 2-core machine) and may round differently from run to run.
    """
    from threadpoolctl import threadpool_limits

    threadpool_limits(limits=n_threads)


def overrides_hash(overrides: dict[str, Any] | None) -> str | None:
    """8 hex digits identifying a set of ``--set`` overrides (None when there are none)."""
    if not overrides:
        return None
    canon = json.dumps(to_jsonable(overrides), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canon.encode()).hexdigest()[:8]


def run_dir_for(out: Path, name: str, preset: str, seed: int, overrides: dict[str, Any] | None = None) -> Path:
    """``<out>/<name>/<preset>-seed<seed>``, with ``-<hash>`` of the overrides when there are any."""
    h = overrides_hash(overrides)
    return Path(out) / name / (f"{preset}-seed{seed}" + (f"-{h}" if h else ""))


def to_jsonable(x: Any) -> Any:
    """Plain JSON types; non-finite floats become the strings 'nan', 'inf', '-inf'."""
    if dataclasses.is_dataclass(x) and not isinstance(x, type):
        return to_jsonable(dataclasses.asdict(x))
    if isinstance(x, dict):
        return {str(k): to_jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [to_jsonable(v) for v in x]
    if isinstance(x, np.ndarray):
        return to_jsonable(x.tolist())
    if isinstance(x, (bool, np.bool_)):
        return bool(x)
    if isinstance(x, (int, np.integer)):
        return int(x)
    if isinstance(x, (float, np.floating)):
        f = float(x)
        if math.isnan(f):
            return "nan"
        if math.isinf(f):
            return "inf" if f > 0 else "-inf"
        return f
    if x is None or isinstance(x, str):
        return x
    return str(x)


def _versions() -> dict[str, str]:
    out = {"python": platform.python_version(), "platform": platform.platform()}
    for dist in ("icml2026", "numpy", "scipy", "torch", "matplotlib"):
        try:
            out[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            continue
    return out


def _git_commit() -> str | None:
    here = Path(__file__).resolve().parent
    try:
        res = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=here, capture_output=True, text=True, timeout=5, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return res.stdout.strip() or None if res.returncode == 0 else None


def check_writable(out: Path) -> None:
    """Raise ``PermissionError``/``OSError`` with a clear message if ``out`` cannot hold run folders."""
    out = Path(out)
    try:
        out.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=out, prefix=".write-test-"):
            pass
    except OSError as exc:
        raise OSError(f"output folder {str(out)!r} is not writable: {exc.strerror or exc}") from exc


def run_experiment(
    exp: Experiment,
    cfg: Any,
    *,
    preset: str,
    seed: int,
    out: Path,
    n_threads: int = DEFAULT_THREADS,
    overrides: dict[str, Any] | None = None,
    deterministic: bool | None = None,
) -> RunResult:
    """Run ``exp`` on ``cfg`` with ``seed`` and write its folder atomically under ``out``.

    ``overrides`` are the ``--set`` changes that made ``cfg`` from the preset: they are recorded in
    ``results.json`` and hashed into the folder name. ``deterministic`` (None: on unless ``cfg.device`` is a CUDA
    device) switches torch's deterministic kernels; it and ``n_threads`` are recorded in ``results.json``.
    Returns the written folder and its results.
    Exceptions from the experiment propagate after the temporary folder is removed; the previous run
    folder, if any, is untouched.
    """
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed <= MAX_SEED:
        raise ValueError(f"seed must be an integer in 0..{MAX_SEED}, got {seed!r}")
    final = run_dir_for(out, exp.name, preset, seed, overrides)
    if deterministic is None:
        deterministic = default_deterministic(cfg)
    rng = seed_everything(seed, n_threads, deterministic=deterministic)
    t0, c0 = time.perf_counter(), _cpu_seconds()
    outcome = exp(cfg, rng)
    wall, cpu = time.perf_counter() - t0, _cpu_seconds() - c0
    results = _results_dict(exp, cfg, preset, seed, outcome, wall, cpu, overrides or {})
    results["execution"] = {"threads": int(n_threads), "deterministic": bool(deterministic),
                            "cuda_visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES")}
    with _new_run_folder(final) as tmp:
        for name, fig in outcome.figures.items():
            save_figure(fig, tmp / f"{name}.png")
        (tmp / "results.json").write_text(json.dumps(results, indent=2, sort_keys=False) + "\n")
        (tmp / "report.md").write_text(render_run_report(results))
    return RunResult(path=final, results=results)


@contextlib.contextmanager
def _new_run_folder(final: Path) -> Iterator[Path]:
    """A temporary folder beside ``final``, renamed to ``final`` when the block ends without an error (under
    the folder's lock, stale temporaries of dead processes removed first); removed if the block fails."""
    _mkdirs(final.parent)
    with _folder_lock(final):
        _clean_stale(final)
        tmp = Path(tempfile.mkdtemp(prefix=f".{final.name}.tmp-{os.getpid()}-", dir=final.parent))
        try:
            os.chmod(tmp, _dir_mode())
            yield tmp
            _replace_dir(tmp, final)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise


def write_run_folder(final: Path, files: dict[str, bytes]) -> None:
    """Write a run folder shipped from another machine (relative path -> bytes) to ``final``, atomically.

    The same lock, temporary name and rename as :func:`run_experiment`; paths that would leave the folder
    (absolute, ``..``) are refused.
    """
    bad = [rel for rel in files if Path(rel).is_absolute() or ".." in Path(rel).parts or not Path(rel).parts]
    if bad:
        raise ValueError(f"shipped run file {bad[0]!r} would leave its run folder")
    with _new_run_folder(final) as tmp:
        for rel, data in files.items():
            (tmp / rel).parent.mkdir(parents=True, exist_ok=True)
            (tmp / rel).write_bytes(data)


def _dir_mode() -> int:
    """The mode ``mkdir`` would give a new folder under the current umask."""
    mask = os.umask(0)
    os.umask(mask)
    return 0o777 & ~mask


def _mkdirs(path: Path) -> None:
    path.mkdir(parents=True, exist_ok=True)


@contextlib.contextmanager
def _folder_lock(final: Path) -> Iterator[None]:
    """An exclusive lock on ``<parent>/.<folder>.lock`` held while the run folder is replaced."""
    lock_path = final.with_name(f".{final.name}.lock")
    try:  # never through a planted link: it would create its target wherever it points
        fd = os.open(lock_path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o666)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise OSError(errno.ELOOP, f"the lock file {lock_path} is a symbolic link; remove it") from None
        raise
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


def _cpu_seconds() -> float:
    """User and system CPU seconds of this process and of its finished child processes (worker pools)."""
    import resource

    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _clean_stale(final: Path) -> None:
    """Remove ``.<folder>.tmp-<pid>-*`` / ``.<folder>.old-<pid>-*`` left by processes that no longer run."""
    from .atomic import restore_interrupted

    # a process that died between moving the old run aside and putting the new one in place: the old run
    # goes back (we hold the folder's lock, so no live process is in that moment)
    restore_interrupted(final)
    pattern = re.compile(rf"^\.{re.escape(final.name)}\.(?:tmp|old)-(\d+)-")
    for entry in final.parent.iterdir():
        m = pattern.match(entry.name)
        if m and entry.is_dir() and not entry.is_symlink() and not _pid_alive(int(m.group(1))):
            shutil.rmtree(entry, ignore_errors=True)


def _replace_dir(tmp: Path, final: Path) -> None:
    """Put ``tmp`` at ``final`` so that a crash at any moment leaves the old or the new run there."""
    from .atomic import replace_dir

    replace_dir(tmp, final)


def _results_dict(
    exp: Experiment, cfg: Any, preset: str, seed: int, outcome: Outcome, wall: float, cpu: float,
    overrides: dict[str, Any],
) -> dict[str, Any]:
    return to_jsonable(
        {
            "experiment": exp.name,
            "paper": exp.slug,
            "claim": exp.claim,
            "preset": preset,
            "seed": seed,
            "overrides": overrides,
            "overrides_hash": overrides_hash(overrides),
            "config": dataclasses.asdict(cfg),
            "metrics": outcome.metrics,
            "checks": attach_controls(exp.name, [c.to_dict() for c in outcome.checks]),
            "verdict": outcome.verdict,
            "figures": [f"{name}.png" for name in outcome.figures],
            "tables": outcome.tables,
            # CPU time tells the cost of a run on a loaded machine, where wall time does not (make demo's budget)
            "timing": {"wall_s": wall, "cpu_s": cpu, **{k: float(v) for k, v in outcome.timings.items()}},
            "created": datetime.now(UTC).isoformat(timespec="seconds"),
            "versions": _versions(),
            "git_commit": _git_commit(),
        }
    )
