"""``results.json`` -> ``report.md`` per run, and ``reports/index.md`` over every run of every experiment.

The report reads run folders that anyone may have edited, so it trusts nothing in them:

- every path it writes is derived from folder names on disk that match ``<slug>.<experiment>/<preset>-seed<n>
  [-<hash>]``, never from the contents of a ``results.json``; ``--out`` may not be, or lie inside, the runs
  folder (nor the other way round);
- every check's verdict is recomputed from its value and target (a stored ``"passed": true`` is ignored);
- a run that cannot be read (truncated JSON, a wrong shape, a name that disagrees with its folder) is
  skipped and named with the reason, in the index and on stderr;
- only regular files are copied (symbolic links and anything else are skipped and named), and only
  ``results.json`` and the PNGs the run lists; ``report.md`` is rendered anew from the checked data;
- every string from a run is escaped before it goes into Markdown (no HTML or Markdown injection);
- temporary files and folders have unique names (``mkstemp``/``mkdtemp``) and are renamed into place.

Several seeds of one experiment, preset and override set are aggregated into one row: each check's mean,
spread (sample standard deviation) and pass count over seeds, so a claim that passes on one seed and fails
on another is visible.

Verdicts are three-valued (:func:`icml2026.core.outcome.verdict_of`): ``reproduced``, ``not reproduced`` and
``undecided`` (a precondition failed: the claims are shown, never counted). A check stored without a role (a
run from before roles existed) is a claim. Every comparative claim shows its power and false-positive rate
beside its verdict, or says that they were not measured.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import stat
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .atomic import is_real_dir
from .catalog import NAME_RE
from .outcome import NOT_REPRODUCED, REPRODUCED, ROLES, UNDECIDED, evaluate_target, verdict_of
from .plotting import compact_png

__all__ = [
    "render_run_report",
    "md",
    "RunRecord",
    "Skipped",
    "ReportError",
    "collect_runs",
    "collect_latest_runs",
    "write_index",
    "group_runs",
    "check_summaries",
    "metric_summaries",
    "run_verdict",
    "group_verdict",
    "power_text",
    "is_before_roles",
    "CONTROL_PRESETS",
    "BEFORE_ROLES_NOTE",
    "RESERVED_NAMES",
    "terminal_safe",
]

_FIGURE_RE = __import__("re").compile(r"^[A-Za-z0-9_.-]+\.png$")
_PRESET_ORDER = {"paper": 0, "full": 1, "quick": 2, "smoke": 3}
#: The presets of the controls (core.controls): their runs are never a verdict of the paper.
CONTROL_PRESETS = ("planted", "null")
#: The footnote of rows (or experiments) whose runs predate check roles; the HTML report uses it too.
BEFORE_ROLES_NOTE = ("hold runs recorded before checks had roles: every check of such a run counts as a claim, and no "
                     "precondition was measured, so its verdict cannot be undecided. The paper's card says whether it "
                     "was rerun.")


class ReportError(ValueError):
    """Bad arguments to the report (e.g. ``--out`` inside the runs folder): exit status 2."""


# ------------------------------------------------------------------------------------------------ escaping
_MD_SPECIAL = set("\\`*_[]<>&|~#!")


def md(x: Any) -> str:
    """Text safe inside a Markdown table cell: no HTML, links, images, emphasis or cell breaks survive."""
    s = str(x)
    out = []
    for ch in s:
        if ch in "\r\n\t":
            out.append(" ")
        elif ch == "<":
            out.append("&lt;")
        elif ch == ">":
            out.append("&gt;")
        elif ch == "&":
            out.append("&amp;")
        elif ch in _MD_SPECIAL:
            out.append("\\" + ch)
        elif ord(ch) < 32 or ch == "\x7f":
            out.append(" ")
        else:
            out.append(ch)
    return "".join(out)


def _num(x: Any) -> float:
    if isinstance(x, str) and x in ("nan", "inf", "-inf"):
        return float(x)
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        raise TypeError(f"not a number: {x!r}")
    return float(x)


def _fmt(x: Any) -> str:
    if isinstance(x, bool):
        return "yes" if x else "no"
    if isinstance(x, float):
        if math.isnan(x) or math.isinf(x):
            return str(x)
        if x == 0:
            return "0"
        if abs(x) >= 1e5 or abs(x) < 1e-3:
            return f"{x:.3g}"
        return f"{x:.4g}"
    if x is None:
        return "-"
    if isinstance(x, (dict, list)):
        return md(json.dumps(x, sort_keys=True))
    return md(x)


def _table(rows: list[dict[str, Any]]) -> list[str]:
    if not rows:
        return ["(empty)"]
    cols: list[str] = []
    for r in rows:
        cols += [c for c in r if c not in cols]
    lines = ["| " + " | ".join(md(c) for c in cols) + " |", "|" + "---|" * len(cols)]
    lines += ["| " + " | ".join(_fmt(r.get(c)) for c in cols) + " |" for r in rows]
    return lines


def render_run_report(res: dict[str, Any]) -> str:
    """Markdown for one run: claim, verdict, checks beside the paper's figure, metrics, config, figures.

    Verdicts are recomputed from each check's value and target; every string is escaped.
    """
    checks = [dict(c, passed=_passes(c)) for c in res["checks"]]
    verdict = run_verdict(checks).upper()
    over = res.get("overrides") or {}
    lines = [
        f"# {md(res['experiment'])} ({md(res['preset'])}, seed {int(res['seed'])})",
        "",
        f"**Claim.** {md(res['claim'])}",
        "",
    ]
    if over:
        lines += ["**Overrides** (`--set`): " + ", ".join(f"{md(k)}={_fmt(v)}" for k, v in over.items()), ""]
    by_role = {r: [c for c in checks if _role(c) == r] for r in ROLES}
    counts = "; ".join(f"{sum(c['passed'] for c in cs)}/{len(cs)} {r}s passed" for r, cs in by_role.items() if cs)
    lines += [
        f"**Verdict: {verdict}** ({counts or 'no checks'};"
        f" wall time {_num(res['timing']['wall_s']):.1f} s; {md(res.get('created', '-'))})",
        "",
    ]
    if verdict == UNDECIDED.upper():
        failed = ", ".join(md(c["name"]) for c in by_role["precondition"] if not c["passed"])
        lines += [f"A precondition failed ({failed or 'no claim was checked'}): the setup cannot express the "
                  "claim, so the claims below are shown but count neither for nor against the paper.", ""]
    lines += ["## Checks", ""]
    lines += _table(
        [
            {"check": c["name"], "role": _role(c), "ours": _num(c["value"]), "target": c["target"],
             "paper": c.get("paper"), "passed": c["passed"], "power / false-positive rate": power_text(c)}
            for c in checks
        ]
    )
    lines += ["", "## Metrics", ""]
    lines += _table([{"metric": k, "value": _num(v)} for k, v in res["metrics"].items()])
    for name, rows in (res.get("tables") or {}).items():
        lines += ["", f"## Table: {md(name)}", ""] + _table(rows)
    lines += ["", "## Config", ""]
    lines += _table([{"key": k, "value": v} for k, v in res["config"].items()])
    if res.get("figures"):
        lines += ["", "## Figures", ""] + [f"![{md(f)}]({f})" for f in res["figures"] if _FIGURE_RE.match(f)]
    v = res.get("versions") or {}
    commit = res.get("git_commit")
    lines += [
        "",
        "## Environment",
        "",
        ", ".join(f"{md(k)} {md(val)}" for k, val in v.items()) + (f"; commit {md(commit)}" if commit else ""),
        "",
    ]
    return "\n".join(lines)


# ------------------------------------------------------------------------------------------------ reading
@dataclass(frozen=True)
class Skipped:
    """A path the report did not use, and why."""

    path: Path
    reason: str


@dataclass
class RunRecord:
    """One checked run folder: its on-disk identity and its parsed, validated results."""

    folder: Path
    experiment: str
    preset: str
    seed: int
    overrides_hash: str | None
    results: dict[str, Any]
    notes: list[str] = field(default_factory=list)

    @property
    def checks(self) -> list[dict[str, Any]]:
        return [dict(c, passed=_passes(c)) for c in self.results["checks"]]

    @property
    def verdict(self) -> str:
        """Recomputed from the checks' values, targets and roles."""
        return run_verdict(self.checks)

    @property
    def passed(self) -> bool:
        return self.verdict == REPRODUCED


