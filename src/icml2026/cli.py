"""The one entry point: ``icml2026 list | show | run | sweep | report``.

Exit status:

- 0: reproduced (every precondition and every claim passed);
- 1: not reproduced (every precondition passed, a claim failed; the run itself worked);
- 2: bad arguments or input, one line naming the option or config key and what was wrong;
- 3: an internal error, or a missing dependency or system tool (one line naming what to install);
- 4: undecided (a precondition failed: the setup could not express the claim; the claims are still shown).

No traceback reaches stderr except with ``--debug``. In a run of several experiments, the later ones still
run after one fails; the exit status is the worst of them, in the order 0 < 4 < 1 < 2 < 3.
"""

from __future__ import annotations

import argparse
import dataclasses
import errno
import math
import os
import sys
import time
import traceback
import types
import typing
from pathlib import Path
from typing import Any, NoReturn

from .core.config import build_config
from .core.errors import (
    EXIT_BAD_INPUT,
    EXIT_FAILED,
    EXIT_INTERNAL,
    EXIT_OK,
    EXIT_UNDECIDED,
    BadInput,
    classify_exception,
    one_line,
    status_of_verdict,
    worst_status,
)

__all__ = ["main", "parse_overrides", "build_config", "BadInput", "EXIT_OK", "EXIT_FAILED", "EXIT_BAD_INPUT",
           "EXIT_INTERNAL", "EXIT_UNDECIDED"]


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        self.exit(EXIT_BAD_INPUT, f"icml2026: error: {message}\n")


def _threads(raw: str) -> int:
    """``--threads``: an integer, or ``auto`` for the cores available to this process."""
    from .core.runner import available_cores

    if str(raw).strip().lower() == "auto":
        return available_cores()
    return _parse_int(raw, "--threads", 1, _max_threads())


#: A sweep that plans more runs than this asks for --yes (a typo in --grid or --seeds can plan millions).
SWEEP_RUNS_WITHOUT_YES = 10_000


def _max_threads() -> int:
    return max(8, 4 * (os.cpu_count() or 1))


def _version() -> str:
    from importlib import metadata

    try:
        return metadata.version("icml2026")
    except metadata.PackageNotFoundError:  # pragma: no cover - running from a bare source tree
        from . import __version__

        return __version__


