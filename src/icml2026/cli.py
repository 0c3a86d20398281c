"""The one entry point: ``icml2026 list | run | report``.

Exit status: 0 when every check passed, 1 when a check failed, 2 on bad arguments or input (one clear
line on stderr, never a traceback).
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import types
import typing
from pathlib import Path
from typing import Any, NoReturn

from .core.registry import Experiment, UnknownExperimentError, all_experiments, resolve_names

__all__ = ["main", "parse_overrides", "BadInput"]

EXIT_OK, EXIT_FAILED, EXIT_BAD_INPUT = 0, 1, 2


class BadInput(Exception):
    """Bad arguments or input: reported as one line, exit status 2."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        self.exit(EXIT_BAD_INPUT, f"icml2026: error: {message}\n")


def _build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="icml2026", description="Reference implementations of ICML 2026 papers.")
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)
    sub.add_parser("list", help="every experiment, its claim and its presets")
    r = sub.add_parser("run", help="run experiments and write their run folders")
    r.add_argument("names", nargs="*", metavar="NAME", help="<slug>.<experiment>, or <slug> for all of a paper's")
    r.add_argument("--all", action="store_true", help="run every registered experiment")
    r.add_argument("--preset", default="quick", help="preset name (default: quick)")
    r.add_argument("--seed", type=int, default=0, help="seed (default: 0)")
    r.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                   help="override one config field, typed by the preset's config (repeatable)")
    r.add_argument("--out", type=Path, default=Path("runs"), help="folder for run folders (default: runs)")
    r.add_argument("--threads", type=int, default=1, help="torch and BLAS thread count (default: 1)")
    rep = sub.add_parser("report", help="write reports/index.md over the newest run of every experiment")
    rep.add_argument("--runs", type=Path, default=Path("runs"), help="folder of run folders (default: runs)")
    rep.add_argument("--out", type=Path, default=Path("reports"), help="report folder (default: reports)")
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


# ---------------------------------------------------------------------------------------------- commands
def _cmd_list() -> int:
    exps = all_experiments()
    if not exps:
        print("no experiments registered")
        return EXIT_OK
    for e in exps.values():
        print(f"{e.name}\n    claim:   {e.claim}\n    presets: {', '.join(e.presets)}")
    return EXIT_OK


def _plan(args: argparse.Namespace) -> list[tuple[Experiment, Any]]:
    """Resolve names and build every config before anything runs (bad input fails early, writes nothing)."""
    if args.all and args.names:
        raise BadInput("give experiment names or --all, not both")
    if not args.all and not args.names:
        raise BadInput("name at least one experiment (see 'icml2026 list') or use --all")
    if args.seed < 0:
        raise BadInput(f"--seed must be >= 0, got {args.seed}")
    if args.threads < 1:
        raise BadInput(f"--threads must be >= 1, got {args.threads}")
    try:
        exps = list(all_experiments().values()) if args.all else resolve_names(args.names)
    except UnknownExperimentError as exc:
        raise BadInput(str(exc)) from None
    plan = []
    for e in exps:
        if args.preset not in e.presets:
            raise BadInput(f"{e.name} has no preset {args.preset!r}; presets: {', '.join(e.presets)}")
        base = e.presets[args.preset]
        changes = parse_overrides(type(base), args.overrides, e.name)
        try:
            cfg = dataclasses.replace(base, **changes)
        except (ValueError, TypeError) as exc:
            raise BadInput(f"{e.name}: invalid config: {exc}") from None
        plan.append((e, cfg))
    return plan


def _cmd_run(args: argparse.Namespace) -> int:
    from .core.runner import check_writable, run_experiment

    plan = _plan(args)
    try:
        check_writable(args.out)
    except OSError as exc:
        raise BadInput(str(exc)) from None
    status = EXIT_OK
    for exp, cfg in plan:
        print(f"running {exp.name} (preset {args.preset}, seed {args.seed}) ...", flush=True)
        try:
            res = run_experiment(exp, cfg, preset=args.preset, seed=args.seed, out=args.out,
                                 n_threads=args.threads)
        except ValueError as exc:
            raise BadInput(f"{exp.name}: {exc}") from None
        r = res.results
        n_ok = sum(c["passed"] for c in r["checks"])
        tag = "PASS" if res.passed else "FAIL"
        print(f"{tag} {exp.name}: {n_ok}/{len(r['checks'])} checks, {r['timing']['wall_s']:.1f} s -> {res.path}",
              flush=True)
        for c in r["checks"]:
            if not c["passed"]:
                print(f"    failed: {c['name']} = {c['value']} (target {c['target']})", flush=True)
        if not res.passed:
            status = EXIT_FAILED
    return status


def _cmd_report(args: argparse.Namespace) -> int:
    from .core.report import write_index

    if not args.runs.is_dir():
        raise BadInput(f"no run folder {str(args.runs)!r}; run experiments first ('icml2026 run ...')")
    try:
        index = write_index(args.runs, args.out)
    except OSError as exc:
        raise BadInput(f"cannot write the report to {str(args.out)!r}: {exc.strerror or exc}") from None
    print(f"wrote {index}")
    return EXIT_OK


def main(argv: list[str] | None = None) -> int:
    args = _build_parser().parse_args(argv)
    try:
        if args.command == "list":
            return _cmd_list()
        if args.command == "run":
            return _cmd_run(args)
        return _cmd_report(args)
    except BadInput as exc:
        print(f"icml2026: error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        print("icml2026: interrupted; no partial run folder was left", file=sys.stderr)
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
