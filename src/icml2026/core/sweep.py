"""Seed and configuration sweeps: a grid of (experiment, overrides, seed) runs through Ray or a process pool.

Every run writes the same run folder as ``icml2026 run`` (atomic, ``<preset>-seed<n>[-<hash>]``), so a
sweep that is interrupted resumes without redoing the runs that finished, and ``icml2026 report`` shows the
runs like any others. The aggregate (per experiment and override set: each metric's mean, spread and
bootstrap 95% interval, each check's pass count) is written to ``<out>/sweeps/<id>.json``. A run that fails
is collected with its one-line error, never fatal to the sweep.

Executors: ``ray`` (a local Ray instance, or an existing cluster given by ``address``; icml2026 must be
installed on every node) and ``local`` (a process pool on this machine). Both run the same function on the
same seeds, so they give identical results.
"""

from __future__ import annotations

import errno
import hashlib
import itertools
import json
import os
import sys
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .aggregate import summarize
from .progress import track

__all__ = ["SweepTask", "expand_grid", "plan_tasks", "is_done", "why_not_done", "check_address",
           "die_with_parent", "run_task", "collect_shipped", "execute",
           "aggregate", "write_sweep", "sweep_id", "map_in_processes", "run_in_processes"]


@dataclass(frozen=True)
class SweepTask:
    """One run of a sweep (picklable: it crosses process and machine boundaries)."""

    name: str
    preset: str
    seed: int
    overrides: tuple[tuple[str, Any], ...]
    out: str
    n_threads: int = 1
    deterministic: bool | None = None

    @property
    def overrides_dict(self) -> dict[str, Any]:
        return dict(self.overrides)

    def folder(self) -> Path:
        from .runner import run_dir_for

        return run_dir_for(Path(self.out), self.name, self.preset, self.seed, self.overrides_dict)


def expand_grid(grid: dict[str, list[Any]]) -> list[dict[str, Any]]:
    """Every combination of the grid's values (one empty combination for an empty grid), keys in order."""
    keys = list(grid)
    return [dict(zip(keys, combo, strict=True)) for combo in itertools.product(*(grid[k] for k in keys))]


def plan_tasks(names: list[str], preset: str, seeds: list[int], combos: list[dict[str, Any]], out: Path,
               n_threads: int = 1, *, deterministic: bool | None = None) -> list[SweepTask]:
    """The runs of the sweep, in a fixed order: experiment, override combination, seed."""
    return [SweepTask(n, preset, s, tuple(c.items()), str(out), n_threads, deterministic)
            for n in names for c in combos for s in seeds]


def why_not_done(task: SweepTask) -> str | None:
    """``None`` when the task's run folder holds a valid results.json of this very run, else the reason.

    The folder is read as the report reads it (:func:`icml2026.core.report.collect_runs`): a plain folder, a
    results.json that is a plain file (no link) of the right shape for this experiment, preset, seed and
    overrides. A folder that is missing gives ``"missing"``.
    """
    from .report import _BAD_DATA_ERRORS, _is_real_dir, _is_regular_file, _validate
    from .runner import overrides_hash

    folder = task.folder()
    if not os.path.lexists(folder):
        return "missing"
    if not _is_real_dir(folder):
        return "not a plain folder (symbolic links are not followed)"
    f = folder / "results.json"
    if not _is_regular_file(f):
        return "no results.json (or it is not a regular file)"
    try:
        res = json.loads(f.read_text(encoding="utf-8"))
        h = overrides_hash(task.overrides_dict)
        _validate(res, task.name, task.preset, task.seed, h)
        _read_done_from(task, res)
    except RecursionError:
        return "results.json is malformed: nested too deeply"
    except (OSError, UnicodeDecodeError, *_BAD_DATA_ERRORS) as exc:
        return f"results.json is malformed: {str(exc)[:200]}"
    return None


def is_done(task: SweepTask) -> bool:
    """True when the task's run folder holds a valid results.json of this very run (:func:`why_not_done`)."""
    return why_not_done(task) is None