def _build_parser() -> argparse.ArgumentParser:
    common = _Parser(add_help=False)
    common.add_argument("--debug", action="store_true", default=argparse.SUPPRESS,
                        help="print the traceback of an internal error")
    p = _Parser(prog="icml2026", description="Reference implementations of ICML 2026 papers.", parents=[common])
    p.add_argument("--version", action="version", version=f"icml2026 {_version()}")
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)
    sub.add_parser("list", parents=[common], help="every experiment, its claim and its presets")
    s = sub.add_parser("show", parents=[common], help="an experiment's config keys, types, presets and valid ranges")
    s.add_argument("name", metavar="NAME", help="<slug>.<experiment>")
    r = sub.add_parser("run", parents=[common], help="run experiments and write their run folders")
    r.add_argument("names", nargs="*", metavar="NAME", help="<slug>.<experiment>, or <slug> for all of a paper's")
    r.add_argument("--all", action="store_true", help="run every registered experiment")
    r.add_argument("--preset", default="quick", help="preset name (default: quick)")
    r.add_argument("--seed", default="0",
                   help="seed, or several: '0-2' or '0,3,7' (default: 0); each seed is its own run folder")
    r.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                   help="override one config field, typed by the preset's config (repeatable)")
    r.add_argument("--out", type=Path, default=Path("runs"), help="folder for run folders (default: runs)")
    r.add_argument("--threads", default="auto",
                   help="torch and BLAS thread count (default: auto, the cores available to this process)")
    r.add_argument("--deterministic", action=argparse.BooleanOptionalAction, default=None,
                   help="torch's deterministic kernels (default: on, off when the experiment's device is CUDA)")
    r.add_argument("--device", default=None,
                   help="cpu, cuda, cuda:<n>, mps: where torch experiments with a 'device' field run")
    r.add_argument("--jobs", default="1",
                   help="runs at a time, each in its own process with --threads threads (default: 1, in this "
                   "process); make demo uses 2 on 2 cores with one thread each")
    sw = sub.add_parser("sweep", parents=[common],
                        help="run a grid of seeds and overrides through Ray or a process pool")
    sw.add_argument("names", nargs="+", metavar="NAME", help="<slug>.<experiment>, or <slug>")
    sw.add_argument("--seeds", default="0-2", help="seeds: '0-99' or '0,3,7' (default: 0-2)")
    sw.add_argument("--grid", action="append", default=[], metavar="KEY=V1,V2",
                    help="sweep a config field over values (repeatable; '|' separates values that hold commas)")
    sw.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                    help="fix one config field for every run (repeatable)")
    sw.add_argument("--preset", default="quick", help="preset name (default: quick)")
    sw.add_argument("--out", type=Path, default=Path("runs"), help="folder for run folders (default: runs)")
    sw.add_argument("--executor", choices=("ray", "local"), default="ray",
                    help="ray (default; a local instance unless --address) or local (a process pool)")
    sw.add_argument("--address", default=None, help="address of an existing Ray cluster")
    sw.add_argument("--workers", default=None, help="parallel runs (default: the number of CPUs)")
    sw.add_argument("--threads", default="1", help="torch and BLAS threads per run (default: 1)")
    sw.add_argument("--deterministic", action=argparse.BooleanOptionalAction, default=None,
                    help="torch's deterministic kernels (default: on, off when the experiment's device is CUDA)")
    sw.add_argument("--yes", action="store_true",
                    help=f"run a plan of more than {SWEEP_RUNS_WITHOUT_YES} runs (refused without it)")
    sw.add_argument("--cpus-per-run", default="1", help="CPUs Ray reserves for each run (default: 1)")
    sw.add_argument("--gpus-per-run", default="0",
                    help="GPUs Ray reserves for each run, fractions allowed (default: 0); Ray makes them visible")
    c = sub.add_parser("controls", parents=[common],
                       help="measure each comparative claim's power (planted preset) and false-positive rate (null)")
    c.add_argument("names", nargs="+", metavar="NAME", help="<slug>.<experiment>, or <slug>")
    c.add_argument("--seeds", default="0-4", help="seeds of each control, at least 5 (default: 0-4)")
    c.add_argument("--out", type=Path, default=Path("runs"), help="folder for the control runs (default: runs)")
    c.add_argument("--threads", default="auto",
                   help="torch and BLAS thread count (default: auto, the cores available to this process)")
    c.add_argument("--store", action="store_true",
                   help="write the figures into the paper's controls.json (for developers of this library)")
    g = sub.add_parser("gpu-smoke", parents=[common],
                       help="every experiment with a device field on the GPU and on the CPU; one table")
    g.add_argument("names", nargs="*", metavar="NAME", help="<slug>.<experiment> or <slug> (default: all)")
    g.add_argument("--device", default="cuda", help="the accelerator to compare with the CPU (default: cuda)")
    g.add_argument("--out", type=Path, default=Path("docs/gpu-smoke.md"),
                   help="the Markdown table to write (default: docs/gpu-smoke.md)")
    g.add_argument("--runs", type=Path, default=None, help="keep the run folders here (default: discarded)")
    g.add_argument("--workers", default=None,
                   help="processes for the CPU half, run beside the GPU half (default: the cores available less one)")
    rep = sub.add_parser("report", parents=[common], help="write reports/index.md over every run folder")
    rep.add_argument("--runs", type=Path, default=Path("runs"), help="folder of run folders (default: runs)")
    rep.add_argument("--out", type=Path, default=Path("reports"), help="report folder (default: reports)")
    rep.add_argument("--html", action="store_true",
                     help="also write a static site to <out>/html/ (opens from the file system, no network)")
    return p