def _passes(c: dict[str, Any]) -> bool:
    return evaluate_target(_num(c["value"]), c["target"])


def _role(c: dict[str, Any]) -> str:
    return str(c.get("role") or "claim")


def is_before_roles(rec: RunRecord) -> bool:
    """True for a run recorded before checks had roles (no check says its role)."""
    return bool(rec.results["checks"]) and all("role" not in c for c in rec.results["checks"])


def run_verdict(checks: list[dict[str, Any]]) -> str:
    """The three-valued verdict of stored checks (dicts), recomputed from value, target and role."""
    return verdict_of([(_role(c), _passes(c)) for c in checks])


def group_verdict(group: list[RunRecord]) -> tuple[str, dict[str, int]]:
    """The verdict of several seeds of one row, and how many seeds gave each verdict.

    ``undecided`` when any seed is undecided (its preconditions failed, so that seed tells nothing); else
    ``reproduced`` when every seed reproduces, ``not reproduced`` otherwise.
    """
    counts = {v: 0 for v in (REPRODUCED, NOT_REPRODUCED, UNDECIDED)}
    for r in group:
        counts[r.verdict] += 1
    if counts[UNDECIDED]:
        return UNDECIDED, counts
    return (REPRODUCED if counts[REPRODUCED] == len(group) else NOT_REPRODUCED), counts