def run_task(task: SweepTask, ship: bool = False) -> dict[str, Any]:
    """Run one task in this process; never raises (a failure comes back as ``{"status": "error", ...}``).

    With ``ship`` the run is written to a temporary folder on this machine and its files come back in the
    result (``"files"``: relative path -> bytes) for the driver to write under its own ``--out``
    (:func:`collect_shipped`): on a cluster, a worker's disk is not the driver's.
    """
    import shutil
    import tempfile

    from .config import build_config  # the same config checks and error lines as `icml2026 run`
    from .errors import classify_exception
    from .registry import get_experiment
    from .runner import run_experiment

    base = {"name": task.name, "seed": task.seed, "overrides": task.overrides_dict}
    scratch = Path(tempfile.mkdtemp(prefix="icml2026-sweep-")) if ship else None
    try:
        exp = get_experiment(task.name)
        cfg = build_config(exp.config(task.preset), task.overrides_dict, task.name)
        res = run_experiment(exp, cfg, preset=task.preset, seed=task.seed,
                             out=scratch if scratch is not None else Path(task.out),
                             n_threads=task.n_threads, overrides=task.overrides_dict, deterministic=task.deterministic)
        out = {**base, "status": "ok", "path": str(task.folder()), "metrics": res.results["metrics"],
               "verdict": res.verdict, "wall_s": res.results["timing"]["wall_s"],
               "cpu_s": res.results["timing"].get("cpu_s", 0.0),
               "checks": [{"name": c["name"], "value": c["value"], "target": c["target"], "passed": c["passed"],
                           "role": c.get("role", "claim")} for c in res.results["checks"]]}
        if scratch is not None:
            out["files"] = {str(f.relative_to(res.path)): f.read_bytes()
                            for f in sorted(res.path.rglob("*")) if f.is_file() and not f.is_symlink()}
        return out
    except Exception as exc:  # noqa: BLE001 - collected and reported by the sweep
        code, msg = classify_exception(exc, task.name)
        return {**base, "status": "error", "exit": code, "error": msg}
    finally:
        if scratch is not None:
            shutil.rmtree(scratch, ignore_errors=True)


def collect_shipped(task: SweepTask, result: dict[str, Any]) -> dict[str, Any]:
    """Write a shipped run's files into ``task.folder()`` (atomically) and drop them from ``result``."""
    from .runner import write_run_folder

    files = result.pop("files", None)
    if files is not None and result.get("status") == "ok":
        write_run_folder(task.folder(), files)
    return result


def _read_done(task: SweepTask) -> dict[str, Any]:
    return _read_done_from(task, json.loads((task.folder() / "results.json").read_text(encoding="utf-8")))


def _read_done_from(task: SweepTask, res: dict[str, Any]) -> dict[str, Any]:
    from .report import _num, _passes, _role, run_verdict

    return {"name": task.name, "seed": task.seed, "overrides": task.overrides_dict, "status": "ok",
            "path": str(task.folder()), "resumed": True,
            "metrics": {k: _num(v) for k, v in res["metrics"].items()},
            "verdict": run_verdict(res["checks"]),
            "checks": [{"name": c["name"], "value": _num(c["value"]), "passed": _passes(c), "role": _role(c)}
                       for c in res["checks"]]}


def die_with_parent() -> None:
    """Make this process end when the process that started it dies, even by ``kill -9`` (Linux
    ``PR_SET_PDEATHSIG``; elsewhere a thread that watches the parent's pid)."""
    import signal

    parent = os.getppid()
    try:
        import ctypes

        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        if libc.prctl(1, signal.SIGKILL) == 0:  # 1 = PR_SET_PDEATHSIG
            if os.getppid() != parent:  # the parent died before the request took effect
                os._exit(1)
            return
    except (OSError, AttributeError):
        pass
    import threading
    import time

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(1.0)
        os._exit(1)

    threading.Thread(target=watch, daemon=True, name="icml2026-parent-watch").start()


def _init_worker(n_threads: int) -> None:
    die_with_parent()
    import torch

    torch.set_num_threads(n_threads)


def _init_run_worker() -> None:
    die_with_parent()