# ---------------------------------------------------------------------------------------------- --set
def _convert(raw: str, tp: Any, key: str) -> Any:
    """Turn the text ``raw`` into a value of type ``tp`` (the config field's annotation)."""
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if origin in (typing.Union, types.UnionType):
        if raw.lower() in ("none", "null") and type(None) in args:
            return None
        errors = []
        for a in args:
            if a is type(None):
                continue
            try:
                return _convert(raw, a, key)
            except BadInput as exc:
                errors.append(str(exc))
        raise BadInput(errors[0] if errors else f"--set {key}: cannot parse {raw!r}")
    if origin is typing.Literal:
        for a in args:
            try:
                if _convert(raw, type(a), key) == a:
                    return a
            except BadInput:
                continue
        raise BadInput(f"--set {key}={raw}: expected one of {', '.join(map(str, args))}")
    if origin in (tuple, list):
        inner = args[0] if args else str
        parts = [s.strip() for s in raw.strip("()[] ").split(",") if s.strip()]
        if origin is tuple and args and not (len(args) == 2 and args[1] is Ellipsis):
            if len(parts) != len(args):
                raise BadInput(f"--set {key}={raw}: expected {len(args)} comma-separated values")
            vals = [_convert(s, t, key) for s, t in zip(parts, args, strict=True)]
        else:
            vals = [_convert(s, inner, key) for s in parts]
        return tuple(vals) if origin is tuple else vals
    if tp is bool:
        low = raw.lower()
        if low in ("1", "true", "yes", "on"):
            return True
        if low in ("0", "false", "no", "off"):
            return False
        raise BadInput(f"--set {key}={raw}: expected a boolean (true/false)")
    if tp is int:
        try:
            return int(raw)
        except ValueError:
            raise BadInput(f"--set {key}={raw}: expected an integer") from None
    if tp is float:
        try:
            return float(raw)
        except ValueError:
            raise BadInput(f"--set {key}={raw}: expected a number") from None
    if tp is str or tp is Any:
        return raw
    raise BadInput(f"--set {key}: fields of type {tp!r} cannot be set from the command line")


def parse_overrides(cfg_type: type, items: list[str], exp_name: str = "") -> dict[str, Any]:
    """Parse ``KEY=VALUE`` strings into typed values for the config dataclass ``cfg_type``."""
    hints = typing.get_type_hints(cfg_type)
    fields = [f.name for f in dataclasses.fields(cfg_type) if f.init]
    out: dict[str, Any] = {}
    for item in items:
        if "=" not in item:
            raise BadInput(f"--set {item!r}: expected KEY=VALUE")
        key, raw = item.split("=", 1)
        key = key.strip()
        if key not in fields:
            where = f" for {exp_name}" if exp_name else ""
            raise BadInput(f"--set: unknown key {key!r}{where}; valid keys: {', '.join(fields)}")
        out[key] = _convert(raw.strip(), hints[key], key)
    return out


def _parse_int(raw: str, what: str, lo: int, hi: int) -> int:
    try:
        v = int(raw)
    except ValueError:
        raise BadInput(f"{what} must be an integer, got {raw!r}") from None
    if not lo <= v <= hi:
        raise BadInput(f"{what} must be in {lo}..{hi}, got {v}")
    return v


def _parse_float(raw: str, what: str, lo: float, hi: float) -> float:
    try:
        v = float(raw)
    except ValueError:
        raise BadInput(f"{what} must be a number, got {raw!r}") from None
    if not lo <= v <= hi:
        raise BadInput(f"{what} must be in {lo:g}..{hi:g}, got {v:g}")
    return v


def _parse_seeds(raw: str) -> list[int]:
    from .core.runner import MAX_SEED

    seeds: list[int] = []
    for part in str(raw).split(","):
        part = part.strip()
        if "-" in part.lstrip("-") and not part.startswith("-"):
            a, b = part.split("-", 1)
            lo, hi = _parse_int(a, "--seed", 0, MAX_SEED), _parse_int(b, "--seed", 0, MAX_SEED)
            if hi < lo or hi - lo >= 10_000:
                raise BadInput(f"--seed range {part!r} must be increasing and hold at most 10000 seeds")
            seeds += range(lo, hi + 1)
        else:
            seeds.append(_parse_int(part, "--seed", 0, MAX_SEED))
    return list(dict.fromkeys(seeds))