def power_text(c: dict[str, Any]) -> str:
    """``"power 0.9, FPR 0 (5 seeds)"`` for a comparative claim, ``"not measured"`` without figures, else ``"-"``."""
    if not c.get("comparative"):
        return "-"
    p, f = c.get("power"), c.get("false_positive_rate")
    if p is None or f is None:
        return "not measured"
    n = (c.get("controls") or {}).get("n_seeds")
    return f"power {_fmt(_num(p))}, FPR {_fmt(_num(f))}" + (f" ({int(n)} seeds)" if isinstance(n, int) else "")


def _validate(res: Any, exp: str, preset: str, seed: int, h: str | None) -> list[str]:
    """Check the shape of a parsed results.json; raise ValueError with the first problem. Returns notes."""
    if not isinstance(res, dict):
        raise ValueError("results.json is not a JSON object")
    for key, tp in (("experiment", str), ("claim", str), ("preset", str), ("checks", list), ("metrics", dict),
                    ("config", dict), ("timing", dict)):
        if not isinstance(res.get(key), tp):
            raise ValueError(f"field {key!r} is missing or not a {tp.__name__}")
    if res["experiment"] != exp:
        raise ValueError(f"its experiment field {res['experiment']!r} does not match its folder {exp!r}")
    if res["preset"] != preset:
        raise ValueError(f"its preset {res['preset']!r} does not match its folder ({preset!r})")
    if isinstance(res.get("seed"), bool) or res.get("seed") != seed:
        raise ValueError(f"its seed {res.get('seed')!r} does not match its folder ({seed})")
    over = res.get("overrides", {})
    if not isinstance(over, dict):
        raise ValueError("field 'overrides' is not an object")
    from .runner import overrides_hash

    if overrides_hash(over) != h:
        raise ValueError("its overrides do not match the hash in its folder name")
    _num(res["timing"].get("wall_s"))
    for k, v in res["metrics"].items():
        try:
            _num(v)
        except TypeError:
            raise ValueError(f"metric {k!r} is not a number") from None
    notes = []
    for i, c in enumerate(res["checks"]):
        if not isinstance(c, dict) or not isinstance(c.get("name"), str) or not isinstance(c.get("target"), str):
            raise ValueError(f"check #{i} lacks a name or a target")
        try:
            ok = _passes(c)
        except TypeError:
            raise ValueError(f"check {c['name']!r} has a value that is not a number") from None
        if _role(c) not in ROLES:
            raise ValueError(f"check {c['name']!r} has an unknown role {c.get('role')!r}")
        for what in ("power", "false_positive_rate"):
            rate = c.get(what)
            if rate is not None and (isinstance(rate, bool) or not isinstance(rate, (int, float))
                                     or not 0 <= rate <= 1):
                raise ValueError(f"check {c['name']!r} has a {what} that is not a rate in [0, 1]")
        if c.get("passed") is not None and bool(c.get("passed")) != ok:
            notes.append(f"check {c['name']!r} was stored as passed={c.get('passed')}; recomputed: {ok}")
    figs = res.get("figures", [])
    if not isinstance(figs, list) or not all(isinstance(f, str) for f in figs):
        raise ValueError("field 'figures' is not a list of file names")
    if len(set(figs)) != len(figs):
        raise ValueError("field 'figures' names a file twice")
    versions = res.get("versions", {})
    if versions is not None and not isinstance(versions, dict):
        raise ValueError("field 'versions' is not an object")
    tables = res.get("tables", {}) or {}
    if not isinstance(tables, dict) or not all(
        isinstance(rows, list) and all(isinstance(r, dict) for r in rows) for rows in tables.values()
    ):
        raise ValueError("field 'tables' is not an object of lists of rows")
    return notes


