"""The GPU smoke check: every experiment with a ``device`` field, its cheapest preset on the GPU and on the CPU.

One table (experiment, seconds on each device, verdict on each, the largest relative difference of a metric
between the two) is written as Markdown, with the machine named. An experiment whose paper cannot be imported
here (a missing optional dependency) or that fails on a device is a row that says why; the others still run. The
CPU half runs on any machine (``device="cpu"`` compares the CPU with itself, which a test does); the GPU half
needs CUDA (:class:`MissingDependency` otherwise, exit 3 from the command line).
"""

from __future__ import annotations

import dataclasses
import math
import platform
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

__all__ = ["SmokeRow", "device_experiments", "smoke_experiment", "run_gpu_smoke", "render_table",
           "max_relative_difference"]


@dataclass
class SmokeRow:
    """One experiment of the smoke check (``skipped`` holds the reason when it did not run)."""

    name: str
    preset: str
    #: keyed "accel" (the device checked) and "cpu"
    seconds: dict[str, float] = dataclasses.field(default_factory=dict)
    verdicts: dict[str, str] = dataclasses.field(default_factory=dict)
    max_rel_diff: float = float("nan")
    worst_metric: str = ""
    skipped: str = ""


def device_experiments(names: list[str] | None = None) -> tuple[list[Any], list[SmokeRow]]:
    """The registered experiments whose config has a ``device`` field, and a skipped row per paper that cannot
    be imported here (its missing dependency named)."""
    from .catalog import catalog, match_names
    from .errors import MissingDependency
    from .registry import _REGISTRY, import_paper

    table = catalog()
    chosen = match_names(names, table) if names else list(table)
    exps, skipped = [], []
    for slug in dict.fromkeys(n.split(".", 1)[0] for n in chosen):
        try:
            import_paper(slug)
        except (MissingDependency, ImportError) as exc:
            skipped += [SmokeRow(n, "-", skipped=f"not importable here: {exc}") for n in chosen
                        if n.split(".", 1)[0] == slug]
    for n in chosen:
        exp = _REGISTRY.get(n)
        if exp is None:
            continue
        if "device" in {f.name for f in dataclasses.fields(exp.config_type)}:
            exps.append(exp)
    return exps, skipped


def _cheapest(exp: Any) -> str:
    return "smoke" if "smoke" in exp.presets else "quick"


def max_relative_difference(a: dict[str, float], b: dict[str, float]) -> tuple[float, str]:
    """The largest ``|a - b| / max(|a|, |b|, 1e-12)`` over the metrics both hold, and its name.

    A metric finite on one side and not on the other counts as 1 (a full difference); two equal non-finite
    values (both NaN, or the same infinity) count as 0.
    """
    worst, name = 0.0, ""
    for k in a.keys() & b.keys():
        x, y = float(a[k]), float(b[k])
        if math.isfinite(x) and math.isfinite(y):
            d = abs(x - y) / max(abs(x), abs(y), 1e-12)
        elif (math.isnan(x) and math.isnan(y)) or x == y:
            d = 0.0
        else:
            d = 1.0
        if d > worst or not name:
            worst, name = d, k
    return worst, name


def smoke_experiment(exp: Any, device: str, out: Path, seed: int = 0) -> tuple[float, str, dict[str, float]]:
    """Run ``exp``'s cheapest preset on ``device``: (seconds, verdict, metrics). Exceptions propagate."""
    from .runner import run_experiment

    preset = _cheapest(exp)
    cfg = dataclasses.replace(exp.presets[preset], device=device)
    t0 = time.perf_counter()
    res = run_experiment(exp, cfg, preset=preset, seed=seed, out=out, overrides={"device": device})
    return time.perf_counter() - t0, res.verdict, dict(res.results["metrics"])


def _cpu_job(name: str, out: str) -> tuple[float, str, dict[str, float]] | str:
    """One CPU run in a worker process: (seconds, verdict, metrics), or the one-line reason it failed."""
    from .errors import classify_exception
    from .registry import get_experiment

    try:
        return smoke_experiment(get_experiment(name), "cpu", Path(out))
    except Exception as exc:  # noqa: BLE001 - one row says why
        return classify_exception(exc, name)[1]


