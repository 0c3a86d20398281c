"""Power and false-positive rate of comparative claims, measured on planted and null controls.

A claim that compares two methods or conditions (``Check(..., comparative=True)``) is a test, and a test is
only worth its verdict when it can both pass and fail. Each such experiment registers two presets:

- ``planted``: an effect of the paper's size made by construction (e.g. one arm given the oracle's output on a
  known fraction of items); the check must pass on it. Its pass rate over seeds is the check's **power**.
- ``null``: both arms the same method, different seeds; the check must fail on it. Its pass rate over seeds is
  the check's **false-positive rate**. For a non-inferiority claim ("B >= 0.9 x A", "the drop stays < 0.05"),
  which two equal arms pass by design, the null is an arm worse than the margin, made by construction.

:func:`measure_controls` runs both presets over >= 5 seeds (each run written as an ordinary run folder, so the
figures can be audited with ``icml2026 report``) and :func:`store_controls` keeps the figures in the paper's
``controls.json`` beside its ``experiments.py``. The runner attaches the stored figures to each comparative
check of a run (:func:`attach_controls`), so that results.json, report.md, the index and the HTML page show
them beside the verdict. A figure is never invented: a check without a stored measurement shows none, and the
contract test fails for it.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from .catalog import paper_dirs

__all__ = [
    "MIN_CONTROL_SEEDS",
    "MIN_POWER",
    "MAX_FALSE_POSITIVE_RATE",
    "ControlRecord",
    "controls_path",
    "load_controls",
    "attach_controls",
    "measure_controls",
    "store_controls",
]

#: The issue's floor: power and false-positive rate are pass rates over at least five seeds.
MIN_CONTROL_SEEDS = 5
#: A comparative check whose power at the paper's effect size is below this is a defect of the experiment.
MIN_POWER = 0.8
#: At most one null seed in five may pass.
MAX_FALSE_POSITIVE_RATE = 0.2


@dataclass(frozen=True)
class ControlRecord:
    """One comparative check's controls: pass rates on the planted and the null preset, and how measured."""

    power: float
    false_positive_rate: float
    seeds: list[int]
    planted_passed: list[bool]
    null_passed: list[bool]
    planted_values: list[float]
    null_values: list[float]
    target: str
    planted_preset: str = "planted"
    null_preset: str = "null"
    measured: str = ""
    commit: str | None = None

    @property
    def n_seeds(self) -> int:
        return len(self.seeds)


def controls_path(slug: str) -> Path:
    """``papers/<slug>/controls.json`` (it may not exist yet)."""
    dirs = paper_dirs()
    if slug not in dirs:
        raise KeyError(f"no paper {slug!r}")
    return dirs[slug] / "controls.json"


def _read(path: Path) -> dict[str, Any]:
    if not path.is_file():
        return {}
    data = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(data, dict):
        raise ValueError(f"{path}: expected a JSON object of experiments")
    return data


def load_controls(name: str) -> dict[str, ControlRecord]:
    """The stored controls of experiment ``name`` (``<slug>.<experiment>``), by check name ({} when none)."""
    slug = name.split(".", 1)[0]
    try:
        path = controls_path(slug)
    except KeyError:
        return {}
    entry = _read(path).get(name, {})
    out = {}
    for check, rec in entry.items():
        try:
            out[check] = ControlRecord(**rec)
        except TypeError as exc:
            raise ValueError(f"{path}: {name} / {check}: malformed control record ({exc})") from None
    return out