def _is_real_dir(p: Path) -> bool:
    return is_real_dir(p)


def _is_regular_file(p: Path) -> bool:
    """A regular file reached by no link: neither a symbolic link nor a hard link (whose other name may lie
    outside the runs folder: reading it would copy an outside file into the report)."""
    try:
        st = os.lstat(p)
    except OSError:
        return False
    return stat.S_ISREG(st.st_mode) and st.st_nlink == 1


def terminal_safe(text: Any) -> str:
    """``text`` with control characters (terminal escapes, newlines) written as ``\\xNN`` escapes."""
    return "".join(ch if ch.isprintable() else ascii(ch)[1:-1] for ch in str(text))


#: Names the report writes at the top of ``--out``: a run folder by one of these names is refused, so that it
#: can never replace the report's own files.
RESERVED_NAMES = frozenset({"index.md", "index.html", "html", "sweeps"})
#: Errors a crafted results.json or sweep file can raise while it is read, checked or rendered: each skips that
#: file only (huge integers overflow, deep nesting recurses, a wrong type breaks an attribute access).
_BAD_DATA_ERRORS = (ValueError, TypeError, KeyError, AttributeError, IndexError, OverflowError, RecursionError)


def collect_runs(runs: Path) -> tuple[list[RunRecord], list[Skipped]]:
    """Every readable run folder under ``runs`` and every skipped one with its reason."""
    from .runner import RUN_FOLDER_RE

    runs = Path(runs)
    records: list[RunRecord] = []
    skipped: list[Skipped] = []
    for exp_dir in sorted(runs.iterdir()):
        if exp_dir.name.startswith(".") or exp_dir.name == "sweeps" or exp_dir.name.endswith(".cache"):
            continue  # "<slug>.cache": a paper's data cache under the runs folder (not experiments, not runs)
        if not NAME_RE.match(exp_dir.name):
            skipped.append(Skipped(exp_dir, "not an experiment folder (<slug>.<experiment>)"))
            continue
        if exp_dir.name in RESERVED_NAMES:
            skipped.append(Skipped(exp_dir, "its name is one of the report's own files"))
            continue
        if not _is_real_dir(exp_dir):
            skipped.append(Skipped(exp_dir, "not a plain folder (symbolic links are not followed)"))
            continue
        for run_dir in sorted(exp_dir.iterdir()):
            if run_dir.name.startswith("."):
                if ".tmp-" in run_dir.name or ".old-" in run_dir.name:
                    skipped.append(Skipped(run_dir, "temporary folder of an unfinished or replaced run"))
                continue
            m = RUN_FOLDER_RE.match(run_dir.name)
            if not m:
                skipped.append(Skipped(run_dir, "not a run folder (<preset>-seed<n>[-<hash>])"))
                continue
            if not _is_real_dir(run_dir):
                skipped.append(Skipped(run_dir, "not a plain folder (symbolic links are not followed)"))
                continue
            f = run_dir / "results.json"
            if not _is_regular_file(f):
                skipped.append(Skipped(run_dir, "no results.json (or it is not a regular file: links, hard links "
                                                "included, are not followed)"))
                continue
            try:
                res = json.loads(f.read_text(encoding="utf-8"))
                notes = _validate(res, exp_dir.name, m["preset"], int(m["seed"]), m["hash"])
                render_run_report(res)  # what the copy will render: a run that cannot be rendered is skipped now
                json.dumps(res)
            except (OSError, UnicodeDecodeError) as exc:
                skipped.append(Skipped(run_dir, f"results.json cannot be read: {exc}"))
                continue
            except json.JSONDecodeError as exc:
                skipped.append(Skipped(run_dir, f"results.json is not valid JSON ({exc.msg} at line {exc.lineno})"))
                continue
            except RecursionError:
                skipped.append(Skipped(run_dir, "results.json is malformed: nested too deeply"))
                continue
            except _BAD_DATA_ERRORS as exc:
                skipped.append(Skipped(run_dir, f"results.json is malformed: {str(exc)[:200]}"))
                continue
            records.append(RunRecord(run_dir, exp_dir.name, m["preset"], int(m["seed"]), m["hash"], res, notes))
    return records, skipped


