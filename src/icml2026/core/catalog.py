"""The experiments on disk, read from source without importing any paper.

Each ``papers/<slug>/experiments.py`` (or, for a paper whose experiments are split by claim, every module of
the package ``papers/<slug>/experiments/``) is parsed with :mod:`ast`: every ``@experiment("<slug>.<name>",
claim="...", presets={"quick": ..., ...})`` decorator gives the name, the claim and the preset names. Nothing
of the paper is imported, so ``icml2026 list`` is fast and works whichever extras are installed. A contract
test checks that this catalog equals the registry that importing the papers builds.
"""

from __future__ import annotations

import ast
import difflib
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

__all__ = ["ExperimentInfo", "CatalogError", "catalog", "paper_dirs", "experiment_sources", "NAME_RE", "match_names",
           "unknown_message"]

#: ``<slug>.<experiment>``: what the registry accepts, and the only folder names ``report`` reads.
NAME_RE = re.compile(r"^[a-z][a-z0-9_]*\.[a-z_][a-z0-9_]*$")



class CatalogError(RuntimeError):
    """An ``experiments.py`` whose registrations cannot be read statically (non-literal name or claim)."""


@dataclass(frozen=True)
class ExperimentInfo:
    """What ``list`` shows of an experiment, read from its source."""

    name: str
    claim: str
    presets: tuple[str, ...]
    source: Path

    @property
    def slug(self) -> str:
        return self.name.split(".", 1)[0]


def _roots() -> tuple[Path, ...]:
    from .. import papers  # an empty package: importing it costs nothing

    return tuple(Path(p) for p in papers.__path__)


def paper_dirs(roots: tuple[Path, ...] | None = None) -> dict[str, Path]:
    """``slug -> papers/<slug>/`` for every paper folder holding an ``experiments.py`` or ``experiments/``."""
    out: dict[str, Path] = {}
    for root in _roots() if roots is None else roots:
        for d in sorted(Path(root).iterdir()):
            if d.is_dir() and d.name.isidentifier() and not d.name.startswith("_") and experiment_sources(d):
                out.setdefault(d.name, d)
    return out


def experiment_sources(paper_dir: Path) -> list[Path]:
    """The files that register a paper's experiments: ``experiments.py``, or every module of ``experiments/``."""
    single = paper_dir / "experiments.py"
    if single.is_file():
        return [single]
    package = paper_dir / "experiments"
    if (package / "__init__.py").is_file():
        return sorted(p for p in package.glob("*.py") if p.is_file())
    return []


def _is_experiment_call(node: ast.expr) -> bool:
    if not isinstance(node, ast.Call):
        return False
    f = node.func
    return (isinstance(f, ast.Name) and f.id == "experiment") or (
        isinstance(f, ast.Attribute) and f.attr == "experiment"
    )


def _literal_str(node: ast.expr | None, what: str, where: str) -> str:
    try:
        value = ast.literal_eval(node) if node is not None else None
    except ValueError:
        value = None
    if not isinstance(value, str):
        raise CatalogError(f"{where}: the {what} of @experiment must be a string literal")
    return value


def _parse(path: Path) -> list[ExperimentInfo]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    out = []
    for node in ast.walk(tree):
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for deco in node.decorator_list:
            if not _is_experiment_call(deco):
                continue
            assert isinstance(deco, ast.Call)
            where = f"{path}:{deco.lineno}"
            name = _literal_str(deco.args[0] if deco.args else None, "name", where)
            kw = {k.arg: k.value for k in deco.keywords}
            claim = _literal_str(kw.get("claim"), "claim", where).strip()
            presets_node = kw.get("presets")
            if not isinstance(presets_node, ast.Dict):
                raise CatalogError(f"{where}: presets of @experiment must be a dict literal")
            presets = tuple(_literal_str(k, "preset name", where) for k in presets_node.keys)
            out.append(ExperimentInfo(name=name, claim=claim, presets=presets, source=path))
    return out


@lru_cache(maxsize=8)
def _catalog(roots: tuple[Path, ...]) -> dict[str, ExperimentInfo]:
    table: dict[str, ExperimentInfo] = {}
    for _slug, d in paper_dirs(roots).items():
        for src in experiment_sources(d):
            for info in _parse(src):
                table[info.name] = info
    return dict(sorted(table.items()))


def catalog() -> dict[str, ExperimentInfo]:
    """Every experiment registered in the papers' sources, by name (no paper is imported)."""
    return _catalog(_roots())


def match_names(names: list[str], table: dict[str, ExperimentInfo]) -> list[str]:
    """Expand ``slug.experiment`` (exact) or ``slug`` (all of its experiments) into experiment names.

    Raises LookupError with close-name suggestions for a name that matches nothing.
    """
    chosen: list[str] = []
    for n in names:
        hits = [n] if n in table else [k for k, v in table.items() if v.slug == n]
        if not hits:
            raise LookupError(unknown_message(n, table))
        chosen += [h for h in hits if h not in chosen]
    return chosen


def unknown_message(name: str, table: dict[str, ExperimentInfo]) -> str:
    candidates = sorted(set(table) | {v.slug for v in table.values()})
    close = difflib.get_close_matches(name, candidates, n=3, cutoff=0.5)
    hint = f"; did you mean {', '.join(close)}?" if close else "; run 'icml2026 list' to see them"
    return f"unknown experiment {name!r}{hint}"