def map_in_processes(calls: list[tuple[Callable[..., Any], tuple[Any, ...]]], workers: int,
                     n_threads: int = 1, label: str | None = None) -> list[Any]:
    """``[fn(*args) for fn, args in calls]``, computed by a pool of ``workers`` fresh processes (spawned, so
    nothing but the arguments reaches them, each with ``n_threads`` torch threads); ``workers == 1`` runs the
    calls here, in order. Results come back in the order of ``calls`` whatever order they finish in, so a
    caller whose calls each carry their own random generator gets the same results for any ``workers``.
    ``fn`` must be importable at module level and the arguments picklable; a script that reaches this with
    ``workers > 1`` needs the ``if __name__ == "__main__":`` guard, as for any spawned pool. Calls are
    submitted in order: put the longest first to finish soonest. With ``label``, a pool says on stderr how
    many calls run in how many processes ("[label] 3 calls in 2 processes")."""
    if workers < 1 or n_threads < 1:
        raise ValueError(f"workers = {workers}, n_threads = {n_threads}: both must be >= 1")
    if workers == 1 or len(calls) <= 1:
        return [fn(*args) for fn, args in calls]
    if label:
        print(f"[{label}] {len(calls)} calls in {min(workers, len(calls))} processes", file=sys.stderr, flush=True)
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    ctx = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=min(workers, len(calls)), mp_context=ctx, initializer=_init_worker,
                             initargs=(n_threads,)) as pool:
        futures = [pool.submit(fn, *args) for fn, args in calls]
        return [f.result() for f in futures]


def run_in_processes(tasks: list[SweepTask], workers: int) -> Iterator[tuple[int, dict[str, Any]]]:
    """Run every task (done or not) in ``workers`` fresh processes; yield ``(index, result)`` as each finishes.

    Each result is :func:`run_task`'s: a failure comes back as ``{"status": "error", ...}``, never raised.
    """
    if workers < 1:
        raise ValueError(f"workers = {workers}: must be >= 1")
    return _local(tasks, workers)


def _local(tasks: list[SweepTask], workers: int) -> Iterator[tuple[int, dict[str, Any]]]:
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor, as_completed

    ctx = multiprocessing.get_context("spawn")  # no state inherited from this process: as on a cluster node
    with ProcessPoolExecutor(max_workers=workers, mp_context=ctx, initializer=_init_run_worker) as pool:
        futures = {pool.submit(run_task, t): i for i, t in enumerate(tasks)}
        for fut in as_completed(futures):
            yield futures[fut], fut.result()


def _ray(tasks: list[SweepTask], workers: int, address: str | None, cpus_per_run: float = 1.0,
         gpus_per_run: float = 0.0) -> Iterator[tuple[int, dict[str, Any]]]:
    try:
        import ray
    except ImportError as exc:
        from .errors import MissingDependency

        raise MissingDependency("the Python package 'ray'", "pip install 'icml2026[sweep]'") from exc
    started_here = not ray.is_initialized()
    if started_here:
        kwargs: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False, "configure_logging": False}
        if address:
            check_address(address)
            ray.init(address=address, **kwargs)
        else:
            ray.init(num_cpus=workers, **kwargs)
    try:
        # Ray makes the reserved GPUs visible to the task (CUDA_VISIBLE_DEVICES); each run is shipped back
        remote = ray.remote(num_cpus=cpus_per_run, num_gpus=gpus_per_run)(run_task)
        refs = {remote.remote(t, True): i for i, t in enumerate(tasks)}
        pending = list(refs)
        while pending:
            done, pending = ray.wait(pending, num_returns=1)
            for ref in done:
                i = refs[ref]
                yield i, collect_shipped(tasks[i], ray.get(ref))
    finally:
        if started_here:
            ray.shutdown()


#: Seconds to reach a Ray head given by ``--address`` before the sweep gives up.
CONNECT_TIMEOUT_S = 10.0


def check_address(address: str, timeout: float = CONNECT_TIMEOUT_S) -> None:
    """Refuse, within ``timeout`` seconds and in one line, a Ray address that cannot be reached.

    ``auto`` / ``local`` are Ray's own words for a head on this machine (Ray checks them itself); any other
    address is ``[ray://]host:port``, tried with one TCP connection (Ray itself retries for minutes).
    """
    import socket

    from .errors import BadInput

    if address in ("auto", "local"):
        return
    hostport = address.removeprefix("ray://")
    host, sep, port = hostport.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise BadInput(f"--address {address!r}: expected [ray://]host:port, auto or local")
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=timeout):
            pass
    except OSError as exc:
        raise BadInput(f"--address {address!r}: no Ray head answers there within {timeout:g} s "
                       f"({exc.strerror or exc})") from None