def collect_latest_runs(runs: Path) -> dict[str, tuple[Path, dict[str, Any]]]:
    """The newest readable run of every experiment (a full run preferred over a quick one of the same time)."""
    records, _ = collect_runs(runs)
    latest: dict[str, RunRecord] = {}
    for r in records:
        key = (str(r.results.get("created", "")), r.preset == "full")
        cur = latest.get(r.experiment)
        if cur is None or key > (str(cur.results.get("created", "")), cur.preset == "full"):
            latest[r.experiment] = r
    return {k: (v.folder, v.results) for k, v in sorted(latest.items())}


# ------------------------------------------------------------------------------------------------ writing
def _check_places(runs: Path, reports: Path) -> None:
    r, o = runs.resolve(), reports.resolve()
    if r == o or o.is_relative_to(r):
        raise ReportError(f"--out {str(reports)!r} is, or lies inside, the runs folder {str(runs)!r}")
    if r.is_relative_to(o):
        raise ReportError(f"the runs folder {str(runs)!r} lies inside --out {str(reports)!r}")


def _copy_run(rec: RunRecord, dest: Path, skipped: list[Skipped]) -> None:
    """Write ``dest`` (a new folder) from ``rec``: results.json, report.md re-rendered, the listed PNGs."""
    dest.mkdir()
    (dest / "results.json").write_text(json.dumps(rec.results, indent=2) + "\n", encoding="utf-8")
    figures = []
    for name in rec.results.get("figures", []):
        src = rec.folder / name
        if not _FIGURE_RE.match(name):
            skipped.append(Skipped(src, "figure name is not a plain .png file name"))
        elif not _is_regular_file(src):
            skipped.append(Skipped(src, "figure is missing or not a regular file (links are not followed)"))
        else:
            try:
                compact_png(src, dest / name)  # reports keep figures at screen size, as palette PNGs
            except (ValueError, OSError) as exc:
                skipped.append(Skipped(src, f"figure is not a readable PNG image ({exc})"))
                continue
            figures.append(name)
    (dest / "report.md").write_text(render_run_report(dict(rec.results, figures=figures)), encoding="utf-8")


def _swap_in(tmp: Path, dest: Path) -> None:
    """Put the folder ``tmp`` at ``dest``, replacing a folder (or unlinking a symlink) that is there; a crash at
    any moment leaves the old or the new folder at ``dest``."""
    from .atomic import replace_dir

    if os.path.islink(dest):
        os.unlink(dest)  # a planted link: remove the link itself, never its target
    replace_dir(tmp, dest)


GroupKey = tuple[str, int, str, str]  # experiment, preset rank, preset, overrides hash ("" for none)