def attach_controls(name: str, checks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``checks`` (dicts of :meth:`Check.to_dict`) with the stored power and false-positive rate filled in.

    Only comparative checks without figures of their own get them; the record's seed count and presets are
    attached too, so that a reader sees what the figures rest on.
    """
    stored = load_controls(name)
    out = []
    for c in checks:
        rec = stored.get(c["name"])
        if c.get("comparative") and rec is not None and c.get("power") is None and c.get("false_positive_rate") is None:
            c = dict(c, power=rec.power, false_positive_rate=rec.false_positive_rate,
                     controls={"n_seeds": rec.n_seeds, "planted_preset": rec.planted_preset,
                               "null_preset": rec.null_preset, "measured": rec.measured})
        out.append(c)
    return out


def measure_controls(
    exp: Any,
    seeds: Sequence[int],
    *,
    out: Path,
    planted: str = "planted",
    null: str = "null",
    n_threads: int = 1,
    log: Callable[[str], None] | None = None,
) -> dict[str, ControlRecord]:
    """Run ``exp``'s ``planted`` and ``null`` presets on every seed; each comparative check's pass rates.

    Every run is an ordinary run folder under ``out``. Raises ``ValueError`` with fewer than
    :data:`MIN_CONTROL_SEEDS` seeds, when a preset is missing, or when the runs hold no comparative check.
    """
    from .runner import _git_commit, run_experiment

    seeds = list(dict.fromkeys(int(s) for s in seeds))
    if len(seeds) < MIN_CONTROL_SEEDS:
        raise ValueError(f"seeds: controls need at least {MIN_CONTROL_SEEDS} seeds, got {len(seeds)}")
    for preset in (planted, null):
        if preset not in exp.presets:
            raise ValueError(f"{exp.name} has no preset {preset!r} (presets: {', '.join(exp.presets)}); "
                             "register a planted and a null control preset")
    passed: dict[str, dict[str, list[bool]]] = {}
    values: dict[str, dict[str, list[float]]] = {}
    targets: dict[str, str] = {}
    for preset in (planted, null):
        for seed in seeds:
            if log is not None:
                log(f"controls: {exp.name} preset {preset} seed {seed} ...")
            res = run_experiment(exp, exp.presets[preset], preset=preset, seed=seed, out=out, n_threads=n_threads)
            for c in res.results["checks"]:
                if not c.get("comparative"):
                    continue
                targets.setdefault(c["name"], c["target"])
                passed.setdefault(c["name"], {}).setdefault(preset, []).append(bool(c["passed"]))
                values.setdefault(c["name"], {}).setdefault(preset, []).append(float(c["value"]))
    if not passed:
        raise ValueError(f"{exp.name}: the {planted}/{null} runs hold no comparative check (Check(comparative=True))")
    when = datetime.now(UTC).isoformat(timespec="seconds")
    commit = _git_commit()
    out_recs = {}
    for name, by_preset in passed.items():
        p, n = by_preset.get(planted, []), by_preset.get(null, [])
        if len(p) != len(seeds) or len(n) != len(seeds):
            raise ValueError(f"{exp.name}: check {name!r} is not in every planted and null run")
        out_recs[name] = ControlRecord(
            power=sum(p) / len(p), false_positive_rate=sum(n) / len(n), seeds=seeds, planted_passed=p,
            null_passed=n, planted_values=values[name][planted], null_values=values[name][null],
            target=targets[name], planted_preset=planted, null_preset=null, measured=when, commit=commit)
    return out_recs


def store_controls(name: str, records: dict[str, ControlRecord], path: Path | None = None) -> Path:
    """Write ``records`` as experiment ``name``'s entry of its paper's ``controls.json`` (atomically)."""
    import fcntl

    from .runner import to_jsonable

    path = controls_path(name.split(".", 1)[0]) if path is None else Path(path)
    # several `controls --store` of one paper at once: the read-modify-write is serialised by a lock on a
    # file beside controls.json (never through a link), so that no experiment's entry is lost
    lock = os.open(path.with_name(f".{path.name}.lock"), os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o666)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX)
        data = _read(path)
        data[name] = {k: to_jsonable(asdict(v)) for k, v in sorted(records.items())}
        text = json.dumps(dict(sorted(data.items())), indent=1) + "\n"
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                fh.write(text)
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
    finally:
        fcntl.flock(lock, fcntl.LOCK_UN)
        os.close(lock)
    return path