def _device_override(base: Any, device: str, exp_name: str) -> dict[str, Any]:
    from .core.device import check_device_name

    try:
        check_device_name(device)
    except ValueError as exc:
        raise BadInput(f"--device: {exc}") from None
    if "device" not in {f.name for f in dataclasses.fields(base)}:
        if device == "cpu":
            return {}
        raise BadInput(f"--device {device}: {exp_name} has no device option (it runs on the CPU only)")
    return {"device": device}


_one_line = one_line
_classify = classify_exception


def _report_exception(exc: BaseException, where: str, debug: bool) -> int:
    code, msg = _classify(exc, where)
    if debug:
        traceback.print_exception(exc, file=sys.stderr)
    print(f"icml2026: error: {msg}", file=sys.stderr, flush=True)
    return code


# ---------------------------------------------------------------------------------------------- commands
def _cmd_list() -> int:
    from .core.catalog import CatalogError, catalog

    try:
        exps = catalog()
    except CatalogError as exc:
        raise RuntimeError(str(exc)) from None
    if not exps:
        print("no experiments registered")
        return EXIT_OK
    for e in exps.values():
        print(f"{e.name}\n    claim:   {e.claim}\n    presets: {', '.join(e.presets)}")
    return EXIT_OK


def _resolve(names: list[str]) -> list[Any]:
    from .core.registry import UnknownExperimentError, resolve_names

    try:
        return resolve_names(names)
    except UnknownExperimentError as exc:
        raise BadInput(str(exc)) from None