def group_runs(records: list[RunRecord]) -> dict[GroupKey, list[RunRecord]]:
    """Runs of one experiment, preset and override set, by key (sorted), each group sorted by seed."""
    groups: dict[GroupKey, list[RunRecord]] = {}
    for r in records:
        key = (r.experiment, _PRESET_ORDER.get(r.preset, 9), r.preset, r.overrides_hash or "")
        groups.setdefault(key, []).append(r)
    return {k: sorted(groups[k], key=lambda r: r.seed) for k in sorted(groups)}


def aggregate_page(key: GroupKey) -> str:
    """File name of the aggregate page of a group of several seeds."""
    return f"aggregate-{key[2]}" + (f"-{key[3]}" if key[3] else "") + ".md"


def check_summaries(group: list[RunRecord]) -> list[dict[str, Any]]:
    """Each check of the group over its seeds: target, summary (mean, sd, ci95, ...), pass count, failed seeds."""
    from .aggregate import summarize

    names: list[str] = []
    for r in group:
        names += [c["name"] for c in r.results["checks"] if c["name"] not in names]
    rows = []
    for name in names:
        cs = [(r.seed, c) for r in group for c in r.checks if c["name"] == name]
        rows.append({"name": name, "target": cs[0][1]["target"], "role": _role(cs[0][1]),
                     "power": power_text(cs[-1][1]),
                     "summary": summarize([_num(c["value"]) for _, c in cs]),
                     "passed": sum(c["passed"] for _, c in cs), "n": len(cs),
                     "failed": [seed for seed, c in cs if not c["passed"]],
                     "paper": next((c.get("paper") for _, c in cs if c.get("paper")), None)})
    return rows


def metric_summaries(group: list[RunRecord]) -> dict[str, dict[str, Any]]:
    """Each metric of the group over its seeds (mean, sd, min, max, n, ci95)."""
    from .aggregate import summarize

    names: list[str] = []
    for r in group:
        names += [k for k in r.results["metrics"] if k not in names]
    return {k: summarize([_num(r.results["metrics"][k]) for r in group if k in r.results["metrics"]]) for k in names}


def _checks_cell(group: list[RunRecord]) -> str:
    parts = []
    for c in check_summaries(group):
        k, n, s = c["passed"], c["n"], c["summary"]
        mark = "✅" if k == n else ("❌" if k == 0 else "⚠️")
        value = _fmt(s["mean"]) if n == 1 else f"{_fmt(s['mean'])} ± {_fmt(s['sd'])}"
        tail = f" [{_fmt(c['paper'])}]" if c["paper"] else ""
        count = f", {k}/{n} seeds" if n > 1 else ""
        role = "" if c["role"] == "claim" else f"*{c['role']}* "
        power = f"; {md(c['power'])}" if c["power"] != "-" else ""
        parts.append(f"{mark} {role}{md(c['name'])} = {value} ({md(c['target'])}{count}{power}){tail}")
    return "<br>".join(parts) if parts else "(no checks)"


def _aggregate_md(group: list[RunRecord]) -> str:
    first = group[0]
    over = first.results.get("overrides") or {}
    lines = [f"# {md(first.experiment)}: {md(first.preset)}, {len(group)} seed(s)", "",
             f"**Claim.** {md(first.results['claim'])}", ""]
    if over:
        lines += ["**Overrides:** " + ", ".join(f"{md(k)}={_fmt(v)}" for k, v in over.items()), ""]
    lines += ["Seeds: " + ", ".join(f"[{r.seed}]({r.folder.name}/report.md)" for r in group), "", "## Checks", ""]
    verdict, counts = group_verdict(group)
    lines += [f"**Verdict: {verdict.upper()}** (" + ", ".join(f"{n} {v}" for v, n in counts.items() if n) + ")", ""]
    lines += _table([{"check": c["name"], "role": c["role"], "target": c["target"], "mean": c["summary"]["mean"],
                      "sd": c["summary"]["sd"], "n": c["n"], "passed": f"{c['passed']}/{c['n']}",
                      "failed on seeds": ", ".join(map(str, c["failed"])) or "-", "paper": c["paper"],
                      "power / false-positive rate": c["power"]}
                     for c in check_summaries(group)])
    lines += ["", "## Metrics", ""]
    lines += _table([{"metric": k, "mean": s["mean"], "sd": s["sd"],
                      "95% CI (bootstrap)": f"[{_fmt(s['ci95'][0])}, {_fmt(s['ci95'][1])}]",
                      "min": s["min"], "max": s["max"], "n": s["n"]} for k, s in metric_summaries(group).items()])
    return "\n".join(lines) + "\n"