def run_gpu_smoke(device: str = "cuda", names: list[str] | None = None, *, out: Path | None = None,
                  workers: int = 1, log: Callable[[str], None] | None = None) -> list[SmokeRow]:
    """Every device experiment on ``device`` and on the CPU; one :class:`SmokeRow` each.

    With ``workers > 1`` the CPU runs go to that many worker processes (one thread each) while this process
    runs the ``device`` runs one after another, so the check takes about as long as its slower half. Raises
    :class:`MissingDependency` when ``device`` is not available here (checked before anything runs).
    """
    import multiprocessing
    from concurrent.futures import Future, ProcessPoolExecutor

    from .device import resolve_device
    from .errors import classify_exception

    if workers < 1:
        raise ValueError(f"workers = {workers}: must be >= 1")
    if device != "cpu":
        resolve_device(device)
    exps, rows = device_experiments(names)
    with tempfile.TemporaryDirectory(prefix="icml2026-gpu-smoke-") as scratch:
        base = Path(out) if out is not None else Path(scratch)
        pool = (ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("spawn"))
                if workers > 1 else None)
        try:
            cpu_futures: dict[str, Future[Any]] = {}
            if pool is not None:
                cpu_futures = {e.name: pool.submit(_cpu_job, e.name, str(base / "cpu-again")) for e in exps}
            for exp in exps:
                row = SmokeRow(exp.name, _cheapest(exp))
                if log is not None:
                    log(f"gpu-smoke: {exp.name} ({row.preset}) on {device} ...")
                results: dict[str, tuple[float, str, dict[str, float]] | str] = {}
                try:
                    results["accel"] = smoke_experiment(exp, device, base / device)
                except Exception as exc:  # noqa: BLE001 - one row says why, the others still run
                    results["accel"] = classify_exception(exc, exp.name)[1]
                # the CPU half; with device="cpu" it is a second CPU run of the same seed (a determinism check)
                results["cpu"] = (cpu_futures[exp.name].result() if exp.name in cpu_futures
                                  else _cpu_job(exp.name, str(base / "cpu-again")))
                metrics: dict[str, dict[str, float]] = {}
                for key, res in results.items():
                    if isinstance(res, str):
                        row.verdicts[key] = "error"
                        row.skipped = f"{device if key == 'accel' else 'cpu'}: {res}"
                    else:
                        row.seconds[key], row.verdicts[key], metrics[key] = res
                if len(metrics) == 2:
                    row.max_rel_diff, row.worst_metric = max_relative_difference(metrics["accel"], metrics["cpu"])
                rows.append(row)
        finally:
            if pool is not None:
                pool.shutdown(cancel_futures=True)
    return rows


def _machine(device: str) -> str:
    name = platform.processor() or platform.machine()
    if device.startswith("cuda"):
        import torch

        idx = int(device.split(":")[1]) if ":" in device else 0
        return f"{torch.cuda.get_device_name(idx)} (torch {torch.__version__}, CUDA {torch.version.cuda}); CPU {name}"
    return f"CPU only ({name})"


def render_table(rows: list[SmokeRow], device: str, wall_s: float | None = None) -> str:
    """The Markdown page: the machine, then one row per experiment."""
    from .report import md

    def secs(r: SmokeRow, d: str) -> str:
        return f"{r.seconds[d]:.1f}" if d in r.seconds else "-"

    total = sum(sum(r.seconds.values()) for r in rows)
    cpu = "cpu, again" if device == "cpu" else "cpu"
    lines = [
        "# GPU smoke check",
        "",
        f"Written by `make gpu-smoke` on {datetime.now(UTC).date().isoformat()}: {md(_machine(device))}.",
        "Each experiment with a `device` field runs its cheapest preset (seed 0) on the GPU and on the CPU; the last",
        "columns give the largest relative difference of a metric between the two and which metric it is.",
        f"Run time summed over both halves {total:.0f} s" + (f"; wall time {wall_s:.0f} s." if wall_s else "."),
        "",
        f"| experiment | preset | s ({md(device)}) | s ({cpu}) | verdict ({md(device)}) | verdict ({cpu}) | "
        "max rel. diff | metric | note |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        diff = "-" if math.isnan(r.max_rel_diff) else f"{r.max_rel_diff:.2g}"
        lines.append(f"| {md(r.name)} | {md(r.preset)} | {secs(r, 'accel')} | {secs(r, 'cpu')} | "
                     f"{md(r.verdicts.get('accel', '-'))} | {md(r.verdicts.get('cpu', '-'))} | {diff} | "
                     f"{md(r.worst_metric) or '-'} | {md(r.skipped) or '-'} |")
    return "\n".join(lines) + "\n"