def _cmd_show(args: argparse.Namespace) -> int:
    from .core.config import describe_config

    if "." not in args.name:
        raise BadInput(f"show needs one experiment, <slug>.<experiment>; got {args.name!r}")
    (exp,) = _resolve([args.name])
    print(f"{exp.name}\n    claim:   {exp.claim}\n    presets: {', '.join(exp.presets)}")
    if exp.no_preconditions:
        print(f"    preconditions: none ({exp.no_preconditions})")
    from .core.controls import load_controls

    for check, rec in load_controls(exp.name).items():
        print(f"    controls of {check}: power {rec.power:.2f}, false-positive rate {rec.false_positive_rate:.2f} "
              f"over {rec.n_seeds} seeds ({rec.planted_preset} / {rec.null_preset})")
    print()
    infos = describe_config(exp.config_type)
    rows = [["key", "type", "valid", *exp.presets]]
    for f in infos:
        rows.append([f.name, f.type, f.valid, *(repr(getattr(cfg, f.name)) for cfg in exp.presets.values())])
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for r in rows:
        print("  " + "  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip())
    helps = [f for f in infos if f.help]
    if helps:
        print()
        for f in helps:
            print(f"  {f.name}: {f.help}")
    return EXIT_OK


def _plan(args: argparse.Namespace) -> tuple[list[tuple[Any, Any, dict[str, Any]]], list[tuple[str, BaseException]]]:
    """Resolve names and build every config before anything runs (bad input fails early, writes nothing).

    Returns the runnable (experiment, config, overrides) triples and the papers that could not be imported
    (a missing extra), which are reported with exit status 3 while the others still run.
    """
    from .core.catalog import catalog, match_names
    from .core.errors import MissingDependency
    from .core.registry import import_paper

    if args.all and args.names:
        raise BadInput("give experiment names or --all, not both")
    if not args.all and not args.names:
        raise BadInput("name at least one experiment (see 'icml2026 list') or use --all")
    args.seeds = _parse_seeds(args.seed)
    args.n_threads = _threads(args.threads)
    if args.all:
        names = list(catalog())
    else:
        try:
            names = match_names(args.names, catalog())
        except LookupError as exc:
            # experiments registered outside the sources (tests) are still found by the registry
            from .core.registry import UnknownExperimentError, resolve_names

            try:
                names = [e.name for e in resolve_names(args.names)]
            except UnknownExperimentError:
                raise BadInput(str(exc.args[0])) from None
    broken: list[tuple[str, BaseException]] = []
    exps = []
    from .core import registry

    for slug in dict.fromkeys(n.split(".", 1)[0] for n in names):
        try:
            import_paper(slug)
        except (MissingDependency, ImportError) as exc:
            broken += [(n, exc) for n in names if n.split(".", 1)[0] == slug]
    for n in names:
        if n in registry._REGISTRY and all(n != b for b, _ in broken):
            exps.append(registry._REGISTRY[n])
    plan = []
    for e in exps:
        if args.preset not in e.presets:
            raise BadInput(f"{e.name} has no preset {args.preset!r}; presets: {', '.join(e.presets)}")
        base = e.presets[args.preset]
        changes = parse_overrides(type(base), args.overrides, e.name)
        if args.device is not None:
            changes = {**changes, **_device_override(base, args.device, e.name)}
        cfg = build_config(base, changes, e.name)
        device = getattr(cfg, "device", "cpu")
        if isinstance(device, str) and device != "cpu":
            from .core.device import resolve_device

            resolve_device(device)  # a device this machine lacks is exit 3 before anything is written
        plan.append((e, cfg, changes))
    return plan, broken


def _cmd_run(args: argparse.Namespace) -> int:
    from .core.runner import check_writable, run_experiment

    jobs = _parse_int(args.jobs, "--jobs", 1, 4096)
    plan, broken = _plan(args)
    if plan:
        try:
            check_writable(args.out)
        except OSError as exc:
            raise BadInput(str(exc)) from None
    status = EXIT_OK
    for name, err in broken:
        status = worst_status(status, _report_exception(err, name, args.debug))
    runs = [(exp, cfg, overrides, seed) for exp, cfg, overrides in plan for seed in args.seeds]
    if jobs > 1 and len(runs) > 1:
        return worst_status(status, _run_in_processes(runs, args, jobs))
    for exp, cfg, overrides, seed in runs:
        print(f"running {exp.name} (preset {args.preset}, seed {seed}) ...", flush=True)
        try:
            res = run_experiment(exp, cfg, preset=args.preset, seed=seed, out=args.out,
                                 n_threads=args.n_threads, overrides=overrides, deterministic=args.deterministic)
        except KeyboardInterrupt:
            raise
        except Exception as exc:  # noqa: BLE001 - every failure becomes one line and a status
            status = worst_status(status, _report_exception(exc, exp.name, args.debug))
            continue
        _print_run(exp.name, res.verdict, res.results["checks"], res.results["timing"]["wall_s"], res.path)
        status = worst_status(status, status_of_verdict(res.verdict))
    return status


def _print_run(name: str, verdict: str, checks: list[dict[str, Any]], wall_s: float, path: Any) -> None:
    """The lines `icml2026 run` prints for a finished run: verdict, passes per role, time, folder, failures."""
    tag = {"reproduced": "REPRODUCED", "not reproduced": "NOT REPRODUCED"}.get(verdict, "UNDECIDED")
    roles = {role: [c for c in checks if c.get("role", "claim") == role]
             for role in ("precondition", "claim", "control")}
    counts = ", ".join(f"{sum(c['passed'] for c in cs)}/{len(cs)} {role}s" for role, cs in roles.items() if cs)
    print(f"{tag} {name}: {counts}, {wall_s:.1f} s -> {path}", flush=True)
    for c in checks:
        if not c["passed"]:
            print(f"    failed {c.get('role', 'claim')}: {c['name']} = {c['value']} (target {c['target']})", flush=True)


def interleave_by_paper(runs: list[Any]) -> list[Any]:
    """``runs`` (tuples whose first item is an experiment) reordered round-robin over papers: the first run of
    each paper, then the second of each, and so on (each paper's runs keep their order).

    With ``--jobs N`` the runs of one paper then rarely start side by side, so what they share on disk (an
    encoder pre-trained once and cached) is built by the paper's first run while the other workers run other
    papers, instead of by N runs at once."""
    by_paper: dict[str, list[Any]] = {}
    for run in runs:
        by_paper.setdefault(run[0].slug, []).append(run)
    queues = list(by_paper.values())
    return [q[i] for i in range(max((len(q) for q in queues), default=0)) for q in queues if i < len(q)]


def _run_in_processes(runs: list[tuple[Any, Any, dict[str, Any], int]], args: argparse.Namespace, jobs: int) -> int:
    """``icml2026 run --jobs N``: each run in a fresh process, N at a time, lines printed as runs finish; the runs
    start in :func:`interleave_by_paper`'s order.

    A run's folder, metrics and verdict are those of the same run made in this process (same config, seed,
    threads and kernels); only the order in which runs finish, and so the order of the lines, differs.
    """
    from .core.sweep import SweepTask, run_in_processes

    tasks = [SweepTask(exp.name, args.preset, seed, tuple(overrides.items()), str(args.out), args.n_threads,
                       args.deterministic) for exp, _, overrides, seed in interleave_by_paper(runs)]
    print(f"running {len(tasks)} runs, {min(jobs, len(tasks))} at a time (preset {args.preset}) ...", flush=True)
    status = EXIT_OK
    t0, done = time.perf_counter(), []
    for _, res in run_in_processes(tasks, min(jobs, len(tasks))):
        if res["status"] != "ok":
            print(f"icml2026: error: {res['error']}", file=sys.stderr, flush=True)
            status = worst_status(status, int(res["exit"]))
            continue
        _print_run(res["name"], res["verdict"], res["checks"], res["wall_s"], res["path"])
        status = worst_status(status, status_of_verdict(res["verdict"]))
        done.append(res)
    if len(done) > 1:
        _print_costs(done, time.perf_counter() - t0)
    return status


def _print_costs(done: list[dict[str, Any]], elapsed: float, n_slowest: int = 10) -> None:
    """The cost of a batch of runs: elapsed time, the CPU time of all runs, and the slowest runs.

    CPU time is what a batch costs on a loaded machine: on N free cores the batch takes about its sum / N."""
    cpu = sum(float(r.get("cpu_s", 0.0)) for r in done)
    print(f"{len(done)} runs finished in {elapsed:.0f} s; CPU time {cpu:.0f} s in all "
          f"(about {cpu / 60:.1f} core-minutes); the slowest by CPU time:", flush=True)
    for r in sorted(done, key=lambda r: -float(r.get("cpu_s", 0.0)))[:n_slowest]:
        print(f"    {float(r.get('cpu_s', 0.0)):7.1f} CPU-s {r['wall_s']:7.1f} s  {r['name']} seed {r['seed']}",
              flush=True)


def _cmd_sweep(args: argparse.Namespace) -> int:
    from .core import sweep
    from .core.runner import check_writable

    seeds = _parse_seeds(args.seeds)
    n_threads = _threads(args.threads)
    workers = _parse_int(args.workers, "--workers", 1, 4096) if args.workers else max(1, os.cpu_count() or 1)
    cpus_per_run = _parse_float(args.cpus_per_run, "--cpus-per-run", 0.0, 4096.0)
    gpus_per_run = _parse_float(args.gpus_per_run, "--gpus-per-run", 0.0, 64.0)
    if gpus_per_run and args.executor != "ray":
        raise BadInput("--gpus-per-run needs --executor ray (the process pool does not schedule GPUs)")
    if args.address and args.executor == "ray":
        sweep.check_address(args.address)  # an unreachable head: one line within seconds, before anything runs
    exps = _resolve(args.names)
    grid_raw: dict[str, list[str]] = {}
    for item in args.grid:
        if "=" not in item:
            raise BadInput(f"--grid {item!r}: expected KEY=V1,V2,...")
        key, vals = item.split("=", 1)
        parts = [v.strip() for v in (vals.split("|") if "|" in vals else vals.split(","))]
        if not any(parts):
            raise BadInput(f"--grid {key}: give at least one value")
        grid_raw[key.strip()] = [v for v in parts if v]
    n_combos = math.prod(len(v) for v in grid_raw.values())
    n_planned = len(exps) * n_combos * len(seeds)
    print(f"sweep: {n_planned} runs planned ({len(exps)} experiment(s) x {n_combos} combination(s) x "
          f"{len(seeds)} seed(s))", flush=True)
    if n_planned > SWEEP_RUNS_WITHOUT_YES and not args.yes:
        raise BadInput(f"the sweep plans {n_planned} runs (more than {SWEEP_RUNS_WITHOUT_YES}); check --grid and "
                       "--seeds, or add --yes to run them all")
    combos_raw = sweep.expand_grid(grid_raw)
    tasks = []
    for e in exps:
        if args.preset not in e.presets:
            raise BadInput(f"{e.name} has no preset {args.preset!r}; presets: {', '.join(e.presets)}")
        base = e.presets[args.preset]
        fixed = parse_overrides(type(base), args.overrides, e.name)
        combos = []
        for combo in combos_raw:
            changes = {**fixed, **parse_overrides(type(base), [f"{k}={v}" for k, v in combo.items()], e.name)}
            build_config(base, changes, e.name)  # every combination is valid before anything runs
            combos.append(changes)
        tasks += sweep.plan_tasks([e.name], args.preset, seeds, combos, args.out, n_threads,
                                  deterministic=args.deterministic)
    try:
        check_writable(args.out)
    except OSError as exc:
        raise BadInput(str(exc)) from None
    n_done = sum(sweep.is_done(t) for t in tasks)
    print(f"sweep: {len(tasks)} runs ({n_done} already done, {len(tasks) - n_done} to run) on {args.executor} "
          f"with {workers} worker(s)", flush=True)
    results = sweep.execute(tasks, executor=args.executor, workers=workers, address=args.address,
                            cpus_per_run=cpus_per_run, gpus_per_run=gpus_per_run)
    groups = sweep.aggregate(results)
    ident = sweep.sweep_id([e.name for e in exps], args.preset, seeds, grid_raw)
    spec = {"experiments": [e.name for e in exps], "preset": args.preset, "seeds": seeds, "grid": grid_raw,
            "fixed": args.overrides, "executor": args.executor, "n_runs": len(tasks),
            "n_resumed": sum(bool(r.get("resumed")) for r in results)}
    path = sweep.write_sweep(args.out, ident, spec, groups)
    status = EXIT_OK
    for g in groups:
        for f in g["failures"]:
            print(f"icml2026: error: {f['error']} (seed {f['seed']})", file=sys.stderr)
            status = worst_status(status, EXIT_INTERNAL)
        failing = {k: v for k, v in g["checks"].items() if v["passed"] < v["n"]}
        over = f" {g['overrides']}" if g["overrides"] else ""
        verdicts = g["verdicts"]
        code = (EXIT_OK if verdicts["reproduced"] == g["n_ok"] else
                EXIT_FAILED if verdicts["not reproduced"] else EXIT_UNDECIDED)
        tag = {EXIT_OK: "REPRODUCED", EXIT_FAILED: "NOT REPRODUCED"}.get(code, "UNDECIDED")
        print(f"{tag if not g['failures'] else 'ERROR'} {g['experiment']}{over}: {g['n_ok']}/{g['n_runs']} runs ok ("
              + ", ".join(f"{n} {v}" for v, n in verdicts.items() if n) + ")"
              + "".join(f"; {k} passed {v['passed']}/{v['n']}" for k, v in failing.items()), flush=True)
        if g["n_ok"]:
            status = worst_status(status, code)
    print(f"wrote {path}")
    return status


def _cmd_controls(args: argparse.Namespace) -> int:
    from .core.controls import (
        MAX_FALSE_POSITIVE_RATE,
        MIN_CONTROL_SEEDS,
        MIN_POWER,
        measure_controls,
        store_controls,
    )
    from .core.runner import check_writable

    seeds = _parse_seeds(args.seeds)
    if len(seeds) < MIN_CONTROL_SEEDS:
        raise BadInput(f"--seeds: controls need at least {MIN_CONTROL_SEEDS} seeds, got {len(seeds)}")
    n_threads = _threads(args.threads)
    exps = [e for e in _resolve(args.names) if "planted" in e.presets and "null" in e.presets]
    if not exps:
        raise BadInput(f"none of {', '.join(args.names)} has both a 'planted' and a 'null' preset")
    try:
        check_writable(args.out)
    except OSError as exc:
        raise BadInput(str(exc)) from None
    status = EXIT_OK
    for e in exps:
        try:
            recs = measure_controls(e, seeds, out=args.out, n_threads=n_threads,
                                    log=lambda m: print(m, file=sys.stderr, flush=True))
        except ValueError as exc:
            raise BadInput(str(exc)) from None
        for name, rec in recs.items():
            ok = rec.power >= MIN_POWER and rec.false_positive_rate <= MAX_FALSE_POSITIVE_RATE
            print(f"{'OK' if ok else 'WEAK'} {e.name} / {name}: power {rec.power:.2f} "
                  f"(>= {MIN_POWER}), false-positive rate {rec.false_positive_rate:.2f} "
                  f"(<= {MAX_FALSE_POSITIVE_RATE}) over {rec.n_seeds} seeds", flush=True)
            if not ok:
                status = worst_status(status, EXIT_FAILED)
        if args.store:
            print(f"wrote {store_controls(e.name, recs)}")
    return status


def _cmd_gpu_smoke(args: argparse.Namespace) -> int:
    from .core.device import check_device_name
    from .core.gpu_smoke import render_table, run_gpu_smoke

    try:
        check_device_name(args.device)
    except ValueError as exc:
        raise BadInput(f"--device: {exc}") from None
    if args.names:
        _resolve(args.names)  # a typo is bad input before anything runs
    from .core.runner import available_cores

    workers = (_parse_int(args.workers, "--workers", 1, 4096) if args.workers is not None
               else max(1, available_cores() - 1))
    import time

    t0 = time.perf_counter()
    rows = run_gpu_smoke(args.device, args.names or None, out=args.runs, workers=workers,
                         log=lambda m: print(m, file=sys.stderr, flush=True))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(render_table(rows, args.device, time.perf_counter() - t0), encoding="utf-8")
    print(f"wrote {args.out} ({len(rows)} experiments)")
    status = EXIT_OK
    for r in rows:
        if r.skipped:
            print(f"  {r.name}: {r.skipped}", file=sys.stderr)
        if "error" in r.verdicts.values():
            status = worst_status(status, EXIT_INTERNAL)
        elif len(set(r.verdicts.values())) > 1:
            print(f"  {r.name}: verdicts differ between devices: {r.verdicts}", file=sys.stderr)
            status = worst_status(status, EXIT_FAILED)
    return status


def _cmd_report(args: argparse.Namespace) -> int:
    from .core.report import ReportError, write_index

    if not args.runs.is_dir():
        raise BadInput(f"no run folder {str(args.runs)!r}; run experiments first ('icml2026 run ...')")
    try:
        site = None
        if args.html:  # first: a site that cannot be written leaves the whole report as it was
            from .core.html_report import write_site
            from .core.report import _check_places

            _check_places(args.runs, args.out)
            site, _ = write_site(args.runs, args.out / "html")
        index = write_index(args.runs, args.out)
    except ReportError as exc:
        raise BadInput(str(exc)) from None
    except OSError as exc:
        if exc.errno in (errno.ENOSPC, errno.EDQUOT):
            raise
        raise BadInput(f"cannot write the report to {str(args.out)!r}: {exc.strerror or exc}") from None
    print(f"wrote {index}")
    if site is not None:
        print(f"wrote {site}")
    return EXIT_OK


def main(argv: list[str] | None = None) -> int:
    args = _build_parser().parse_args(argv)
    args.debug = getattr(args, "debug", False)
    try:
        if args.command == "list":
            return _cmd_list()
        if args.command == "show":
            return _cmd_show(args)
        if args.command == "run":
            return _cmd_run(args)
        if args.command == "sweep":
            return _cmd_sweep(args)
        if args.command == "controls":
            return _cmd_controls(args)
        if args.command == "gpu-smoke":
            return _cmd_gpu_smoke(args)
        return _cmd_report(args)
    except BadInput as exc:
        print(f"icml2026: error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        print("icml2026: interrupted; no partial run folder was left", file=sys.stderr)
        return 130
    except Exception as exc:  # noqa: BLE001 - the last line of defence: one line, exit 3
        return _report_exception(exc, f"icml2026 {args.command}", args.debug)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