def _write_text_atomic(path: Path, text: str) -> None:
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, path)
    except BaseException:
        with __import__("contextlib").suppress(OSError):
            os.unlink(tmp)
        raise


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def write_index(runs: Path, reports: Path, *, log: Any = None) -> Path:
    """Copy every readable run into ``reports/<experiment>/`` and write ``reports/index.md``.

    The copy makes ``reports/`` self-contained (``runs/`` is not committed). Several seeds of one
    (experiment, preset, overrides) are one row of the index, aggregated. Skipped runs are listed in the
    index and written to ``log`` (default stderr), one line each.

    Raises
    ------
    ReportError
        If ``reports`` is, or lies inside, ``runs`` (or the reverse).
    """
    runs, reports = Path(runs), Path(reports)
    _check_places(runs, reports)
    reports.mkdir(parents=True, exist_ok=True)
    records, skipped = collect_runs(runs)
    by_exp: dict[str, list[RunRecord]] = {}
    for r in records:
        dest = reports / r.experiment
        if os.path.lexists(dest) and not _is_real_dir(dest) and not os.path.islink(dest):
            skipped.append(Skipped(r.folder, f"{dest.name} in --out is a file, not a folder the report wrote; "
                                             "it is left as it is"))
            continue
        by_exp.setdefault(r.experiment, []).append(r)
    records = [r for recs in by_exp.values() for r in recs]
    sweeps = _sweeps_section(runs, skipped)  # read before anything is written: a bad sweep file is only skipped
    # every experiment's new folder is complete before any old one is replaced
    staged: list[tuple[Path, Path]] = []
    try:
        for exp, recs in sorted(by_exp.items()):
            tmp = Path(tempfile.mkdtemp(prefix=f".{exp}.tmp-", dir=reports))
            staged.append((tmp, reports / exp))
            os.chmod(tmp, 0o777 & ~_umask())
            for r in recs:
                _copy_run(r, tmp / r.folder.name, skipped)
            for key, group in group_runs(recs).items():
                if len(group) > 1:
                    (tmp / aggregate_page(key)).write_text(_aggregate_md(group), encoding="utf-8")
        for tmp, dest in staged:
            _swap_in(tmp, dest)
    finally:
        for tmp, _ in staged:
            shutil.rmtree(tmp, ignore_errors=True)  # those not swapped in (after a failure)
    lines = [
        "# icml2026 reproduction report",
        "",
        "Generated by `icml2026 report` from every readable run folder. One row per experiment, preset and",
        "set of `--set` overrides; several seeds are aggregated (mean ± sample standard deviation, and how",
        "many seeds pass each check: ✅ all, ⚠️ some, ❌ none). Verdicts are recomputed from each check's",
        "value, target and role: **reproduced** (every precondition and claim passes), **not reproduced**",
        "(preconditions pass, a claim fails) or **undecided** (a precondition fails: the setup cannot express",
        "the claim, which is shown but not counted). Preconditions and controls are marked in italics; a",
        "comparative claim shows its power and false-positive rate. The paper's own figure is in brackets.",
        "",
        "| paper | experiment | preset | seeds | claim | checks: ours (target) [paper] | verdict |",
        "|---|---|---|---|---|---|---|",
    ]
    groups_all = group_runs(records)
    n_by = {REPRODUCED: 0, NOT_REPRODUCED: 0, UNDECIDED: 0}
    n_old = 0
    for key, group in groups_all.items():
        exp = key[0]
        slug, short = exp.split(".", 1)
        preset = md(key[2]) + (f" (overrides {key[3]})" if key[3] else "")
        if len(group) == 1:
            link = f"[{md(short)}]({exp}/{group[0].folder.name}/report.md)"
        else:
            link = f"[{md(short)}]({exp}/{aggregate_page(key)})"
        seeds = ", ".join(str(r.seed) for r in group)
        v, counts = group_verdict(group)
        n_by[v] += 1
        verdict = f"**{v}**"
        if len(group) > 1:
            verdict += " (" + ", ".join(f"{c}/{len(group)} {name}" for name, c in counts.items() if c) + ")"
        if any(is_before_roles(r) for r in group):
            verdict += " †"
            n_old += 1
        lines.append(f"| {md(slug)} | {link} | {preset} | {seeds} | {md(group[0].results['claim'])} | "
                     f"{_checks_cell(group)} | {verdict} |")
    if not groups_all:
        lines.append("| - | no runs found | - | - | - | - | - |")
    lines += ["", f"Of {len(groups_all)} rows: {n_by[REPRODUCED]} reproduced on every seed, {n_by[NOT_REPRODUCED]} not "
              f"reproduced, {n_by[UNDECIDED]} undecided.", ""]
    if n_old:
        lines += [f"† {n_old} row(s) {BEFORE_ROLES_NOTE}", ""]
    lines += sweeps
    notes = [(r.folder, n) for r in records for n in r.notes]
    if notes:
        lines += ["## Stored verdicts that disagreed with their values", ""]
        lines += [f"- `{md(p.relative_to(runs))}`: {md(n)}" for p, n in notes] + [""]
    if skipped:
        lines += ["## Skipped", ""]
        lines += [f"- `{md(terminal_safe(_rel(s.path, runs)))}`: {md(terminal_safe(s.reason))}" for s in skipped]
        lines += [""]
    index = reports / "index.md"
    _write_text_atomic(index, "\n".join(lines))
    out = log if log is not None else sys.stderr
    for s in skipped:
        print(f"icml2026 report: skipped {terminal_safe(s.path)}: {terminal_safe(s.reason)}", file=out)
    for folder, note in notes:
        print(f"icml2026 report: {terminal_safe(folder)}: {terminal_safe(note)}", file=out)
    return index


