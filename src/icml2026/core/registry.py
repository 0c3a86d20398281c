"""The ``@experiment`` decorator and the name -> experiment table.

Discovery imports every ``icml2026.papers.<slug>.experiments`` module it finds on disk; core never names
a paper. An experiment is a function ``(cfg, rng) -> Outcome`` registered as ``<slug>.<name>``.
"""

from __future__ import annotations

import dataclasses
import difflib
import importlib
import importlib.util
import pkgutil
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from .outcome import Outcome

__all__ = [
    "Experiment",
    "experiment",
    "discover",
    "paper_slugs",
    "all_experiments",
    "get_experiment",
    "resolve_names",
    "UnknownExperimentError",
]

ExperimentFn = Callable[[Any, np.random.Generator], Outcome]

_REGISTRY: dict[str, Experiment] = {}


class UnknownExperimentError(LookupError):
    """Raised for a name that matches no experiment; the message suggests the closest names."""


@dataclass(frozen=True)
class Experiment:
    """A registered experiment: ``name`` is ``<slug>.<experiment>``."""

    name: str
    claim: str
    presets: Mapping[str, Any]
    func: ExperimentFn

    @property
    def slug(self) -> str:
        return self.name.split(".", 1)[0]

    @property
    def config_type(self) -> type:
        return type(next(iter(self.presets.values())))

    def config(self, preset: str) -> Any:
        if preset not in self.presets:
            raise KeyError(
                f"experiment {self.name!r} has no preset {preset!r}; presets: {', '.join(self.presets)}"
            )
        return self.presets[preset]

    def __call__(self, cfg: Any, rng: np.random.Generator) -> Outcome:
        out = self.func(cfg, rng)
        if not isinstance(out, Outcome):
            raise TypeError(f"experiment {self.name!r} returned {type(out).__name__}, not Outcome")
        return out


def experiment(
    name: str, *, claim: str, presets: Mapping[str, Any]
) -> Callable[[ExperimentFn], ExperimentFn]:
    """Register ``func(cfg, rng) -> Outcome`` as experiment ``name`` (``"<slug>.<experiment>"``).

    ``presets`` maps preset names to frozen config dataclass instances of one type, and must hold at
    least ``quick`` and ``full``.
    """
    if name.count(".") != 1 or not all(part.isidentifier() for part in name.split(".")):
        raise ValueError(f"experiment name {name!r} must look like '<slug>.<experiment>'")
    if not claim or not claim.strip():
        raise ValueError(f"experiment {name!r} needs a one-sentence claim")
    missing = {"quick", "full"} - set(presets)
    if missing:
        raise ValueError(f"experiment {name!r} lacks presets {sorted(missing)}")
    types = {type(cfg) for cfg in presets.values()}
    if len(types) != 1 or not dataclasses.is_dataclass(next(iter(presets.values()))):
        raise TypeError(f"experiment {name!r}: presets must be instances of one config dataclass")

    def deco(func: ExperimentFn) -> ExperimentFn:
        if name in _REGISTRY and _REGISTRY[name].func.__qualname__ != func.__qualname__:
            raise ValueError(f"experiment {name!r} is registered twice")
        _REGISTRY[name] = Experiment(name=name, claim=claim.strip(), presets=dict(presets), func=func)
        return func

    return deco


def paper_slugs() -> list[str]:
    """The slugs of every paper folder on disk (``papers/<slug>/`` with an ``experiments.py``)."""
    from .. import papers

    slugs = []
    for info in sorted(pkgutil.iter_modules(papers.__path__), key=lambda i: i.name):
        if info.ispkg and importlib.util.find_spec(f"{papers.__name__}.{info.name}.experiments") is not None:
            slugs.append(info.name)
    return slugs


def discover(slugs: list[str] | None = None) -> None:
    """Import ``papers/<slug>/experiments.py`` of every paper (or only of ``slugs``) so that it registers.

    Importing one paper does not import the others, so naming one paper on the command line does not pay
    for every paper's heavy dependencies.
    """
    from .. import papers

    for slug in paper_slugs() if slugs is None else slugs:
        mod_name = f"{papers.__name__}.{slug}.experiments"
        if slug.isidentifier() and importlib.util.find_spec(f"{papers.__name__}.{slug}") is not None:
            if importlib.util.find_spec(mod_name) is not None:
                importlib.import_module(mod_name)


def all_experiments() -> dict[str, Experiment]:
    """Every registered experiment, by name, after discovery."""
    discover()
    return dict(sorted(_REGISTRY.items()))


def get_experiment(name: str) -> Experiment:
    """The experiment ``<slug>.<experiment>``, importing only its paper."""
    discover([name.split(".", 1)[0]])
    if name in _REGISTRY:
        return _REGISTRY[name]
    raise UnknownExperimentError(_unknown_message(name, all_experiments()))


def resolve_names(names: list[str]) -> list[Experiment]:
    """Expand names: ``slug.experiment`` exactly, or ``slug`` for all of that paper's experiments.

    Only the named papers are imported; every paper is imported only to suggest names for a typo.
    """
    discover(sorted({n.split(".", 1)[0] for n in names}))
    exps = dict(sorted(_REGISTRY.items()))
    if any(n not in exps and not any(e.slug == n for e in exps.values()) for n in names):
        exps = all_experiments()
    chosen: list[Experiment] = []
    for name in names:
        if name in exps:
            hits = [exps[name]]
        else:
            hits = [e for e in exps.values() if e.slug == name]
        if not hits:
            raise UnknownExperimentError(_unknown_message(name, exps))
        for e in hits:
            if e not in chosen:
                chosen.append(e)
    return chosen


def _unknown_message(name: str, exps: Mapping[str, Experiment]) -> str:
    candidates = sorted(set(exps) | {e.slug for e in exps.values()})
    close = difflib.get_close_matches(name, candidates, n=3, cutoff=0.5)
    hint = f"; did you mean {', '.join(close)}?" if close else "; run 'icml2026 list' to see them"
    return f"unknown experiment {name!r}{hint}"