def execute(tasks: list[SweepTask], *, executor: str = "ray", workers: int = 2, address: str | None = None,
            on_result: Callable[[dict[str, Any]], None] | None = None, cpus_per_run: float = 1.0,
            gpus_per_run: float = 0.0) -> list[dict[str, Any]]:
    """Run the tasks not already done; return one result per task, in task order (finished ones read back).

    On Ray each run reserves ``cpus_per_run`` CPUs and ``gpus_per_run`` GPUs (fractions allowed) and its folder
    is shipped back and written under the driver's ``--out``.
    """
    if executor not in ("ray", "local"):
        raise ValueError(f"executor must be 'ray' or 'local', got {executor!r}")
    if cpus_per_run < 0 or gpus_per_run < 0:
        raise ValueError(f"cpus_per_run = {cpus_per_run}, gpus_per_run = {gpus_per_run}: must be >= 0")
    results: list[dict[str, Any] | None] = [None] * len(tasks)
    todo = []
    for i, t in enumerate(tasks):
        why = why_not_done(t)
        if why is None:
            results[i] = _read_done(t)
        else:
            if why != "missing":  # a bad folder is named and its run made again (the new run replaces it)
                from .report import terminal_safe

                print(f"icml2026 sweep: rerunning {terminal_safe(t.folder())}: {terminal_safe(why)}",
                      file=sys.stderr, flush=True)
            todo.append(i)
    if todo:
        sub = [tasks[i] for i in todo]
        stream = (_ray(sub, workers, address, cpus_per_run, gpus_per_run) if executor == "ray"
                  else _local(sub, workers))
        for j, res in track(stream, f"sweep ({executor})", total=len(sub)):
            results[todo[j]] = res
            if on_result is not None:
                on_result(res)
    return [r for r in results if r is not None]


def _key(r: dict[str, Any]) -> str:
    return json.dumps([r["name"], r["overrides"]], sort_keys=True, default=str)


def aggregate(results: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per (experiment, overrides): seeds, each metric's summary (mean, sd, ci95), each check's pass count."""
    groups: dict[str, list[dict[str, Any]]] = {}
    for r in results:
        groups.setdefault(_key(r), []).append(r)
    out = []
    for rs in groups.values():
        ok = [r for r in rs if r["status"] == "ok"]
        metrics: dict[str, Any] = {}
        for k in dict.fromkeys(k for r in ok for k in r["metrics"]):
            metrics[k] = summarize([float(r["metrics"][k]) for r in ok if k in r["metrics"]])
        checks: dict[str, Any] = {}
        for name in dict.fromkeys(c["name"] for r in ok for c in r["checks"]):
            rows = [(r["seed"], c) for r in ok for c in r["checks"] if c["name"] == name]
            checks[name] = {"passed": sum(bool(c["passed"]) for _, c in rows), "n": len(rows),
                            "role": rows[0][1].get("role", "claim"),
                            "failed_seeds": [s for s, c in rows if not c["passed"]],
                            **summarize([float(c["value"]) for _, c in rows])}
        out.append({"experiment": rs[0]["name"], "overrides": rs[0]["overrides"],
                    "seeds": sorted(r["seed"] for r in ok), "n_runs": len(rs), "n_ok": len(ok),
                    "n_resumed": sum(bool(r.get("resumed")) for r in ok),
                    "failures": [{"seed": r["seed"], "error": r["error"]} for r in rs if r["status"] != "ok"],
                    "verdicts": {v: sum(r.get("verdict") == v for r in ok)
                                 for v in ("reproduced", "not reproduced", "undecided")},
                    "metrics": metrics, "checks": checks})
    return out


def sweep_id(names: list[str], preset: str, seeds: list[int], grid: dict[str, list[Any]]) -> str:
    canon = json.dumps({"names": names, "preset": preset, "seeds": seeds, "grid": grid}, sort_keys=True, default=str)
    return hashlib.sha256(canon.encode()).hexdigest()[:10]


def write_sweep(out: Path, ident: str, spec: dict[str, Any], groups: list[dict[str, Any]]) -> Path:
    """Write ``<out>/sweeps/<ident>.json`` atomically (unique temporary name, then rename)."""
    from .runner import to_jsonable

    folder = Path(out) / "sweeps"
    if os.path.islink(folder) or (os.path.lexists(folder) and not folder.is_dir()):
        raise OSError(errno.EEXIST, f"{folder} is not a plain folder (a link or a file); the sweep's aggregate "
                                    "is not written through it")
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{ident}.json"
    fd, tmp = tempfile.mkstemp(prefix=f".{ident}.", suffix=".tmp", dir=folder)
    with os.fdopen(fd, "w") as fh:
        json.dump(to_jsonable({"sweep": ident, **spec, "groups": groups}), fh, indent=2)
        fh.write("\n")
    os.replace(tmp, path)
    return path