def _sweeps_section(runs: Path, skipped: list[Skipped]) -> list[str]:
    """The aggregates ``icml2026 sweep`` wrote to ``<runs>/sweeps/*.json`` (one row per experiment and overrides)."""
    folder = runs / "sweeps"
    if not _is_real_dir(folder):
        return []
    rows = []
    for f in sorted(folder.glob("*.json")):
        if not _is_regular_file(f):
            skipped.append(Skipped(f, "not a regular file (links, hard links included, are not followed)"))
            continue
        these: list[str] = []  # this file's rows, kept only when the whole file reads
        try:
            data = json.loads(f.read_text(encoding="utf-8"))
            for g in data["groups"]:
                checks = "<br>".join(f"{md(k)}: {int(v['passed'])}/{int(v['n'])} seeds, mean {_fmt(_num(v['mean']))}"
                                     f" [{_fmt(_num(v['ci95'][0]))}, {_fmt(_num(v['ci95'][1]))}]"
                                     for k, v in g["checks"].items())
                over = ", ".join(f"{md(k)}={_fmt(v)}" for k, v in g["overrides"].items()) or "-"
                verdicts = ", ".join(f"{int(n)} {md(v)}" for v, n in (g.get("verdicts") or {}).items() if n) or "-"
                these.append(f"| {md(f.stem)} | {md(g['experiment'])} | {md(data['preset'])} | {over} | "
                             f"{int(g['n_ok'])}/{int(g['n_runs'])} | {verdicts} | {checks or '-'} |")
            rows += these
        except RecursionError:
            skipped.append(Skipped(f, "sweep file is malformed: nested too deeply"))
        except (OSError, *_BAD_DATA_ERRORS) as exc:
            skipped.append(Skipped(f, f"sweep file is malformed: {str(exc)[:200]}"))
    if not rows:
        return []
    return ["## Sweeps", "", "Written by `icml2026 sweep`: each check's pass count over seeds, its mean and bootstrap "
            "95% interval.", "", "| sweep | experiment | preset | overrides | runs ok | verdicts | checks |",
            "|---|---|---|---|---|---|---|", *rows, ""]


def _rel(p: Path, base: Path) -> str:
    try:
        return str(p.relative_to(base))
    except ValueError:
        return str(p)
