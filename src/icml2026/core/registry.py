"""The ``@experiment`` decorator and the name -> experiment table.

Discovery imports ``icml2026.papers.<slug>.experiments`` modules found on disk, only of the papers asked for;
core never names a paper. Listing experiments does not import anything: :mod:`.catalog` reads the same
registrations from source. An experiment is a function ``(cfg, rng) -> Outcome`` registered as
``<slug>.<name>``. A paper whose optional dependencies are missing raises :class:`MissingDependency` naming
its extra.
"""

from __future__ import annotations

import dataclasses
import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from .catalog import NAME_RE, catalog, match_names, paper_dirs, unknown_message
from .errors import MissingDependency
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
    "import_paper",
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
    #: Why the experiment has no precondition (it is analytic: nothing trained or sampled could fail to
    #: express the claim), or None when its outcome carries precondition checks.
    no_preconditions: str | None = None

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
    name: str, *, claim: str, presets: Mapping[str, Any], no_preconditions: str | None = None
) -> Callable[[ExperimentFn], ExperimentFn]:
    """Register ``func(cfg, rng) -> Outcome`` as experiment ``name`` (``"<slug>.<experiment>"``).

    ``presets`` maps preset names to frozen config dataclass instances of one type, and must hold at
    least ``quick`` and ``full``; ``planted`` and ``null`` are the presets of the controls that measure
    each comparative claim's power and false-positive rate (:mod:`.controls`). An experiment with a trained
    or sampled component returns precondition checks; an analytic one says why it has none in
    ``no_preconditions`` (one sentence).
    """
    if not NAME_RE.match(name):
        raise ValueError(f"experiment name {name!r} must look like '<slug>.<experiment>'")
    if not claim or not claim.strip():
        raise ValueError(f"experiment {name!r} needs a one-sentence claim")
    missing = {"quick", "full"} - set(presets)
    if missing:
        raise ValueError(f"experiment {name!r} lacks presets {sorted(missing)}")
    if no_preconditions is not None and not no_preconditions.strip():
        raise ValueError(f"experiment {name!r}: no_preconditions must say why (one sentence), or be None")
    types = {type(cfg) for cfg in presets.values()}
    if len(types) != 1 or not dataclasses.is_dataclass(next(iter(presets.values()))):
        raise TypeError(f"experiment {name!r}: presets must be instances of one config dataclass")

    def deco(func: ExperimentFn) -> ExperimentFn:
        if name in _REGISTRY and _REGISTRY[name].func.__qualname__ != func.__qualname__:
            raise ValueError(f"experiment {name!r} is registered twice")
        _REGISTRY[name] = Experiment(name=name, claim=claim.strip(), presets=dict(presets), func=func,
                                     no_preconditions=no_preconditions.strip() if no_preconditions else None)
        return func

    return deco


def paper_slugs() -> list[str]:
    """The slugs of every paper folder on disk (``papers/<slug>/`` with an ``experiments.py``)."""
    return list(paper_dirs())


def import_paper(slug: str) -> None:
    """Import ``papers/<slug>/experiments.py`` so that it registers its experiments.

    Raises
    ------
    MissingDependency
        When the paper needs a Python package that is not installed; names ``pip install 'icml2026[<slug>]'``.
    """
    from .. import papers

    if slug not in paper_dirs():
        return
    try:
        importlib.import_module(f"{papers.__name__}.{slug}.experiments")
    except ModuleNotFoundError as exc:
        missing = (exc.name or "").split(".")[0]
        if missing in ("", "icml2026"):
            raise
        raise MissingDependency(f"the Python package {missing!r} (needed by {slug})",
                                f"pip install 'icml2026[{slug}]'") from exc


def discover(slugs: list[str] | None = None) -> None:
    """Import the experiments of every paper (or only of ``slugs``) so that they register.

    Importing one paper does not import the others, so naming one paper on the command line does not pay
    for every paper's heavy dependencies.
    """
    for slug in paper_slugs() if slugs is None else slugs:
        import_paper(slug)


def all_experiments() -> dict[str, Experiment]:
    """Every registered experiment, by name, after importing every paper."""
    discover()
    return dict(sorted(_REGISTRY.items()))


def get_experiment(name: str) -> Experiment:
    """The experiment ``<slug>.<experiment>``, importing only its paper."""
    discover([name.split(".", 1)[0]])
    if name in _REGISTRY:
        return _REGISTRY[name]
    raise UnknownExperimentError(unknown_message(name, catalog()))


def resolve_names(names: list[str]) -> list[Experiment]:
    """Expand names: ``slug.experiment`` exactly, or ``slug`` for all of that paper's experiments.

    Names are resolved from the source catalog (a typo is reported without importing anything); only the
    named papers are imported.
    """
    try:
        chosen = match_names(names, catalog())
    except LookupError as exc:
        # an experiment registered outside the papers' sources (tests) is still found by name
        if all(n in _REGISTRY or any(e.slug == n for e in _REGISTRY.values()) for n in names):
            chosen = [k for n in names for k in ([n] if n in _REGISTRY else
                                                  [k for k, e in _REGISTRY.items() if e.slug == n])]
        else:
            raise UnknownExperimentError(str(exc)) from None
    discover(sorted({n.split(".", 1)[0] for n in chosen}))
    out: list[Experiment] = []
    for n in chosen:
        if n not in _REGISTRY:
            raise UnknownExperimentError(f"experiment {n!r} is in the source but did not register")
        if _REGISTRY[n] not in out:
            out.append(_REGISTRY[n])
    return out
